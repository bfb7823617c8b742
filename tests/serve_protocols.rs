//! Claude Code's Anthropic Messages and Codex's Responses through `fcm serve`: translated to
//! chat for the router, answered in the client's own shapes, failover before the first event.

mod support;

use serde_json::{json, Value};
use support::*;

/// `(event, data)` pairs of an SSE body with `event:` lines.
fn events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut parser = fcm::answers::sse::SseParser::new();
    let mut evs = Vec::new();
    parser.feed(body.as_bytes(), &mut evs);
    parser.finish(&mut evs);
    for e in evs {
        out.push((
            e.event.unwrap_or_default(),
            serde_json::from_str(&e.data).unwrap_or(Value::Null),
        ));
    }
    out
}

fn messages_body(stream: bool) -> String {
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream,
        "thinking": {"type": "adaptive"}, "metadata": {"user_id": "u"}, "output_config": {"effort": "high"},
        "system": [{"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Bash", "description": "Run", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "say hi"}]}]
    })
    .to_string()
}

fn responses_body(stream: bool) -> String {
    json!({
        "model": "gpt-5-codex", "stream": stream, "store": false, "reasoning": {"summary": "auto"},
        "include": ["reasoning.encrypted_content"], "tool_choice": "auto",
        // One conversation per call (Codex sends one key per session): each request here
        // is routed afresh, not kept on the model of the one before.
        "prompt_cache_key": format!("k-{stream}"),
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}, {"type": "web_search"}],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]}
        ]
    })
    .to_string()
}

fn text_deltas(ev: &[(String, Value)], name: &str, field: &str) -> String {
    ev.iter()
        .filter(|(n, _)| n == name)
        .filter_map(|(_, d)| d.pointer(field).and_then(Value::as_str).map(str::to_string))
        .collect()
}

#[test]
fn anthropic_messages_non_stream_and_what_goes_upstream() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let r = s.post_with(
        "/v1/messages?beta=true",
        &messages_body(false),
        &[
            ("x-api-key", "anything"),
            ("anthropic-version", "2023-06-01"),
            ("anthropic-beta", "x"),
        ],
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.decision(), "p/ok!served|p/ok:200|skips=0");
    let m = r.json();
    assert_eq!(
        (m["type"].as_str(), m["role"].as_str(), m["model"].as_str()),
        (
            Some("message"),
            Some("assistant"),
            Some("claude-sonnet-4-5")
        )
    );
    assert_eq!(
        m["content"],
        json!([{"type": "text", "text": "Hello from ok."}])
    );
    assert_eq!(m["stop_reason"], "end_turn");
    let sent = fake.requests()[0].json();
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "You are an agent."})
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "Bash");
    for dropped in ["thinking", "metadata", "output_config", "system"] {
        assert!(sent.get(dropped).is_none(), "{dropped} was forwarded");
    }
    assert!(!sent.to_string().contains("cache_control"));
}

#[test]
fn anthropic_stream_fails_over_before_the_first_event() {
    let fake = fake();
    for bad in [
        "sse_error_first",
        "sse_empty",
        "empty_choices",
        "server_500",
    ] {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[bad, "ok_stream"]);
        let s = w.serve(&[]);
        let r = s.post("/v1/messages", &messages_body(true));
        assert_eq!(r.status, 200, "{bad}: {r:?}");
        assert!(
            r.decision().starts_with("p/ok_stream!served|p/"),
            "{bad}: {}",
            r.decision()
        );
        let ev = events(&r.body);
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.first(), Some(&"message_start"), "{bad}");
        assert_eq!(
            names.iter().filter(|n| **n == "message_start").count(),
            1,
            "{bad}: one message, from the winner"
        );
        assert_eq!(
            text_deltas(&ev, "content_block_delta", "/delta/text"),
            "Hello from ok_stream.",
            "{bad}"
        );
        assert_eq!(
            &names[names.len() - 2..],
            ["message_delta", "message_stop"],
            "{bad}"
        );
        assert!(
            !r.body.contains(bad),
            "{bad}: bytes of the failed attempt reached the client"
        );
    }
}

#[test]
fn anthropic_tool_call_round_trip() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["tool_calls_only"]);
    let s = w.serve(&[]);
    let ev = events(&s.post("/v1/messages", &messages_body(true)).body);
    let start = ev
        .iter()
        .find(|(n, d)| n == "content_block_start" && d["content_block"]["type"] == "tool_use")
        .expect("a tool_use block");
    assert_eq!(start.1["content_block"]["name"], "Bash");
    assert_eq!(
        text_deltas(&ev, "content_block_delta", "/delta/partial_json"),
        r#"{"command":"echo fcm-tool-ok"}"#
    );
    let delta = ev.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
    // The tool result goes back as a chat `tool` message.
    let id = start.1["content_block"]["id"].as_str().unwrap().to_string();
    let follow_up = json!({"model": "claude-x", "max_tokens": 100, "messages": [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "echo fcm-tool-ok"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "fcm-tool-ok"}]}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]});
    let r = s.post("/v1/messages", &follow_up.to_string());
    assert_eq!(r.status, 200);
    let sent = fake.requests().last().unwrap().json();
    assert_eq!(sent["messages"][1]["tool_calls"][0]["id"], id.as_str());
    assert_eq!(
        sent["messages"][2],
        json!({"role": "tool", "tool_call_id": id, "content": "fcm-tool-ok"})
    );
}

#[test]
fn anthropic_errors_use_the_anthropic_envelope() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500"]);
    let s = w.serve(&[]);
    let r = s.post("/v1/messages", &messages_body(true));
    assert_eq!(r.status, 503);
    let e = r.json();
    assert_eq!(
        (e["type"].as_str(), e["error"]["type"].as_str()),
        (Some("error"), Some("overloaded_error"))
    );
    assert!(r.header("retry-after").is_some());
    let r = s.post("/v1/messages", "{\"model\": 1}");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    let r = s.post("/v1/messages/count_tokens", &messages_body(false));
    assert!(r.json()["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        fake.requests().len(),
        1,
        "count_tokens and bad requests reach no provider"
    );
    let head = s.get("/");
    assert_eq!(head.status, 200);
}

#[test]
fn responses_non_stream_and_stream() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["sse_error_first", "ok"]);
    let s = w.serve(&[]);
    let r = s.post("/v1/responses", &responses_body(false));
    assert_eq!(r.status, 200, "{r:?}");
    let resp = r.json();
    assert_eq!(
        (resp["object"].as_str(), resp["status"].as_str()),
        (Some("response"), Some("completed"))
    );
    assert_eq!(resp["output"][0]["content"][0]["text"], "Hello from ok.");
    let sent = fake.requests().last().unwrap().json();
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(
        sent["tools"].as_array().unwrap().len(),
        1,
        "web_search is not sent to a chat provider"
    );
    for dropped in ["reasoning", "include", "store", "prompt_cache_key", "input"] {
        assert!(sent.get(dropped).is_none(), "{dropped} was forwarded");
    }

    let r = s.post("/v1/responses", &responses_body(true));
    assert_eq!(r.status, 200);
    assert!(
        r.decision()
            .contains("p/sse_error_first:error_payload->p/ok:200"),
        "{}",
        r.decision()
    );
    let ev = events(&r.body);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[0], "response.created");
    assert!(
        names.contains(&"response.output_item.done"),
        "Codex needs output_item.done: {names:?}"
    );
    assert_eq!(*names.last().unwrap(), "response.completed");
    assert_eq!(
        text_deltas(&ev, "response.output_text.delta", "/delta"),
        "Hello from ok."
    );
    let done = &ev.last().unwrap().1["response"];
    assert!(
        done["usage"]["output_tokens"].as_u64().unwrap() > 0,
        "response.completed carries usage: {done}"
    );
    assert!(!r.body.contains("provider stream failed"));
}

#[test]
fn responses_tool_call_and_tool_output() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["tool_calls_only"]);
    let s = w.serve(&[]);
    // The fake calls `Bash`: the request offers it (a call of a tool not offered fails).
    let mut body: Value = serde_json::from_str(&responses_body(true)).unwrap();
    body["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "function", "name": "Bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}));
    let ev = events(&s.post("/v1/responses", &body.to_string()).body);
    let item = ev
        .iter()
        .find(|(n, d)| n == "response.output_item.done" && d["item"]["type"] == "function_call")
        .expect("a function_call item");
    assert_eq!(
        (
            item.1["item"]["name"].as_str(),
            item.1["item"]["arguments"].as_str()
        ),
        (Some("Bash"), Some(r#"{"command":"echo fcm-tool-ok"}"#))
    );
    let call_id = item.1["item"]["call_id"].as_str().unwrap().to_string();
    let follow_up = json!({"model": "m", "input": [
        {"type": "message", "role": "user", "content": "run it"},
        {"type": "function_call", "call_id": call_id, "name": "Bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": "fcm-tool-ok"}],
        "tools": [{"type": "function", "name": "Bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}]});
    assert_eq!(s.post("/v1/responses", &follow_up.to_string()).status, 200);
    let sent = fake.requests().last().unwrap().json();
    assert_eq!(
        sent["messages"][2],
        json!({"role": "tool", "tool_call_id": call_id, "content": "fcm-tool-ok"})
    );
}

#[test]
fn chat_endpoint_takes_responses_style_input_and_keeps_usage() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let r = s.post(
        "/v1/chat/completions",
        &json!({"model": "fcm", "input": "hi"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "Hello from ok."
    );
    let r = s.post("/v1/chat/completions", &json!({"model": "fcm", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "x"}]}).to_string());
    let last_chunk = r
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .rfind(|d| *d != "[DONE]")
        .unwrap();
    let v: Value = serde_json::from_str(last_chunk).unwrap();
    assert!(
        v["usage"]["completion_tokens"].as_u64().unwrap() > 0,
        "Cline reads usage from the last chunk: {last_chunk}"
    );
}
