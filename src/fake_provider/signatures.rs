//! The fake provider's Gemini 3: each tool call it makes carries
//! `extra_content.google.thought_signature`, and a request whose history holds one of its
//! calls without that signature is refused with a 400, as Gemini's OpenAI-compatible
//! endpoint refuses it. Like Google's validator it lets a documented placeholder stand in
//! for a lost signature; its last answer says how many calls came back signed and how
//! many with a placeholder. Two tool turns of the client's shell tool, then a text answer.

use std::io;
use std::net::TcpStream;

use serde_json::{json, Value};

use super::tools::shell_tool;
use super::wire::{chunk, completion, ok_answer, send_fixed, SseWriter};

/// Whether the request offers a tool of this name.
fn offers(body: &Value, name: &str) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(name))
}

/// The values Google's docs give for a function call whose signature was lost.
const PLACEHOLDERS: [&str; 2] = [
    "skip_thought_signature_validator",
    "context_engineering_is_the_way_to_go",
];

/// The signature of the `n`th call (from 0) of a conversation.
fn signature(n: usize) -> String {
    format!("fcm-sig-{n}")
}

/// Answers one turn: a refusal when a call of an earlier turn came back unsigned.
pub(super) fn signed_turn(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    stream: bool,
    body: &Value,
) -> io::Result<bool> {
    let messages = body.get("messages").and_then(Value::as_array);
    let calls: Vec<&Value> = messages
        .into_iter()
        .flatten()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .collect();
    let mut placeholders = 0;
    for (n, call) in calls.iter().enumerate() {
        let said = call
            .pointer("/extra_content/google/thought_signature")
            .and_then(Value::as_str);
        if said.is_some_and(|s| PLACEHOLDERS.contains(&s)) {
            placeholders += 1;
        } else if said != Some(signature(n).as_str()) {
            let refusal = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": format!("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{}` , position {}.", call.pointer("/function/name").and_then(Value::as_str).unwrap_or(""), n + 1)}});
            return send_fixed(
                out,
                400,
                "application/json",
                &[],
                refusal.to_string().as_bytes(),
            );
        }
    }
    let tool = shell_tool(body);
    let done = calls.len() >= 2 || tool.is_none();
    let text = match placeholders {
        0 => format!(
            "Both tool turns kept their thought signatures ({} calls signed).",
            calls.len().min(2)
        ),
        p => format!(
            "The tool turns went on: {} calls signed, {p} with a placeholder signature.",
            calls.len() - p
        ),
    };
    // A client whose run ends only through its completion tool (Cline's `submit_and_exit`)
    // is given the verdict that way, signed like every call; the others get it as text.
    let finish = offers(body, "submit_and_exit");
    if done && (!finish || calls.len() > 2) {
        return ok_answer(
            out,
            id,
            model,
            &text,
            stream,
            true,
            std::time::Duration::ZERO,
        );
    }
    let (name, args) = match tool {
        Some(_) if done => (
            "submit_and_exit".to_string(),
            json!({"summary": text, "verified": true}),
        ),
        Some(t) => t,
        None => unreachable!("done when no shell tool is offered"),
    };
    let n = calls.len();
    let call = json!({"id": format!("function-call-{n}"), "type": "function",
        "function": {"name": name, "arguments": args.to_string()},
        "extra_content": {"google": {"thought_signature": signature(n)}}});
    if !stream {
        let message = json!({"role": "assistant", "content": null, "tool_calls": [call]});
        return completion(out, id, model, message, "tool_calls");
    }
    // As Gemini streams it: the whole call in one chunk, without an index.
    let mut w = SseWriter::start(out);
    w.data(&chunk(
        id,
        model,
        json!({"role": "assistant", "tool_calls": [call]}),
        None,
    ))?;
    w.data(&chunk(id, model, json!({}), Some("tool_calls")))?;
    w.done()
}
