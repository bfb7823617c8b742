//! A stream's content on its way to a client, taken apart: a leading `<think>` block as
//! reasoning, tool-call markup written as text as calls ([`ContentSplit`]), and the calls a
//! client may run ([`runnable`]). Shared by the chat repairs and both translators.

use serde_json::{json, Value};

use crate::answers::toolcall::{Offered, ToolCall};

/// A stream's content on its way to a client: a leading `<think>` block taken out as
/// reasoning (always for Anthropic and Responses clients, with `splitThinkTags` for chat) and,
/// when the request offered tools, tool-call markup taken out as calls (see `textcalls`).
#[derive(Debug)]
pub(crate) struct ContentSplit {
    tags: Option<crate::answers::reasoning::ThinkTags>,
    calls: Option<crate::answers::textcalls::TextCalls>,
    /// Calls taken out so far (their stream index is above any a provider uses).
    made: u64,
}

/// What one piece of content holds.
#[derive(Debug, Default)]
pub(crate) struct ContentParts {
    pub reasoning: String,
    pub text: String,
    /// Calls as chat tool-call deltas, for a [`ToolCalls`] assembler.
    pub calls: Vec<Value>,
}

impl ContentSplit {
    pub(crate) fn new(split_think_tags: bool, tools: bool) -> ContentSplit {
        ContentSplit {
            tags: split_think_tags.then(crate::answers::reasoning::ThinkTags::default),
            calls: tools.then(crate::answers::textcalls::TextCalls::default),
            made: 0,
        }
    }

    /// Whether `text` would pass through unchanged: no block open or held back, and no `<`
    /// that could start markup.
    pub(crate) fn passes(&self, text: &[u8]) -> bool {
        self.tags
            .as_ref()
            .is_none_or(crate::answers::reasoning::ThinkTags::settled)
            && self
                .calls
                .as_ref()
                .is_none_or(|c| c.idle() && memchr::memchr(b'<', text).is_none())
    }

    /// Calls taken out of text so far.
    pub(crate) fn made(&self) -> u64 {
        self.made
    }

    pub(crate) fn feed(&mut self, content: &str) -> ContentParts {
        let parts = match &mut self.tags {
            Some(tags) => tags.feed(content),
            None => crate::answers::reasoning::Parts {
                text: content.to_string(),
                reasoning: String::new(),
            },
        };
        self.calls_from(parts.reasoning, parts.text, false)
    }

    pub(crate) fn finish(&mut self) -> ContentParts {
        let parts = match &mut self.tags {
            Some(tags) => tags.finish(),
            None => crate::answers::reasoning::Parts::default(),
        };
        self.calls_from(parts.reasoning, parts.text, true)
    }

    fn calls_from(&mut self, reasoning: String, text: String, last: bool) -> ContentParts {
        let Some(calls) = &mut self.calls else {
            return ContentParts {
                reasoning,
                text,
                calls: Vec::new(),
            };
        };
        let mut split = calls.feed(&text);
        if last {
            split.text.push_str(&calls.finish().text);
        }
        // Ids are given by whoever assembles the calls (the translators, or chat's CallIds).
        let mut out = ContentParts {
            reasoning,
            text: split.text,
            calls: Vec::new(),
        };
        for call in split.calls {
            let mut delta = call_value(call);
            delta["index"] = json!(TEXT_CALL_INDEX + self.made);
            out.calls.push(delta);
            self.made += 1;
        }
        out
    }
}

/// Stream index given to calls taken out of text: far above the ones providers number.
const TEXT_CALL_INDEX: u64 = 1 << 20;

/// The calls a client may run: with the request's tools, those that pass the check (with
/// repaired arguments), else all of them. Returns the calls and whether any was dropped.
pub(crate) fn runnable(calls: Vec<ToolCall>, tools: Option<&Offered>) -> (Vec<ToolCall>, bool) {
    let Some(tools) = tools else {
        return (calls, false);
    };
    let before = calls.len();
    let kept: Vec<ToolCall> = calls
        .into_iter()
        .filter_map(|c| {
            let arguments = tools.check(&c.name, &c.arguments).ok()?;
            Some(ToolCall { arguments, ..c })
        })
        .collect();
    let dropped = kept.len() < before;
    (kept, dropped)
}

/// A call taken out of text, as a chat tool call (its id is given later).
pub(crate) fn call_value(call: ToolCall) -> Value {
    json!({"id": "", "type": "function", "function": {"name": call.name, "arguments": call.arguments}})
}
