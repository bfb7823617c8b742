//! A continuation's first chat chunks held back while its text is compared with what the
//! client already has (`routing::seam`), then let go as the seam says: as they came,
//! without their repeat of what the client has, or not at all when the continuation does
//! not fit. Only a continuation passes through here, and only until its seam is decided:
//! every other stream's events go straight to the client, untouched.

use serde_json::Value;

use crate::routing::seam::{Join, Seam};

/// A continuation whose seam is not decided yet, and the chunks it holds.
pub(crate) struct Joining {
    seam: Seam,
    /// Chunks from the continuation's first text on, in order.
    held: Vec<Value>,
}

/// What the next chunks of a continuation come to.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Still comparing: these chunks (none with text) go now; the rest is held.
    Holding(Vec<Value>),
    /// Decided: these chunks go now, and later ones as they come. `left_out`: characters of
    /// a repeat of what the client had, taken out of them.
    Joined { chunks: Vec<Value>, left_out: usize },
    /// It starts the answer over and departs from it: none of it is the client's.
    Misfit,
}

impl Joining {
    /// A continuation after `given`, the answer's text as the client has it; `None` when
    /// the client has no text yet (a request asked again, nothing to join).
    pub(crate) fn after(given: &str) -> Option<Joining> {
        (!given.trim().is_empty()).then(|| Joining {
            seam: Seam::new(given),
            held: Vec::new(),
        })
    }

    /// Takes the continuation's next chunks; `end`: nothing more comes (its stream ended,
    /// or said `[DONE]`).
    pub(crate) fn take(&mut self, chunks: Vec<Value>, end: bool) -> Step {
        // Chunks before the first text held, and after the seam is decided: not compared.
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let mut join = None;
        for chunk in chunks {
            if join.is_some() {
                after.push(chunk);
                continue;
            }
            let (text, more) = parts(&chunk);
            if text.is_empty() && !more && self.held.is_empty() {
                // Reasoning or a role before any text: nothing to compare.
                before.push(chunk);
                continue;
            }
            if !text.is_empty() {
                join = self.seam.feed(text);
            }
            if more && join.is_none() {
                // A call or the finish: the text is over.
                join = Some(self.seam.end());
            }
            self.held.push(chunk);
        }
        if end && join.is_none() {
            join = Some(self.seam.end());
        }
        let Some(join) = join else {
            return Step::Holding(before);
        };
        let left_out = match join {
            Join::Misfit => return Step::Misfit,
            Join::Fresh => 0,
            Join::Overlap { bytes, chars } => {
                leave_out(&mut self.held, bytes);
                self.held.retain(|c| !emptied(c));
                chars
            }
        };
        before.append(&mut self.held);
        before.append(&mut after);
        Step::Joined {
            chunks: before,
            left_out,
        }
    }
}

/// A chunk that said nothing but the text left out of it: its delta is an empty
/// `content`, with no finish and no usage.
fn emptied(chunk: &Value) -> bool {
    let delta = chunk.pointer("/choices/0/delta").and_then(Value::as_object);
    let (_, more) = parts(chunk);
    delta.is_some_and(|d| d.len() == 1 && d.get("content").is_some_and(|c| c == ""))
        && !more
        && chunk.get("usage").is_none_or(Value::is_null)
}

/// A chunk's text (its first choice's `content`), and whether it carries more than text
/// and reasoning: a tool call, a finish, content that is not a string.
fn parts(chunk: &Value) -> (&str, bool) {
    let Some(choice) = chunk.pointer("/choices/0") else {
        return ("", false);
    };
    let delta = choice.get("delta");
    let content = delta.and_then(|d| d.get("content"));
    let text = content.and_then(Value::as_str).unwrap_or("");
    let more = content.is_some_and(|c| !c.is_string() && !c.is_null())
        || choice.get("finish_reason").is_some_and(|f| !f.is_null())
        || delta
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
    (text, more)
}

/// Takes the first `bytes` of text out of `chunks`' contents (a repeat of what the client
/// has), in order.
fn leave_out(chunks: &mut [Value], mut bytes: usize) {
    for chunk in chunks {
        if bytes == 0 {
            return;
        }
        let Some(Value::String(text)) = chunk.pointer_mut("/choices/0/delta/content") else {
            continue;
        };
        let n = bytes.min(text.len());
        text.replace_range(..n, "");
        bytes -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(t: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]})
    }

    fn contents(chunks: &[Value]) -> String {
        chunks
            .iter()
            .filter_map(|c| {
                c.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
            })
            .collect()
    }

    #[test]
    fn a_start_over_is_held_then_let_go_without_its_repeat() {
        let mut j = Joining::after("The quick brown fox").unwrap();
        let thinking = json!({"choices": [{"index": 0, "delta": {"reasoning_content": "Go on."}}]});
        assert_eq!(
            j.take(vec![thinking.clone(), text("The quick ")], false),
            Step::Holding(vec![thinking]),
            "reasoning before the text goes at once"
        );
        assert_eq!(j.take(vec![text("brown")], false), Step::Holding(vec![]));
        let role =
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]});
        assert_eq!(j.take(vec![role.clone()], false), Step::Holding(vec![]));
        match j.take(vec![text(" fox jum"), text("ps")], false) {
            Step::Joined { chunks, left_out } => {
                assert_eq!(left_out, 19);
                assert_eq!(contents(&chunks), " jumps");
                assert_eq!(
                    chunks,
                    [role, text(" jum"), text("ps")],
                    "in order, without the chunks that held only the repeat"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn chunks_before_the_first_text_go_first_and_after_the_seam_last() {
        let role = json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]});
        let mut j = Joining::after("Partial answer").unwrap();
        match j.take(vec![role.clone(), text(" and"), text(" more")], false) {
            Step::Joined { chunks, .. } => assert_eq!(chunks, [role, text(" and"), text(" more")]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn new_text_goes_as_it_came_and_a_finish_decides() {
        let mut j = Joining::after("Partial answer").unwrap();
        match j.take(vec![text(" and the rest")], false) {
            Step::Joined { chunks, left_out } => {
                assert_eq!((contents(&chunks).as_str(), left_out), (" and the rest", 0));
            }
            other => panic!("{other:?}"),
        }
        // The text is over at a finish, even while it could still be a repeat.
        let mut j = Joining::after("The quick brown fox").unwrap();
        let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        match j.take(vec![text("The"), finish], false) {
            Step::Joined { chunks, left_out } => {
                assert_eq!((chunks.len(), left_out), (2, 0));
            }
            other => panic!("{other:?}"),
        }
        let mut j = Joining::after("The quick brown fox jumps over it").unwrap();
        assert_eq!(
            j.take(vec![text("The quick brown fox jumps")], false),
            Step::Holding(vec![])
        );
        assert_eq!(j.take(vec![text(" under")], false), Step::Misfit);
        assert!(Joining::after(" \n").is_none(), "nothing to join");
    }
}
