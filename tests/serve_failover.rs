//! `fcm serve`: every failure kind fails over to a model that really answers, and the
//! client sees only the winner's bytes and a true account of what happened.

mod support;

use serde_json::{json, Value};
use support::*;

/// The text content of an SSE chat stream.
fn sse_text(body: &str) -> String {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

const SHORT_TIMEOUTS: &str =
    r#"{"router":{"failover":{"firstTokenTimeoutMs":1000,"bodyReadTimeoutMs":1000}}}"#;

fn failover_from(bad: &str, stream: bool, label: &str, kind: &str, damages: bool) {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &[bad, "ok"]);
    w.write_config(&serde_json::from_str(SHORT_TIMEOUTS).unwrap());
    let s = w.serve(&[]);
    let r = s.chat("fcm", stream);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        format!("p/ok!served|p/{bad}:{label}->p/ok:200|skips=0")
    );
    assert_eq!(r.header("x-fcm-v2-model"), Some("p/ok"));
    assert_eq!(r.header("x-fcm-v2-attempts"), Some("2"));
    assert!(r.header("x-request-id").is_some_and(|id| !id.is_empty()));
    if stream {
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        assert_eq!(sse_text(&r.body), "Hello from ok.");
        assert!(r.body.trim_end().ends_with("data: [DONE]"), "{}", r.body);
    } else {
        assert_eq!(
            r.json()["choices"][0]["message"]["content"],
            "Hello from ok."
        );
    }
    assert!(
        !r.body.contains(bad),
        "bytes of the failed attempt reached the client: {}",
        r.body
    );
    let row = s
        .breaker(&format!("p/{bad}"))
        .expect("the failed model has a breaker row");
    assert_eq!(row["lastFailureKind"], kind, "{row}");
    assert_eq!(row["consecutiveFailures"], u64::from(damages), "{row}");
    let h = s.history();
    assert_eq!(h.len(), 1);
    assert_eq!(h[0]["outcome"], "served");
    assert_eq!(h[0]["attempts"][0]["kind"], kind);
}

macro_rules! failover {
    ($($name:ident: $bad:expr, $stream:expr, $label:expr, $kind:expr, $damages:expr;)*) => {
        $(#[test] fn $name() { failover_from($bad, $stream, $label, $kind, $damages) })*
    };
}

failover! {
    empty_choices_json: "empty_choices", false, "empty_choices", "empty_choices", true;
    empty_choices_stream: "empty_choices", true, "empty_choices", "empty_choices", true;
    empty_content_json: "empty_content", false, "empty_content", "empty_content", true;
    empty_content_stream: "empty_content", true, "empty_stream", "empty_stream", true;
    error_payload_json: "error_payload_200", false, "error_payload", "error_payload", true;
    error_payload_stream: "error_payload_200", true, "error_payload", "error_payload", true;
    invalid_json_json: "invalid_json", false, "invalid_json", "invalid_json", true;
    invalid_json_stream: "invalid_json", true, "invalid_json", "invalid_json", true;
    garbage_json: "garbage", false, "invalid_json", "invalid_json", true;
    html_json: "html", false, "html_maintenance", "html_maintenance", true;
    html_stream: "html", true, "html_maintenance", "html_maintenance", true;
    sse_empty_stream: "sse_empty", true, "empty_stream", "empty_stream", true;
    sse_error_first_stream: "sse_error_first", true, "error_payload", "error_payload", true;
    rate_limit_json: "rate_limit", false, "429", "rate_limit", false;
    rate_limit_stream: "rate_limit", true, "429", "rate_limit", false;
    bad_request_json: "bad_request_400", false, "400", "invalid_request", false;
    server_error_json: "server_500", false, "500", "provider_server_error", true;
    server_error_stream: "server_500", true, "500", "provider_server_error", true;
    hang_json: "hang", false, "timeout", "timeout", true;
    hang_stream: "hang", true, "timeout", "timeout", true;
    drop_connection_json: "drop_connection", false, "network_error", "network_error", true;
    drop_connection_stream: "drop_connection", true, "network_error", "network_error", true;
}

#[test]
fn keepalives_reasoning_and_tool_calls_are_answers() {
    let fake = fake();
    for good in [
        "sse_keepalive_then_ok",
        "reasoning_only",
        "tool_calls_only",
        "ok_stream",
    ] {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[good, "ok"]);
        let s = w.serve(&[]);
        for stream in [false, true] {
            // A tool call is an answer to a request that offers the tool.
            let body = json!({"model": "fcm", "stream": stream, "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}]});
            let r = s.post("/v1/chat/completions", &body.to_string());
            assert_eq!(r.status, 200, "{good}: {r:?}");
            assert_eq!(
                r.decision(),
                format!("p/{good}!served|p/{good}:200|skips=0"),
                "{good} stream={stream}"
            );
        }
    }
}

#[test]
fn auth_failure_blocks_the_rest_of_that_provider() {
    let fake = fake();
    let url = fake.base_url();
    let w = World::new();
    let doc = json!({"version": 1, "providers": [
        {"id": "a", "baseUrl": url, "keyRequired": false, "models": [
            {"id": "auth_401", "tier": "S+", "context": 1000}, {"id": "ok#a", "tier": "S", "context": 1000}]},
        {"id": "b", "baseUrl": url, "keyRequired": false, "models": [{"id": "ok#b", "tier": "A", "context": 1000}]}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.decision(),
        "b/ok#b!served|a/auth_401:401->b/ok#b:200|skips=1"
    );
    assert!(
        fake.requests_for("ok#a").is_empty(),
        "a blocked provider was still called"
    );
    let h = s.history();
    assert_eq!(
        h[0]["skipped"],
        json!([{"model": "a/ok#a", "reason": "provider_blocked"}])
    );
    let row = s.breaker("a/auth_401").unwrap();
    assert_eq!(
        (
            row["lastFailureKind"].as_str(),
            row["consecutiveFailures"].as_u64()
        ),
        (Some("auth_error"), Some(0)),
        "a bad key is not model health"
    );
}

#[test]
fn all_failed_is_503_with_retry_after_and_every_attempt() {
    let fake = fake();
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["server_500", "empty_choices", "rate_limit:20"],
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", true);
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(
        r.decision(),
        "none!all_failed|p/server_500:500->p/empty_choices:empty_choices->p/rate_limit:20:429|skips=0"
    );
    assert_eq!(
        r.header("x-fcm-v2-model"),
        Some("p/rate_limit:20"),
        "the last model tried"
    );
    assert_eq!(r.header("x-fcm-v2-attempts"), Some("3"));
    assert_eq!(
        r.header("retry-after"),
        Some("1"),
        "server_500 and empty_choices can be retried at once"
    );
    let body = r.json();
    let attempts = body["error"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3);
    assert_eq!(
        attempts[0],
        json!({"model": "p/server_500", "status": 500, "kind": "provider_server_error", "detail": "internal error"})
    );
    assert_eq!(attempts[2]["kind"], "rate_limit");
    assert_eq!(body["error"]["code"], "all_failed");
}

#[test]
fn retry_after_is_the_earliest_return() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["rate_limit:40", "rate_limit:20"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 503);
    let secs: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((18..=20).contains(&secs), "retry-after {secs}");
    // Now both are paused: skipped before dispatch, nothing is sent.
    let before = fake.requests().len();
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 503);
    assert_eq!(r.decision(), "none!all_failed|skips=2");
    assert_eq!(fake.requests().len(), before);
    assert_eq!(s.history()[1]["skipped"][0]["reason"], "quota_paused");
}

#[test]
fn client_blamed_failures_return_the_clients_4xx() {
    let fake = fake();
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["bad_request_400#1", "bad_request_400#2"],
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(
        r.decision(),
        "none!client_error|p/bad_request_400#1:400->p/bad_request_400#2:400|skips=0"
    );
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unsupported parameter"));
    assert!(
        s.breakers().iter().all(|b| b["state"] == "CLOSED"),
        "a client-blamed 400 never damages a model"
    );
}

#[test]
fn error_after_content_keeps_what_was_sent_and_the_next_model_finishes_it() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["sse_error_after_content", "ok"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm", true);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.decision(),
        "p/sse_error_after_content!served|p/sse_error_after_content:200|skips=0"
    );
    assert_eq!(
        sse_text(&r.body),
        "Partial answer from sse_error_after_contentHello from ok."
    );
    assert!(r.body.trim_end().ends_with("data: [DONE]"));
    assert!(
        !r.body.contains("stream broke"),
        "the error frame is not forwarded"
    );
    let h = s.history();
    assert_eq!(h[0]["outcome"], "continued");
    assert_eq!(
        (
            h[0]["attempts"][0]["status"].as_u64(),
            h[0]["attempts"][0]["kind"].as_str()
        ),
        (Some(200), Some("error_payload")),
        "the history names how the committed stream failed"
    );
    let row = s.breaker("p/sse_error_after_content").unwrap();
    assert_eq!(
        (
            row["consecutiveFailures"].as_u64(),
            row["lastFailureKind"].as_str()
        ),
        (Some(1), Some("error_payload"))
    );
}

#[test]
fn stream_without_content_past_256k_is_passed_through() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["sse_no_useful_256k", "ok"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm", true);
    assert_eq!(r.status, 200);
    assert!(r.body.len() > 256 * 1024, "held bytes were passed on");
    // Nothing useful came: the next model answers in the same stream.
    assert_eq!(sse_text(&r.body), "Hello from ok.");
    assert_eq!(s.history()[0]["outcome"], "continued");
    assert_eq!(
        s.breaker("p/sse_no_useful_256k").unwrap()["lastFailureKind"],
        "empty_stream"
    );
}

#[test]
fn provider_answering_json_to_a_stream_request_is_streamed() {
    let fake = fake();
    let w = World::new();
    // `reasoning_only` answers JSON when not streaming; force that by asking the fake without
    // stream and checking fcm's conversion through a provider that ignores `stream`.
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm", true);
    assert_eq!(sse_text(&r.body), "Hello from ok.");
}
