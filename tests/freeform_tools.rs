//! Codex's freeform tools through `fcm serve`: a custom `apply_patch` (in `tools` or in an
//! `additional_tools` item) reaches the model as a function and its call comes back as a
//! `custom_tool_call`; with no patch tool offered but the instructions asking for one, the
//! call comes back as the shell command Codex applies patches with; and a request every
//! model answers with a call of a tool it did not offer ends in a status no client retries.

mod support;

use fcm::fake_provider::PATCH;
use serde_json::{json, Value};
use support::*;

/// `(event, data)` pairs of an SSE body.
fn events(body: &str) -> Vec<(String, Value)> {
    let mut parser = fcm::answers::sse::SseParser::new();
    let mut evs = Vec::new();
    parser.feed(body.as_bytes(), &mut evs);
    parser.finish(&mut evs);
    evs.into_iter()
        .map(|e| {
            let data = serde_json::from_str(&e.data).unwrap_or(Value::Null);
            (e.event.unwrap_or_default(), data)
        })
        .collect()
}

fn exec_command() -> Value {
    json!({"type": "function", "name": "exec_command", "description": "Runs a command.",
           "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}})
}

fn custom_patch() -> Value {
    json!({"type": "custom", "name": "apply_patch", "description": "Edit files with a patch.",
           "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"}})
}

/// A Codex request: its instructions as a developer message, then the user's words.
fn codex(model: &str, stream: bool, tools: Value, more: &[Value]) -> Value {
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text",
        "text": "You are a coding agent. Edit files with the apply_patch tool."}]}),
    ];
    input.extend(more.iter().cloned());
    input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "create hello.txt"}]}));
    json!({"model": model, "stream": stream, "store": false, "tool_choice": "auto",
           "prompt_cache_key": format!("{model}-{stream}"), "tools": tools, "input": input})
}

/// The names of the tools fcm offered the provider in its last request.
fn offered(fake: &fcm::fake_provider::FakeProvider) -> Vec<String> {
    let sent = fake.requests().last().unwrap().json();
    sent["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.pointer("/function/name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

/// Sends Codex's follow-up after it applied the patch; checks the model's answer and that
/// the patch call went upstream as an `apply_patch` function call. What fcm sent upstream.
fn patch_round_trip(
    s: &Server,
    fake: &fcm::fake_provider::FakeProvider,
    follow_up: &Value,
) -> Vec<Value> {
    let r = s.post("/v1/responses", &follow_up.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.json()["output"][0]["content"][0]["text"],
        "fcm-patch-done"
    );
    let sent = fake.requests().last().unwrap().json();
    let m = sent["messages"].as_array().unwrap().clone();
    let n = m.len();
    assert_eq!(
        m[n - 2]["tool_calls"][0]["function"],
        json!({"name": "apply_patch", "arguments": json!({"input": PATCH}).to_string()})
    );
    m
}

#[test]
fn a_custom_tool_in_additional_tools_is_called_and_its_output_goes_back() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["patches"]);
    let s = w.serve(&[]);
    // A model name Codex does not know: its tools come in an `additional_tools` item.
    let body = codex(
        "gpt-6.2-sol",
        true,
        json!([]),
        &[json!({"type": "additional_tools", "tools": [exec_command(), custom_patch()]})],
    );
    let r = s.post("/v1/responses", &body.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(offered(&fake), ["exec_command", "apply_patch"]);
    let ev = events(&r.body);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    let at = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("{name} in {names:?}"))
    };
    assert!(at("response.output_item.added") < at("response.custom_tool_call_input.delta"));
    assert!(
        at("response.custom_tool_call_input.delta") < at("response.custom_tool_call_input.done")
    );
    assert!(at("response.custom_tool_call_input.done") < at("response.output_item.done"));
    assert_eq!(names.last(), Some(&"response.completed"));
    let item = &ev[at("response.output_item.done")].1["item"];
    assert_eq!(
        (
            item["type"].as_str(),
            item["name"].as_str(),
            item["input"].as_str()
        ),
        (Some("custom_tool_call"), Some("apply_patch"), Some(PATCH))
    );

    // Codex sends the call and what applying it printed: the model reads them as a tool turn.
    let call_id = item["call_id"].as_str().unwrap();
    let mut follow_up = codex(
        "gpt-6.2-sol",
        false,
        json!([]),
        &[json!({"type": "additional_tools", "tools": [exec_command(), custom_patch()]})],
    );
    let input = follow_up["input"].as_array_mut().unwrap();
    input.push(json!({"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": PATCH}));
    input.push(json!({"type": "custom_tool_call_output", "call_id": call_id, "output": "Success. Updated: A hello.txt"}));
    let m = patch_round_trip(&s, &fake, &follow_up);
    let n = m.len();
    assert_eq!(
        m[n - 1],
        json!({"role": "tool", "tool_call_id": call_id, "content": "Success. Updated: A hello.txt"})
    );
}

#[test]
fn a_custom_tool_in_tools_answers_as_a_custom_call_whole() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["patches"]);
    let s = w.serve(&[]);
    let body = codex(
        "gpt-5.5",
        false,
        json!([exec_command(), custom_patch()]),
        &[],
    );
    let r = s.post("/v1/responses", &body.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    let sent = fake.requests().last().unwrap().json();
    let patch_tool = &sent["tools"][1]["function"];
    assert_eq!(patch_tool["parameters"]["required"], json!(["input"]));
    assert!(patch_tool["description"]
        .as_str()
        .unwrap()
        .contains("start: begin_patch"));
    let item = &r.json()["output"][0];
    assert_eq!(
        (item["type"].as_str(), item["input"].as_str()),
        (Some("custom_tool_call"), Some(PATCH))
    );
}

/// With model `fcm`, Codex names apply_patch in its instructions but offers no such tool:
/// fcm offers it, and the model's call comes back as an `exec_command` running
/// `apply_patch` on the patch, which Codex applies.
#[test]
fn apply_patch_named_but_not_offered_comes_back_as_a_shell_command() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["patches"]);
    let s = w.serve(&[]);
    for stream in [false, true] {
        let body = codex("fcm", stream, json!([exec_command()]), &[]);
        let r = s.post("/v1/responses", &body.to_string());
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(offered(&fake), ["exec_command", "apply_patch"]);
        let item = if stream {
            events(&r.body)
                .into_iter()
                .find(|(n, d)| {
                    n == "response.output_item.done" && d["item"]["type"] == "function_call"
                })
                .expect("a function_call item")
                .1["item"]
                .clone()
        } else {
            r.json()["output"][0].clone()
        };
        assert_eq!(item["name"], "exec_command", "stream={stream}: {item}");
        let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
        let cmd = args["cmd"].as_str().unwrap();
        assert!(cmd.starts_with("apply_patch <<'EOF'\n"), "{cmd}");
        // The shell hands `apply_patch` the patch exactly.
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("apply_patch() {{ cat; }}\n{cmd}"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), PATCH);
    }
}

/// A call of a tool the request did not offer, from every model: retrying gets the same
/// answer, so the client gets 422 without `Retry-After` (not a 503 to retry forever).
#[test]
fn calls_of_a_tool_not_offered_from_every_model_end_without_a_retry() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["unknown_tool", "unknown_tool#2"]);
    let s = w.serve(&[]);
    for stream in [false, true] {
        let body = codex("fcm", stream, json!([exec_command()]), &[]);
        let r = s.post("/v1/responses", &body.to_string());
        assert_eq!(r.status, 422, "stream={stream}: {r:?}");
        assert_eq!(r.header("retry-after"), None);
        let message = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains("launch_rockets"), "{message}");
        assert!(message.contains("cannot run"), "{message}");
    }
}

/// Codex's code mode, as Codex sends it for `gpt-6.2-sol`: one freeform `exec` tool that runs
/// JavaScript, in a `functions` namespace, with the real tools declared in its description.
fn code_mode_tools() -> Value {
    let description = "Run JavaScript code to orchestrate/compose tool calls\n\
        - All nested tools are available on the global `tools` object.\n\n\
        ### `apply_patch`\nThe `apply_patch` tool can be used to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.\n\n\
        exec tool declaration:\n```ts\ndeclare const tools: { apply_patch(input: string): Promise<unknown>; };\n```\n\n\
        ### `exec_command`\nRuns a command in a PTY.\n\n\
        exec tool declaration:\n```ts\ndeclare const tools: { exec_command(args: {\n  // Shell command to execute.\n  cmd: string;\n  login?: boolean;\n}): Promise<unknown>; };\n```\n";
    json!({"type": "additional_tools", "tools": [
        {"type": "namespace", "name": "functions", "description": "", "tools": [
            {"type": "custom", "name": "exec", "description": description, "format": {"type": "text"}},
            {"type": "function", "name": "wait", "parameters": {"type": "object", "properties": {}}},
        ]},
    ]})
}

/// In code mode the tools `exec` declares are offered as functions; a call of one comes back
/// as the `exec` script that makes it (in `exec`'s namespace), and in the next turn's
/// history the model sees its own call again.
#[test]
fn code_mode_tools_are_offered_and_called_through_exec() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["patches"]);
    let s = w.serve(&[]);
    let body = codex("gpt-6.2-sol", true, json!([]), &[code_mode_tools()]);
    let r = s.post("/v1/responses", &body.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        offered(&fake),
        ["exec", "wait", "apply_patch", "exec_command"]
    );
    let sent = fake.requests().last().unwrap().json();
    let exec_command = sent["tools"][3]["function"]["parameters"].clone();
    assert_eq!(exec_command["required"], json!(["cmd"]));
    let (_, done) = events(&r.body)
        .into_iter()
        .find(|(n, d)| n == "response.output_item.done" && d["item"]["type"] == "custom_tool_call")
        .expect("a custom_tool_call item");
    let item = &done["item"];
    assert_eq!(
        (item["name"].as_str(), item["namespace"].as_str()),
        (Some("exec"), Some("functions"))
    );
    let script = item["input"].as_str().unwrap();
    assert_eq!(
        script,
        format!("text(await tools[\"apply_patch\"]({}));", json!(PATCH))
    );

    // Codex ran the script: the call and its output come back as Codex words them.
    let call_id = item["call_id"].as_str().unwrap();
    let mut follow_up = codex("gpt-6.2-sol", false, json!([]), &[code_mode_tools()]);
    let input = follow_up["input"].as_array_mut().unwrap();
    input.push(json!({"type": "custom_tool_call", "call_id": call_id, "name": "exec", "namespace": "functions", "input": script}));
    input.push(
        json!({"type": "custom_tool_call_output", "call_id": call_id, "output": [
        {"type": "input_text", "text": "Script completed\nOutput:\n"},
        {"type": "input_text", "text": "Success. Updated: A hello.txt"}]}),
    );
    let m = patch_round_trip(&s, &fake, &follow_up);
    let n = m.len();
    assert_eq!(
        m[n - 1]["content"],
        "Script completed\nOutput:\n\nSuccess. Updated: A hello.txt"
    );
}
