//! A provider's per-call state (Gemini's thought signatures) that a later turn needs, in all
//! three protocols: it comes back whatever the client keeps, survives a restart of
//! `fcm serve` between two turns (`carry.json`), and where it was lost all the same (the
//! file gone, calls another model made) Google's placeholder lets the turn through.

mod support;

use serde_json::{json, Value};
use support::*;

/// The fake's Gemini: named like Google's models, so fcm treats it as one.
const GEMINI: &str = "gemini_signed_tool_turns";

/// One tool turn's request in `proto`: the conversation so far, in that client's shapes,
/// keeping of each call only what a frugal client keeps (its id, name and arguments).
fn tool_request(proto: &str, calls: &[(String, String)]) -> (&'static str, Value) {
    match proto {
        "chat" => {
            let mut messages = vec![json!({"role": "user", "content": "List the files."})];
            for (id, args) in calls {
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "Bash", "arguments": args}}]}));
                messages
                    .push(json!({"role": "tool", "tool_call_id": id, "content": "fcm-tool-ok"}));
            }
            (
                "/v1/chat/completions",
                json!({"model": "fcm", "stream": true, "messages": messages,
                "tools": [{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]}),
            )
        }
        "anthropic" => {
            let mut messages = vec![json!({"role": "user", "content": "List the files."})];
            for (id, args) in calls {
                let input: Value = serde_json::from_str(args).unwrap();
                messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": input}]}));
                messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "fcm-tool-ok"}]}));
            }
            (
                "/v1/messages",
                json!({"model": "fcm", "stream": true, "max_tokens": 512, "messages": messages,
                "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]}),
            )
        }
        _ => {
            let mut input = vec![
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files."}]}),
            ];
            for (id, args) in calls {
                input.push(json!({"type": "function_call", "call_id": id, "name": "exec_command", "arguments": args}));
                input.push(
                    json!({"type": "function_call_output", "call_id": id, "output": "fcm-tool-ok"}),
                );
            }
            (
                "/v1/responses",
                json!({"model": "fcm", "stream": true, "input": input,
                "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]}),
            )
        }
    }
}

/// The call a streamed answer handed the client: its id and arguments.
fn call_of(proto: &str, body: &str) -> Option<(String, String)> {
    let all = data(body);
    match proto {
        "chat" => {
            let mut id = None;
            let mut args = String::new();
            for c in &all {
                for call in c["choices"][0]["delta"]["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if let Some(i) = call["id"].as_str() {
                        id = Some(i.to_string());
                    }
                    args.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
                }
            }
            id.map(|i| (i, args))
        }
        "anthropic" => {
            let id = all
                .iter()
                .find(|v| v["content_block"]["type"] == "tool_use")
                .map(|v| v["content_block"]["id"].as_str().unwrap().to_string())?;
            let args: String = all
                .iter()
                .filter_map(|v| v["delta"]["partial_json"].as_str())
                .collect();
            Some((id, args))
        }
        _ => all
            .iter()
            .find(|v| {
                v["type"] == "response.output_item.done" && v["item"]["type"] == "function_call"
            })
            .map(|v| {
                (
                    v["item"]["call_id"].as_str().unwrap().to_string(),
                    v["item"]["arguments"].as_str().unwrap().to_string(),
                )
            }),
    }
}

#[test]
fn thought_signatures_come_back_whatever_the_client_keeps() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["signed_tool_turns"]);
    let s = w.serve(&["--quiet"]);
    for proto in PROTOCOLS {
        let mut calls = Vec::new();
        for turn in 0..2 {
            let (path, body) = tool_request(proto, &calls);
            let r = s.post(path, &body.to_string());
            assert_eq!(r.status, 200, "{proto} turn {turn}: {}", r.body);
            let call = call_of(proto, &r.body)
                .unwrap_or_else(|| panic!("{proto} turn {turn}: no call: {}", r.body));
            // The client never sees the provider's signature in Claude Code's or Codex's shapes.
            if proto != "chat" {
                assert!(!r.body.contains("fcm-sig-"), "{proto}: {}", r.body);
            }
            calls.push(call);
        }
        let (path, body) = tool_request(proto, &calls);
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 200, "{proto} last turn: {}", r.body);
        assert!(
            text(proto, &r.body)
                .contains("Both tool turns kept their thought signatures (2 calls signed)"),
            "{proto}: {}",
            r.body
        );
    }
    // Without fcm's help the provider refuses the unsigned history, as Gemini does.
    let (path, mut body) = tool_request("chat", &[("call_x".into(), "{}".into())]);
    body["model"] = json!("signed_tool_turns");
    let direct = ureq::post(&format!(
        "{}{}",
        fake.base_url(),
        path.trim_start_matches("/v1")
    ))
    .header("content-type", "application/json")
    .send(body.to_string())
    .map(|r| r.status().as_u16())
    .unwrap_or_else(|e| match e {
        ureq::Error::StatusCode(code) => code,
        other => panic!("{other}"),
    });
    assert_eq!(direct, 400);
}

/// Runs `turns` tool turns of a conversation in `proto` on `s`, from the calls it has.
fn run_turns(s: &Server, proto: &str, calls: &mut Vec<(String, String)>, turns: usize) {
    for _ in 0..turns {
        let (path, body) = tool_request(proto, calls);
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 200, "{proto} turn {}: {}", calls.len(), r.body);
        assert_eq!(r.header("x-fcm-v2-model"), Some(&*format!("p/{GEMINI}")));
        let call = call_of(proto, &r.body)
            .unwrap_or_else(|| panic!("{proto} turn {}: no call: {}", calls.len(), r.body));
        calls.push(call);
    }
}

/// The last turn's answer text in `proto`, after the calls made.
fn last_turn(s: &Server, proto: &str, calls: &[(String, String)]) -> (String, Option<String>) {
    let (path, body) = tool_request(proto, calls);
    let r = s.post(path, &body.to_string());
    assert_eq!(r.status, 200, "{proto} last turn: {}", r.body);
    (
        text(proto, &r.body),
        r.header("x-fcm-v2-model").map(str::to_string),
    )
}

#[test]
fn signatures_survive_a_restart_between_two_turns() {
    let fake = fake();
    let w = World::new();
    // Another model to move to: a refused turn would go there instead.
    ordered(&w, &fake.base_url(), &[GEMINI, "ok"]);
    let s = w.serve(&["--quiet"]);
    let mut conversations = Vec::new();
    for proto in PROTOCOLS {
        let mut calls = Vec::new();
        run_turns(&s, proto, &mut calls, 2);
        conversations.push((proto, calls));
    }
    assert_eq!(s.stop(), 0);
    let file = w.home_file("carry.json");
    assert_mode(&file, 0o600);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["calls"].as_array().map(Vec::len), Some(6), "{saved}");
    let s = w.serve(&["--quiet"]);
    for (proto, calls) in conversations {
        let (said, model) = last_turn(&s, proto, &calls);
        assert!(
            said.contains("Both tool turns kept their thought signatures (2 calls signed)"),
            "{proto}: {said}"
        );
        assert_eq!(model.as_deref(), Some(&*format!("p/{GEMINI}")), "{proto}");
    }
}

#[test]
fn a_lost_signature_is_replaced_by_googles_placeholder() {
    let fake = fake();
    let w = World::new();
    // Alone: a refused turn would fail every retry.
    ordered(&w, &fake.base_url(), &[GEMINI]);
    let s = w.serve(&["--quiet"]);
    let mut calls = Vec::new();
    run_turns(&s, "chat", &mut calls, 1);
    assert_eq!(s.stop(), 0);
    std::fs::remove_file(w.home_file("carry.json")).unwrap();
    let s = w.serve(&["--quiet"]);
    run_turns(&s, "chat", &mut calls, 1);
    let (said, _) = last_turn(&s, "chat", &calls);
    assert!(
        said.contains("went on: 1 calls signed, 1 with a placeholder signature"),
        "the lost one stood in for, the kept one put back: {said}"
    );
    // The history says the placeholder was used, on that turn only.
    let h = s.history();
    let notes = |e: &Value| e["notes"].to_string();
    assert!(
        notes(&h[h.len() - 1]).contains("signature_placeholder"),
        "{h:?}"
    );
    assert!(!notes(&h[0]).contains("signature_placeholder"), "{h:?}");
    // A conversation moved onto Gemini: its calls came from a model that signs nothing.
    let elsewhere = [
        ("toolu_a".into(), "{}".into()),
        ("toolu_b".into(), "{}".into()),
    ];
    let (said, _) = last_turn(&s, "anthropic", &elsewhere);
    assert!(
        said.contains("0 calls signed, 2 with a placeholder"),
        "{said}"
    );
    assert_eq!(s.stop(), 0);
    // A model that is not Gemini's gets no placeholder: the fake refuses its unsigned turn.
    let w = World::new();
    ordered(&w, &fake.base_url(), &["signed_tool_turns"]);
    let s = w.serve(&["--quiet"]);
    let (path, body) = tool_request("chat", &[("call_x".into(), "{}".into())]);
    assert_ne!(s.post(path, &body.to_string()).status, 200);
}

#[test]
fn a_corrupt_carry_file_is_set_aside() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &[GEMINI]);
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(w.home_file("carry.json"), "{not json").unwrap();
    let s = w.serve(&[]);
    eventually("a warning about carry.json", || {
        s.stderr().contains("carry.json") && s.stderr().contains("corrupt")
    });
    let mut calls = Vec::new();
    run_turns(&s, "chat", &mut calls, 1);
    assert_eq!(s.stop(), 0);
    let names: Vec<String> = std::fs::read_dir(&w.home)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("carry.json.corrupt-")),
        "{names:?}"
    );
    let kept = std::fs::read_to_string(w.home_file("carry.json")).unwrap();
    assert!(kept.contains("fcm-sig-0"), "a fresh file: {kept}");
}

/// Through a race and through a fusion set the signatures come back too: both send through
/// the one path that restores what a provider's earlier answers carried.
#[test]
fn signatures_come_back_through_race_and_fusion_sets() {
    let fake = fake();
    for set in [
        json!({"strategy": "race", "width": 2, "models": ["p/signed_tool_turns", "p/slow:1500"]}),
        json!({"strategy": "fusion", "judge": "p/ok#judge", "models": ["p/signed_tool_turns", "p/ok"]}),
    ] {
        let w = World::new();
        ordered(
            &w,
            &fake.base_url(),
            &["signed_tool_turns", "slow:1500", "ok", "ok#judge"],
        );
        w.write_config(&json!({"router": {"sets": {"s": set}, "activeSet": "s"}}));
        let s = w.serve(&["--quiet"]);
        let mut calls = Vec::new();
        for turn in 0..2 {
            let (path, body) = tool_request("chat", &calls);
            let r = s.post(path, &body.to_string());
            assert_eq!(r.status, 200, "{set} turn {turn}: {}", r.body);
            calls.push(
                call_of("chat", &r.body)
                    .unwrap_or_else(|| panic!("{set} turn {turn}: no call: {}", r.body)),
            );
        }
        let (said, model) = last_turn(&s, "chat", &calls);
        assert!(
            said.contains("Both tool turns kept their thought signatures (2 calls signed)"),
            "{set}: {said}"
        );
        assert_eq!(model.as_deref(), Some("p/signed_tool_turns"), "{set}");
    }
}
