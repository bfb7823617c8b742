//! An agent only gets tool calls it can run: a call with cut-off arguments or of a tool the
//! request never offered is a failure (`invalid_tool_call`) that fails over before the
//! client sees anything, on every protocol, stream or not; after text was already sent the
//! broken call is dropped and the turn ends as a plain answer, and the failure is recorded.

mod support;

use serde_json::{json, Value};
use support::*;

/// A Bash tool as each protocol offers it.
fn body(protocol: &str, stream: bool, with_tools: bool) -> (String, String) {
    let bash_params = json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]});
    let (path, mut v) = match protocol {
        "chat" => (
            "/v1/chat/completions",
            json!({"model": "fcm", "messages": [{"role": "user", "content": "list files"}],
                   "tools": [{"type": "function", "function": {"name": "Bash", "parameters": bash_params}}]}),
        ),
        "anthropic" => (
            "/v1/messages",
            json!({"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "list files"}],
                   "tools": [{"name": "Bash", "description": "Run", "input_schema": bash_params}]}),
        ),
        _ => (
            "/v1/responses",
            json!({"model": "gpt-x", "input": "list files",
                   "tools": [{"type": "function", "name": "Bash", "parameters": bash_params}]}),
        ),
    };
    v["stream"] = json!(stream);
    if !with_tools {
        v.as_object_mut().unwrap().remove("tools");
    }
    (path.to_string(), v.to_string())
}

/// The tool calls a client received, as (name, arguments) in order.
fn calls_received(protocol: &str, stream: bool, r: &Resp) -> Vec<(String, Value)> {
    let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
    if !stream {
        let v = r.json();
        return match protocol {
            "chat" => v["choices"][0]["message"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    (
                        c["function"]["name"].as_str().unwrap().to_string(),
                        parse(c["function"]["arguments"].as_str().unwrap()),
                    )
                })
                .collect(),
            "anthropic" => v["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| (b["name"].as_str().unwrap().to_string(), b["input"].clone()))
                .collect(),
            _ => v["output"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["type"] == "function_call")
                .map(|i| {
                    (
                        i["name"].as_str().unwrap().to_string(),
                        parse(i["arguments"].as_str().unwrap()),
                    )
                })
                .collect(),
        };
    }
    let mut parser = fcm::answers::sse::SseParser::new();
    let mut evs = Vec::new();
    parser.feed(r.body.as_bytes(), &mut evs);
    parser.finish(&mut evs);
    let data: Vec<(String, Value)> = evs
        .into_iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| (e.event.unwrap_or_default(), parse(&e.data)))
        .collect();
    match protocol {
        "chat" => {
            let mut calls: Vec<(String, String)> = Vec::new();
            for (_, c) in &data {
                for d in c["choices"][0]["delta"]["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                {
                    let i = d["index"].as_u64().unwrap() as usize;
                    if calls.len() <= i {
                        calls.resize(i + 1, (String::new(), String::new()));
                    }
                    calls[i]
                        .0
                        .push_str(d["function"]["name"].as_str().unwrap_or(""));
                    calls[i]
                        .1
                        .push_str(d["function"]["arguments"].as_str().unwrap_or(""));
                }
            }
            calls.into_iter().map(|(n, a)| (n, parse(&a))).collect()
        }
        "anthropic" => {
            let names: Vec<String> = data
                .iter()
                .filter(|(n, d)| {
                    n == "content_block_start" && d["content_block"]["type"] == "tool_use"
                })
                .map(|(_, d)| d["content_block"]["name"].as_str().unwrap().to_string())
                .collect();
            let args: String = data
                .iter()
                .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
                .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap().to_string())
                .collect();
            names.into_iter().map(|n| (n, parse(&args))).collect()
        }
        _ => data
            .iter()
            .filter(|(n, d)| {
                n == "response.output_item.done" && d["item"]["type"] == "function_call"
            })
            .map(|(_, d)| {
                (
                    d["item"]["name"].as_str().unwrap().to_string(),
                    parse(d["item"]["arguments"].as_str().unwrap()),
                )
            })
            .collect(),
    }
}

const PROTOCOLS: [&str; 3] = ["chat", "anthropic", "responses"];

/// The answer text a client received.
fn text_received(protocol: &str, stream: bool, r: &Resp) -> String {
    if !stream {
        let v = r.json();
        return match protocol {
            "chat" => v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            "anthropic" => v["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect(),
            _ => v["output"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| i["content"][0]["text"].as_str())
                .collect(),
        };
    }
    let mut parser = fcm::answers::sse::SseParser::new();
    let mut evs = Vec::new();
    parser.feed(r.body.as_bytes(), &mut evs);
    parser.finish(&mut evs);
    evs.iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            let v: Value = serde_json::from_str(&e.data).ok()?;
            let piece = match protocol {
                "chat" => v["choices"][0]["delta"]["content"].as_str(),
                "anthropic" => v["delta"]["text"].as_str(),
                _ => (e.event.as_deref() == Some("response.output_text.delta"))
                    .then(|| v["delta"].as_str())
                    .flatten(),
            };
            piece.map(str::to_string)
        })
        .collect()
}

#[test]
fn broken_calls_fail_over_before_the_client_sees_anything() {
    let fake = fake();
    for bad in ["cut_tool_args", "unknown_tool"] {
        for protocol in PROTOCOLS {
            for stream in [true, false] {
                // A fresh server each time: after a few failures the bad model would rank last.
                let w = World::new();
                ordered(&w, &fake.base_url(), &[bad, "tool_calls_only"]);
                let s = w.serve(&[]);
                let (path, req) = body(protocol, stream, true);
                let r = s.post(&path, &req);
                let what = format!("{bad}, {protocol}, stream {stream}");
                assert_eq!(r.status, 200, "{what}: {r:?}");
                assert_eq!(
                    r.decision(),
                    format!("p/tool_calls_only!served|p/{bad}:invalid_tool_call->p/tool_calls_only:200|skips=0"),
                    "{what}"
                );
                assert_eq!(
                    calls_received(protocol, stream, &r),
                    [("Bash".to_string(), json!({"command": "echo fcm-tool-ok"}))],
                    "{what}"
                );
                assert!(!r.body.contains("launch_rockets"), "{what}: {}", r.body);
                assert_eq!(
                    s.history()[0]["attempts"][0]["kind"],
                    "invalid_tool_call",
                    "{what}"
                );
                assert_eq!(
                    s.breaker(&format!("p/{bad}")).unwrap()["lastFailureKind"],
                    "invalid_tool_call",
                    "{what}: the model's health pays for it"
                );
            }
        }
    }
}

#[test]
fn a_broken_call_after_text_is_dropped_and_the_turn_ends_plainly() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["text_then_cut_tool_args"]);
    w.write_config(&json!({"router": {"breaker": {"failureThreshold": 50}}}));
    let s = w.serve(&[]);
    for protocol in PROTOCOLS {
        let (path, req) = body(protocol, true, true);
        let r = s.post(&path, &req);
        assert_eq!(r.status, 200, "{protocol}: {r:?}");
        assert!(
            r.body.contains("Let me look."),
            "{protocol}: the text was kept"
        );
        assert!(
            calls_received(protocol, true, &r).is_empty(),
            "{protocol}: {}",
            r.body
        );
        match protocol {
            "chat" => assert!(
                r.body.contains("\"finish_reason\":\"stop\"") && !r.body.contains("\"tool_calls\""),
                "{}",
                r.body
            ),
            "anthropic" => assert!(
                r.body.contains("\"stop_reason\":\"end_turn\"") && !r.body.contains("event: error"),
                "{}",
                r.body
            ),
            _ => assert!(r.body.contains("response.completed"), "{}", r.body),
        }
    }
    let h = s.history();
    assert_eq!(h.len(), 3);
    for entry in &h {
        assert_eq!(entry["outcome"], "stream_failed_after_content");
        assert_eq!(entry["attempts"][0]["kind"], "invalid_tool_call");
    }
    assert_eq!(
        s.breaker("p/text_then_cut_tool_args").unwrap()["consecutiveFailures"],
        3
    );
    // Not streamed, nothing was sent yet: a plain failure (no other model to fail over to),
    // and not one to retry: the same request would get the same broken call.
    let (path, req) = body("chat", false, true);
    let r = s.post(&path, &req);
    assert_eq!(r.status, 422, "{r:?}");
    assert_eq!(r.header("retry-after"), None, "{r:?}");
    assert!(r.decision().contains("invalid_tool_call"));
}

#[test]
fn a_call_when_no_tools_were_offered_fails_over_and_basic_mode_checks_nothing() {
    let fake = fake();
    // A title request offers no tools: any call in the answer names a tool the client does
    // not have, cut or whole.
    for broken in ["unknown_tool", "cut_tool_args"] {
        for protocol in ["chat", "anthropic", "responses"] {
            for stream in [false, true] {
                // A home of its own: breakers start closed.
                let w = World::new();
                ordered(&w, &fake.base_url(), &[broken, "ok"]);
                let s = w.serve(&[]);
                let (path, req) = body(protocol, stream, false);
                let r = s.post(&path, &req);
                let case = format!("{broken} {protocol} stream={stream}");
                assert_eq!(r.status, 200, "{case}: {r:?}");
                assert_eq!(
                    r.decision(),
                    format!("p/ok!served|p/{broken}:invalid_tool_call->p/ok:200|skips=0"),
                    "{case}"
                );
                assert!(calls_received(protocol, stream, &r).is_empty(), "{case}");
                assert!(!r.body.contains("launch_rockets"), "{case}");
            }
        }
    }
    let w = World::new();
    w.write_config(&json!({"router": {"failover": {"contentValidation": "basic"}}}));
    ordered(&w, &fake.base_url(), &["unknown_tool"]);
    let s = w.serve(&[]);
    let (path, req) = body("chat", true, true);
    let r = s.post(&path, &req);
    assert_eq!(
        r.decision(),
        "p/unknown_tool!served|p/unknown_tool:200|skips=0"
    );
    assert!(r.body.contains("launch_rockets"));
}

#[test]
fn tool_calls_finish_without_calls_is_a_plain_stop() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["tool_finish_without_calls"]);
    let s = w.serve(&[]);
    for stream in [true, false] {
        let (path, req) = body("anthropic", stream, true);
        let r = s.post(&path, &req);
        assert!(
            r.body.contains("\"stop_reason\":\"end_turn\""),
            "stream {stream}: {}",
            r.body
        );
        let (path, req) = body("chat", stream, true);
        let r = s.post(&path, &req);
        assert!(
            r.body.contains("\"finish_reason\":\"stop\""),
            "stream {stream}: {}",
            r.body
        );
    }
}

#[test]
fn tool_calls_written_as_text_become_calls() {
    let fake = fake();
    for model in ["hermes_text_call", "kimi_text_call"] {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[model]);
        let s = w.serve(&[]);
        for protocol in PROTOCOLS {
            for stream in [true, false] {
                let what = format!("{model}, {protocol}, stream {stream}");
                let (path, req) = body(protocol, stream, true);
                let r = s.post(&path, &req);
                assert_eq!(r.status, 200, "{what}: {r:?}");
                assert_eq!(
                    calls_received(protocol, stream, &r),
                    [(
                        "Bash".to_string(),
                        json!({"command": "echo fcm-tool-ok", "description": "Print a marker"})
                    )],
                    "{what}: {}",
                    r.body
                );
                assert_eq!(
                    text_received(protocol, stream, &r),
                    "Running it.",
                    "{what}: the text before the call stays"
                );
                assert!(
                    !r.body.contains("tool_call>") && !r.body.contains("tool_calls_section"),
                    "{what}: markup reached the client: {}",
                    r.body
                );
                match protocol {
                    "chat" => assert!(
                        r.body.contains("\"finish_reason\":\"tool_calls\""),
                        "{what}: {}",
                        r.body
                    ),
                    "anthropic" => assert!(
                        r.body.contains("\"stop_reason\":\"tool_use\""),
                        "{what}: {}",
                        r.body
                    ),
                    _ => {}
                }
            }
        }
        // Without tools offered, the text is left as the model wrote it.
        let (path, req) = body("chat", false, false);
        assert!(s.post(&path, &req).body.contains("Running it."));
    }
}
