//! Client protocols at the edge. The router speaks OpenAI chat completions; these adapters
//! turn an Anthropic Messages or OpenAI Responses request into a chat request, and a chat
//! answer (JSON or stream) back into the client's own shapes, errors included. Pure: values
//! and bytes in, values and bytes out, so the gate, classifier and breakers never see other
//! protocols.

pub(crate) mod anthropic;
mod anthropic_stream;
pub(crate) mod chat;
#[cfg(test)]
mod prop;
mod redacted;
pub(crate) mod responses;
mod responses_stream;

use serde_json::{json, Value};

use crate::answers::path::Lookup;

use std::sync::Arc;

pub(crate) use crate::answers::toolcall::ToolCalls;
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
            let mut delta = chat::call_value(call);
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

/// The protocol a client speaks; chosen by the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// OpenAI chat completions (also accepts a Responses-style `input`, as Cursor sends).
    Chat,
    /// Anthropic Messages (Claude Code).
    Anthropic,
    /// OpenAI Responses (Codex).
    Responses,
}

/// Why a client's request cannot be routed, in words the client's user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BadRequest {
    /// The body is not JSON at all.
    NotJson(String),
    /// JSON, but not the protocol's request shape.
    Shape(&'static str),
}

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadRequest::NotJson(e) => write!(f, "request body is not valid JSON: {e}"),
            BadRequest::Shape(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for BadRequest {}

/// What an error answer says, whatever the protocol: the one input of [`Protocol::error`].
#[derive(Debug, Default)]
pub(crate) struct ErrorReport<'a> {
    pub status: u16,
    pub message: &'a str,
    /// OpenAI's `error.type` when the status alone does not say it (`overloaded`).
    pub kind: Option<&'a str>,
    /// OpenAI's `error.code`: the routing outcome (`all_failed`).
    pub code: Option<&'a str>,
    /// Each failed attempt, for clients that can show them.
    pub attempts: Option<Value>,
}

impl<'a> ErrorReport<'a> {
    pub(crate) fn new(status: u16, message: &'a str) -> ErrorReport<'a> {
        ErrorReport {
            status,
            message,
            ..ErrorReport::default()
        }
    }
}

impl Protocol {
    /// The client's request (already parsed) as a chat request. A chat request is used as
    /// it is: moved, never copied.
    pub(crate) fn to_chat(self, body: Value) -> Result<Value, BadRequest> {
        match self {
            Protocol::Chat if body.get("messages").is_some_and(Value::is_array) => Ok(body),
            Protocol::Chat if body.get("input").is_some() => responses::to_chat(body),
            Protocol::Chat => Err(BadRequest::Shape(
                "request body must be a JSON object with a \"messages\" array",
            )),
            Protocol::Anthropic => anthropic::to_chat(body),
            Protocol::Responses => responses::to_chat(body),
        }
    }

    /// An error body in this protocol's envelope (OpenAI's for chat and Responses): the one
    /// table from protocol to envelope. Both envelopes carry the failed attempts, when there
    /// were any, as `error.attempts`.
    pub(crate) fn error(self, report: &ErrorReport<'_>) -> Value {
        let mut body = match self {
            Protocol::Anthropic => anthropic::error(report.status, report.message),
            Protocol::Chat | Protocol::Responses => openai_error(report),
        };
        if let Some(attempts) = &report.attempts {
            body["error"]["attempts"] = attempts.clone();
        }
        body
    }

    /// A complete chat answer in this protocol's shape.
    /// `parsed`: the body as the gate parsed it, when it did (it is not parsed again). A
    /// plain answer the gate only skimmed goes to a chat client as the provider's bytes
    /// when no repair applies, without being parsed at all.
    pub(crate) fn answer(
        self,
        chat_body: Vec<u8>,
        parsed: Option<Value>,
        model: &str,
        split_think_tags: bool,
        tools: Option<&Offered>,
    ) -> Vec<u8> {
        if self == Protocol::Chat
            && parsed.is_none()
            && crate::answers::gate::skim::Skim::of(&chat_body)
                .is_some_and(|s| s.needs_no_repair(split_think_tags, tools.is_some()))
        {
            return chat_body;
        }
        let parsed =
            parsed.unwrap_or_else(|| serde_json::from_slice(&chat_body).unwrap_or(Value::Null));
        if self == Protocol::Chat {
            return chat::answer(chat_body, parsed, split_think_tags, tools);
        }
        let mut chat = parsed;
        // Reasoning always goes apart for these clients; tool-call markup becomes calls.
        chat::normalize(&mut chat, true, tools);
        let answer = match self {
            Protocol::Anthropic => anthropic::from_chat(&chat, model),
            _ => responses::from_chat(&chat, model),
        };
        answer.to_string().into_bytes()
    }

    /// What turns a chat stream into this protocol's stream.
    /// `tools`: the request's tools, which every call the client gets must pass.
    pub(crate) fn stream_shape(
        self,
        model: &str,
        split_think_tags: bool,
        tools: Option<Arc<Offered>>,
    ) -> StreamShape {
        match self {
            Protocol::Chat => {
                StreamShape::Chat(Box::new(chat::ChatStream::new(split_think_tags, tools)))
            }
            Protocol::Anthropic => {
                StreamShape::Events(Box::new(anthropic_stream::Translator::new(model, tools)))
            }
            Protocol::Responses => {
                StreamShape::Events(Box::new(responses_stream::Translator::new(model, tools)))
            }
        }
    }
}

/// A committed chat stream on its way to the client: chat bytes repaired where needed
/// (`chat`), or translated into another protocol's events.
pub(crate) enum StreamShape {
    Chat(Box<chat::ChatStream>),
    Events(Box<dyn StreamTranslator>),
}

impl StreamShape {
    /// Bytes to send before the stream's own.
    pub(crate) fn start(&mut self) -> Vec<u8> {
        match self {
            StreamShape::Chat(_) => Vec::new(),
            StreamShape::Events(t) => t.start(),
        }
    }

    /// The client's bytes for chat bytes the hold buffer released, and their parsed chunks.
    pub(crate) fn shape(&mut self, bytes: Vec<u8>, chunks: Vec<Value>) -> Vec<u8> {
        match self {
            StreamShape::Chat(c) => c.shape(bytes, chunks),
            StreamShape::Events(t) => t.feed(&chunks),
        }
    }

    /// Ends the client's stream: cleanly, or after content when `error` says the upstream
    /// broke (a chat stream then ends with `[DONE]`, the others with their error event).
    pub(crate) fn finish(&mut self, error: Option<&str>) -> Vec<u8> {
        match self {
            StreamShape::Chat(c) => {
                let mut out = c.finish();
                if error.is_some() {
                    out.extend_from_slice(b"data: [DONE]\n\n");
                }
                out
            }
            StreamShape::Events(t) => t.finish(error),
        }
    }
}

/// OpenAI's error envelope (chat completions and Responses clients read `error.message`).
fn openai_error(r: &ErrorReport<'_>) -> Value {
    let kind = r.kind.unwrap_or(match r.status {
        401 => "authentication_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    });
    json!({"error": {"message": r.message, "type": kind, "code": r.code}})
}

/// Turns a committed chat completion stream into a client's event stream, chunk by chunk.
/// It reads the chunks the content gate already parsed: a stream is parsed once.
pub(crate) trait StreamTranslator: Send {
    /// Bytes to send before anything else (e.g. `message_start`).
    fn start(&mut self) -> Vec<u8>;
    /// Translates one parsed chat chunk, appending the client's events to `out`.
    fn on_chunk(&mut self, chunk: &Value, out: &mut Vec<u8>);
    /// Ends the client's stream cleanly. `error` is set when the upstream broke after
    /// content had been sent.
    fn finish(&mut self, error: Option<&str>) -> Vec<u8>;

    /// Translates parsed chat chunks, in stream order.
    fn feed(&mut self, chunks: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in chunks {
            self.on_chunk(chunk, &mut out);
        }
        out
    }
}

/// A complete chat completion re-expressed as chat stream chunks, for a client that asked
/// for a stream from a provider that answered in one piece.
pub(crate) fn chunks_from_completion(v: &Value) -> Vec<Value> {
    let id = v.get("id").cloned().unwrap_or(Value::Null);
    let model = v.get("model").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    for choice in v
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let index = choice.get("index").cloned().unwrap_or(json!(0));
        let mut delta = choice.get("message").cloned().unwrap_or(json!({}));
        if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (i, call) in calls.iter_mut().enumerate() {
                if let Some(call) = call.as_object_mut() {
                    call.insert("index".into(), json!(i));
                }
            }
        }
        out.push(json!({"id": id, "object": "chat.completion.chunk", "model": model,
                        "choices": [{"index": index, "delta": delta, "finish_reason": Value::Null}]}));
        out.push(json!({"id": id, "object": "chat.completion.chunk", "model": model,
                        "choices": [{"index": index, "delta": {}, "finish_reason": choice.get("finish_reason").cloned().unwrap_or(json!("stop"))}]}));
    }
    if let Some(usage) = v.get("usage") {
        out.push(json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage}));
    }
    out
}

/// Chat chunks as a chat SSE stream (`data:` events, then `[DONE]`).
pub(crate) fn chat_events(chunks: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend_from_slice(b"data: ");
        out.extend(chunk.to_string().into_bytes());
        out.extend_from_slice(b"\n\n");
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

/// Moves `key`'s value out of a JSON object (`null` when absent): requests are translated
/// by taking them apart, never by copying them.
fn take(v: &mut Value, key: &str) -> Value {
    v.get_mut(key).map(Value::take).unwrap_or(Value::Null)
}

/// Moves `key`'s string out of a JSON object (empty when absent or not a string).
fn take_string(v: &mut Value, key: &str) -> String {
    match take(v, key) {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// Test support: raw chat SSE bytes (split anywhere) as the parsed chunks a translator reads.
#[cfg(test)]
pub(crate) mod testing {
    use serde_json::Value;

    use crate::answers::sse::{SseEvent, SseParser};

    #[derive(Default)]
    pub(crate) struct ChatChunks {
        parser: SseParser,
        events: Vec<SseEvent>,
    }

    impl ChatChunks {
        /// The JSON chunks completed by these bytes (`[DONE]` and garbage are skipped).
        pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Value> {
            self.parser.feed(bytes, &mut self.events);
            self.events
                .drain(..)
                .filter(|e| e.data.trim() != "[DONE]")
                .filter_map(|e| serde_json::from_str(&e.data).ok())
                .collect()
        }
    }

    /// The chunks of whole events.
    pub(crate) fn chunks_of(bytes: &[u8]) -> Vec<Value> {
        ChatChunks::default().feed(bytes)
    }

    /// Runs a chat stream through a translator in pieces of `size` bytes, as a stream
    /// arrives, and returns the client's events as (event name, data).
    pub(crate) fn translate(
        t: &mut dyn super::StreamTranslator,
        chat_stream: &str,
        size: usize,
    ) -> Vec<(String, Value)> {
        let mut bytes = t.start();
        let mut chunks = ChatChunks::default();
        for c in chat_stream.as_bytes().chunks(size) {
            bytes.extend(t.feed(&chunks.feed(c)));
        }
        bytes.extend(t.finish(None));
        let mut events = Vec::new();
        SseParser::new().feed(&bytes, &mut events);
        events
            .into_iter()
            .map(|e| {
                (
                    e.event.unwrap_or_default(),
                    serde_json::from_str(&e.data).unwrap(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_envelope_lists_the_failed_attempts() {
        let attempts = json!([{"model": "p/a", "status": 500, "kind": "provider_server_error", "detail": "boom"}]);
        let report = ErrorReport {
            code: Some("all_failed"),
            attempts: Some(attempts.clone()),
            ..ErrorReport::new(503, "no model could answer")
        };
        for proto in [Protocol::Chat, Protocol::Anthropic, Protocol::Responses] {
            let body = proto.error(&report);
            assert_eq!(body["error"]["attempts"], attempts, "{proto:?}");
            assert_eq!(
                body["error"]["message"], "no model could answer",
                "{proto:?}"
            );
        }
        let anthropic = Protocol::Anthropic.error(&report);
        assert_eq!(
            (
                anthropic["type"].as_str(),
                anthropic["error"]["type"].as_str()
            ),
            (Some("error"), Some("overloaded_error"))
        );
        assert_eq!(Protocol::Chat.error(&report)["error"]["code"], "all_failed");
        let plain = Protocol::Anthropic.error(&ErrorReport::new(400, "bad"));
        assert!(plain["error"].get("attempts").is_none());
    }

    #[test]
    fn completion_becomes_a_stream() {
        let body = br#"{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"completion_tokens":3}}"#;
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let stream = chat_events(&chunks_from_completion(&v));
        let mut events = Vec::new();
        crate::answers::sse::SseParser::new().feed(&stream, &mut events);
        assert_eq!(events.len(), 4);
        let first: Value = serde_json::from_str(&events[0].data).unwrap();
        assert_eq!(first["choices"][0]["delta"]["content"], "hi");
        assert_eq!(first["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
        assert!(events[1].data.contains("tool_calls"));
        assert!(events[2].data.contains("completion_tokens"));
        assert_eq!(events[3].data, "[DONE]");
    }
}

/// One SSE event with an `event:` line, as Anthropic and Responses clients expect.
pub fn sse_event(name: &str, data: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {data}\n\n").into_bytes()
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
    /// Non-empty text content (still with any `<think>` markup: see `reasoning::ThinkTags`).
    pub text: Option<String>,
    /// Non-empty reasoning from the reasoning fields or thinking parts.
    pub reasoning: Option<String>,
    pub tool_calls: Vec<Value>,
    pub finish: Option<String>,
    /// (prompt tokens, completion tokens) when the chunk carries usage.
    pub usage: Option<(u64, u64)>,
}

/// Reads the first choice's delta (or message) of a chat chunk.
pub fn chat_delta(chunk: &Value) -> ChatDelta {
    let choice = chunk.at("/choices/0");
    let delta = choice.and_then(|c| c.get("delta").or_else(|| c.get("message")));
    let said = delta
        .map(crate::answers::reasoning::parts)
        .unwrap_or_default();
    let some = |s: String| (!s.is_empty()).then_some(s);
    ChatDelta {
        text: some(said.text),
        reasoning: some(said.reasoning),
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
