//! Tool calls a model wrote as text instead of sending them as calls.
//!
//! Some hosts return the model's raw tool-call markup in `content`: Hermes/Qwen
//! `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks, or Kimi's
//! `<|tool_calls_section_begin|>` … `<|tool_call_begin|>functions.NAME:0` …
//! `<|tool_call_argument_begin|>{…}<|tool_call_end|>` … `<|tool_calls_section_end|>`
//! section. An agent shows that as text and never runs it. When the request offered tools,
//! [`TextCalls`] takes such blocks out of a content stream (split anywhere) and gives them
//! back as calls. A block that does not parse stays text. Pure: strings in, calls out.

use serde_json::Value;

use crate::answers::toolcall::ToolCall;

const HERMES: (&str, &str) = ("<tool_call>", "</tool_call>");
const KIMI: (&str, &str) = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>");
const KIMI_CALL: &str = "<|tool_call_begin|>";
const KIMI_ARGS: &str = "<|tool_call_argument_begin|>";
const KIMI_CALL_END: &str = "<|tool_call_end|>";

/// What a piece of content holds: text to show and calls to run.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Split {
    pub text: String,
    pub calls: Vec<ToolCall>,
}

/// Takes tool-call markup out of a content stream.
#[derive(Debug, Default)]
pub(crate) struct TextCalls {
    /// The block being read: its opener and closer.
    inside: Option<(&'static str, &'static str)>,
    /// Text held back: a possible start of an opener, or a block not closed yet.
    pending: String,
}

impl TextCalls {
    /// Nothing is held back: a piece without `<` passes through unchanged.
    pub(crate) fn idle(&self) -> bool {
        self.inside.is_none() && self.pending.is_empty()
    }

    pub(crate) fn feed(&mut self, piece: &str) -> Split {
        let mut out = Split::default();
        self.pending.push_str(piece);
        loop {
            match self.inside {
                None => {
                    let found = [HERMES, KIMI]
                        .into_iter()
                        .filter_map(|tags| self.pending.find(tags.0).map(|at| (at, tags)))
                        .min_by_key(|(at, _)| *at);
                    if let Some((at, tags)) = found {
                        out.text.push_str(&self.pending[..at]);
                        self.pending.drain(..at);
                        self.inside = Some(tags);
                        continue;
                    }
                    // Keep back what could be the start of an opener.
                    let keep = [HERMES.0, KIMI.0]
                        .iter()
                        .flat_map(|open| (1..open.len()).map(move |n| &open[..n]))
                        .filter(|prefix| self.pending.ends_with(prefix))
                        .map(str::len)
                        .max()
                        .unwrap_or(0);
                    let cut = self.pending.len() - keep;
                    out.text.push_str(&self.pending[..cut]);
                    self.pending.drain(..cut);
                    return out;
                }
                Some((open, close)) => {
                    let Some(end) = self.pending.find(close) else {
                        return out;
                    };
                    let block = self.pending[..end + close.len()].to_string();
                    self.pending.drain(..end + close.len());
                    self.inside = None;
                    let inner = &block[open.len()..block.len() - close.len()];
                    match parse_block(open, inner) {
                        Some(calls) => out.calls.extend(calls),
                        None => out.text.push_str(&block),
                    }
                }
            }
        }
    }

    /// The content ended: what was held back (a cut opener, a block never closed) is text.
    pub(crate) fn finish(&mut self) -> Split {
        self.inside = None;
        Split {
            text: std::mem::take(&mut self.pending),
            calls: Vec::new(),
        }
    }
}

/// A whole content string split once.
pub(crate) fn split_text_calls(content: &str) -> Split {
    let mut t = TextCalls::default();
    let mut out = t.feed(content);
    out.text.push_str(&t.finish().text);
    out
}

/// The calls of one block, or `None` when it does not parse (it stays text).
fn parse_block(open: &str, inner: &str) -> Option<Vec<ToolCall>> {
    if open == HERMES.0 {
        let v: Value = serde_json::from_str(inner.trim()).ok()?;
        return Some(vec![call(
            v.get("name")?.as_str()?,
            v.get("arguments").or_else(|| v.get("parameters")),
        )?]);
    }
    let mut calls = Vec::new();
    for part in inner.split(KIMI_CALL).skip(1) {
        let part = part.split(KIMI_CALL_END).next()?;
        let (id, args) = part.split_once(KIMI_ARGS)?;
        // `functions.add:0`: the tool's name between the namespace and the index.
        let id = id.trim();
        let name = id.strip_prefix("functions.").unwrap_or(id);
        let name = name.rsplit_once(':').map_or(name, |(n, _)| n);
        let args: Value = serde_json::from_str(args.trim()).ok()?;
        calls.push(call(name, Some(&args))?);
    }
    (!calls.is_empty()).then_some(calls)
}

fn call(name: &str, arguments: Option<&Value>) -> Option<ToolCall> {
    let arguments = match arguments {
        None => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return None,
    };
    (!name.is_empty()).then(|| ToolCall {
        name: name.to_string(),
        arguments,
        id: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model's own text of a call, as Groq quoted it back in `failed_generation`
    /// (`groq__400_tool_use_failed.json`).
    const GROQ_GENERATION: &str =
        "{\"name\": \"get_something_by_name\", \"arguments\": {\n  \"foo\": \"bar\"\n}}";

    fn split_in_pieces(content: &str, size: usize) -> Split {
        let mut t = TextCalls::default();
        let mut out = Split::default();
        let chars: Vec<char> = content.chars().collect();
        for piece in chars.chunks(size) {
            let s = t.feed(&piece.iter().collect::<String>());
            out.text.push_str(&s.text);
            out.calls.extend(s.calls);
        }
        out.text.push_str(&t.finish().text);
        out
    }

    fn calls(list: &[(&str, &str)]) -> Vec<ToolCall> {
        list.iter()
            .map(|(n, a)| ToolCall {
                name: n.to_string(),
                arguments: a.to_string(),
                id: String::new(),
            })
            .collect()
    }

    #[test]
    fn hermes_and_kimi_blocks_become_calls_at_any_split() {
        let hermes = format!("Let me check.<tool_call>{GROQ_GENERATION}</tool_call>");
        let kimi = "On it. <|tool_calls_section_begin|> <|tool_call_begin|> functions.add:0 <|tool_call_argument_begin|> {\"a\": 1} <|tool_call_end|> <|tool_call_begin|> functions.multiply:1 <|tool_call_argument_begin|> {\"b\": 2} <|tool_call_end|> <|tool_calls_section_end|>";
        let cases: Vec<(&str, &str, Vec<ToolCall>)> = vec![
            (
                &hermes,
                "Let me check.",
                calls(&[("get_something_by_name", r#"{"foo":"bar"}"#)]),
            ),
            (
                kimi,
                "On it. ",
                calls(&[("add", r#"{"a":1}"#), ("multiply", r#"{"b":2}"#)]),
            ),
            ("No calls, a < b.", "No calls, a < b.", vec![]),
            (
                "<tool_call>not json</tool_call>",
                "<tool_call>not json</tool_call>",
                vec![],
            ),
            (
                "cut <tool_call>{\"name\"",
                "cut <tool_call>{\"name\"",
                vec![],
            ),
            (
                "<tool_call>{\"name\": \"now\"}</tool_call> done",
                " done",
                calls(&[("now", "{}")]),
            ),
        ];
        for (content, text, want) in cases {
            for size in 1..=content.chars().count() {
                let got = split_in_pieces(content, size);
                assert_eq!(
                    (got.text.as_str(), &got.calls),
                    (text, &want),
                    "{content:?} / {size}"
                );
            }
            let whole = split_text_calls(content);
            assert_eq!((whole.text.as_str(), &whole.calls), (text, &want));
        }
    }

    #[test]
    fn idle_between_blocks() {
        let mut t = TextCalls::default();
        assert!(t.idle());
        t.feed("text <tool");
        assert!(!t.idle());
        t.feed("_call>{\"name\": \"x\"}</tool_call>");
        assert!(t.idle());
    }
}
