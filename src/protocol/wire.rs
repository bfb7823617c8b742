//! The pieces of the chat wire the translators share: reading a chunk's delta and usage,
//! chat chunks from a whole answer and as SSE, one SSE event, ids, and taking fields out of
//! a request rather than copying them.

use serde_json::{json, Value};

use crate::answers::path::Lookup;

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
    chat_frames(chunks, &mut out);
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

/// Chat chunks as SSE `data:` frames, appended to `out`.
pub(crate) fn chat_frames(chunks: &[Value], out: &mut Vec<u8>) {
    for chunk in chunks {
        out.extend_from_slice(b"data: ");
        out.extend(chunk.to_string().into_bytes());
        out.extend_from_slice(b"\n\n");
    }
}

/// Moves `key`'s value out of a JSON object (`null` when absent): requests are translated
/// by taking them apart, never by copying them.
pub(crate) fn take(v: &mut Value, key: &str) -> Value {
    v.get_mut(key).map(Value::take).unwrap_or(Value::Null)
}

/// Moves `key`'s string out of a JSON object (empty when absent or not a string).
pub(crate) fn take_string(v: &mut Value, key: &str) -> String {
    match take(v, key) {
        Value::String(s) => s,
        _ => String::new(),
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

/// The ids handed to a client for a provider's tool calls, each with the provider's own id:
/// what the provider said about a call is kept under the id the client will send back.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct CallIds(pub(crate) Vec<(String, String)>);

impl CallIds {
    /// A fresh id with `prefix` for the provider's call `upstream` (empty: it gave none).
    /// Fresh, because providers repeat theirs (`call_1` every turn) or send none.
    pub(crate) fn mint(&mut self, prefix: &str, upstream: &str) -> String {
        let id = new_id(prefix);
        if !upstream.is_empty() {
            self.0.push((id.clone(), upstream.to_string()));
        }
        id
    }
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

/// Prompt tokens a chat chunk or completion says the provider's cache served (0 when it
/// says nothing).
pub fn chat_cached(v: &Value) -> u64 {
    crate::answers::gate::cached_tokens(v).unwrap_or(0)
}

/// A DeepSeek-style usage (`prompt_cache_hit_tokens`) also said the OpenAI way
/// (`prompt_tokens_details.cached_tokens`), which chat clients read. Returns whether it
/// changed.
pub(crate) fn usage_cached_openai_way(v: &mut Value) -> bool {
    let Some(u) = v.get_mut("usage").and_then(Value::as_object_mut) else {
        return false;
    };
    let Some(hit) = u.get("prompt_cache_hit_tokens").and_then(Value::as_u64) else {
        return false;
    };
    if u.get("prompt_tokens_details")
        .is_some_and(|d| d.get("cached_tokens").is_some())
    {
        return false;
    }
    let details = u
        .entry("prompt_tokens_details")
        .or_insert_with(|| serde_json::json!({}));
    match details.as_object_mut() {
        Some(d) => {
            d.insert("cached_tokens".into(), hit.into());
            true
        }
        None => false,
    }
}

/// `(prompt tokens, completion tokens)` of a chat body or chunk that reports usage.
pub fn chat_usage(v: &Value) -> Option<(u64, u64)> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    Some((
        u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        u.get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    ))
}
