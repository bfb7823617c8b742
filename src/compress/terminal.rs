//! The lossless pass: a tool's output as a person would see it on the terminal, and long
//! runs of one line said once.
//!
//! Text with control characters is played as a terminal would show it: ANSI escape
//! sequences are dropped (colours, hyperlinks, titles), a carriage return or a backspace
//! moves the cursor back and what follows overwrites the line, `ESC[K` erases. What the
//! terminal holds at the end is the output: every line a person would see, in its last
//! state. A CRLF ending is a line ending, kept as it is. Lines are played one at a time,
//! copied through while nothing moves the cursor back; output that moves the cursor up to
//! redraw several lines (`ESC[2A`) is played on the whole-screen model of [`screen`].
//! Text without a control character is not played (the common case, checked at a few
//! bytes per cycle).
//!
//! A run of [`MIN_RUN`] or more identical lines (not blank) becomes the line once and a
//! note of how many times it appeared, where the caller allows it: in a shell command's
//! output, or in any output that came with terminal controls (a file's contents never get
//! here).

use std::borrow::Cow;

use super::escape::{self, Escape};
use super::screen;

/// The shortest run of one line that is folded.
pub const MIN_RUN: usize = 5;

/// Whether runs of a repeated line may be folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    Always,
    /// Only in text that had terminal control characters (it came from a terminal).
    IfTerminal,
    Never,
}

/// `text` without terminal noise (see the module doc); borrowed when nothing changed.
pub fn clean(text: &str, fold: Fold) -> Cow<'_, str> {
    let controls = has_controls(text);
    let fold_runs = match fold {
        Fold::Always => true,
        Fold::IfTerminal => controls,
        Fold::Never => false,
    };
    if !controls {
        return if fold_runs {
            fold_lines(text)
        } else {
            Cow::Borrowed(text)
        };
    }
    let shown = play(text);
    if fold_runs {
        if let Cow::Owned(folded) = fold_lines(&shown) {
            return Cow::Owned(folded);
        }
    }
    if shown == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(shown)
    }
}

/// Whether a byte is a control character other than a newline or a tab.
fn control(b: u8) -> bool {
    (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f
}

/// Whether `text` holds a control character other than a newline, a tab or the CR of a
/// CRLF. Scanned in blocks without branching per byte; a block with a CR is checked
/// exactly.
pub fn has_controls(text: &str) -> bool {
    let bytes = text.as_bytes();
    const BLOCK: usize = 64;
    for (n, block) in bytes.chunks(BLOCK).enumerate() {
        let mut suspect = false;
        for &b in block {
            suspect |= control(b);
        }
        if !suspect {
            continue;
        }
        let start = n * BLOCK;
        for (i, &b) in block.iter().enumerate() {
            let lone_cr = b == b'\r' && bytes.get(start + i + 1) != Some(&b'\n');
            if lone_cr || (b != b'\r' && control(b)) {
                return true;
            }
        }
    }
    false
}

/// What `text` leaves on the terminal.
fn play(text: &str) -> String {
    Lines::play(text).unwrap_or_else(|| screen::play(text))
}

/// The line being played: copied straight to the output until something moves the
/// cursor back, then held as cells.
struct Lines {
    out: String,
    /// Where the current line starts in `out`.
    start: usize,
    /// The current line's cells, once the cursor moved back in it.
    cells: Vec<char>,
    held: bool,
    col: usize,
    /// Something was written over or erased: trailing blanks are the redraw's padding.
    redrawn: bool,
}

impl Lines {
    /// Plays `text` line by line; `None` when the cursor moves to another line (the
    /// whole screen is needed then).
    fn play(text: &str) -> Option<String> {
        let b = text.as_bytes();
        let mut l = Lines {
            out: String::with_capacity(text.len()),
            start: 0,
            cells: Vec::new(),
            held: false,
            col: 0,
            redrawn: false,
        };
        let mut i = 0;
        while i < b.len() {
            let run = b[i..]
                .iter()
                .position(|&c| c == b'\n' || control(c))
                .unwrap_or(b.len() - i);
            if run > 0 {
                l.write(&text[i..i + run]);
                i += run;
                continue;
            }
            match b[i] {
                b'\n' => {
                    l.end_line("\n");
                    i += 1;
                }
                b'\r' => {
                    // CR LF (CRs before an LF, even several) ends the line as it is.
                    let mut j = i;
                    while b.get(j) == Some(&b'\r') {
                        j += 1;
                    }
                    if b.get(j) == Some(&b'\n') {
                        l.end_line("\r\n");
                        i = j + 1;
                    } else {
                        l.hold();
                        l.col = 0;
                        i += 1;
                    }
                }
                0x08 => {
                    l.hold();
                    l.col = l.col.saturating_sub(1);
                    i += 1;
                }
                0x1b => {
                    let (e, next) = escape::read(b, i);
                    match e {
                        Escape::Csi { fin, n } => l.csi(fin, n)?,
                        Escape::ReverseIndex => return None,
                        Escape::Skipped => {}
                    }
                    i = next;
                }
                _ => i += 1,
            }
        }
        l.flush();
        Some(l.out)
    }

    fn write(&mut self, s: &str) {
        if !self.held {
            self.out.push_str(s);
            return;
        }
        for c in s.chars() {
            if self.col < self.cells.len() {
                self.cells[self.col] = c;
                self.redrawn = true;
            } else {
                self.cells.resize(self.col, ' ');
                self.cells.push(c);
            }
            self.col += 1;
        }
    }

    /// Takes the current line out of the output into cells, the cursor at its end.
    fn hold(&mut self) {
        if self.held {
            return;
        }
        self.cells.clear();
        self.cells.extend(self.out[self.start..].chars());
        self.out.truncate(self.start);
        self.col = self.cells.len();
        self.held = true;
    }

    /// A control sequence: erasing and moving along the line are played; moving to
    /// another line gives up (`None`); the rest is dropped.
    fn csi(&mut self, fin: u8, n: Option<usize>) -> Option<()> {
        let count = n.unwrap_or(0).max(1);
        match fin {
            b'A' | b'B' | b'E' | b'F' => return None,
            b'K' => self.erase(n.unwrap_or(0)),
            // Below the cursor there is nothing yet: the rest of the line goes.
            b'J' if n.unwrap_or(0) == 0 => self.erase(0),
            b'C' => {
                self.hold();
                self.col += count;
            }
            b'D' => {
                self.hold();
                self.col = self.col.saturating_sub(count);
            }
            b'G' => {
                self.hold();
                self.col = count - 1;
            }
            _ => {}
        }
        Some(())
    }

    fn erase(&mut self, how: usize) {
        self.hold();
        match how {
            0 => self.cells.truncate(self.col),
            1 => {
                let end = (self.col + 1).min(self.cells.len());
                self.cells[..end].iter_mut().for_each(|c| *c = ' ');
            }
            2 => self.cells.clear(),
            _ => return,
        }
        self.redrawn = true;
    }

    /// The held line back into the output.
    fn flush(&mut self) {
        if !self.held {
            return;
        }
        let mut end = self.cells.len();
        if self.redrawn {
            while end > 0 && self.cells[end - 1] == ' ' {
                end -= 1;
            }
        }
        self.out.extend(&self.cells[..end]);
        self.held = false;
        self.redrawn = false;
    }

    fn end_line(&mut self, ending: &str) {
        self.flush();
        self.out.push_str(ending);
        self.start = self.out.len();
    }
}

/// The note that replaces the repeats of a line.
fn repeat_note(times: usize) -> String {
    format!("[fcm: the line above appeared {times} times in a row]")
}

/// The note's length in bytes, without writing it.
fn repeat_note_len(times: usize) -> usize {
    const FIXED: usize = "[fcm: the line above appeared  times in a row]".len();
    FIXED + times.to_string().len()
}

/// `text` with each run of [`MIN_RUN`] or more identical, non-blank lines said once and
/// a note of how many times; borrowed when there is none (or folding would not shorten
/// it).
pub fn fold_lines(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    // The line at `start..end` (its ending included).
    let line_end =
        |start: usize| memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |k| start + k + 1);
    let mut out: Option<String> = None;
    // Where the text not yet copied to `out` starts.
    let mut copied = 0;
    let mut start = 0;
    let mut end = if b.is_empty() { 0 } else { line_end(0) };
    while start < b.len() {
        let content = line_content(&b[start..end]);
        let mut times = 1;
        let mut run_end = end;
        let mut next_end = end;
        while run_end < b.len() {
            next_end = line_end(run_end);
            if line_content(&b[run_end..next_end]) != content {
                break;
            }
            times += 1;
            run_end = next_end;
        }
        let worth = times >= MIN_RUN
            && (times - 1) * (content.len() + 1) > repeat_note_len(times) + 1
            && !content.iter().all(u8::is_ascii_whitespace);
        if worth {
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buf.push_str(&text[copied..end]);
            buf.push_str(&repeat_note(times));
            // The run's last line's ending (none at the very end of the text).
            let last = &text[start..run_end];
            buf.push_str(if last.ends_with("\r\n") {
                "\r\n"
            } else if last.ends_with('\n') {
                "\n"
            } else {
                ""
            });
            copied = run_end;
        }
        start = run_end;
        end = if run_end < b.len() { next_end } else { b.len() };
    }
    match out {
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(text),
    }
}

/// A line without its ending.
fn line_content(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Terminal output made of text, line endings and the controls fcm plays.
    fn terminal_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("a"),
            Just("bc "),
            Just("é"),
            Just("日本"),
            Just("\t"),
            Just("  "),
            Just("\n"),
            Just("\r\n"),
            Just("\r"),
            Just("\r\r\n"),
            Just("\x08"),
            Just("\x1b[K"),
            Just("\x1b[1K"),
            Just("\x1b[2K"),
            Just("\x1b[0J"),
            Just("\x1b[31m"),
            Just("\x1b[0m"),
            Just("\x1b[5G"),
            Just("\x1b[2C"),
            Just("\x1b[3D"),
            Just("\x1b[?25l"),
            Just("\x1b]0;t\x07"),
            Just("\x07"),
            Just("\x1b"),
            Just("\x1b[2A"),
            Just("\x1bM"),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn prop_lines_play_as_the_whole_screen_does(text in terminal_text()) {
            // Line by line gives up where the cursor leaves the line; elsewhere it shows
            // what the whole screen shows.
            if let Some(lines) = Lines::play(&text) {
                prop_assert_eq!(lines, screen::play(&text));
            }
            let once = clean(&text, Fold::Always).into_owned();
            prop_assert!(!has_controls(&once), "{:?}", once);
            prop_assert_eq!(clean(&once, Fold::Always), once.as_str(), "a second pass changes nothing");
        }
    }

    fn lossless(text: &str) -> String {
        clean(text, Fold::Always).into_owned()
    }

    #[test]
    fn escapes_and_redraws_leave_what_the_screen_shows() {
        let cases = [
            // Colours.
            (
                "\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0\n",
                "   Compiling serde v1.0\n",
            ),
            // A progress line redrawn with CR: its last state.
            (
                "Downloading 10%\rDownloading 55%\rDownloading 100%\ndone\n",
                "Downloading 100%\ndone\n",
            ),
            // CR, then erase to the end of the line, then a shorter text.
            (
                "    Building [===>   ] 3/10\r\x1b[K   Compiling a v1\n",
                "   Compiling a v1\n",
            ),
            // A shorter redraw without an erase leaves the old tail, as a terminal does.
            ("abcdef\rXY\n", "XYcdef\n"),
            // Padding of a redraw is not kept.
            ("working...\rdone      \n", "done\n"),
            // Backspaces (a spinner).
            ("wait |\x08/\x08-\x08\\\x08ok\n", "wait ok\n"),
            // Hyperlinks and titles (OSC) go, their text stays.
            (
                "\x1b]8;;https://x.y\x07link\x1b]8;;\x07 and \x1b]0;title\x1b\\text\n",
                "link and text\n",
            ),
            // Two lines redrawn with the cursor moved up.
            (
                "a: 10%\nb: 10%\n\x1b[2Aa: 100%\nb: 100%\n",
                "a: 100%\nb: 100%\n",
            ),
            // Erase below the cursor.
            ("keep\nspinner\x1b[1G\x1b[0J", "keep\n"),
            // CRLF endings are line endings, kept.
            (
                "one\r\ntwo\r\n\x1b[31mred\x1b[0m\r\n",
                "one\r\ntwo\r\nred\r\n",
            ),
            // A trailing CR: the line as it stands.
            ("50%\r", "50%"),
            // Other control characters go.
            ("bell\x07 shift\x0e\x0f\n", "bell shift\n"),
        ];
        for (input, want) in cases {
            assert_eq!(lossless(input), want, "{input:?}");
        }
    }

    #[test]
    fn text_without_controls_is_borrowed() {
        for text in [
            "plain\n",
            "",
            "crlf\r\nonly\r\n",
            "tabs\tand  spaces  \n\n\n",
        ] {
            assert!(
                matches!(clean(text, Fold::Never), Cow::Borrowed(_)),
                "{text:?}"
            );
            assert!(!has_controls(text));
        }
        let long = "x".repeat(200) + "\r\n" + &"y".repeat(100) + "\rz";
        assert!(has_controls(&long), "a lone CR past the first block");
    }

    #[test]
    fn long_runs_of_a_line_fold() {
        let warning = "warning: the same line again\n";
        let text = format!("start\n{}end\n", warning.repeat(40));
        assert_eq!(
            lossless(&text),
            "start\nwarning: the same line again\n[fcm: the line above appeared 40 times in a row]\nend\n"
        );
        // At the very end, without a final newline.
        let text = format!("{}warning: the same line again", warning.repeat(5));
        assert_eq!(
            lossless(&text),
            "warning: the same line again\n[fcm: the line above appeared 6 times in a row]"
        );
        // Short runs, blank lines and short lines are kept.
        for text in [
            warning.repeat(4),
            "\n".repeat(30),
            "   \n".repeat(30),
            "ok\n".repeat(10),
        ] {
            assert_eq!(lossless(&text), text);
        }
        // Only when asked.
        assert_eq!(clean(&warning.repeat(9), Fold::Never), warning.repeat(9));
        assert_eq!(
            clean(&warning.repeat(9), Fold::IfTerminal),
            warning.repeat(9)
        );
        let colored = format!("\x1b[33m{}", warning.repeat(9));
        assert_eq!(
            clean(&colored, Fold::IfTerminal),
            "warning: the same line again\n[fcm: the line above appeared 9 times in a row]\n"
        );
    }

    #[test]
    fn the_same_text_gives_the_same_bytes() {
        let text = "\x1b[32mok\x1b[0m\rprogress 5%\rprogress 100%\n".repeat(50);
        assert_eq!(lossless(&text), lossless(&text));
    }
}
