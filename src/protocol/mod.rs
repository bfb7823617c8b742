//! Client protocols at the edge. The router speaks OpenAI chat completions; these adapters
//! turn an Anthropic Messages or OpenAI Responses request into a chat request, and a chat
//! answer (JSON or stream) back into the client's own shapes. Pure: values and bytes in,
//! values and bytes out, so the gate, classifier and breakers never see other protocols.

pub mod anthropic;
pub mod responses;

use serde_json::Value;

use crate::sse::{SseEvent, SseParser};

/// Turns a committed chat completion stream into a client's event stream, chunk by chunk.
pub trait StreamTranslator: Send {
    /// Bytes to send before anything else (e.g. `message_start`).
    fn start(&mut self) -> Vec<u8>;
    /// Translates more chat SSE bytes (split anywhere).
    fn feed(&mut self, chat_bytes: &[u8]) -> Vec<u8>;
    /// Ends the client's stream cleanly. `error` is set when the upstream broke after
    /// content had been sent.
    fn finish(&mut self, error: Option<&str>) -> Vec<u8>;
}

/// Chat SSE frames parsed into JSON chunks, for translators.
#[derive(Default)]
pub struct ChatChunks {
    parser: SseParser,
    events: Vec<SseEvent>,
}

impl ChatChunks {
    /// The JSON chunks completed by these bytes (`[DONE]` and garbage are skipped).
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Value> {
        self.parser.feed(bytes, &mut self.events);
        self.events
            .drain(..)
            .filter(|e| e.data.trim() != "[DONE]")
            .filter_map(|e| serde_json::from_str(&e.data).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delta(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
        let mut f = json!({"arguments": args});
        if let Some(n) = name {
            f["name"] = json!(n);
        }
        let mut d = json!({"index": index, "function": f});
        if let Some(i) = id {
            d["id"] = json!(i);
        }
        d
    }

    #[test]
    fn repeated_ids_and_interleaving_assemble_whole_calls() {
        let mut calls = ToolCalls::default();
        // The same id on every chunk, two parallel calls interleaved.
        calls.add(&delta(0, Some("c1"), Some("Bash"), "{\"command\":"));
        calls.add(&delta(1, Some("c2"), Some("Read"), "{\"path\":"));
        calls.add(&delta(0, Some("c1"), None, "\"ls\"}"));
        calls.add(&delta(1, Some(""), None, "\"a\"}"));
        let got = calls.take();
        assert_eq!(
            got,
            vec![
                ToolCall {
                    name: "Bash".into(),
                    arguments: "{\"command\":\"ls\"}".into()
                },
                ToolCall {
                    name: "Read".into(),
                    arguments: "{\"path\":\"a\"}".into()
                },
            ]
        );
        // A new id at a used index is a new call.
        calls.add(&delta(0, Some("x"), Some("A"), "{}"));
        calls.add(&delta(0, Some("y"), Some("B"), "{}"));
        assert_eq!(calls.take().len(), 2);
    }
}

/// One SSE event with an `event:` line, as Anthropic and Responses clients expect.
pub fn sse_event(name: &str, data: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {data}\n\n").into_bytes()
}

/// A rough token count for text: characters / 4 (the estimate fcm uses wherever a provider
/// reports no usage).
pub fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Characters of all string values in a JSON value (for token estimates).
pub fn text_chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.iter().map(text_chars).sum(),
        Value::Object(o) => o.values().map(text_chars).sum(),
        _ => 0,
    }
}

/// A fresh id with a prefix, unique within the process.
pub fn new_id(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}{:x}{:04x}",
        crate::time::now_ms(),
        N.fetch_add(1, Ordering::Relaxed) & 0xffff
    )
}

/// What one chat stream chunk says, in the parts translators need.
#[derive(Debug, Default)]
pub struct ChatDelta {
    /// Non-empty text content.
    pub text: Option<String>,
    pub tool_calls: Vec<Value>,
    pub finish: Option<String>,
    /// (prompt tokens, completion tokens) when the chunk carries usage.
    pub usage: Option<(u64, u64)>,
}

/// Reads the first choice's delta (or message) of a chat chunk.
pub fn chat_delta(chunk: &Value) -> ChatDelta {
    let choice = chunk.pointer("/choices/0");
    let delta = choice.and_then(|c| c.get("delta").or_else(|| c.get("message")));
    ChatDelta {
        text: delta
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string),
        tool_calls: delta
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        finish: choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
            .map(str::to_string),
        usage: chat_usage(chunk),
    }
}

/// One tool call assembled from stream deltas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: String,
}

/// Tool calls assembled from chat stream deltas, in the order they started. A delta joins
/// the latest call with its `index` unless it carries a different, non-empty id: providers
/// repeat the id on every chunk, interleave parallel calls, or send none at all.
#[derive(Debug, Default)]
pub struct ToolCalls {
    calls: Vec<(u64, Option<String>, ToolCall)>,
}

impl ToolCalls {
    pub fn add(&mut self, delta: &Value) {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        let id = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let name = delta
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let args = delta
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        let existing = self.calls.iter_mut().rev().find(|(i, _, _)| *i == index);
        let call = match existing {
            Some((_, known, call)) if id.is_none() || known.is_none() || *known == id => {
                if known.is_none() {
                    *known = id;
                }
                call
            }
            _ => {
                self.calls.push((
                    index,
                    id,
                    ToolCall {
                        name: String::new(),
                        arguments: String::new(),
                    },
                ));
                &mut self.calls.last_mut().expect("just pushed").2
            }
        };
        if call.name.is_empty() {
            call.name = name.to_string();
        }
        call.arguments.push_str(args);
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The finished calls, in order.
    pub fn take(&mut self) -> Vec<ToolCall> {
        std::mem::take(&mut self.calls)
            .into_iter()
            .map(|(_, _, c)| c)
            .collect()
    }
}

/// Usage figures from a chat chunk or completion.
pub fn chat_usage(v: &Value) -> Option<(u64, u64)> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    Some((
        u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        u.get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    ))
}
