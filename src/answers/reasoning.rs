//! A model's reasoning apart from its answer, wherever the provider put it.
//!
//! Providers send reasoning in a dozen shapes: `reasoning_content` (DeepSeek, Z.ai, Qwen),
//! `reasoning` (gpt-oss on Groq and Cerebras, Ollama), `reasoning_details` (OpenRouter, often
//! beside `reasoning`), `thinking` parts inside a `content` array (Mistral's Magistral), or
//! plain text opened by `<think>` / `<thought>` at the start of `content` (DeepSeek-R1 hosts,
//! Gemini). [`parts`] reads one delta or message; [`ThinkTags`] takes a leading tag block out
//! of a content stream split anywhere. Pure: values and strings in, strings out.

use serde_json::Value;

/// The answer text and the reasoning one delta or message carries.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Parts {
    pub text: String,
    pub reasoning: String,
}

/// Which part of an answer a piece of text belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    Text,
    Reasoning,
}

/// Walks a chat delta or message and hands each piece of text to `sink` with its channel:
/// `content` (a string, or an array of text and thinking parts) and the reasoning fields.
/// `reasoning_details` counts only when neither `reasoning_content` nor `reasoning` is there
/// (OpenRouter sends the same text in both). The one reading of every provider shape.
fn visit(msg: &Value, sink: &mut impl FnMut(Channel, &str)) {
    match msg.get("content") {
        Some(Value::String(s)) => sink(Channel::Text, s),
        Some(Value::Array(items)) => {
            for item in items {
                match item.get("type").and_then(Value::as_str) {
                    Some("thinking") => texts(item.get("thinking"), Channel::Reasoning, sink),
                    _ => texts(item.get("text"), Channel::Text, sink),
                }
            }
        }
        _ => {}
    }
    let field = ["reasoning_content", "reasoning"].iter().find_map(|k| {
        msg.get(*k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    });
    match field {
        Some(r) => sink(Channel::Reasoning, r),
        None => {
            for d in msg
                .get("reasoning_details")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                texts(
                    d.get("text").or_else(|| d.get("summary")),
                    Channel::Reasoning,
                    sink,
                );
            }
        }
    }
}

/// A string, or the `text` of each part of an array.
fn texts(v: Option<&Value>, channel: Channel, sink: &mut impl FnMut(Channel, &str)) {
    match v {
        Some(Value::String(s)) => sink(channel, s),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) => sink(channel, s),
                    _ => texts(item.get("text"), channel, sink),
                }
            }
        }
        _ => {}
    }
}

/// The answer text and the reasoning of a chat delta or message (see [`visit`]).
pub(crate) fn parts(msg: &Value) -> Parts {
    let mut out = Parts::default();
    visit(msg, &mut |channel, s| match channel {
        Channel::Text => out.text.push_str(s),
        Channel::Reasoning => out.reasoning.push_str(s),
    });
    out
}

/// Characters of answer text and of reasoning [`parts`] would give, each 0 when it is only
/// whitespace, counted without copying (the gate asks this of every delta).
pub(crate) fn useful_lengths(msg: &Value) -> (usize, usize) {
    // (characters, any of them visible) per channel.
    let mut counts = [(0usize, false); 2];
    visit(msg, &mut |channel, s| {
        let c = &mut counts[channel as usize];
        c.0 += s.chars().count();
        c.1 |= !s.trim().is_empty();
    });
    let useful = |(chars, visible): (usize, bool)| if visible { chars } else { 0 };
    (useful(counts[0]), useful(counts[1]))
}

/// The tags that open a reasoning block at the start of `content`, with their closers.
const TAGS: [(&str, &str); 2] = [("<think>", "</think>"), ("<thought>", "</thought>")];

/// Where a content stream is with respect to a leading reasoning block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing but whitespace yet: a tag may still open.
    Start,
    /// Inside a block; the index into [`TAGS`] says which closer ends it.
    Inside(usize),
    /// Just after a block: whitespace before the answer is dropped.
    AfterBlock,
    /// Answer text: everything passes as text.
    Answer,
}

/// Takes a leading `<think>…</think>` (or `<thought>…</thought>`) block out of a content
/// stream, fed in pieces split anywhere (inside a tag too). Only a block at the very start
/// counts: a tag later in an answer is the answer's text.
#[derive(Debug)]
pub(crate) struct ThinkTags {
    phase: Phase,
    /// Text held back because it may be the start of a tag.
    pending: String,
}

impl Default for ThinkTags {
    fn default() -> Self {
        ThinkTags {
            phase: Phase::Start,
            pending: String::new(),
        }
    }
}

impl ThinkTags {
    /// Whether everything from now on is answer text (nothing held, no block open).
    pub(crate) fn settled(&self) -> bool {
        self.phase == Phase::Answer && self.pending.is_empty()
    }

    /// Splits the next piece of content into (reasoning, text).
    pub(crate) fn feed(&mut self, piece: &str) -> Parts {
        let mut out = Parts::default();
        self.pending.push_str(piece);
        loop {
            match self.phase {
                Phase::Answer => {
                    out.text.push_str(&std::mem::take(&mut self.pending));
                    return out;
                }
                Phase::AfterBlock => {
                    let kept = self.pending.trim_start().len();
                    self.pending.drain(..self.pending.len() - kept);
                    if self.pending.is_empty() {
                        return out;
                    }
                    self.phase = Phase::Answer;
                }
                Phase::Start => {
                    let rest = self.pending.trim_start();
                    if rest.is_empty() {
                        return out;
                    }
                    if let Some(i) = TAGS.iter().position(|(open, _)| rest.starts_with(open)) {
                        let skip = self.pending.len() - rest.len() + TAGS[i].0.len();
                        self.pending.drain(..skip);
                        self.phase = Phase::Inside(i);
                        continue;
                    }
                    if TAGS.iter().any(|(open, _)| open.starts_with(rest)) {
                        // Maybe a tag cut in two: wait for more.
                        return out;
                    }
                    self.phase = Phase::Answer;
                }
                Phase::Inside(i) => {
                    let close = TAGS[i].1;
                    if let Some(at) = self.pending.find(close) {
                        out.reasoning.push_str(&self.pending[..at]);
                        self.pending.drain(..at + close.len());
                        self.phase = Phase::AfterBlock;
                        continue;
                    }
                    // Keep back what could be the start of the closer.
                    let keep = (1..close.len())
                        .rev()
                        .find(|n| self.pending.ends_with(&close[..*n]))
                        .unwrap_or(0);
                    let cut = self.pending.len() - keep;
                    out.reasoning.push_str(&self.pending[..cut]);
                    self.pending.drain(..cut);
                    return out;
                }
            }
        }
    }

    /// The content ended: whatever was held back goes out (a block never closed is
    /// reasoning; whitespace or a cut tag at the start is text).
    pub(crate) fn finish(&mut self) -> Parts {
        let held = std::mem::take(&mut self.pending);
        let mut out = Parts::default();
        match self.phase {
            Phase::Inside(_) => out.reasoning = held,
            Phase::AfterBlock => {}
            _ => out.text = held,
        }
        self.phase = Phase::Answer;
        out
    }
}

/// A whole content string split once: (reasoning of a leading tag block, the rest).
pub(crate) fn split_think(content: &str) -> Parts {
    let mut tags = ThinkTags::default();
    let mut out = tags.feed(content);
    let end = tags.finish();
    out.reasoning.push_str(&end.reasoning);
    out.text.push_str(&end.text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasoning_fields_and_content_arrays() {
        let cases = [
            (
                json!({"content": "hi", "reasoning_content": "hmm"}),
                ("hi", "hmm"),
            ),
            (
                json!({"content": null, "reasoning": "gpt-oss thinks"}),
                ("", "gpt-oss thinks"),
            ),
            (
                json!({"reasoning": "once", "reasoning_details": [{"type": "reasoning.text", "text": "once"}]}),
                ("", "once"),
            ),
            (
                json!({"reasoning_details": [{"type": "reasoning.text", "text": "a"}, {"type": "reasoning.summary", "summary": "b"}]}),
                ("", "ab"),
            ),
            (
                json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me"}]}, {"type": "text", "text": "42"}]}),
                ("42", "Let me"),
            ),
            (json!({"content": "", "reasoning_content": ""}), ("", "")),
        ];
        for (msg, (text, reasoning)) in cases {
            let p = parts(&msg);
            let lengths = (text.chars().count(), reasoning.chars().count());
            assert_eq!(useful_lengths(&msg), lengths, "{msg}");
            assert_eq!(
                (p.text.as_str(), p.reasoning.as_str()),
                (text, reasoning),
                "{msg}"
            );
        }
    }

    /// Feeds `content` in pieces of `size` bytes (on char boundaries) and joins the output.
    fn split_in_pieces(content: &str, size: usize) -> (String, String) {
        let mut tags = ThinkTags::default();
        let (mut text, mut reasoning) = (String::new(), String::new());
        let chars: Vec<char> = content.chars().collect();
        for piece in chars.chunks(size) {
            let p = tags.feed(&piece.iter().collect::<String>());
            text.push_str(&p.text);
            reasoning.push_str(&p.reasoning);
        }
        let p = tags.finish();
        text.push_str(&p.text);
        reasoning.push_str(&p.reasoning);
        (text, reasoning)
    }

    #[test]
    fn leading_tag_blocks_are_reasoning_at_any_split() {
        let cases = [
            (
                "<think>\nplan it</think>\n\nThe answer.",
                ("The answer.", "\nplan it"),
            ),
            ("  <thought>look</thought>Yes", ("Yes", "look")),
            (
                "No tags <think>here</think>",
                ("No tags <think>here</think>", ""),
            ),
            ("<thin", ("<thin", "")),
            ("<think>never closed", ("", "never closed")),
            ("<think></think>ok", ("ok", "")),
            ("ünïcode <think>", ("ünïcode <think>", "")),
            ("<think>a</thi</think>b", ("b", "a</thi")),
        ];
        for (content, (text, reasoning)) in cases {
            for size in 1..=content.chars().count() {
                assert_eq!(
                    split_in_pieces(content, size),
                    (text.to_string(), reasoning.to_string()),
                    "{content:?} in pieces of {size}"
                );
            }
            let whole = split_think(content);
            assert_eq!(
                (whole.text.as_str(), whole.reasoning.as_str()),
                (text, reasoning)
            );
        }
    }

    #[test]
    fn settles_once_the_answer_starts() {
        let mut tags = ThinkTags::default();
        tags.feed("<think>x");
        assert!(!tags.settled());
        tags.feed("</think>");
        tags.feed("answer");
        assert!(tags.settled());
        let mut plain = ThinkTags::default();
        plain.feed("Hello");
        assert!(plain.settled());
    }
}
