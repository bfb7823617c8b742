//! The fake provider's tool-calling answers: whole calls of the client's shell tool, calls
//! that are broken on purpose (cut-off arguments, repeated ids, calls written as text), and
//! answers to the bench's tool ping.

use std::io;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use super::wire::{
    chunk, completion, content_pieces, ok_answer, ok_answer_with, stream_deltas, Said, SseWriter,
};

pub(super) fn tool_call_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    stream: bool,
) -> io::Result<bool> {
    call_answer(
        out,
        id,
        model,
        stream,
        "Bash",
        r#"{"command":"echo fcm-tool-ok"}"#,
    )
}

/// The shell tool a coding client offers, with arguments that echo `fcm-tool-ok`.
pub(super) fn shell_tool(body: &Value) -> Option<(String, Value)> {
    shell_tool_running(body, "echo fcm-tool-ok")
}

/// A command whose output is terminal noise around one marker: `fcm-noisy-ok` in colour,
/// a progress line redrawn ten times with CRs, and one warning printed 40 times.
pub const NOISY_COMMAND: &str = "printf '\\033[1;32mfcm-noisy-ok\\033[0m\\n'; for i in 10 20 30 40 50 60 70 80 90 100; do printf '\\rprogress %s%%' \"$i\"; done; printf '\\n'; for i in $(seq 40); do echo 'warning: the same line again'; done";

/// The answer to [`NOISY_COMMAND`]'s output as it reached the provider: whether fcm took
/// the noise out and kept every line a person would see.
pub fn noisy_verdict(output: &str) -> String {
    let warning = "warning: the same line again";
    let missing: Vec<&str> = [
        (output.contains("fcm-noisy-ok"), "the marker"),
        (
            output.contains("progress 100%"),
            "the progress line's last state",
        ),
        (output.contains(warning), "the warning"),
        (
            !output.contains('\u{1b}') && !output.contains("\\u001b"),
            "no escape codes",
        ),
        (
            !output.contains("progress 10%"),
            "no earlier progress states",
        ),
        // As a line (the command's own text names it too, where a client echoes it).
        (
            output.matches(&format!("{warning}\n")).count()
                + output.matches(&format!("{warning}\\n")).count()
                == 1,
            "the warning said once",
        ),
        (
            output.contains("[fcm: the line above appeared 40 times in a row]"),
            "its count",
        ),
    ]
    .into_iter()
    .filter(|(ok, _)| !ok)
    .map(|(_, what)| what)
    .collect();
    if missing.is_empty() {
        "The noisy tool said fcm-noisy-ok, compressed.".to_string()
    } else {
        format!(
            "The noisy tool's output was not compressed as expected: missing {}.",
            missing.join(", ")
        )
    }
}

/// The patch [`Behavior::Patches`](super::behavior::Behavior::Patches) sends: a new
/// `hello.txt` holding `fcm-patch-ok`.
pub const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+fcm-patch-ok\n*** End Patch\n";

/// What the patching model says once its patch ran, or when it has no patch tool.
pub(super) const PATCHED: &str = "fcm-patch-done";

/// The arguments of an `apply_patch` call, when the request offers that function and has
/// not yet answered a call.
pub(super) fn patch_call(body: &Value) -> Option<String> {
    let answered = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let offered = body
        .get("tools")?
        .as_array()?
        .iter()
        .any(|t| t.pointer("/function/name") == Some(&json!("apply_patch")));
    (offered && !answered).then(|| json!({ "input": PATCH }).to_string())
}

/// The shell tool a coding client offers, with arguments that run `command`.
pub(super) fn shell_tool_running(body: &Value, command: &str) -> Option<(String, Value)> {
    let names: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .collect();
    let echo = command;
    let pick = |name: &str, args: Value| names.contains(&name).then(|| (name.to_string(), args));
    pick(
        "Bash",
        json!({"command": echo, "description": "Print a marker"}),
    )
    .or_else(|| pick("exec_command", json!({"cmd": echo})))
    .or_else(|| pick("run_commands", json!({"commands": [echo]})))
    .or_else(|| {
        pick(
            "execute_command",
            json!({"command": echo, "requires_approval": false}),
        )
    })
    .or_else(|| pick("shell", json!({"command": ["bash", "-lc", echo]})))
    .or_else(|| {
        pick(
            "bash",
            json!({"command": echo, "description": "Print a marker"}),
        )
    })
}

pub(super) fn call_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    stream: bool,
    name: &str,
    args: &str,
) -> io::Result<bool> {
    if !stream {
        return completion(
            out,
            id,
            model,
            json!({"role": "assistant", "content": null,
                           "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}]}),
            "tool_calls",
        );
    }
    let mut w = SseWriter::start(out);
    w.data(&chunk(id, model, json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}]}), None))?;
    let mut mid = args.len() / 2;
    while !args.is_char_boundary(mid) {
        mid -= 1;
    }
    let (a, b) = args.split_at(mid);
    for part in [a, b] {
        w.data(&chunk(
            id,
            model,
            json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
            None,
        ))?;
    }
    w.data(&chunk(id, model, json!({}), Some("tool_calls")))?;
    w.done()
}

/// Two parallel calls of the client's shell tool (`Bash`), both with id `call_1`; their
/// continuations carry `""` and `null` ids.
pub(super) fn repeated_call_ids(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    stream: bool,
) -> io::Result<bool> {
    let call = |index: u64, args: &str| json!({"index": index, "id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": args}});
    if !stream {
        return completion(
            out,
            id,
            model,
            json!({"role": "assistant", "content": null, "tool_calls": [
                call(0, "{\"command\":\"echo one\"}"), call(1, "{\"command\":\"echo two\"}")]}),
            "tool_calls",
        );
    }
    let deltas = [
        json!({"content": null, "tool_calls": [call(0, "{\"command\":")]}),
        json!({"tool_calls": [call(1, "{\"command\":")]}),
        json!({"tool_calls": [{"index": 0, "id": "", "function": {"arguments": "\"echo one\"}"}}]}),
        json!({"tool_calls": [{"index": 1, "id": null, "function": {"name": null, "arguments": "\"echo two\"}"}}]}),
    ];
    stream_deltas(out, id, model, deltas, "tool_calls")
}

/// `Let me look.`, then a call of `Bash` whose arguments are cut off.
pub(super) fn text_then_cut_call(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    stream: bool,
) -> io::Result<bool> {
    let call = json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ec"}});
    if !stream {
        return completion(
            out,
            id,
            model,
            json!({"role": "assistant", "content": "Let me look.", "tool_calls": [call]}),
            "tool_calls",
        );
    }
    let deltas = [
        json!({"content": "Let me look."}),
        json!({"tool_calls": [call]}),
    ];
    stream_deltas(out, id, model, deltas, "tool_calls")
}

/// `text` as the whole answer (finish `stop`), streamed in 5-character pieces.
pub(super) fn text_answer_in_pieces(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    text: &str,
    stream: bool,
) -> io::Result<bool> {
    if !stream {
        return completion(
            out,
            id,
            model,
            json!({"role": "assistant", "content": text}),
            "stop",
        );
    }
    let pieces = content_pieces(text, 5);
    stream_deltas(
        out,
        id,
        model,
        std::iter::once(json!({"content": ""})).chain(pieces),
        "stop",
    )
}

/// What a model does with the tool a request offers.
pub(super) enum ToolMove {
    Call,
    Describe,
    Break,
}

/// Calls, describes or breaks a call of the request's first tool; without tools, the answer
/// `ok` gives.
pub(super) fn offered_tool_answer(
    out: &mut TcpStream,
    said: &Said<'_>,
    body: &Value,
    tool_move: ToolMove,
) -> io::Result<bool> {
    let Said {
        id,
        model,
        stream,
        usage,
        ..
    } = *said;
    let Some((name, args)) = offered_call(body) else {
        return ok_answer_with(out, said, Duration::ZERO, &[]);
    };
    let args = args.to_string();
    match tool_move {
        ToolMove::Call => call_answer(out, id, model, stream, &name, &args),
        ToolMove::Describe => {
            let text = format!("I would call {name} with {args}.");
            ok_answer(out, id, model, &text, stream, usage, Duration::ZERO)
        }
        // Without its closing brace the arguments are no JSON object: a cut-off call.
        ToolMove::Break => call_answer(out, id, model, stream, &name, &args[..args.len() - 1]),
    }
}

/// The request's first function tool, with arguments holding each property its schema
/// requires (the first `enum` value, else a sample of the property's type): a call the
/// client can run, whatever tool it offered.
pub(super) fn offered_call(body: &Value) -> Option<(String, Value)> {
    let function = body
        .get("tools")?
        .as_array()?
        .iter()
        .find_map(|t| t.get("function"))?;
    let name = function.get("name")?.as_str()?.to_string();
    let properties = function.pointer("/parameters/properties");
    let required = function
        .pointer("/parameters/required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let args: serde_json::Map<String, Value> = required
        .map(|key| {
            let schema = properties.and_then(|p| p.get(key));
            (key.to_string(), sample_value(schema))
        })
        .collect();
    Some((name, Value::Object(args)))
}

/// A value a property's schema accepts.
pub(super) fn sample_value(schema: Option<&Value>) -> Value {
    let allowed = schema
        .and_then(|s| s.get("enum"))
        .and_then(Value::as_array)
        .and_then(|e| e.first());
    if let Some(first) = allowed {
        return first.clone();
    }
    match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("Paris"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_provider::Behavior;

    #[test]
    fn the_noisy_command_is_judged_by_what_arrived() {
        let compressed = "fcm-noisy-ok\nprogress 100%\nwarning: the same line again\n[fcm: the line above appeared 40 times in a row]\n";
        assert_eq!(
            noisy_verdict(compressed),
            "The noisy tool said fcm-noisy-ok, compressed."
        );
        // Inside Cline's JSON list of results, too, beside the command itself.
        let listed =
            serde_json::to_string(&json!([{"query": NOISY_COMMAND, "result": compressed}]))
                .unwrap();
        assert_eq!(
            noisy_verdict(&listed),
            "The noisy tool said fcm-noisy-ok, compressed."
        );
        let raw = format!(
            "\x1b[1;32mfcm-noisy-ok\x1b[0m\nprogress 10%\rprogress 100%\n{}",
            "warning: the same line again\n".repeat(40)
        );
        assert_eq!(
            noisy_verdict(&raw),
            "The noisy tool's output was not compressed as expected: missing no escape codes, no earlier progress states, the warning said once, its count."
        );
        let json_raw = serde_json::to_string(&json!([{"query": "x", "result": raw}])).unwrap();
        assert!(noisy_verdict(&json_raw).contains("missing no escape codes"));
    }

    #[test]
    fn offered_calls_hold_the_required_properties() {
        let body = json!({"tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"}, "hourly": {"type": "boolean"}},
            "required": ["city", "unit", "days"]}}}]});
        assert_eq!(
            offered_call(&body),
            Some((
                "get_weather".to_string(),
                json!({"city": "Paris", "unit": "celsius", "days": 1})
            ))
        );
        let bare = json!({"tools": [{"type": "function", "function": {"name": "now"}}]});
        assert_eq!(offered_call(&bare), Some(("now".to_string(), json!({}))));
        assert_eq!(offered_call(&json!({"messages": []})), None);
        assert_eq!(
            Behavior::parse("calls_offered_tool#2"),
            Some(Behavior::CallsOfferedTool)
        );
    }
}
