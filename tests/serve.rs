//! `fcm serve`: endpoints, request limits, breakers over time, persistence, settings from
//! config.json, concurrency, disconnects, shutdown and secrets.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::*;

fn config(w: &World, failover: Value) {
    w.write_config(&json!({"router": {"failover": failover}}));
}

#[test]
fn health_and_models_endpoints() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[
        ("a", &fake.base_url(), None, &["ok", "ok#2"]),
        ("b", &fake.base_url(), Some("B_KEY"), &["ok#b"]),
    ]);
    let s = w.serve(&[]);
    let h = s.get("/health").json();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["models"]["routable"], 2, "b has no key");
    assert!(h["address"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert!(h["version"].is_string() && h["uptimeSecs"].is_u64());
    let ids: Vec<String> = s.get("/v1/models").json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, vec!["fcm", "fcm:a/ok", "fcm:a/ok#2"]);
    let r = s.get("/nope");
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1/chat/completions"));
}

#[test]
fn bad_requests_are_refused_before_any_upstream() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    for (body, status, needle) in [
        ("{not json", 400, "not valid JSON"),
        (r#"{"model":"fcm"}"#, 400, "messages"),
        (r#"[1,2]"#, 400, "messages"),
        (r#"{"model":"fcm:p/nope","messages":[]}"#, 404, "fcm models"),
    ] {
        let r = s.post("/v1/chat/completions", body);
        assert_eq!(r.status, status, "{body}: {r:?}");
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains(needle),
            "{body}: {r:?}"
        );
        assert_eq!(r.decision(), "none!rejected|skips=0");
        assert!(r.header("x-request-id").is_some());
    }
    // Over 32 MiB: 413, and nothing is parsed or sent upstream.
    let mut c = TcpStream::connect(s.base.trim_start_matches("http://")).unwrap();
    let size = 33 * 1024 * 1024;
    let host = s.base.trim_start_matches("http://");
    write!(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n").unwrap();
    let mut body_writer = c.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let block = vec![b' '; 1024 * 1024];
        for _ in 0..33 {
            if body_writer.write_all(&block).is_err() {
                break;
            }
        }
    });
    let mut head = [0u8; 512];
    let n = c.read(&mut head).unwrap();
    let text = String::from_utf8_lossy(&head[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(
        text.contains("x-fcm-v2-decision: none!rejected|skips=0"),
        "{text}"
    );
    sender.join().unwrap();
    assert!(fake.requests().is_empty(), "no upstream was contacted");
    let start = Instant::now();
    while s.history().len() < 5 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "rejected requests are in the history too"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn client_request_id_is_kept() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let body = json!({"model": "fcm", "messages": [{"role": "user", "content": "x"}]}).to_string();
    let r = s.post_with(
        "/v1/chat/completions",
        &body,
        &[("x-request-id", "my-req-42")],
    );
    assert_eq!(r.header("x-request-id"), Some("my-req-42"));
    assert_eq!(s.history()[0]["id"], "my-req-42");
}

#[test]
fn upstream_request_carries_model_stream_and_only_the_provider_key() {
    let fake = fake();
    let mut w = World::new();
    w.catalog(&[("a", &fake.base_url(), Some("A_KEY"), &["ok"])]);
    w.set_env("A_KEY", KEY);
    let s = w.serve(&[]);
    let body = json!({"model": "fcm", "stream": true, "temperature": 0.2, "messages": [{"role": "user", "content": "x"}]}).to_string();
    let r = s.post_with(
        "/v1/chat/completions",
        &body,
        &[
            ("authorization", "Bearer client-secret-xyz"),
            ("x-api-key", "client-other"),
        ],
    );
    assert_eq!(r.status, 200);
    let sent = &fake.requests()[0];
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        sent.header("x-api-key"),
        None,
        "client auth headers are never forwarded"
    );
    let v = sent.json();
    assert_eq!(
        (
            v["model"].as_str(),
            v["stream"].as_bool(),
            v["temperature"].as_f64()
        ),
        (Some("ok"), Some(true), Some(0.2))
    );
}

#[test]
fn pinned_model_gets_one_attempt_and_the_status_of_its_failure() {
    let fake = fake();
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &[
            "ok",
            "rate_limit:9",
            "auth_401",
            "empty_choices",
            "server_500",
        ],
    );
    config(&w, json!({"bodyReadTimeoutMs": 1000}));
    let s = w.serve(&[]);
    for (model, status) in [
        ("rate_limit:9", 429),
        ("auth_401", 401),
        ("empty_choices", 502),
        ("server_500", 502),
    ] {
        let r = s.chat(&format!("fcm:p/{model}"), false);
        assert_eq!(r.status, status, "{model}: {r:?}");
        assert_eq!(r.header("x-fcm-v2-attempts"), Some("1"));
        assert_eq!(
            r.header("x-fcm-v2-model"),
            Some(format!("p/{model}").as_str())
        );
        if status == 429 {
            assert_eq!(r.header("retry-after"), Some("9"));
        }
    }
    let r = s.chat("p/ok", false);
    assert_eq!(
        (r.status, r.decision()),
        (200, "p/ok!served|p/ok:200|skips=0"),
        "a bare catalog key pins too"
    );
    let r = s.chat("gpt-4o", false);
    assert_eq!(r.status, 200, "an unknown name routes automatically");
}

#[test]
fn breaker_degrades_at_two_opens_at_three_and_is_skipped() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500", "ok"]);
    let s = w.serve(&[]);
    let states: Vec<String> = (0..3)
        .map(|_| {
            assert_eq!(s.chat("fcm:p/server_500", false).status, 502);
            s.breaker("p/server_500").unwrap()["state"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(states, vec!["CLOSED", "DEGRADED", "OPEN"]);
    let row = s.breaker("p/server_500").unwrap();
    assert_eq!(row["tripCount"], 1);
    assert!(row["cooldownMsLeft"].as_u64().unwrap() > 25_000);
    let r = s.chat("fcm", false);
    assert_eq!(r.decision(), "p/ok!served|p/ok:200|skips=1");
    assert_eq!(
        s.history().last().unwrap()["skipped"][0],
        json!({"model": "p/server_500", "reason": "circuit_open"})
    );
    // Pinned: sent even though OPEN.
    let before = fake.requests_for("server_500").len();
    assert_eq!(s.chat("fcm:p/server_500", false).status, 502);
    assert_eq!(fake.requests_for("server_500").len(), before + 1);
    let h = s.get("/health").json();
    assert_eq!(h["models"]["open"], 1);
}

#[test]
fn cooldown_escalates_and_half_open_allows_one_trial() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["slow_fail:600"]);
    w.write_config(
        &json!({"router": {"breaker": {"initialCooldownMs": 1000, "maxCooldownMs": 60000}}}),
    );
    let s = w.serve(&[]);
    for _ in 0..3 {
        s.chat("fcm:p/slow_fail:600", false);
    }
    assert_eq!(s.breaker("p/slow_fail:600").unwrap()["state"], "OPEN");
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(s.breaker("p/slow_fail:600").unwrap()["state"], "HALF_OPEN");
    // Two requests at once: one is the trial, the other must not pile onto the model.
    let before = fake.requests_for("slow_fail:600").len();
    let base = s.base.clone();
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let base = base.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(i * 150));
                let agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .proxy(None)
                    .build()
                    .new_agent();
                let mut r = agent
                    .post(&format!("{base}/v1/chat/completions"))
                    .send(
                        json!({"model": "fcm", "messages": [{"role": "user", "content": "x"}]})
                            .to_string(),
                    )
                    .unwrap();
                let d = r
                    .headers()
                    .get("x-fcm-v2-decision")
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string();
                let _ = r.body_mut().read_to_string();
                d
            })
        })
        .collect();
    let decisions: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        fake.requests_for("slow_fail:600").len(),
        before + 1,
        "exactly one trial: {decisions:?}"
    );
    assert_eq!(
        decisions,
        vec![
            "none!all_failed|p/slow_fail:600:500|skips=0",
            "none!all_failed|skips=1"
        ]
    );
    // The failed trial reopened it with the doubled cooldown.
    let row = s.breaker("p/slow_fail:600").unwrap();
    assert_eq!(
        (row["state"].as_str(), row["tripCount"].as_u64()),
        (Some("OPEN"), Some(2))
    );
    let left = row["cooldownMsLeft"].as_u64().unwrap();
    assert!(
        left > 1000 && left <= 2000,
        "second cooldown is 2 s, {left} ms left"
    );
}

#[test]
fn success_in_half_open_closes() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    w.write_config(&json!({"router": {"breaker": {"initialCooldownMs": 1000}}}));
    // Trip it by hand through the file, then let the cooldown pass.
    std::fs::create_dir_all(&w.home).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    std::fs::write(w.home_file("breakers.json"), json!({"version": 1, "models": {"p/ok": {
        "consecutiveFailures": 3, "tripCount": 1, "openUntilMs": now - 1, "lastTripMs": now - 1001, "updatedAtMs": now}}}).to_string()).unwrap();
    let s = w.serve(&[]);
    assert_eq!(s.breaker("p/ok").unwrap()["state"], "HALF_OPEN");
    assert_eq!(s.chat("fcm", false).status, 200);
    let row = s.breaker("p/ok").unwrap();
    assert_eq!(
        (row["state"].as_str(), row["tripCount"].as_u64()),
        (Some("CLOSED"), Some(1)),
        "success keeps the trip as memory"
    );
}

#[test]
fn breakers_survive_a_restart_by_wall_clock() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500", "ok"]);
    let s = w.serve(&[]);
    for _ in 0..3 {
        s.chat("fcm:p/server_500", false);
    }
    assert_eq!(s.stop(), 0);
    let path = w.home_file("breakers.json");
    assert_mode(&path, 0o600);
    assert_mode(&w.home_file("history.json"), 0o600);
    assert!(
        !w.home_file("serve.json").exists(),
        "serve.json is removed on a clean exit"
    );
    let s = w.serve(&[]);
    let row = s.breaker("p/server_500").unwrap();
    assert_eq!(row["state"], "OPEN");
    assert!(row["cooldownMsLeft"].as_u64().unwrap() > 20_000);
    let r = s.chat("fcm", false);
    assert_eq!(r.decision(), "p/ok!served|p/ok:200|skips=1");
    assert_eq!(s.history().len(), 4, "history survives too");
}

#[test]
fn stale_breaker_entries_are_dropped_on_load() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(
        w.home_file("breakers.json"),
        json!({"version": 1, "models": {
        "p/ok": {"consecutiveFailures": 2, "updatedAtMs": 1000}}})
        .to_string(),
    )
    .unwrap();
    let s = w.serve(&[]);
    assert!(
        s.breaker("p/ok").is_none(),
        "an entry untouched for 30 days is forgotten"
    );
}

#[test]
fn corrupt_state_files_are_set_aside_and_serving_goes_on() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(w.home_file("breakers.json"), "{\"models\": [garbage").unwrap();
    std::fs::write(w.home_file("history.json"), "\u{0}\u{1}").unwrap();
    let s = w.serve(&[]);
    assert_eq!(s.chat("fcm", false).status, 200);
    let err = s.stderr();
    assert!(
        err.contains("breakers.json is corrupt") && err.contains("history.json is corrupt"),
        "{err}"
    );
    let names: Vec<String> = std::fs::read_dir(&w.home)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("breakers.json.corrupt-")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("history.json.corrupt-")),
        "{names:?}"
    );
}

#[test]
fn state_writes_are_debounced() {
    let fake = fake();
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["server_500#1", "server_500#2", "ok"],
    );
    let s = w.serve(&["--quiet"]);
    for _ in 0..100 {
        s.chat("fcm:p/server_500#1", false);
    }
    // Within 3 s of the last change the file is on disk even with no more traffic.
    std::thread::sleep(Duration::from_millis(3000));
    let writes = s.get("/health").json()["stateWrites"].clone();
    let b = writes["breakers"].as_u64().unwrap();
    assert!((1..=4).contains(&b), "100 failures gave {b} breaker writes");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("breakers.json")).unwrap())
            .unwrap();
    assert_eq!(
        saved["models"]["p/server_500#1"]["consecutiveFailures"],
        100
    );
    let h: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("history.json")).unwrap())
            .unwrap();
    assert_eq!(h["entries"].as_array().unwrap().len(), 100);
}

#[test]
fn settings_from_config_take_effect() {
    let fake = fake();
    // maxAttempts: two failures that reached a model, then stop; the third model is
    // never called. (Instant refusals cost no attempt: answers that came are judged.)
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["empty_choices#a", "empty_choices#b", "ok#max"],
    );
    config(&w, json!({"maxAttempts": 2}));
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!((r.status, r.header("x-fcm-v2-attempts")), (503, Some("2")));
    assert!(fake.requests_for("ok#max").is_empty());
    drop(s);

    // lastResortModel: the last of maxAttempts is kept for it when all else failed.
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["empty_choices#c", "empty_choices#d", "ok#last"],
    );
    config(
        &w,
        json!({"maxAttempts": 2, "lastResortModel": "p/ok#last"}),
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(
        r.decision(),
        "p/ok#last!served|p/empty_choices#c:empty_choices->p/ok#last:200|skips=0"
    );
    assert_eq!(r.header("x-fcm-v2-attempts"), Some("2"));
    assert!(fake.requests_for("empty_choices#d").is_empty());
    drop(s);
    // With one attempt allowed there is no slot to keep: never more than maxAttempts.
    let w = World::new();
    ordered(&w, &fake.base_url(), &["empty_choices#e", "ok#last1"]);
    config(
        &w,
        json!({"maxAttempts": 1, "lastResortModel": "p/ok#last1"}),
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!((r.status, r.header("x-fcm-v2-attempts")), (503, Some("1")));
    assert!(fake.requests_for("ok#last1").is_empty());
    drop(s);

    // contentValidation: basic accepts a blank answer; off accepts empty choices.
    for (mode, bad) in [("basic", "empty_content#v"), ("off", "empty_choices#v")] {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[bad, "ok"]);
        config(&w, json!({"contentValidation": mode}));
        let s = w.serve(&[]);
        let r = s.chat("fcm", false);
        assert_eq!(
            r.decision(),
            format!("p/{bad}!served|p/{bad}:200|skips=0"),
            "{mode}"
        );
    }

    // failureThreshold: one failure opens.
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500#t", "ok"]);
    w.write_config(&json!({"router": {"breaker": {"failureThreshold": 1}}}));
    let s = w.serve(&[]);
    s.chat("fcm", false);
    assert_eq!(s.breaker("p/server_500#t").unwrap()["state"], "OPEN");
}

#[test]
fn timeouts_from_config_take_effect() {
    let fake = fake();
    // firstTokenTimeoutMs (stream) and bodyReadTimeoutMs (non-stream): a hang fails over.
    // A model that never started is silent afterwards: the next request tries it last.
    for (stream, hang) in [(true, "hang#s"), (false, "hang#n")] {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[hang, "ok"]);
        config(
            &w,
            json!({"firstTokenTimeoutMs": 1000, "bodyReadTimeoutMs": 1000}),
        );
        let s = w.serve(&[]);
        let t = Instant::now();
        let r = s.chat("fcm", stream);
        assert_eq!(
            r.decision(),
            format!("p/ok!served|p/{hang}:timeout->p/ok:200|skips=0")
        );
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "bounded by the setting, not the 30 s default"
        );
        let latency = s.history().last().unwrap()["attempts"][0]["latencyMs"]
            .as_u64()
            .unwrap();
        assert!(
            (900..10_000).contains(&latency),
            "the hang was cut at about 1 s: {latency}"
        );
        let r = s.chat("fcm", stream);
        assert_eq!(
            r.decision(),
            "p/ok!served|p/ok:200|skips=0",
            "the silent model waits behind the one that answers"
        );
    }

    // streamStallTimeoutMs: content, then silence: with no other model to finish it, the
    // client is told the answer broke off (an error frame, never `[DONE]`).
    let w = World::new();
    ordered(&w, &fake.base_url(), &["stall_after_content:8000"]);
    config(&w, json!({"streamStallTimeoutMs": 1000}));
    let s = w.serve(&[]);
    let r = s.chat("fcm", true);
    assert!(r.body.contains("Hello from stall_after_content:8000."));
    assert!(r.body.contains("\"code\":\"stream_broken\""), "{}", r.body);
    assert!(!r.body.contains("data: [DONE]"));
    let last = s.history().last().unwrap().clone();
    assert_eq!(last["outcome"], "stream_failed_after_content");
    assert_eq!(
        s.breaker("p/stall_after_content:8000").unwrap()["lastFailureKind"],
        "stream_stall"
    );
    drop(s);

    // totalBudgetMs: the whole chain stops when the budget is spent.
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["hang#1", "hang#2", "hang#3", "ok#budget"],
    );
    config(
        &w,
        json!({"firstTokenTimeoutMs": 1000, "totalBudgetMs": 1500}),
    );
    let s = w.serve(&[]);
    let t = Instant::now();
    let r = s.chat("fcm", true);
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("x-fcm-v2-attempts"), Some("2"));
    assert!(
        fake.requests_for("ok#budget").is_empty(),
        "nothing is tried after the budget"
    );
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn fifty_concurrent_streams_are_all_correct() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok_stream"]);
    let s = w.serve(&["--quiet"]);
    let base = s.base.clone();
    let handles: Vec<_> = (0..50)
        .map(|i| {
            let base = base.clone();
            std::thread::spawn(move || {
                let agent = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().new_agent();
                let mut r = agent
                    .post(&format!("{base}/v1/chat/completions"))
                    .header("x-request-id", &format!("c{i}"))
                    .send(json!({"model": "fcm", "stream": true, "messages": [{"role": "user", "content": "x"}]}).to_string())
                    .unwrap();
                let id = r.headers().get("x-request-id").unwrap().to_str().unwrap().to_string();
                (r.status().as_u16(), id, r.body_mut().read_to_string().unwrap())
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let (status, id, body) = h.join().unwrap();
        assert_eq!((status, id), (200, format!("c{i}")));
        let text: String = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| {
                v.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(text, "Hello from ok_stream.");
        assert!(body.trim_end().ends_with("data: [DONE]"));
    }
}

#[test]
fn client_disconnect_closes_the_upstream() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["long_stream:20000"]);
    let s = w.serve(&[]);
    let mut c = TcpStream::connect(s.base.trim_start_matches("http://")).unwrap();
    let body =
        json!({"model": "fcm", "stream": true, "messages": [{"role": "user", "content": "x"}]})
            .to_string();
    let host = s.base.trim_start_matches("http://");
    write!(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut buf = [0u8; 4096];
    let n = c.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("200 OK"));
    drop(c);
    let start = Instant::now();
    while fake.aborted() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the upstream stream was not closed after the client left"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let h = s.history();
    assert_eq!(h[0]["outcome"], "client_aborted");
    assert!(
        s.breaker("p/long_stream:20000")
            .is_none_or(|b| b["consecutiveFailures"] == 0),
        "not a model failure"
    );
}

#[test]
fn in_flight_limit_answers_503_fast() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["slow:1500"]);
    let s = w.serve(&["--max-in-flight", "2"]);
    let base = s.base.clone();
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let base = base.clone();
            std::thread::spawn(move || {
                let agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .proxy(None)
                    .build()
                    .new_agent();
                agent
                    .post(&format!("{base}/v1/chat/completions"))
                    .send(json!({"model": "fcm", "messages": []}).to_string())
                    .unwrap()
                    .status()
                    .as_u16()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let r = s.post_with(
        "/v1/chat/completions",
        &json!({"model": "fcm", "messages": []}).to_string(),
        &[("x-request-id", "agent-42")],
    );
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(
        r.header("x-request-id"),
        Some("agent-42"),
        "the fast 503 keeps the client's id"
    );
    for b in busy {
        assert_eq!(b.join().unwrap(), 200);
    }
}

#[test]
fn sigterm_lets_a_running_stream_finish() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["long_stream:1500"]);
    let s = w.serve(&[]);
    let base = s.base.clone();
    let client = std::thread::spawn(move || {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .build()
            .new_agent();
        let mut r = agent
            .post(&format!("{base}/v1/chat/completions"))
            .send(json!({"model": "fcm", "stream": true, "messages": []}).to_string())
            .unwrap();
        r.body_mut().read_to_string().unwrap()
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.stop(), 0);
    let body = client.join().unwrap();
    assert!(
        body.trim_end().ends_with("data: [DONE]"),
        "the stream was cut: {body}"
    );
}

#[test]
fn port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let out = w.fcm(&["serve", "--port", &port]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains(&format!("port {port}")) && out.stderr.contains("in use"),
        "{out:?}"
    );
}

#[test]
fn non_loopback_needs_a_token_and_the_token_is_enforced() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let out = w.fcm(&["serve", "--host", "0.0.0.0", "--port", "0"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--token"), "{out:?}");
    let s = w.serve(&["--token", "tok-123"]);
    assert_eq!(s.chat("fcm", false).status, 401);
    assert_eq!(s.get("/health").status, 200, "health needs no token");
    let body = json!({"model": "fcm", "messages": []}).to_string();
    assert_eq!(
        s.post_with(
            "/v1/chat/completions",
            &body,
            &[("authorization", "Bearer tok-123")]
        )
        .status,
        200
    );
    assert_eq!(
        s.post_with("/v1/chat/completions", &body, &[("x-api-key", "tok-123")])
            .status,
        200
    );
}

#[test]
fn keys_never_reach_history_traces_or_logs() {
    let fake = fake();
    let mut w = World::new();
    w.catalog(&[(
        "a",
        &fake.base_url(),
        Some("A_KEY"),
        &["auth_401", "server_500", "ok"],
    )]);
    w.set_env("A_KEY", KEY);
    let s = w.serve(&[]);
    let mut seen = String::new();
    for model in ["fcm:a/auth_401", "fcm:a/server_500", "fcm", "fcm:a/ok"] {
        let r = s.chat(model, true);
        seen.push_str(&format!("{:?}", r.headers));
        seen.push_str(&r.body);
    }
    seen.push_str(&s.get("/fcm/admin/history").body);
    seen.push_str(&s.get("/fcm/admin/breakers").body);
    seen.push_str(&s.get("/health").body);
    let stderr = {
        let st = s.stderr();
        assert_eq!(s.stop(), 0);
        st
    };
    assert!(!seen.contains(KEY), "a key reached a client");
    assert!(!stderr.contains(KEY), "a key reached the log");
    assert_not_in_files(&w.home, KEY);
}

#[test]
fn breakers_and_history_commands_live_and_offline() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500", "ok"]);
    let s = w.serve(&[]);
    for _ in 0..3 {
        s.chat("fcm:p/server_500", false);
    }
    s.chat("fcm", false);
    let out = w.fcm(&["breakers", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let rows = out.json();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == "p/server_500")
        .unwrap()
        .clone();
    for field in [
        "model",
        "state",
        "consecutiveFailures",
        "tripCount",
        "cooldownMsLeft",
        "quotaPauseMsLeft",
        "lastFailureKind",
        "updatedAt",
    ] {
        assert!(row.get(field).is_some(), "{field} missing in {row}");
    }
    assert_eq!(row["state"], "OPEN");
    let table = w.fcm(&["breakers"]);
    assert!(
        table.stdout.contains("OPEN") && table.stdout.contains("live from the server"),
        "{table:?}"
    );
    // A reset through the live server sticks (the server's next flush does not undo it).
    let out = w.fcm(&["breakers", "--reset", "p/server_500"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(s.breaker("p/server_500").is_none());
    let hist = w.fcm(&["history", "-n", "2"]);
    assert!(
        hist.stdout.contains("p/ok") && hist.stdout.contains("2 requests:"),
        "{hist:?}"
    );
    let json = w.fcm(&["history", "--json"]).json();
    assert_eq!(json.as_array().unwrap().len(), 4);
    assert_eq!(s.stop(), 0);
    // Offline: the files.
    let out = w.fcm(&["history", "--json", "-n", "1"]);
    assert_eq!(out.json().as_array().unwrap().len(), 1);
    let out = w.fcm(&["breakers", "--reset", "all"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(w.fcm(&["breakers", "--json"]).json(), json!([]));
    assert_eq!(w.fcm(&["breakers", "--reset", "p/unknown"]).code, 2);
}

#[test]
fn requests_a_web_page_could_make_are_refused() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let body = json!({"model": "fcm", "messages": [{"role": "user", "content": "x"}]}).to_string();
    let r = s.post_with(
        "/v1/chat/completions",
        &body,
        &[("host", "attacker.example")],
    );
    assert_eq!(r.status, 403, "DNS rebinding: {r:?}");
    let r = s.post_with(
        "/fcm/admin/breakers/reset",
        "",
        &[("origin", "https://evil.example")],
    );
    assert_eq!(r.status, 403, "cross-site POST: {r:?}");
    assert!(fake.requests().is_empty());
    let r = s.post_with(
        "/v1/chat/completions",
        &body,
        &[("origin", "http://localhost:5173")],
    );
    assert_eq!(r.status, 403, "a page on another local port: {r:?}");
    let own = s.base.replace("127.0.0.1", "localhost");
    let r = s.post_with("/v1/chat/completions", &body, &[("origin", &own)]);
    assert_eq!(r.status, 200, "the dashboard's own origin is fine: {r:?}");
}

#[test]
fn a_flowing_stream_outlives_the_request_budget() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["long_stream:2500"]);
    config(
        &w,
        json!({"totalBudgetMs": 1000, "streamStallTimeoutMs": 1000}),
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", true);
    assert!(r.body.trim_end().ends_with("data: [DONE]"), "{}", r.body);
    assert!(
        r.body.matches("word").count() >= 20,
        "the whole 2.5 s answer arrived"
    );
    let h = s.history();
    assert_eq!(h[0]["outcome"], "served");
    assert_eq!(
        s.breaker("p/long_stream:2500").unwrap()["consecutiveFailures"],
        0
    );
}

#[test]
fn the_dashboard_shows_breakers_pauses_and_decisions() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500", "rate_limit:60", "ok"]);
    let s = w.serve(&[]);
    s.chat("fcm", false);
    let page = s.get("/");
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    for needle in [
        "Breakers",
        "p/server_500",
        "provider_server_error",
        "Quota pauses",
        "p/rate_limit:60",
        "Last 1 decisions",
        "served",
    ] {
        assert!(page.body.contains(needle), "{needle} missing from the page");
    }
    assert!(
        !page.body.contains("src=") && !page.body.contains("href="),
        "self-contained"
    );
}

#[test]
fn impossible_budgets_are_lowered_and_non_boolean_streams_refused_before_routing() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    // An answer budget no window holds is the room the model has, not a refusal.
    let huge = json!({"model": "fcm", "max_tokens": u64::MAX, "messages": [{"role": "user", "content": "hi"}]});
    let r = s.post("/v1/chat/completions", &huge.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    let sent = fake.requests().last().unwrap().json();
    let budget = sent["max_tokens"].as_u64().unwrap();
    assert!(budget < 131_072, "{budget}");
    assert_eq!(
        r.header("x-fcm-v2-max-tokens"),
        Some(budget.to_string().as_str())
    );
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "fcm", "stream": "yes", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "claude-x", "max_tokens": 10, "stream": "yes", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "gpt-x", "stream": 1, "input": "hi"}),
        ),
    ] {
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 400, "{path}: {r:?}");
        assert!(
            r.body.contains("must be true or false"),
            "{path}: {}",
            r.body
        );
    }
    assert_eq!(
        fake.requests().len(),
        1,
        "nothing more reached the provider"
    );
}

#[test]
fn the_last_resort_is_not_sent_what_would_fail_the_same_way() {
    let fake = fake();
    // Every failure blamed on the request: the last resort would refuse it too.
    let w = World::new();
    ordered(&w, &fake.base_url(), &["bad_request_400#a", "ok#last"]);
    config(
        &w,
        json!({"maxAttempts": 2, "lastResortModel": "p/ok#last"}),
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(fake.requests_for("ok#last").is_empty());
    drop(s);
    // A rejected key blocks its provider, the last resort included.
    let w = World::new();
    ordered(&w, &fake.base_url(), &["auth_401#a", "ok#last2"]);
    config(
        &w,
        json!({"maxAttempts": 2, "lastResortModel": "p/ok#last2"}),
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 503, "{r:?}");
    assert!(fake.requests_for("ok#last2").is_empty());
}
