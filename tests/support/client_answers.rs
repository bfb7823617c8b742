//! What a client reads of an answer in each of its protocols (chat completions, Anthropic
//! Messages, OpenAI Responses): the events of a stream, the text it carries, and a small
//! request in each protocol's shape.

use serde_json::{json, Value};

/// The events of an SSE body: (event name, data), `[DONE]` as data `[DONE]`.
pub fn events(body: &str) -> Vec<(String, String)> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|event| {
            let mut name = String::new();
            let mut data = Vec::new();
            for line in event.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push(d.trim_start());
                }
            }
            (!data.is_empty()).then(|| (name, data.join("\n")))
        })
        .collect()
}

/// The JSON data of a stream's events (`[DONE]` left out).
pub fn data(body: &str) -> Vec<Value> {
    events(body)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect()
}

/// The answer's text as the client reads it, in its protocol.
pub fn text(proto: &str, body: &str) -> String {
    let pointer = match proto {
        "chat" => "/choices/0/delta/content",
        "anthropic" => "/delta/text",
        _ => "/delta",
    };
    data(body)
        .iter()
        .filter(|v| proto != "responses" || v["type"] == "response.output_text.delta")
        .filter_map(|v| v.pointer(pointer).and_then(Value::as_str))
        .collect()
}

/// A request for a plan, in `proto`'s shape (`chat`, `anthropic`, `responses`).
pub fn request(proto: &str, model: &str, stream: bool) -> (&'static str, Value) {
    match proto {
        "chat" => (
            "/v1/chat/completions",
            json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "Plan the change."}]}),
        ),
        "anthropic" => (
            "/v1/messages",
            json!({"model": model, "stream": stream, "max_tokens": 256, "messages": [{"role": "user", "content": "Plan the change."}]}),
        ),
        _ => (
            "/v1/responses",
            json!({"model": model, "stream": stream, "input": "Plan the change."}),
        ),
    }
}

/// The three protocols a client may speak.
pub const PROTOCOLS: [&str; 3] = ["chat", "anthropic", "responses"];

/// The answer's text in a whole (not streamed) answer of `proto`.
pub fn whole_text(proto: &str, v: &Value) -> String {
    let pointer = match proto {
        "chat" => "/choices/0/message/content",
        "anthropic" => "/content/0/text",
        _ => "/output/0/content/0/text",
    };
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
