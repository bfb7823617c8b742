//! Routing that knows the request: context windows, context overflow, provider-wide quotas
//! and rate-limit reset headers.

mod support;

use serde_json::{json, Value};
use support::*;

/// One provider: its id, whether its quota is shared, and `(model, context)` pairs.
type ProviderSpec<'a> = (&'a str, bool, &'a [(&'a str, u64)]);

/// A catalog of providers whose models are ranked in the order given.
fn catalog(w: &World, url: &str, providers: &[ProviderSpec<'_>]) {
    let tiers = ["S+", "S", "A+", "A", "A-", "B+", "B", "C"];
    let mut n = 0;
    let doc = json!({"version": 1, "providers": providers.iter().map(|(id, shared, models)| json!({
        "id": id, "baseUrl": url, "keyRequired": false, "sharedQuota": shared,
        "models": models.iter().map(|(m, ctx)| { n += 1; json!({"id": m, "tier": tiers[(n - 1).min(7)], "context": ctx}) }).collect::<Vec<_>>(),
    })).collect::<Vec<_>>()});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
}

fn long_request(chars: usize, max_tokens: u64) -> String {
    json!({"model": "fcm", "max_tokens": max_tokens, "messages": [{"role": "user", "content": "x".repeat(chars)}]}).to_string()
}

#[test]
fn models_with_too_small_a_context_are_skipped() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[("p", false, &[("ok#small", 4096), ("ok#big", 131072)])],
    );
    let s = w.serve(&[]);
    // 20,000 characters ≈ 5,000 tokens, plus 1,000 for the answer: over 4,096.
    let r = s.post("/v1/chat/completions", &long_request(20_000, 1000));
    assert_eq!(r.decision(), "p/ok#big!served|p/ok#big:200|skips=1");
    assert_eq!(
        s.history()[0]["skipped"][0],
        json!({"model": "p/ok#small", "reason": "context_too_small"})
    );
    assert!(fake.requests_for("ok#small").is_empty());
    // A short request goes to the better-ranked small model.
    let r = s.post("/v1/chat/completions", &long_request(100, 100));
    assert_eq!(r.decision(), "p/ok#small!served|p/ok#small:200|skips=0");
    // Bigger than every window: the client's problem, said plainly, nothing sent.
    let before = fake.requests().len();
    let r = s.post("/v1/chat/completions", &long_request(1_000_000, 0));
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("largest routable context window is 131072"),
        "{r:?}"
    );
    assert_eq!(fake.requests().len(), before);
}

#[test]
fn a_default_answer_budget_larger_than_every_window_is_lowered_not_refused() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[("p", false, &[("ok#small", 32_768)])],
    );
    let s = w.serve(&[]);
    // OpenCode's default: 32,000 tokens of answer on a prompt of about 7,000.
    let r = s.post("/v1/chat/completions", &long_request(28_000, 32_000));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.decision(), "p/ok#small!served|p/ok#small:200|skips=0");
    let sent: Value = serde_json::from_slice(&fake.requests_for("ok#small")[0].body).unwrap();
    let budget = sent["max_tokens"].as_u64().unwrap();
    assert!((20_000..32_768 - 7_000).contains(&budget), "{budget}");
    assert_eq!(
        r.header("x-fcm-v2-max-tokens"),
        Some(budget.to_string().as_str())
    );
    let entry = &s.history()[0];
    assert_eq!(entry["maxTokens"], budget);
    assert_eq!(
        entry["notes"][0],
        format!("max_tokens_lowered:32000_to_{budget}")
    );
    // A budget that fits is sent as asked, and nothing is said.
    let r = s.post("/v1/chat/completions", &long_request(400, 1_000));
    assert_eq!(r.header("x-fcm-v2-max-tokens"), None);
    let sent: Value = serde_json::from_slice(&fake.requests_for("ok#small")[1].body).unwrap();
    assert_eq!(sent["max_tokens"], 1_000);
}

#[test]
fn context_overflow_fails_over_to_a_larger_model_without_damage() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[(
            "p",
            false,
            &[
                ("context_overflow", 8192),
                ("ok#same", 8192),
                ("ok#larger", 131072),
            ],
        )],
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(
        r.decision(),
        "p/ok#larger!served|p/context_overflow:400->p/ok#larger:200|skips=1",
        "a same-size window is not tried"
    );
    assert_eq!(s.history()[0]["skipped"][0]["reason"], "context_too_small");
    let row = s.breaker("p/context_overflow").unwrap();
    assert_eq!(
        (
            row["lastFailureKind"].as_str(),
            row["consecutiveFailures"].as_u64()
        ),
        (Some("context_overflow"), Some(0))
    );
}

#[test]
fn a_429_on_a_shared_quota_pauses_the_whole_provider() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[
            (
                "shared",
                true,
                &[("rate_limit:30", 131072), ("ok#sibling", 131072)],
            ),
            ("other", false, &[("ok#other", 131072)]),
        ],
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(
        r.decision(),
        "other/ok#other!served|shared/rate_limit:30:429->other/ok#other:200|skips=1"
    );
    assert_eq!(
        s.history()[0]["skipped"][0],
        json!({"model": "shared/ok#sibling", "reason": "quota_paused", "provider": "shared"})
    );
    assert!(fake.requests_for("ok#sibling").is_empty());
    let sibling: Value = s.breaker("shared/ok#sibling").unwrap();
    assert!(
        sibling["quotaPauseMsLeft"].as_u64().unwrap() > 25_000,
        "{sibling}"
    );
}

#[test]
fn reset_headers_set_the_pause_when_retry_after_is_missing() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[(
            "p",
            false,
            &[("rate_limit_reset:90", 131072), ("ok", 131072)],
        )],
    );
    let s = w.serve(&[]);
    assert_eq!(s.chat("fcm", false).status, 200);
    let left = s.breaker("p/rate_limit_reset:90").unwrap()["quotaPauseMsLeft"]
        .as_u64()
        .unwrap();
    assert!(
        (80_000..=90_000).contains(&left),
        "x-ratelimit-reset-requests: 1m30s gave {left} ms"
    );
}

#[test]
fn a_vision_request_goes_to_models_that_claim_vision_first() {
    let fake = fake();
    let w = World::new();
    let doc = json!({"version": 1, "providers": [{"id": "p", "baseUrl": fake.base_url(), "keyRequired": false, "models": [
        {"id": "ok#text", "tier": "S+", "context": 131072, "capabilities": ["tools"]},
        {"id": "ok#eyes", "tier": "B", "context": 131072, "capabilities": ["tools", "vision"]}]}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let s = w.serve(&[]);
    let image = json!({"model": "fcm", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]});
    let r = s.post("/v1/chat/completions", &image.to_string());
    assert_eq!(r.decision(), "p/ok#eyes!served|p/ok#eyes:200|skips=0");
    assert_eq!(
        s.history()[0]["notes"],
        json!(["capability_missing:vision:1_tried_last"]),
        "the text-only model is kept, last"
    );
    // Claude Code's image block counts too.
    let anthropic = json!({"model": "claude-x", "max_tokens": 50, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]});
    assert_eq!(
        s.post("/v1/messages", &anthropic.to_string())
            .header("x-fcm-v2-model"),
        Some("p/ok#eyes")
    );
    // Text only: ranking as usual.
    assert_eq!(
        s.chat("fcm", false).header("x-fcm-v2-model"),
        Some("p/ok#text")
    );
}

#[test]
fn when_no_model_claims_a_capability_they_are_tried_anyway() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[("p", false, &[("ok#a", 131072), ("ok#b", 131072)])],
    );
    let s = w.serve(&[]);
    let pdf = json!({"model": "fcm", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "spec.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}}]}]});
    let r = s.post("/v1/chat/completions", &pdf.to_string());
    assert_eq!(r.decision(), "p/ok#a!served|p/ok#a:200|skips=0");
    assert_eq!(s.history()[0]["notes"], json!(["capability_unknown:pdf"]));
}

#[test]
fn after_a_failure_the_same_model_on_another_provider_goes_next() {
    use std::collections::HashMap;
    let broken = FakeProvider::start(
        0,
        HashMap::from([("openai/gpt-oss-120b".to_string(), Behavior::Server500)]),
    )
    .unwrap();
    let healthy = fake();
    let w = World::new();
    let doc = json!({"version": 1, "providers": [
        {"id": "a", "baseUrl": broken.base_url(), "keyRequired": false, "models": [{"id": "openai/gpt-oss-120b", "tier": "S+", "context": 131072, "sweBench": 90}]},
        {"id": "c", "baseUrl": healthy.base_url(), "keyRequired": false, "models": [{"id": "ok#other", "tier": "S+", "context": 131072, "sweBench": 80}]},
        {"id": "b", "baseUrl": healthy.base_url(), "keyRequired": false, "models": [{"id": "gpt-oss-120b", "tier": "S+", "context": 131072, "sweBench": 10}]},
        {"id": "d", "baseUrl": healthy.base_url(), "keyRequired": false, "models": [{"id": "gpt-oss-120b#weak", "tier": "C", "context": 131072}]}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(
        r.decision(),
        "b/gpt-oss-120b!served|a/openai/gpt-oss-120b:500->b/gpt-oss-120b:200|skips=0"
    );
    // A copy the catalog rates weaker does not jump the line: the conversation would go
    // down a tier with it.
    let w = World::new();
    let doc = json!({"version": 1, "providers": [
        {"id": "a", "baseUrl": broken.base_url(), "keyRequired": false, "models": [{"id": "openai/gpt-oss-120b", "tier": "S+", "context": 131072}]},
        {"id": "c", "baseUrl": healthy.base_url(), "keyRequired": false, "models": [{"id": "ok#other", "tier": "S", "context": 131072}]},
        {"id": "b", "baseUrl": healthy.base_url(), "keyRequired": false, "models": [{"id": "gpt-oss-120b", "tier": "C", "context": 131072}]}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(
        r.decision(),
        "c/ok#other!served|a/openai/gpt-oss-120b:500->c/ok#other:200|skips=0"
    );
}

#[test]
fn a_model_failing_in_real_traffic_drops_in_the_ranking() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[(
            "p",
            false,
            &[("server_500#top", 131072), ("ok#next", 131072)],
        )],
    );
    // A high threshold keeps the breaker out of it: only the rolling window acts.
    w.write_config(&json!({"router": {"breaker": {"failureThreshold": 50}}}));
    let s = w.serve(&["--quiet"]);
    for _ in 0..3 {
        assert_eq!(
            s.chat("fcm", false).decision(),
            "p/ok#next!served|p/server_500#top:500->p/ok#next:200|skips=0"
        );
    }
    assert_eq!(
        s.chat("fcm", false).decision(),
        "p/ok#next!served|p/ok#next:200|skips=0",
        "3 recent failures rank it below"
    );
    assert_eq!(s.breaker("p/server_500#top").unwrap()["state"], "CLOSED");
}

#[test]
fn streams_that_break_after_content_count_against_the_model_in_the_ranking() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[(
            "p",
            false,
            &[("sse_error_after_content#top", 131072), ("ok#next", 131072)],
        )],
    );
    // A high threshold keeps the breaker out of it: only the rolling window acts.
    w.write_config(&json!({"router": {"breaker": {"failureThreshold": 50}}}));
    let s = w.serve(&["--quiet"]);
    for _ in 0..3 {
        let r = s.chat("fcm", true);
        assert_eq!(
            r.decision(),
            "p/sse_error_after_content#top!served|p/sse_error_after_content#top:200|skips=0",
            "committed before it broke: served, with a partial answer"
        );
    }
    assert_eq!(
        s.chat("fcm", true).decision(),
        "p/ok#next!served|p/ok#next:200|skips=0",
        "3 broken streams rank it below"
    );
    let h = s.history();
    assert_eq!(h[0]["attempts"][0]["kind"], "error_payload");
    assert_eq!(h[3]["attempts"][0]["kind"], Value::Null);
}

#[test]
fn the_last_candidate_asking_for_a_moment_is_waited_for_once() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[(
            "p",
            false,
            &[("server_500#first", 131072), ("busy_once", 131072)],
        )],
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "p/busy_once!served|p/server_500#first:500->p/busy_once:503->p/busy_once:200|skips=0"
    );
    let latency = s.history()[0]["wallMs"].as_u64().unwrap();
    assert!(latency >= 900, "Retry-After: 1 was honoured ({latency} ms)");
}

#[test]
fn background_probes_are_opt_in() {
    let fake = fake();
    for probe in [false, true] {
        let w = World::new();
        let model = if probe {
            "server_500#probed"
        } else {
            "server_500#quiet"
        };
        catalog(&w, &fake.base_url(), &[("p", false, &[(model, 131072)])]);
        let mut router = json!({"breaker": {"initialCooldownMs": 1000}});
        if probe {
            router["probe"] = json!({"intervalSec": 1});
        }
        w.write_config(&json!({ "router": router }));
        let s = w.serve(&[]);
        for _ in 0..3 {
            s.chat(&format!("fcm:p/{model}"), false);
        }
        assert_eq!(s.breaker(&format!("p/{model}")).unwrap()["state"], "OPEN");
        let start = std::time::Instant::now();
        if probe {
            while fake.requests_for(model).len() < 4 {
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(10),
                    "no probe came"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            let row = s.breaker(&format!("p/{model}")).unwrap();
            assert_eq!(
                (row["state"].as_str(), row["tripCount"].as_u64()),
                (Some("OPEN"), Some(2)),
                "the failed probe reopened it"
            );
        } else {
            std::thread::sleep(std::time::Duration::from_millis(2500));
            assert_eq!(
                fake.requests_for(model).len(),
                3,
                "no background traffic by default"
            );
            assert_eq!(
                s.breaker(&format!("p/{model}")).unwrap()["state"],
                "HALF_OPEN"
            );
        }
    }
}

#[test]
fn token_estimate_counts_text_and_answer_room() {
    let body =
        json!({"max_tokens": 100, "messages": [{"role": "user", "content": "x".repeat(400)}]});
    // 400 characters of text plus "user" = 404 / 4 = 101, plus 100 for the answer.
    assert_eq!(fcm::tokens::needed(&body), 201);
}

/// A `bench.json` entry: usable, with its median time to first token and, when given,
/// (tool pings, valid calls).
fn bench_entry(model: &str, ttft_ms: u64, tools: Option<(u64, u64)>) -> Value {
    let mut m = json!({"rank": 1, "model": model, "provider": "p", "label": model, "tier": "A",
        "usable": true, "verdict": "perfect", "pings": 3, "successes": 3, "successRate": 1.0,
        "ttftMsP50": ttft_ms, "measuredAt": "2026-01-01T00:00:00Z"});
    if let Some((pings, calls)) = tools {
        m["toolPings"] = json!(pings);
        m["toolCalls"] = json!(calls);
        m["toolFailures"] = json!(0);
        m["toolsMeasuredAt"] = json!("2026-01-01T00:00:00Z");
    }
    m
}

/// A chat request offering one tool.
fn tools_request(stream: bool) -> String {
    json!({"model": "fcm", "stream": stream, "messages": [{"role": "user", "content": "weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object",
            "properties": {"place": {"type": "string"}}, "required": ["place"]}}}]})
    .to_string()
}

#[test]
fn a_request_with_tools_goes_to_proven_tool_callers_first() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[(
            "p",
            false,
            &[
                ("ok#fast", 131072),
                ("describes_offered_tool", 131072),
                ("calls_offered_tool", 131072),
                ("ok#benched-before-tools", 131072),
            ],
        )],
    );
    std::fs::create_dir_all(&w.home).unwrap();
    let bench = json!({"generatedAt": "2026-01-01T00:00:00Z", "models": [
        bench_entry("p/ok#fast", 50, Some((3, 0))),
        // 1 valid call in 3 tool pings: not proven.
        bench_entry("p/describes_offered_tool", 60, Some((3, 1))),
        // The slowest, but 2 of 3 tool pings made a valid call: proven.
        bench_entry("p/calls_offered_tool", 900, Some((3, 2))),
        bench_entry("p/ok#benched-before-tools", 70, None)]});
    std::fs::write(w.home_file("bench.json"), bench.to_string()).unwrap();
    let s = w.serve(&["--quiet"]);

    // Without tools: the ranking as before, fastest first, nothing noted.
    let r = s.chat("fcm", false);
    assert_eq!(r.decision(), "p/ok#fast!served|p/ok#fast:200|skips=0");
    assert_eq!(s.history()[0].get("notes"), None);

    // With tools, stream or not: the proven tool caller first, the rest kept behind it.
    for stream in [false, true] {
        let r = s.post("/v1/chat/completions", &tools_request(stream));
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(
            r.decision(),
            "p/calls_offered_tool!served|p/calls_offered_tool:200|skips=0",
            "stream {stream}"
        );
        assert!(
            r.body.contains("lookup") && r.body.contains("place"),
            "{r:?}"
        );
        let last = s.history().last().cloned().unwrap();
        assert_eq!(
            last["notes"],
            json!([
                "capability_missing:tools:3_tried_last",
                "tool_calls_proven:1_moved_ahead"
            ]),
            "{last}"
        );
    }
    // Claude Code's tools count too.
    let anthropic = json!({"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "weather?"}],
        "tools": [{"name": "lookup", "input_schema": {"type": "object", "properties": {"place": {"type": "string"}}, "required": ["place"]}}]});
    assert_eq!(
        s.post("/v1/messages", &anthropic.to_string())
            .header("x-fcm-v2-model"),
        Some("p/calls_offered_tool")
    );
}

#[test]
fn bench_tools_then_serve_sends_tool_requests_to_the_model_that_called() {
    let fake = fake();
    let w = World::new();
    // The best tiers only talk about tools or break their calls.
    catalog(
        &w,
        &fake.base_url(),
        &[(
            "p",
            false,
            &[
                ("describes_offered_tool", 131072),
                ("breaks_offered_tool", 131072),
                ("calls_offered_tool", 131072),
            ],
        )],
    );
    let out = w.fcm(&["bench", "--tools", "--pings", "2"]);
    assert_eq!(out.code, 0, "{out:?}");
    // The fake answers in well under a millisecond, so measured times tie or differ by
    // chance; make them equal so that only the tool proofs reorder the models.
    let path = w.home_file("bench.json");
    let mut bench: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for m in bench["models"].as_array_mut().unwrap() {
        m["ttftMsP50"] = json!(100);
    }
    std::fs::write(&path, bench.to_string()).unwrap();
    let s = w.serve(&["--quiet"]);
    let r = s.post("/v1/chat/completions", &tools_request(false));
    assert_eq!(
        r.decision(),
        "p/calls_offered_tool!served|p/calls_offered_tool:200|skips=0"
    );
    let calls = &r.json()["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls[0]["function"]["name"], "lookup", "{r:?}");
    let notes = s.history()[0]["notes"].clone();
    assert!(
        notes
            .as_array()
            .unwrap()
            .contains(&json!("tool_calls_proven:1_moved_ahead")),
        "{notes}"
    );
    // A plain request is not reordered by the proof.
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(s.history()[1].get("notes"), None);
}
