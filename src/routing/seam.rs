//! Where another model's continuation meets the answer the client already has. Asked to go
//! on from the last word, a model sometimes starts the answer over, or says the last words
//! again; the client must read each word once. A [`Seam`] reads the continuation's first
//! text as it comes and decides how it joins what was given ([`Join`]): new text goes on as
//! it came, a repeat of the end of what was given (all of it, for a model that started
//! over) is left out, and a continuation that starts the answer over and then departs from
//! it does not fit at all.
//!
//! Pure text in, a decision out: the edge holds the continuation's events until the seam is
//! decided, and only a continuation pays for it. Whitespace is compared as runs (a space
//! where the answer had a line break is the same seam); everything else exactly.

/// How far back into what was given a repeat may begin, besides its very start (a model
/// that started over): a sentence or a paragraph said again, not a page.
const REPEAT_WINDOW: usize = 2048;
/// A repeat of the end of what was given is left out when it holds this many words or
/// [`MIN_REPEAT_CHARS`], or is all of it. Shorter, it may as well be new text that begins
/// with the word the answer ended with ("that that", `a` then `a + b`).
const MIN_REPEAT_WORDS: usize = 2;
/// See [`MIN_REPEAT_WORDS`]: non-whitespace characters (a long word said twice).
const MIN_REPEAT_CHARS: usize = 8;
/// A continuation that says this many whole words of the answer's beginning again (all but
/// the last, of a shorter answer), and then something else, started the answer over: it
/// does not fit. Fewer may be chance: two sentences or list items that begin alike ("I'll
/// update the parser. I'll update the docs"), so they pass.
const MISFIT_WORDS: usize = 5;
/// However short the answer, a start over says at least this many whole words again...
const MISFIT_MIN_WORDS: usize = 3;
/// ...and this many non-whitespace characters.
const MISFIT_CHARS: usize = 12;

/// How a continuation joins what the client has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Join {
    /// Nothing said again: the continuation goes on as it came.
    Fresh,
    /// The continuation begins by saying the end of what was given again (or all of it):
    /// its first `bytes` of text (`chars` characters) are left out.
    Overlap { bytes: usize, chars: usize },
    /// The continuation starts the answer over and departs from it: no cut makes it fit.
    Misfit,
}

/// One token of text as the seam compares it: a character, or a run of whitespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    Space,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Everything so far matched what was given from `start` on.
    Running,
    /// Matched to the end of what was given; the repeat ends at this byte of the
    /// continuation's text.
    Done(usize),
    Failed,
}

/// A place in what was given where a repeat may begin (a word's start), and how far the
/// continuation has matched from there.
#[derive(Debug)]
struct Candidate {
    start: usize,
    /// The next byte of what was given to match.
    at: usize,
    state: State,
    /// Word boundaries (whitespace runs) matched: the whole words said again.
    spaces: usize,
    /// Non-whitespace characters matched.
    chars: usize,
}

/// Reads a continuation's first text and decides its [`Join`] with what was given.
#[derive(Debug)]
pub(crate) struct Seam {
    given: String,
    /// Just past the last non-whitespace character of what was given.
    end: usize,
    /// Where what was given begins (its first word): a repeat from here started over.
    first: usize,
    /// Whole words a start over says again before it departs, to be refused (see
    /// [`MISFIT_WORDS`]).
    misfit_words: usize,
    candidates: Vec<Candidate>,
    /// The continuation's text so far.
    text: String,
    /// Still in the continuation's leading whitespace.
    leading: bool,
    /// The continuation begins a line (what was given ended with a line break, or its own
    /// leading whitespace holds one): a new line or list item, not a start over.
    new_line: bool,
    /// The last character was whitespace (a run is one token).
    in_space: bool,
}

impl Seam {
    /// A seam after `given`, the answer's text as the client has it.
    pub(crate) fn new(given: &str) -> Seam {
        let end = given.trim_end().len();
        let first = given.len() - given.trim_start().len();
        let window = floor_boundary(given, end.saturating_sub(REPEAT_WINDOW));
        let mut candidates = Vec::new();
        let mut before: Option<char> = given[..window].chars().next_back();
        for (i, c) in given[window..end].char_indices() {
            let at = window + i;
            if !c.is_whitespace() && before.is_none_or(char::is_whitespace) {
                candidates.push(Candidate::at(at));
            }
            before = Some(c);
        }
        if first < end && candidates.first().is_none_or(|c| c.start != first) {
            candidates.insert(0, Candidate::at(first));
        }
        let words = given.split_whitespace().count();
        Seam {
            misfit_words: MISFIT_WORDS
                .min(words.saturating_sub(1))
                .max(MISFIT_MIN_WORDS),
            given: given.to_string(),
            end,
            first,
            candidates,
            text: String::new(),
            leading: true,
            new_line: given[end..].contains('\n'),
            in_space: false,
        }
    }

    /// Feeds the continuation's next text; the join once it can be told.
    pub(crate) fn feed(&mut self, text: &str) -> Option<Join> {
        let base = self.text.len();
        self.text.push_str(text);
        for (i, c) in text.char_indices() {
            let after = base + i + c.len_utf8();
            let token = if c.is_whitespace() {
                if self.leading {
                    self.new_line |= c == '\n';
                    continue;
                }
                if std::mem::replace(&mut self.in_space, true) {
                    continue;
                }
                Token::Space
            } else {
                self.leading = false;
                self.in_space = false;
                Token::Char(c)
            };
            let (given, end) = (self.given.as_str(), self.end);
            for cand in self.candidates.iter_mut() {
                if cand.state == State::Running {
                    cand.step(given, end, token, after);
                }
            }
        }
        self.decide(false)
    }

    /// The continuation's text is over (its stream ended, or something other than text
    /// came): the join with what there is.
    pub(crate) fn end(&mut self) -> Join {
        self.decide(true).unwrap_or(Join::Fresh)
    }

    fn decide(&self, ended: bool) -> Option<Join> {
        if !ended && self.candidates.iter().any(|c| c.state == State::Running) {
            return None;
        }
        // The longest repeat that counts: the earliest start.
        let repeat = self.candidates.iter().find_map(|c| match c.state {
            State::Done(c_end) if self.counts(c) => Some(c_end),
            _ => None,
        });
        if let Some(c_end) = repeat {
            // What was given ended with whitespace: the same whitespace said again goes too,
            // once the continuation shows what follows its repeat.
            let trailing = &self.given[self.end..];
            let rest = &self.text[c_end..];
            if !ended && rest.len() < trailing.len() && trailing.starts_with(rest) {
                return None;
            }
            let same = trailing
                .bytes()
                .zip(rest.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            let bytes = floor_boundary(&self.text, c_end + same);
            let chars = self.text[..bytes].chars().count();
            return Some(Join::Overlap { bytes, chars });
        }
        // No repeat: one that said the answer's beginning again far enough, then departed
        // from it (or stopped), started over.
        let restarted = self.candidates.first().is_some_and(|c| {
            // Stopped at the end of one of the answer's words: a whole word too.
            let at_word_end =
                c.state == State::Running && self.given[c.at..].starts_with(char::is_whitespace);
            let words = c.spaces + usize::from(at_word_end);
            c.start == self.first && words >= self.misfit_words && c.chars >= MISFIT_CHARS
        });
        if restarted && !self.new_line {
            return Some(Join::Misfit);
        }
        Some(Join::Fresh)
    }

    /// Whether a repeat that matched to the end of what was given is left out.
    fn counts(&self, c: &Candidate) -> bool {
        // It matched to the end of a word: its words are its whole words and that one.
        let words = c.spaces + 1;
        c.start == self.first || words >= MIN_REPEAT_WORDS || c.chars >= MIN_REPEAT_CHARS
    }
}

impl Candidate {
    fn at(start: usize) -> Candidate {
        Candidate {
            start,
            at: start,
            state: State::Running,
            spaces: 0,
            chars: 0,
        }
    }

    /// Matches the continuation's next token (which ends at byte `after` of its text)
    /// against what was given.
    fn step(&mut self, given: &str, end: usize, token: Token, after: usize) {
        let Some(next) = given[self.at..end].chars().next() else {
            self.state = State::Failed;
            return;
        };
        let (want, len) = if next.is_whitespace() {
            let run = given[self.at..end]
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(end - self.at);
            (Token::Space, run)
        } else {
            (Token::Char(next), next.len_utf8())
        };
        if want != token {
            self.state = State::Failed;
            return;
        }
        self.at += len;
        match token {
            Token::Space => self.spaces += 1,
            Token::Char(_) => self.chars += 1,
        }
        if self.at >= end {
            self.state = State::Done(after);
        }
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The join of a whole continuation `text` with `given`.
#[cfg(test)]
fn join(given: &str, text: &str) -> Join {
    let mut seam = Seam::new(given);
    seam.feed(text).unwrap_or_else(|| seam.end())
}

/// `text` with the first `bytes` of a continuation's text left out.
#[cfg(test)]
fn after(text: &str, join: Join) -> &str {
    match join {
        Join::Overlap { bytes, .. } => &text[bytes.min(text.len())..],
        Join::Fresh | Join::Misfit => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the client reads: `given`, then the continuation after the seam; `None` when
    /// it does not fit.
    fn read(given: &str, text: &str) -> Option<String> {
        match join(given, text) {
            Join::Misfit => None,
            j => Some(format!("{given}{}", after(text, j))),
        }
    }

    #[test]
    fn a_continuation_joins_what_the_client_has() {
        let fox = "The quick brown fox";
        let cases: &[(&str, &str, Option<&str>)] = &[
            // Goes on: as it came.
            (fox, " jumps over", Some("The quick brown fox jumps over")),
            (fox, "es jump", Some("The quick brown foxes jump")),
            // Starts over, then goes on: the repeat is left out.
            (
                fox,
                "The quick brown fox jumps",
                Some("The quick brown fox jumps"),
            ),
            (
                fox,
                " The quick brown fox jumps",
                Some("The quick brown fox jumps"),
            ),
            // Says the last words again.
            (fox, "brown fox jumps", Some("The quick brown fox jumps")),
            (
                fox,
                "quick brown fox, then",
                Some("The quick brown fox, then"),
            ),
            // One short word again may be new text: kept.
            (fox, "fox jumps", Some("The quick brown foxfox jumps")),
            (
                "I think that",
                "that is right",
                Some("I think thatthat is right"),
            ),
            ("let x = a", "a + b;", Some("let x = aa + b;")),
            // A long word again, or the rest of a word cut in the middle, is a repeat.
            (
                "the implementation",
                "implementation of it",
                Some("the implementation of it"),
            ),
            (
                "the implemen",
                "implementation of it",
                Some("the implementation of it"),
            ),
            // Whitespace differs at the seam and inside the repeat.
            (
                "The quick\nbrown  fox",
                "The quick brown fox jumps",
                Some("The quick\nbrown  fox jumps"),
            ),
            (
                "The quick brown fox ",
                "The quick brown fox jumps",
                Some("The quick brown fox jumps"),
            ),
            (
                "The quick brown fox ",
                "brown fox\njumps",
                Some("The quick brown fox \njumps"),
            ),
            (
                "fn a() {\n    let x = 1;\n",
                "    let x = 1;\n    let y = 2;",
                Some("fn a() {\n    let x = 1;\n    let y = 2;"),
            ),
            // Code that closes what it opened is new text.
            ("f(g(x)", ")", Some("f(g(x))")),
            // A list goes on with an item that begins like the first.
            (
                "- Update the parser\n- Update the docs",
                "\n- Update the parser tests",
                Some("- Update the parser\n- Update the docs\n- Update the parser tests"),
            ),
            // Starts over and departs from it: it does not fit.
            (
                "The quick brown fox jumps over the dog",
                "The quick brown fox jumps under it",
                None,
            ),
            (
                "The quick brown fox jumps over the dog",
                "The quick brown fox jumps",
                None,
            ),
            (
                "Partial answer from the",
                "Partial answer from a new angle",
                None,
            ),
            // A sentence or a line that begins like the answer is new text.
            (
                "The quick brown fox jumps over the dog",
                "The quick brown cat sleeps",
                Some("The quick brown fox jumps over the dogThe quick brown cat sleeps"),
            ),
            (
                "I'll update the parser and its tests. ",
                "I'll update the docs too.",
                Some("I'll update the parser and its tests. I'll update the docs too."),
            ),
            (
                "The quick brown fox jumps over the dog.\n",
                "The quick brown fox jumps again.",
                Some("The quick brown fox jumps over the dog.\nThe quick brown fox jumps again."),
            ),
            // Nothing given: anything goes on.
            ("", "Hello", Some("Hello")),
            ("  \n", "Hello", Some("  \nHello")),
            // Not ASCII.
            (
                "Grüße aus Köln",
                "Grüße aus Köln und mehr",
                Some("Grüße aus Köln und mehr"),
            ),
        ];
        for (given, text, want) in cases {
            assert_eq!(
                read(given, text).as_deref(),
                *want,
                "{given:?} + {text:?}: {:?}",
                join(given, text)
            );
        }
    }

    #[test]
    fn the_repeat_is_counted_in_characters() {
        assert_eq!(
            join("Grüße aus Köln", "Grüße aus Köln und"),
            Join::Overlap {
                bytes: "Grüße aus Köln".len(),
                chars: 14
            }
        );
    }

    #[test]
    fn new_text_is_told_at_its_first_words_a_start_over_only_at_its_end() {
        let given = "Partial answer from the first model";
        let mut seam = Seam::new(given);
        assert_eq!(seam.feed(" an"), None, "could be `answer` again");
        assert_eq!(seam.feed("d the rest"), Some(Join::Fresh));
        let mut seam = Seam::new(given);
        for piece in ["Partial ", "answer from the ", "first"] {
            assert_eq!(seam.feed(piece), None, "{piece}");
        }
        assert_eq!(
            seam.feed(" model, and"),
            Some(Join::Overlap {
                bytes: given.len(),
                chars: given.len()
            })
        );
        // Whitespace after the last word of what was given waits for what follows it.
        let mut seam = Seam::new("Done. ");
        assert_eq!(seam.feed("Done."), None);
        assert_eq!(
            seam.feed(" Next"),
            Some(Join::Overlap { bytes: 6, chars: 6 })
        );
        let mut seam = Seam::new("Done. ");
        assert_eq!(seam.feed("Done."), None);
        assert_eq!(seam.end(), Join::Overlap { bytes: 5, chars: 5 });
    }
}

/// Properties: whatever its pieces, a continuation joins alike; one that starts over, or
/// says the last words again, then goes on, reads once; one that shares nothing goes on as
/// it came.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Words of what was given: lower case, so they never meet the new words.
    fn given_words() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec("[a-zé]{1,7}", 1..40)
    }

    /// New text: words that begin upper case or with a digit.
    fn new_words() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec("[A-Z0-9][a-z]{0,5}", 1..8)
    }

    /// Whitespace between words, as models vary it.
    fn space() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(" ".to_string()),
            Just("\n".to_string()),
            Just("  ".to_string()),
            Just("\n\n".to_string())
        ]
    }

    fn joined(words: &[String], spaces: &[String]) -> String {
        let mut out = String::new();
        for (i, w) in words.iter().enumerate() {
            if i > 0 {
                out.push_str(&spaces[i % spaces.len()]);
            }
            out.push_str(w);
        }
        out
    }

    /// The join of `text` fed in the pieces `cuts` makes.
    fn fed(given: &str, text: &str, cuts: &[prop::sample::Index]) -> Join {
        let mut at: Vec<usize> = cuts
            .iter()
            .map(|c| floor_boundary(text, c.index(text.len() + 1)))
            .collect();
        at.sort_unstable();
        let mut seam = Seam::new(given);
        let mut from = 0;
        for to in at.into_iter().chain([text.len()]) {
            if let Some(j) = seam.feed(&text[from..to]) {
                return j;
            }
            from = to;
        }
        seam.end()
    }

    proptest! {
        #[test]
        fn a_start_over_then_more_reads_once(
            given in given_words(),
            rest in new_words(),
            spaces in prop::collection::vec(space(), 1..4),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let g = joined(&given, &[" ".to_string()]);
            let again = joined(&given, &spaces);
            let more = format!(" {}", joined(&rest, &[" ".to_string()]));
            let text = format!("{again}{more}");
            let j = fed(&g, &text, &cuts);
            prop_assert_eq!(j, join(&g, &text), "any pieces, one join");
            prop_assert_eq!(after(&text, j), more.as_str());
        }

        #[test]
        fn the_last_words_again_then_more_read_once(
            given in given_words(),
            k in 2usize..6,
            rest in new_words(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let g = joined(&given, &[" ".to_string()]);
            let k = k.min(given.len());
            let again = joined(&given[given.len() - k..], &[" ".to_string()]);
            let more = format!(" {}", joined(&rest, &[" ".to_string()]));
            let text = format!("{again}{more}");
            let j = fed(&g, &text, &cuts);
            prop_assert_eq!(j, join(&g, &text));
            prop_assert_eq!(after(&text, j), more.as_str(), "{:?}", j);
        }

        #[test]
        fn new_text_goes_on_as_it_came(
            given in given_words(),
            rest in new_words(),
            lead in prop_oneof![Just(""), Just(" "), Just("\n")],
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let g = joined(&given, &[" ".to_string()]);
            let text = format!("{lead}{}", joined(&rest, &[" ".to_string()]));
            prop_assert_eq!(fed(&g, &text, &cuts), Join::Fresh);
        }

        #[test]
        fn any_text_joins_alike_in_any_pieces(
            given in "[a-c \n]{0,40}",
            text in "[a-c \n]{0,40}",
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let j = fed(&given, &text, &cuts);
            prop_assert_eq!(j, join(&given, &text));
            if let Join::Overlap { bytes, chars } = j {
                prop_assert!(bytes <= text.len());
                prop_assert_eq!(chars, text[..bytes].chars().count());
            }
        }
    }
}
