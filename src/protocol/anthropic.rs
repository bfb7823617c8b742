//! Anthropic Messages (Claude Code) ⇄ chat completions.
//!
//! Requests: `system` (string or blocks) and `role: "system"` messages, text, images,
//! `tool_use` and `tool_result` blocks, tools and `tool_choice` become a chat request; fields
//! chat providers do not take (`thinking`, `output_config`, `context_management`,
//! `cache_control`, `metadata`) are dropped. Answers: a Messages object, or a Messages event
//! stream with `event:` lines (Claude Code shows nothing without them).

use serde_json::{json, Map, Value};

use super::errors::BadRequest;
use super::wire::{chat_cached, chat_usage, new_id, take, take_string, CallIds};
use crate::answers::path::Lookup;
use crate::answers::toolcall::Piece;

/// Text of a `content` that is a string or an array of text blocks (moved, not copied).
fn text_of(content: Value) -> String {
    match content {
        Value::String(s) => s,
        Value::Array(blocks) => blocks
            .into_iter()
            .filter_map(|mut b| match b {
                Value::String(s) => Some(s),
                _ if b.get("type").and_then(Value::as_str) == Some("text") => {
                    match take(&mut b, "text") {
                        Value::String(s) => Some(s),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An `image` block as a chat `image_url` part.
fn image_part(block: &Value) -> Option<Value> {
    let src = block.get("source")?;
    let url = match src.get("type").and_then(Value::as_str) {
        Some("base64") => format!(
            "data:{};base64,{}",
            src.get("media_type")
                .and_then(Value::as_str)
                .unwrap_or("image/png"),
            src.get("data").and_then(Value::as_str).unwrap_or("")
        ),
        Some("url") => src.get("url").and_then(Value::as_str)?.to_string(),
        _ => return None,
    };
    Some(json!({"type": "image_url", "image_url": {"url": url}}))
}

/// Chat `content` from text and image parts: a plain string when it is text only.
fn chat_content(mut parts: Vec<Value>) -> Value {
    if parts.iter().all(|p| p["type"] == "text") {
        Value::String(
            parts
                .iter_mut()
                .map(|p| take_string(p, "text"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    } else {
        Value::Array(parts)
    }
}

/// Translates a Messages request into a chat completions request. The request is taken
/// apart, not copied: a long history is megabytes.
pub fn to_chat(req: Value) -> Result<Value, BadRequest> {
    let Value::Object(mut obj) = req else {
        return Err(BadRequest::Shape("request body must be a JSON object"));
    };
    let Some(Value::Array(messages_in)) = obj.remove("messages") else {
        return Err(BadRequest::Shape(
            "request body must have a \"messages\" array",
        ));
    };
    let mut messages = Vec::new();
    if let Some(system) = obj.remove("system") {
        let text = text_of(system);
        if !text.is_empty() {
            messages.push(json!({"role": "system", "content": text}));
        }
    }
    for mut m in messages_in {
        let content = take(&mut m, "content");
        match m.get("role").and_then(Value::as_str).unwrap_or("user") {
            "system" => messages.push(json!({"role": "system", "content": text_of(content)})),
            "assistant" => messages.push(assistant_message(content)),
            _ => user_messages(content, &mut messages),
        }
    }
    let mut out = Map::new();
    out.insert("model".into(), obj.remove("model").unwrap_or(json!("fcm")));
    out.insert("messages".into(), Value::Array(messages));
    let tools: Vec<Value> = match obj.remove("tools") {
        Some(Value::Array(tools)) => tools.into_iter().filter_map(chat_tool).collect(),
        _ => Vec::new(),
    };
    if !tools.is_empty() {
        out.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = obj.get("tool_choice").and_then(tool_choice) {
            out.insert("tool_choice".into(), choice);
        }
    }
    for (from, to) in [
        ("max_tokens", "max_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("stop_sequences", "stop"),
    ] {
        if let Some(v) = obj.remove(from).filter(|v| !v.is_null()) {
            out.insert(to.into(), v);
        }
    }
    let stream = obj.get("stream").and_then(Value::as_bool).unwrap_or(false);
    crate::answers::call::set_stream(&mut out, stream);
    Ok(Value::Object(out))
}

/// A client tool as a chat function. Server tools (web search, ...) have no input schema:
/// a chat provider cannot run them.
fn chat_tool(mut t: Value) -> Option<Value> {
    let schema = t.get_mut("input_schema").map(Value::take)?;
    let name = t.get("name")?.as_str()?;
    Some(json!({"type": "function", "function": {
        "name": name,
        "description": t.get("description").and_then(Value::as_str).unwrap_or(""),
        "parameters": schema,
    }}))
}

fn tool_choice(choice: &Value) -> Option<Value> {
    Some(match choice.get("type")?.as_str()? {
        "auto" => json!("auto"),
        "any" => json!("required"),
        "none" => json!("none"),
        "tool" => json!({"type": "function", "function": {"name": choice.get("name")?}}),
        _ => return None,
    })
}

fn assistant_message(content: Value) -> Value {
    let mut text = Vec::new();
    let mut calls = Vec::new();
    match content {
        Value::String(s) => text.push(s),
        Value::Array(blocks) => {
            for mut b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => text.push(take_string(&mut b, "text")),
                    Some("tool_use") => calls.push(json!({
                        "id": b.get_mut("id").map_or(json!(""), Value::take),
                        "type": "function",
                        "function": {
                            "name": b.get_mut("name").map_or(json!(""), Value::take),
                            "arguments": b.get("input").map_or("{}".to_string(), Value::to_string),
                        }
                    })),
                    // Thinking blocks carry provider signatures no chat model can use.
                    _ => {}
                }
            }
        }
        _ => {}
    }
    let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text.join("\n")) }});
    if !calls.is_empty() {
        msg["tool_calls"] = Value::Array(calls);
    }
    msg
}

/// A user turn: `tool_result` blocks become `tool` messages (in order, first), the rest one
/// user message.
fn user_messages(content: Value, out: &mut Vec<Value>) {
    let blocks = match content {
        Value::Array(b) => b,
        other => {
            out.push(json!({"role": "user", "content": text_of(other)}));
            return;
        }
    };
    let mut parts = Vec::new();
    for mut b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("tool_result") => {
                let mut text = text_of(take(&mut b, "content"));
                if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                    text = format!("Error: {text}");
                }
                let id = b.get_mut("tool_use_id").map_or(json!(""), Value::take);
                out.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
            Some("text") => {
                parts.push(json!({"type": "text", "text": take_string(&mut b, "text")}))
            }
            Some("image") => parts.extend(image_part(&b)),
            Some("document") if b.at("/source/type").and_then(Value::as_str) == Some("text") => {
                if let Some(Value::String(t)) = b.at_mut("/source/data").map(Value::take) {
                    parts.push(json!({"type": "text", "text": t}));
                }
            }
            _ => {}
        }
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": chat_content(parts)}));
    }
}

/// Chat `finish_reason` → Messages `stop_reason`.
pub(super) fn stop_reason(finish: Option<&str>) -> &'static str {
    match finish {
        Some("tool_calls") | Some("function_call") => "tool_use",
        Some("length") => "max_tokens",
        _ => "end_turn",
    }
}

/// A tool call's `arguments` string as the `input` object Claude Code expects.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({"_raw": arguments}),
    }
}

/// The signature fcm gives the thinking blocks it makes. Claude Code keeps a thinking block's
/// signature and sends the block back in later turns; fcm drops thinking blocks from the
/// history it sends upstream (no chat provider can verify or use them), so the signature
/// only has to be present and recognisably fcm's, never a claim of Anthropic's.
pub(crate) fn thinking_signature() -> String {
    new_id("fcm-thinking-")
}

/// A chat completion JSON as a Messages object: reasoning (any field, or a leading
/// `<think>` block) as a `thinking` block first, then the text, then the tool calls.
#[cfg(test)]
pub fn from_chat(chat: &Value, model: &str) -> Value {
    from_chat_ids(chat, model, &mut CallIds::default())
}

/// [`from_chat`], noting the ids given to the provider's calls in `ids`.
pub(crate) fn from_chat_ids(chat: &Value, model: &str, ids: &mut CallIds) -> Value {
    let choice = chat.at("/choices/0").cloned().unwrap_or(Value::Null);
    let msg = choice.get("message").cloned().unwrap_or(Value::Null);
    let mut content = Vec::new();
    let said = crate::answers::reasoning::parts(&msg);
    let split = crate::answers::reasoning::split_think(&said.text);
    let reasoning = format!("{}{}", said.reasoning, split.reasoning);
    if !reasoning.is_empty() {
        content.push(
            json!({"type": "thinking", "thinking": reasoning, "signature": thinking_signature()}),
        );
    }
    if !split.text.is_empty() {
        content.push(json!({"type": "text", "text": split.text}));
    }
    for call in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let piece = Piece::of(call);
        content.push(json!({
            "type": "tool_use",
            "id": ids.mint("toolu_", piece.id.unwrap_or("")),
            "name": piece.name(),
            "input": tool_input(piece.arguments()),
        }));
    }
    let has_tools = content.iter().any(|c| c["type"] == "tool_use");
    // `tool_calls` with no call to run is a plain end.
    let reason = match (
        has_tools,
        choice.get("finish_reason").and_then(Value::as_str),
    ) {
        (true, _) => "tool_use",
        (false, Some("tool_calls" | "function_call")) => "end_turn",
        (false, finish) => stop_reason(finish),
    };
    let (input, output) = chat_usage(chat).unwrap_or((0, 0));
    json!({
        "id": new_id("msg_"), "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": reason, "stop_sequence": Value::Null,
        "usage": usage(input, output, chat_cached(chat)),
    })
}

/// Anthropic's usage for a chat usage: its `input_tokens` leave out what the prompt cache
/// served, which is `cache_read_input_tokens` (a chat `prompt_tokens` counts both).
pub(super) fn usage(prompt: u64, output: u64, cached: u64) -> Value {
    json!({"input_tokens": prompt.saturating_sub(cached), "output_tokens": output,
           "cache_read_input_tokens": cached.min(prompt), "cache_creation_input_tokens": 0})
}

/// An error in Anthropic's envelope for an HTTP status, typed as Anthropic types its own.
pub fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 | 422 => "invalid_request_error",
        413 => "request_too_large",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The local token estimate for `/v1/messages/count_tokens`.
pub fn count_tokens(req: &Value) -> Value {
    let chars = ["system", "messages", "tools"]
        .iter()
        .filter_map(|k| req.get(*k))
        .map(crate::tokens::text_chars)
        .sum();
    json!({"input_tokens": crate::tokens::estimate(chars)})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Messages request of the shape Claude Code 2.1 sends (its text replaced).
    fn claude_code_request() -> Value {
        json!({
            "model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
            "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "metadata": {"user_id": "u"},
            "system": [{"type": "text", "text": "header line"}, {"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}}],
            "tools": [
                {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
                "<23 more tools: Read, Write>",
                {"type": "web_search_20250305", "name": "web_search"}
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "context"}, {"type": "text", "text": "say hi", "cache_control": {"type": "ephemeral"}}]},
                {"role": "system", "content": "Agents available: ..."},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "echo hi"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "hi"}], "is_error": false},
                    {"type": "text", "text": "and now?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
                ]}
            ]
        })
    }

    #[test]
    fn request_translation() {
        let chat = to_chat(claude_code_request()).unwrap();
        let m = chat["messages"].as_array().unwrap();
        assert_eq!(
            m[0],
            json!({"role": "system", "content": "header line\nYou are an agent."})
        );
        assert_eq!(m[1], json!({"role": "user", "content": "context\nsay hi"}));
        assert_eq!(
            m[2],
            json!({"role": "system", "content": "Agents available: ..."})
        );
        assert_eq!(
            m[3]["tool_calls"][0],
            json!({"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"echo hi\"}"}})
        );
        assert_eq!(m[3]["content"], Value::Null, "thinking is dropped");
        assert_eq!(
            m[4],
            json!({"role": "tool", "tool_call_id": "toolu_1", "content": "hi"})
        );
        assert_eq!(
            m[5]["content"][0],
            json!({"type": "text", "text": "and now?"})
        );
        assert_eq!(
            m[5]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
        );
        assert_eq!(
            chat["tools"].as_array().unwrap().len(),
            1,
            "placeholders and server tools dropped"
        );
        assert_eq!(chat["tools"][0]["function"]["name"], "Bash");
        assert_eq!(
            (chat["max_tokens"].as_u64(), chat["stream"].as_bool()),
            (Some(32000), Some(true))
        );
        for dropped in [
            "thinking",
            "output_config",
            "context_management",
            "metadata",
            "system",
        ] {
            assert!(chat.get(dropped).is_none(), "{dropped} forwarded");
        }
        assert!(!chat.to_string().contains("cache_control"));
    }

    #[test]
    fn tool_choice_and_sampling_fields() {
        let req = json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.2, "top_p": 0.9,
            "stop_sequences": ["END"], "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool", "name": "f"}});
        let chat = to_chat(req).unwrap();
        assert_eq!(
            chat["tool_choice"],
            json!({"type": "function", "function": {"name": "f"}})
        );
        assert_eq!(
            (chat["temperature"].as_f64(), chat["top_p"].as_f64()),
            (Some(0.2), Some(0.9))
        );
        assert_eq!(chat["stop"], json!(["END"]));
        assert_eq!(
            tool_choice(&json!({"type": "any"})),
            Some(json!("required"))
        );
        assert!(to_chat(json!({"model": "m"})).is_err());
    }

    #[test]
    fn completion_to_message() {
        let chat = json!({"choices": [{"message": {"content": "Hi!", "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]}, "finish_reason": "tool_calls"}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 4}});
        let m = from_chat(&chat, "claude-x");
        assert_eq!(m["content"][0], json!({"type": "text", "text": "Hi!"}));
        assert_eq!(m["content"][1]["input"], json!({"command": "ls"}));
        assert!(
            m["content"][1]["id"]
                .as_str()
                .unwrap()
                .starts_with("toolu_"),
            "fresh ids: {m}"
        );
        assert_eq!(
            (m["stop_reason"].as_str(), m["model"].as_str()),
            (Some("tool_use"), Some("claude-x"))
        );
        assert_eq!(
            m["usage"],
            json!({"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})
        );
        let plain = from_chat(
            &json!({"choices": [{"message": {"content": "x"}, "finish_reason": "length"}]}),
            "m",
        );
        assert_eq!(plain["stop_reason"], "max_tokens");
    }

    #[test]
    fn errors_and_token_counts() {
        assert_eq!(error(429, "slow")["error"]["type"], "rate_limit_error");
        assert_eq!(error(503, "x")["error"]["type"], "overloaded_error");
        assert_eq!(error(413, "x")["error"]["type"], "request_too_large");
        assert_eq!(error(401, "x")["type"], "error");
        let n = count_tokens(
            &json!({"system": "abcd", "messages": [{"role": "user", "content": "efgh"}]}),
        )["input_tokens"]
            .as_u64()
            .unwrap();
        assert_eq!(n, 3, "12 characters (the texts and the role name) / 4");
    }
}
