//! Routing strategies: capability pools, history trimming, race and fusion sets.

mod support;

use serde_json::json;
use support::*;

fn image_request() -> String {
    json!({"model": "fcm", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]})
    .to_string()
}

#[test]
fn an_image_with_no_vision_claiming_candidate_goes_to_the_pool() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok#a", "ok#b", "ok#c"]);
    w.write_config(&json!({"router": {"capabilityPools": {"vision": ["p/ok#c", "p/gone"]}}}));
    let s = w.serve(&[]);
    assert!(
        s.stderr().contains("\"p/gone\""),
        "a stale pool member is reported: {}",
        s.stderr()
    );
    let r = s.post("/v1/chat/completions", &image_request());
    assert_eq!(r.decision(), "p/ok#c!served|p/ok#c:200|skips=0");
    let notes = s.history()[0]["notes"].clone();
    assert_eq!(
        notes,
        json!([
            "capability_unknown:vision",
            "capability_pool:vision:1_first"
        ])
    );
    // Without an image the ranking decides, and no pool is named.
    let r = s.chat("fcm", false);
    assert_eq!(r.decision(), "p/ok#a!served|p/ok#a:200|skips=0");
    // When the pool fails, everyone else is still behind it: nothing was dropped.
    drop(s);
    ordered(&w, &fake.base_url(), &["ok#a", "empty_choices"]);
    w.write_config(&json!({"router": {"capabilityPools": {"vision": ["p/empty_choices"]}}}));
    let s = w.serve(&[]);
    let r = s.post("/v1/chat/completions", &image_request());
    assert_eq!(
        r.decision(),
        "p/ok#a!served|p/empty_choices:empty_choices->p/ok#a:200|skips=0"
    );
}

#[test]
fn a_model_that_claims_vision_needs_no_pool() {
    let fake = fake();
    let w = World::new();
    let doc = json!({"version": 1, "providers": [{"id": "p", "baseUrl": fake.base_url(), "keyRequired": false, "models": [
        {"id": "ok#a", "tier": "S", "context": 131072},
        {"id": "ok#eyes", "tier": "A", "context": 131072, "capabilities": ["vision"]},
        {"id": "ok#pool", "tier": "B", "context": 131072}]}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    w.write_config(&json!({"router": {"capabilityPools": {"vision": ["p/ok#pool"], "smell": []}}}));
    let s = w.serve(&[]);
    assert!(
        s.stderr()
            .contains("router.capabilityPools.smell: pools are for vision, pdf, audio"),
        "{}",
        s.stderr()
    );
    let r = s.post("/v1/chat/completions", &image_request());
    assert_eq!(r.decision(), "p/ok#eyes!served|p/ok#eyes:200|skips=0");
    assert_eq!(
        s.history()[0]["notes"],
        json!(["capability_missing:vision:2_tried_last"])
    );
}

/// A Claude Code-shaped session (Anthropic Messages): a system prompt, a first request,
/// `turns` rounds of a tool call and its long result, and a last request.
fn claude_code_session(turns: usize, result_chars: usize, stream: bool) -> serde_json::Value {
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "Fix the failing build."}]}),
    ];
    for t in 0..turns {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Looking at file {t}.")},
            {"type": "tool_use", "id": format!("toolu_{t}"), "name": "Read", "input": {"file_path": format!("src/f{t}.rs")}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_{t}"), "content": "x".repeat(result_chars)}]}));
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("File {t} is fine.")}]}));
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": format!("Go on with step {t}.")}]}));
    }
    messages
        .push(json!({"role": "user", "content": [{"type": "text", "text": "Now run the tests."}]}));
    json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": stream,
           "system": [{"type": "text", "text": "You are Claude Code."}],
           "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}],
           "messages": messages})
}

/// What fcm sent upstream holds whole tool-call pairs and the ends of the conversation.
fn assert_trimmed_well(sent: &serde_json::Value, window: u64, first: &str, last: &str) {
    let messages = sent["messages"].as_array().unwrap();
    let text = |m: &serde_json::Value| m["content"].to_string();
    assert_eq!(messages[0]["role"], "system", "{}", text(&messages[0]));
    assert!(
        text(&messages[1]).contains(first),
        "the first user turn stays: {}",
        text(&messages[1])
    );
    assert!(
        text(messages.last().unwrap()).contains(last),
        "the last turn stays"
    );
    let mut calls = Vec::new();
    for m in messages {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            calls.push(c["id"].as_str().unwrap().to_string());
        }
        if m["role"] == "tool" {
            assert!(
                calls.contains(&m["tool_call_id"].as_str().unwrap().to_string()),
                "an orphan tool result"
            );
        }
    }
    let size = fcm::tokens::needed(sent);
    assert!(size <= window, "{size} tokens sent to a {window} window");
}

#[test]
fn a_claude_code_session_too_long_for_the_only_healthy_model_is_trimmed_to_fit() {
    let fake = fake();
    let w = World::new();
    let doc = json!({"version": 1, "providers": [{"id": "p", "baseUrl": fake.base_url(), "keyRequired": false, "models": [
        {"id": "rate_limit:60", "tier": "S", "context": 262144},
        {"id": "ok#small", "tier": "A", "context": 32768}]}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let s = w.serve(&[]);
    // About 150,000 tokens: 30 rounds of a 20,000-character tool result.
    let body = claude_code_session(30, 20_000, false);
    assert!(fcm::tokens::needed(&body) > 140_000);
    let r = s.post("/v1/messages", &body.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/ok#small!served|p/rate_limit:60:429->p/ok#small:200|skips=0"
    );
    let dropped: usize = r.header("x-fcm-v2-trimmed").unwrap().parse().unwrap();
    assert!(dropped > 80, "most of 120 middle messages: {dropped}");
    assert_eq!(r.json()["content"][0]["text"], "Hello from ok#small.");
    let h = &s.history()[0];
    assert_eq!(h["trimmed"], dropped);
    assert!(
        h["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == &json!(format!("history_trimmed:{dropped}_messages:to_fit_32768"))),
        "{h}"
    );
    let sent = fake.requests_for("ok#small")[0].json();
    assert_trimmed_well(&sent, 32768, "Fix the failing build.", "Now run the tests.");
    assert!(
        sent["max_tokens"].as_u64().unwrap() < 32000,
        "the answer's room is cut to what is left"
    );
    // The next request: the big model is paused, the small one takes it trimmed again.
    let r = s.post(
        "/v1/messages",
        &claude_code_session(30, 20_000, true).to_string(),
    );
    assert_eq!(r.status, 200);
    assert!(r.header("x-fcm-v2-trimmed").is_some());
    assert!(r.body.contains("event: message_stop"), "{}", r.body);
}

#[test]
fn trimming_works_on_chat_and_responses_and_can_be_turned_off() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok#small"]);
    let doc = json!({"version": 1, "providers": [{"id": "p", "baseUrl": fake.base_url(), "keyRequired": false,
        "models": [{"id": "ok#small", "tier": "A", "context": 8192}]},
        {"id": "big", "baseUrl": fake.base_url(), "apiKeyEnv": ["BIG_KEY"], "models": [{"id": "ok#big", "context": 1048576}]}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let s = w.serve(&[]);
    // Chat: 12 rounds of 4,000 characters, about 12,000 tokens, for an 8k window.
    let mut messages = vec![
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "first question"}),
    ];
    for t in 0..12 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{t}"), "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]}));
        messages.push(
            json!({"role": "tool", "tool_call_id": format!("c{t}"), "content": "y".repeat(4000)}),
        );
        messages.push(json!({"role": "user", "content": format!("and {t}")}));
    }
    messages.push(json!({"role": "user", "content": "last question"}));
    let chat = json!({"model": "fcm", "stream": true, "messages": messages});
    let r = s.post("/v1/chat/completions", &chat.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("x-fcm-v2-trimmed").is_some(), "{r:?}");
    assert!(
        r.body.contains("Hello from ok#small") || r.body.contains("ok#small"),
        "{}",
        r.body
    );
    assert_trimmed_well(
        &fake.requests_for("ok#small")[0].json(),
        8192,
        "first question",
        "last question",
    );
    // Responses: the same conversation as input items.
    let mut input = vec![json!({"role": "user", "content": "first question"})];
    for t in 0..12 {
        input.push(json!({"type": "function_call", "call_id": format!("r{t}"), "name": "shell", "arguments": "{\"command\":[\"ls\"]}"}));
        input.push(json!({"type": "function_call_output", "call_id": format!("r{t}"), "output": "z".repeat(4000)}));
        input.push(json!({"role": "user", "content": format!("and {t}")}));
    }
    input.push(json!({"role": "user", "content": "last question"}));
    let responses = json!({"model": "fcm", "instructions": "sys", "input": input});
    let r = s.post("/v1/responses", &responses.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("x-fcm-v2-trimmed").is_some(), "{r:?}");
    assert_trimmed_well(
        &fake.requests_for("ok#small")[1].json(),
        8192,
        "first question",
        "last question",
    );
    // Turned off: the request is larger than every window left, and said so.
    drop(s);
    w.write_config(&json!({"router": {"context": {"trimHistory": false}}}));
    let s = w.serve(&[]);
    let r = s.post("/v1/chat/completions", &chat.to_string());
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.header("x-fcm-v2-trimmed").is_none());
}

/// The estimate trimming fits by (characters / 4) against real token counts: the realwire
/// samples hold answers only (their requests were not recorded), so it is checked against
/// their `usage.completion_tokens` and the text, reasoning and tool calls they carry.
#[test]
fn the_token_estimate_against_real_counts() {
    let Some(dir) = realwire_dir("checking the token estimate against real counts") else {
        return;
    };
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sse" || x == "json"))
        .collect();
    entries.sort();
    let mut ratios = Vec::new();
    for path in entries {
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<serde_json::Value> = if path.extension().unwrap() == "json" {
            serde_json::from_str(&text).into_iter().collect()
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        };
        let mut chars = 0usize;
        let mut real = None;
        for e in &events {
            if let Some(n) = e
                .pointer("/usage/completion_tokens")
                .and_then(serde_json::Value::as_u64)
            {
                real = Some(n);
            }
            for c in e["choices"].as_array().into_iter().flatten() {
                let part = if c["delta"].is_object() {
                    &c["delta"]
                } else {
                    &c["message"]
                };
                for k in ["content", "reasoning_content", "reasoning"] {
                    chars += fcm_text_chars(&part[k]);
                }
                for t in part["tool_calls"].as_array().into_iter().flatten() {
                    chars += fcm_text_chars(&t["function"]);
                }
            }
        }
        // Long enough for the estimate to mean something: a short answer is mostly structure.
        if let (Some(real), true) = (real.filter(|n| *n > 0), chars >= 300) {
            let ratio = fcm::tokens::estimate(chars) as f64 / real as f64;
            ratios.push((
                path.file_name().unwrap().to_string_lossy().to_string(),
                ratio,
            ));
        }
    }
    for (name, ratio) in &ratios {
        println!("{name}: estimate / real {ratio:.2}");
    }
    assert!(ratios.len() >= 8, "{ratios:?}");
    for (name, ratio) in &ratios {
        assert!(
            (0.6..=1.3).contains(ratio),
            "{name}: estimate / real = {ratio:.2}"
        );
    }
    let mut sorted: Vec<f64> = ratios.iter().map(|r| r.1).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    assert!(
        (0.8..=1.2).contains(&median),
        "median {median:.2}: {ratios:?}"
    );
}

/// Characters of the text in a value (strings, but not the `type` and `id` labels of
/// content parts, which a model does not write as tokens of its answer).
fn fcm_text_chars(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => s.chars().count(),
        serde_json::Value::Array(a) => a.iter().map(fcm_text_chars).sum(),
        serde_json::Value::Object(o) => o
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "id" | "format"))
            .map(|(_, v)| fcm_text_chars(v))
            .sum(),
        _ => 0,
    }
}

/// Waits (bounded) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{what} within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_race_serves_the_fast_model_and_cancels_the_slow_one() {
    let fake = fake();
    let w = World::new();
    // The ranking puts the slow model first: a fallback set would wait for it. The fast one
    // takes half a second, so that the slow one has surely been sent the request by then.
    ordered(&w, &fake.base_url(), &["slow:4000#s", "slow:500#f", "ok#z"]);
    let out = w.fcm(&[
        "sets",
        "add",
        "quick",
        "--strategy",
        "race",
        "p/slow:4000#s",
        "p/slow:500#f",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("(race, 2 at once)"), "{}", out.stdout);
    let s = w.serve(&[]);
    let r = s.chat("fcm:quick", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/slow:500#f!served|p/slow:500#f:200->p/slow:4000#s:raced_out|skips=0"
    );
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "Hello from slow:500#f."
    );
    // Both were sent the request; the slow one's connection was closed under it.
    assert_eq!(fake.requests_for("slow:4000#s").len(), 1);
    eventually("the slow model sees its connection closed", || {
        fake.aborted() >= 1
    });
    // Cancelled is not failed: no breaker damage, and history says raced_out.
    let b = s.breaker("p/slow:4000#s");
    assert!(
        b.as_ref()
            .is_none_or(|b| b["state"] == "CLOSED" && b["consecutiveFailures"] == 0),
        "{b:?}"
    );
    // The winner's client is kept for the next race, its connection warm: each race
    // opens one connection (for the cancelled racer), not two.
    let opened = fake.connections();
    for _ in 0..3 {
        let r = s.chat("fcm:quick", false);
        assert_eq!(r.header("x-fcm-v2-model"), Some("p/slow:500#f"));
    }
    assert_eq!(
        fake.connections() - opened,
        3,
        "one new connection per race"
    );
    eventually("every slow racer sees its connection closed", || {
        fake.aborted() >= 4
    });
    let h = &s.history()[0];
    assert_eq!(h["attempts"][1]["model"], "p/slow:4000#s");
    assert_eq!(h["attempts"][1]["racedOut"], true, "{h}");
    assert!(h["notes"].as_array().unwrap().contains(&json!("race:2")));

    // Streams on all three protocols: the first to reach useful content wins.
    let bodies = [
        (
            "/v1/chat/completions",
            json!({"model": "fcm:quick", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
            "data: [DONE]",
        ),
        (
            "/v1/messages",
            json!({"model": "fcm:quick", "stream": true, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}),
            "event: message_stop",
        ),
        (
            "/v1/responses",
            json!({"model": "fcm:quick", "stream": true, "input": "hi"}),
            "response.completed",
        ),
    ];
    for (n, (path, body, end)) in bodies.iter().enumerate() {
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert_eq!(
            r.header("x-fcm-v2-model"),
            Some("p/slow:500#f"),
            "{path}: {r:?}"
        );
        assert!(
            r.body.contains("Hello") && r.body.contains(end),
            "{path}: {}",
            r.body
        );
        eventually("the slow stream is cancelled", || {
            fake.aborted() >= 5 + n as u64
        });
    }
    assert_eq!(fake.requests_for("slow:4000#s").len(), 7);
    let slow = s.breaker("p/slow:4000#s");
    assert!(
        slow.as_ref().is_none_or(|b| b["consecutiveFailures"] == 0),
        "{slow:?}"
    );
    assert!(
        fake.requests_for("ok#z").is_empty(),
        "a race takes the set's first two only"
    );
}

#[test]
fn a_racer_that_fails_is_a_failure_and_the_race_goes_on() {
    let fake = fake();
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["server_500#x", "slow:300#y", "ok#z"],
    );
    w.write_config(
        &json!({"router": {"sets": {"r": {"strategy": "race", "width": 2,
        "models": ["p/server_500#x", "p/slow:300#y"]}}}}),
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm:r", true);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/slow:300#y!served|p/server_500#x:500->p/slow:300#y:200|skips=0"
    );
    assert_eq!(
        s.breaker("p/server_500#x").unwrap()["consecutiveFailures"],
        1
    );
    // Both racers fail: the rest of the candidates are tried one by one.
    drop(s);
    w.write_config(&json!({"router": {"sets": {
        "r": {"strategy": "race", "models": ["p/server_500#x", "p/empty_choices#e"]},
        "wide": {"strategy": "race", "width": 9, "models": ["p/ok#z"]}}}}));
    ordered(
        &w,
        &fake.base_url(),
        &["server_500#x", "empty_choices#e", "ok#z"],
    );
    let s = w.serve(&[]);
    assert!(
        s.stderr()
            .contains("router.sets.wide.width = 9 is out of range 2..=8; using 8"),
        "{}",
        s.stderr()
    );
    let r = s.chat("fcm:r", false);
    assert_eq!(r.status, 200, "{r:?}");
    let d = r.decision();
    assert!(
        d.starts_with("p/ok#z!served|")
            && d.contains("p/server_500#x:500")
            && d.contains("p/empty_choices#e:empty_choices")
            && d.ends_with("->p/ok#z:200|skips=0"),
        "{d}"
    );
}

/// A fusion set: panel `ok#a`, `server_500#b`, `ok#c`, judged by `ok#judge`.
fn fusion_world(fake: &FakeProvider, panel: &[&str], judge: &str) -> World {
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &[
            "ok#a",
            "server_500#b",
            "ok#c",
            "ok#judge",
            "server_500#j",
            "ok#z",
        ],
    );
    let mut args = vec![
        "sets",
        "add",
        "best",
        "--strategy",
        "fusion",
        "--judge",
        judge,
    ];
    args.extend(panel);
    let out = w.fcm(&args);
    assert_eq!(out.code, 0, "{out:?}");
    w
}

#[test]
fn a_fusion_goes_through_the_judge_and_survives_a_failed_panel_member() {
    let fake = fake();
    let w = fusion_world(&fake, &["p/ok#a", "p/server_500#b", "p/ok#c"], "p/ok#judge");
    let table = w.fcm(&["sets"]);
    assert!(
        table.stdout.contains("fusion") && table.stdout.contains("judge p/ok#judge"),
        "{}",
        table.stdout
    );
    let s = w.serve(&[]);
    let ask = json!({"model": "fcm:best", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How do I reverse a Vec in Rust?"}]});
    let r = s.post("/v1/chat/completions", &ask.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/ok#judge!served|p/ok#a:200->p/server_500#b:500->p/ok#c:200->p/ok#judge:200|skips=0"
    );
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "Hello from ok#judge."
    );
    // The panel answered whole; the judge saw the conversation and both answers.
    for m in ["ok#a", "server_500#b", "ok#c"] {
        assert_eq!(fake.requests_for(m)[0].json()["stream"], false, "{m}");
    }
    let judged = fake.requests_for("ok#judge")[0].json();
    let msgs = judged["messages"].as_array().unwrap();
    assert_eq!(msgs[..2], ask["messages"].as_array().unwrap()[..]);
    let brief = msgs[2]["content"].as_str().unwrap();
    assert!(
        brief.contains("<answer 1>\nHello from ok#a.\n</answer 1>")
            && brief.contains("<answer 2>\nHello from ok#c.\n</answer 2>")
            && !brief.contains("<answer 3>"),
        "{brief}"
    );
    assert!(s.history()[0]["notes"]
        .as_array()
        .unwrap()
        .contains(&json!("fusion:judged:2_of_3")));

    // Streamed to the client once the judge streams, on each protocol.
    let r = s.post(
        "/v1/messages",
        &json!({"model": "fcm:best", "stream": true, "max_tokens": 100,
                "messages": [{"role": "user", "content": "hi"}]})
        .to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body.contains("ok#judge.") && r.body.contains("event: message_stop"),
        "{}",
        r.body
    );
    assert_eq!(fake.requests_for("ok#judge")[1].json()["stream"], true);
    assert_eq!(fake.requests_for("ok#a")[1].json()["stream"], false);
}

#[test]
fn one_panel_answer_passes_through_and_tools_are_not_fused() {
    let fake = fake();
    let w = fusion_world(&fake, &["p/server_500#b", "p/ok#c"], "p/ok#judge");
    let s = w.serve(&[]);
    let r = s.chat("fcm:best", true);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/ok#c!served|p/server_500#b:500->p/ok#c:200|skips=0"
    );
    assert!(r.body.contains("Hello from ok#c.") && r.body.contains("data: [DONE]"));
    assert!(fake.requests_for("ok#judge").is_empty());
    assert!(s.history()[0]["notes"]
        .as_array()
        .unwrap()
        .contains(&json!("fusion:passed_through:1_of_2")));

    // With tools offered: the first healthy panel model, no panel, no judge.
    let tools = json!({"model": "fcm:best", "messages": [{"role": "user", "content": "list files"}],
        "tools": [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]});
    let r = s.post("/v1/chat/completions", &tools.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.decision().starts_with("p/ok#c!served|"),
        "{}",
        r.decision()
    );
    assert!(fake.requests_for("ok#judge").is_empty());
    assert!(
        s.history().iter().any(|h| h["notes"]
            .as_array()
            .unwrap()
            .contains(&json!("fusion:not_fused:tools_offered"))),
        "{:?}",
        s.history()
    );
}

#[test]
fn a_failed_judge_leaves_the_first_answer_and_no_answer_fails_over() {
    let fake = fake();
    let w = fusion_world(&fake, &["p/ok#a", "p/ok#c"], "p/server_500#j");
    let s = w.serve(&[]);
    let r = s.chat("fcm:best", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/ok#a!served|p/ok#a:200->p/ok#c:200->p/server_500#j:500|skips=0"
    );
    assert!(s.history()[0]["notes"]
        .as_array()
        .unwrap()
        .contains(&json!("fusion:judge_failed:passed_through:2_of_2")));
    drop(s);
    // No panel answer: the other candidates, one by one, as for any set.
    let w = fusion_world(&fake, &["p/server_500#b"], "p/ok#judge");
    let s = w.serve(&[]);
    let r = s.chat("fcm:best", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/ok#a!served|p/server_500#b:500->p/ok#a:200|skips=0"
    );
}

#[test]
fn sets_add_checks_race_and_fusion_options() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok#a", "ok#b", "ok#c"]);
    let bad: [&[&str]; 5] = [
        &[
            "sets",
            "add",
            "x",
            "--strategy",
            "race",
            "--width",
            "9",
            "p/ok#a",
        ],
        &["sets", "add", "x", "--strategy", "fusion", "p/ok#a"],
        &["sets", "add", "x", "--width", "3", "p/ok#a"],
        &[
            "sets",
            "add",
            "x",
            "--strategy",
            "fusion",
            "--judge",
            "p/nope",
            "p/ok#a",
        ],
        &["sets", "add", "x", "--strategy", "vote", "p/ok#a"],
    ];
    for args in bad {
        let out = w.fcm(args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
    }
    assert_eq!(
        w.fcm(&[
            "sets",
            "add",
            "r",
            "--strategy",
            "race",
            "--width",
            "3",
            "p/ok#a",
            "p/ok#b",
            "p/ok#c"
        ])
        .code,
        0
    );
    let table = w.fcm(&["sets"]).stdout;
    assert!(
        table.contains("race") && table.contains("width 3"),
        "{table}"
    );
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("config.json")).unwrap())
            .unwrap();
    assert_eq!(
        config["router"]["sets"]["r"],
        json!({"strategy": "race", "width": 3, "models": ["p/ok#a", "p/ok#b", "p/ok#c"]})
    );
}
