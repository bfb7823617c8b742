//! OpenAI Responses (Codex; Cursor's chat body) ⇄ chat completions.
//!
//! Requests: `instructions`, `input` (a string or items: messages with developer, user and
//! assistant roles, `function_call`, `function_call_output`, their `custom_tool_call`
//! counterparts), function and custom tools, from `tools` and `additional_tools` items
//! (namespaces flattened; custom tools as functions of one string, see `freeform`; tools a
//! chat provider cannot run, such as `web_search`, dropped), `tool_choice`
//! and `max_output_tokens`. `reasoning`, `include`, `store`, `prompt_cache_key` and the like
//! are not forwarded. Answers: a Responses object, or the Responses event stream Codex needs
//! (`output_item.done` and `response.completed` with usage included).

use serde_json::{json, Map, Value};

use super::errors::BadRequest;
use super::freeform::ClientTools;
use super::wire::{chat_cached, chat_usage, new_id, take, take_string, CallIds};
use crate::answers::path::Lookup;
use crate::answers::toolcall::Piece;

/// The text of an input or output part (moved, not copied).
fn part_text(mut part: Value) -> Option<String> {
    match part {
        Value::String(s) => Some(s),
        _ => match part.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text" | "summary_text") => {
                match take(&mut part, "text") {
                    Value::String(s) => Some(s),
                    _ => None,
                }
            }
            _ => None,
        },
    }
}

/// Chat content for a Responses message's `content` (string or parts).
fn content(c: Value) -> Value {
    let parts = match c {
        s @ Value::String(_) => return s,
        Value::Array(parts) => parts,
        _ => return json!(""),
    };
    let mut out = Vec::new();
    for p in parts {
        if p.get("type").and_then(Value::as_str) == Some("input_image") {
            let url = p
                .get("image_url")
                .and_then(Value::as_str)
                .or_else(|| p.at("/image_url/url").and_then(Value::as_str));
            if let Some(url) = url {
                out.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
        } else if let Some(text) = part_text(p) {
            out.push(json!({"type": "text", "text": text}));
        }
    }
    if out.iter().all(|p| p["type"] == "text") {
        json!(out
            .iter_mut()
            .map(|p| take_string(p, "text"))
            .collect::<Vec<_>>()
            .join("\n"))
    } else {
        Value::Array(out)
    }
}

/// Function tools (custom tools as functions of one string), with namespaces flattened and
/// tools chat providers cannot run dropped.
fn tools(list: Vec<Value>, out: &mut Vec<Value>) {
    for mut t in list {
        match t.get("type").and_then(Value::as_str) {
            Some("function") => {
                let parameters = match take(&mut t, "parameters") {
                    Value::Null => json!({"type": "object", "properties": {}}),
                    p => p,
                };
                let Some(name) = t.get("name").and_then(Value::as_str) else {
                    continue;
                };
                out.push(json!({"type": "function", "function": {
                    "name": name,
                    "description": t.get("description").and_then(Value::as_str).unwrap_or(""),
                    "parameters": parameters,
                }}));
            }
            Some("custom") => out.extend(super::freeform::custom_as_function(&t)),
            Some("namespace") => {
                if let Value::Array(inner) = take(&mut t, "tools") {
                    tools(inner, out);
                }
            }
            _ => {}
        }
    }
}

/// The output of a `function_call_output` item as text.
fn output_text(output: Value) -> String {
    match output {
        Value::String(s) => s,
        Value::Array(parts) => parts
            .into_iter()
            .filter_map(part_text)
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Translates a Responses request (or a chat request carrying `input`) into a chat request.
/// The request is taken apart, not copied: a long history is megabytes.
pub fn to_chat(req: Value) -> Result<Value, BadRequest> {
    let client = ClientTools::of(&req);
    let Value::Object(mut obj) = req else {
        return Err(BadRequest::Shape("request body must be a JSON object"));
    };
    let mut offered = Vec::new();
    let input = obj
        .remove("input")
        .ok_or(BadRequest::Shape("request body must have \"input\""))?;
    let mut messages = Vec::new();
    if let Some(text) = obj
        .get("instructions")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        messages.push(json!({"role": "system", "content": text}));
    }
    match input {
        Value::String(s) => messages.push(json!({"role": "user", "content": s})),
        Value::Array(items) => {
            for mut item in items {
                let kind = item.get("type").and_then(Value::as_str).unwrap_or(
                    if item.get("role").is_some() {
                        "message"
                    } else {
                        ""
                    },
                );
                match kind {
                    "message" => {
                        let role = match item.get("role").and_then(Value::as_str).unwrap_or("user")
                        {
                            "developer" | "system" => "system",
                            "assistant" => "assistant",
                            _ => "user",
                        };
                        let content = content(take(&mut item, "content"));
                        messages.push(json!({"role": role, "content": content}));
                    }
                    "function_call" | "custom_tool_call" => {
                        let custom = kind == "custom_tool_call";
                        let id = match take(&mut item, "call_id") {
                            Value::Null => take(&mut item, "id"),
                            id => id,
                        };
                        let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                        let (name, arguments) = match item.get("input").and_then(Value::as_str) {
                            Some(input) if custom => ClientTools::history_call(name, input),
                            _ => (
                                name.to_string(),
                                item.get("arguments")
                                    .and_then(Value::as_str)
                                    .unwrap_or("{}")
                                    .to_string(),
                            ),
                        };
                        let call = json!({
                            "id": if id.is_null() { json!("") } else { id },
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        });
                        match messages.last_mut() {
                            // The assistant's text and its calls are one chat turn, and
                            // consecutive calls belong to one assistant turn.
                            Some(last) if last["role"] == "assistant" => {
                                if last.get("tool_calls").is_none() {
                                    last["tool_calls"] = json!([]);
                                }
                                last["tool_calls"].as_array_mut().expect("tool_calls is an array").push(call);
                            }
                            _ => messages.push(json!({"role": "assistant", "content": Value::Null, "tool_calls": [call]})),
                        }
                    }
                    "additional_tools" => {
                        if let Value::Array(list) = take(&mut item, "tools") {
                            offered.extend(list);
                        }
                    }
                    "function_call_output" | "custom_tool_call_output" => {
                        let output = output_text(take(&mut item, "output"));
                        let id = item.get_mut("call_id").map_or(json!(""), Value::take);
                        messages
                            .push(json!({"role": "tool", "tool_call_id": id, "content": output}));
                    }
                    // Reasoning items carry encrypted state no chat model can read.
                    _ => {}
                }
            }
        }
        _ => {
            return Err(BadRequest::Shape(
                "\"input\" must be a string or an array of items",
            ))
        }
    }
    let mut out = Map::new();
    out.insert("model".into(), obj.remove("model").unwrap_or(json!("fcm")));
    out.insert("messages".into(), Value::Array(messages));
    let mut chat_tools = Vec::new();
    if let Some(Value::Array(mut list)) = obj.remove("tools") {
        list.append(&mut offered);
        offered = list;
    }
    tools(offered, &mut chat_tools);
    chat_tools.extend(client.added().iter().cloned());
    // A tool given twice (in `tools` and an `additional_tools` item) is offered once.
    let mut seen = std::collections::HashSet::new();
    chat_tools.retain(|t| {
        seen.insert(
            t.at("/function/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        )
    });
    if !chat_tools.is_empty() {
        out.insert("tools".into(), Value::Array(chat_tools));
        match obj.get("tool_choice") {
            Some(Value::String(s)) if ["auto", "none", "required"].contains(&s.as_str()) => {
                out.insert("tool_choice".into(), json!(s));
            }
            Some(c)
                if matches!(
                    c.get("type").and_then(Value::as_str),
                    Some("function" | "custom")
                ) =>
            {
                out.insert("tool_choice".into(), json!({"type": "function", "function": {"name": c.get("name").cloned().unwrap_or(json!(""))}}));
            }
            _ => {}
        }
    }
    let max = match obj.remove("max_output_tokens").filter(|v| !v.is_null()) {
        Some(v) => Some(v),
        None => obj.remove("max_tokens").filter(|v| !v.is_null()),
    };
    if let Some(v) = max {
        out.insert("max_tokens".into(), v);
    }
    for k in ["temperature", "top_p"] {
        if let Some(v) = obj.remove(k).filter(|v| !v.is_null()) {
            out.insert(k.into(), v);
        }
    }
    let stream = obj.get("stream").and_then(Value::as_bool).unwrap_or(false);
    crate::answers::call::set_stream(&mut out, stream);
    Ok(Value::Object(out))
}

/// Responses usage: `input_tokens` counts the cached part too, as chat's `prompt_tokens`.
pub(super) fn usage(input: u64, output: u64, cached: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output, "total_tokens": input + output,
           "input_tokens_details": {"cached_tokens": cached.min(input)}, "output_tokens_details": {"reasoning_tokens": 0}})
}

pub(super) fn response(
    id: &str,
    model: &str,
    status: &str,
    output: Vec<Value>,
    usage: Value,
) -> Value {
    json!({"id": id, "object": "response", "created_at": crate::time::now_ms() / 1000, "status": status,
           "model": model, "output": output, "usage": usage, "error": Value::Null, "incomplete_details": Value::Null})
}

pub(super) fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({"type": "message", "id": id, "status": status, "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// A `reasoning` output item whose summary is the model's reasoning text.
pub(super) fn reasoning_item(id: &str, text: &str) -> Value {
    json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": text}]})
}

/// A chat completion JSON as a Responses object: reasoning (any field, or a leading `<think>`
/// block) as a `reasoning` item first, then the message, then the function calls.
#[cfg(test)]
pub fn from_chat(chat: &Value, model: &str) -> Value {
    from_chat_ids(
        chat,
        model,
        &mut CallIds::default(),
        &ClientTools::default(),
    )
}

/// [`from_chat`], noting the ids given to the provider's calls in `ids`; each call in the
/// form `client` runs it.
pub(crate) fn from_chat_ids(
    chat: &Value,
    model: &str,
    ids: &mut CallIds,
    client: &ClientTools,
) -> Value {
    let msg = chat
        .at("/choices/0/message")
        .cloned()
        .unwrap_or(Value::Null);
    let mut output = Vec::new();
    let said = crate::answers::reasoning::parts(&msg);
    let split = crate::answers::reasoning::split_think(&said.text);
    let reasoning = format!("{}{}", said.reasoning, split.reasoning);
    if !reasoning.is_empty() {
        output.push(reasoning_item(&new_id("rs_"), &reasoning));
    }
    // Cut at the length limit: the answer says so, as the streamed one does.
    let cut = chat.at("/choices/0/finish_reason").and_then(Value::as_str) == Some("length");
    let status = if cut { "incomplete" } else { "completed" };
    if !split.text.is_empty() {
        output.push(message_item(&new_id("msg_"), &split.text, status));
    }
    for call in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let piece = Piece::of(call);
        let call_id = ids.mint("call_", piece.id.unwrap_or(""));
        let args = piece.arguments.unwrap_or("{}");
        output.push(client.item(&new_id("fc_"), &call_id, piece.name(), args));
    }
    let (input, out_tokens) = chat_usage(chat).unwrap_or((0, 0));
    let mut r = response(
        &new_id("resp_"),
        model,
        status,
        output,
        usage(input, out_tokens, chat_cached(chat)),
    );
    if cut {
        r["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the function tools a translated request offers, in order.
    fn tool_names(chat: &Value) -> Vec<&str> {
        chat["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect()
    }
    use crate::protocol::{ErrorReport, Protocol};

    /// A Responses request of the shape Codex 0.171 sends (its text replaced).
    fn codex_request(with_tool_output: bool) -> Value {
        let mut input = vec![
            json!({"type": "message", "id": "msg_a", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]}),
            json!({"type": "message", "id": "msg_b", "role": "user", "content": [{"type": "input_text", "text": "<environment_context/>"}]}),
            json!({"type": "message", "id": "msg_c", "role": "user", "content": [{"type": "input_text", "text": "say hi"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}),
        ];
        if with_tool_output {
            input.push(json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "xx"}));
            input.push(json!({"type": "function_call", "status": "completed", "id": "fc_1", "name": "exec_command", "arguments": "{\"cmd\": \"echo ok\"}", "call_id": "call_1"}));
            input.push(json!({"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "ok\n"}));
        }
        json!({
            "model": "gpt-5-codex", "stream": true, "input": input, "tool_choice": "auto", "parallel_tool_calls": true,
            "reasoning": {"summary": "auto"}, "store": false, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k",
            "client_metadata": {"turn_id": "t"},
            "tools": [
                {"type": "function", "name": "exec_command", "description": "Run", "strict": false, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
                {"type": "namespace", "name": "mcp", "tools": [{"type": "function", "name": "view_image", "parameters": {"type": "object"}}]},
                {"type": "web_search"},
                "<8 more tools: write_stdin>"
            ]
        })
    }

    #[test]
    fn request_translation() {
        let chat = to_chat(codex_request(true)).unwrap();
        let m = chat["messages"].as_array().unwrap();
        assert_eq!(
            m[0],
            json!({"role": "system", "content": "You are a coding agent."})
        );
        assert_eq!(
            m[1],
            json!({"role": "user", "content": "<environment_context/>"})
        );
        assert_eq!(
            m[2]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
        );
        assert_eq!(
            m[3]["tool_calls"][0],
            json!({"id": "call_1", "type": "function", "function": {"name": "exec_command", "arguments": "{\"cmd\": \"echo ok\"}"}})
        );
        assert_eq!(
            m[4],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "ok\n"})
        );
        assert_eq!(m.len(), 5, "the reasoning item is dropped");
        let names = tool_names(&chat);
        assert_eq!(
            names,
            ["exec_command", "view_image"],
            "namespace flattened, web_search and placeholders dropped"
        );
        assert_eq!(chat["tool_choice"], "auto");
        for dropped in [
            "reasoning",
            "include",
            "store",
            "prompt_cache_key",
            "client_metadata",
            "parallel_tool_calls",
            "input",
        ] {
            assert!(chat.get(dropped).is_none(), "{dropped} forwarded");
        }
    }

    /// Codex with a model it knows as GPT: `apply_patch` is a custom tool with a grammar,
    /// more tools come in an `additional_tools` item, and the history holds a custom call.
    #[test]
    fn custom_tools_and_their_history() {
        let patch = json!({"type": "custom", "name": "apply_patch", "description": "Edit files.",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch"}});
        let exec =
            json!({"type": "function", "name": "exec_command", "parameters": {"type": "object"}});
        let request = json!({"model": "gpt-5.5", "tools": [patch], "tool_choice": "auto", "input": [
            {"type": "additional_tools", "tools": [{"type": "namespace", "name": "ns", "tools": [exec]}, {"type": "custom", "name": "apply_patch"}]},
            {"type": "message", "role": "user", "content": "fix it"},
            {"type": "custom_tool_call", "call_id": "call_9", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"},
            {"type": "custom_tool_call_output", "call_id": "call_9", "output": "Done!"},
        ]});
        let chat = to_chat(request).unwrap();
        let names = tool_names(&chat);
        assert_eq!(
            names,
            ["apply_patch", "exec_command"],
            "given twice, offered once"
        );
        let described = chat["tools"][0]["function"]["description"]
            .as_str()
            .unwrap();
        assert!(described.contains("start: begin_patch"), "{described}");
        let m = chat["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "the additional_tools item is no message: {m:?}");
        assert_eq!(
            m[1]["tool_calls"][0]["function"],
            json!({"name": "apply_patch", "arguments": "{\"input\":\"*** Begin Patch\\n*** End Patch\"}"})
        );
        assert_eq!(
            m[2],
            json!({"role": "tool", "tool_call_id": "call_9", "content": "Done!"})
        );
    }

    /// The model's call of a custom tool goes back as a `custom_tool_call`.
    #[test]
    fn custom_calls_answer_as_custom_tool_calls() {
        let request = json!({"input": "x", "tools": [{"type": "custom", "name": "apply_patch"}]});
        let chat = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "apply_patch", "arguments": "{\"input\":\"P\"}"}}]},
            "finish_reason": "tool_calls"}]});
        let r = from_chat_ids(
            &chat,
            "m",
            &mut CallIds::default(),
            &ClientTools::of(&request),
        );
        let item = &r["output"][0];
        assert_eq!(
            (
                item["type"].as_str(),
                item["name"].as_str(),
                item["input"].as_str()
            ),
            (Some("custom_tool_call"), Some("apply_patch"), Some("P"))
        );
        assert!(item.get("arguments").is_none());
    }

    #[test]
    fn string_input_instructions_and_limits() {
        let chat = to_chat(json!({"model": "m", "instructions": "Be brief.", "input": "hi", "max_output_tokens": 99})).unwrap();
        assert_eq!(
            chat["messages"],
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
        );
        assert_eq!(
            (chat["max_tokens"].as_u64(), chat["stream"].as_bool()),
            (Some(99), Some(false))
        );
        assert!(to_chat(json!({"model": "m"})).is_err());
        assert!(to_chat(json!({"input": 5})).is_err());
    }

    #[test]
    fn completion_to_response() {
        let chat = json!({"choices": [{"message": {"content": "Hi", "tool_calls": [{"id": "call_7", "function": {"name": "exec_command", "arguments": "{}"}}]}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
        let r = from_chat(&chat, "gpt-x");
        assert_eq!(
            (
                r["object"].as_str(),
                r["status"].as_str(),
                r["model"].as_str()
            ),
            (Some("response"), Some("completed"), Some("gpt-x"))
        );
        assert_eq!(r["output"][0]["content"][0]["text"], "Hi");
        assert_eq!(r["output"][1]["type"], "function_call");
        assert!(r["output"][1]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("call_"));
        assert_eq!(r["usage"]["total_tokens"], 5);
    }

    #[test]
    fn errors_use_openai_shape() {
        let error = |status| Protocol::Responses.error(&ErrorReport::new(status, "x"));
        assert_eq!(error(404)["error"]["type"], "not_found_error");
        assert_eq!(error(429)["error"]["type"], "rate_limit_error");
    }
}
