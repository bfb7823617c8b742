//! Errors of the HTTP edge itself (access denied, a body too large, no such route) and of the
//! router (every model failed), as a client on each path reads them: Claude Code on
//! `/v1/messages` gets Anthropic's envelope, every other path OpenAI's, and both list the
//! failed attempts.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

fn messages_body() -> String {
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 64, "stream": false,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "say hi"}]}]
    })
    .to_string()
}

/// Asserts Anthropic's error envelope, `{"type":"error","error":{"type":...,"message":...}}`.
fn assert_anthropic(body: &Value, error_type: &str) {
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], error_type, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// The status and JSON body of the one answer the server sends before closing.
fn raw_answer(s: &Server, request: &str) -> (u16, Value) {
    let mut c = TcpStream::connect(s.base.trim_start_matches("http://")).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{raw}"));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {raw}"));
    (status, body)
}

#[test]
fn a_body_too_large_for_messages_is_refused_in_anthropics_envelope() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&[]);
    let host = s.base.trim_start_matches("http://");
    let size = 33 * 1024 * 1024;
    let (status, body) = raw_answer(
        &s,
        &format!("POST /v1/messages?beta=true HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"),
    );
    assert_eq!(status, 413);
    assert_anthropic(&body, "request_too_large");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("32 MiB"));
    // The same refusal on the chat path keeps OpenAI's envelope.
    let (status, body) = raw_answer(
        &s,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: {size}\r\n\r\n"
        ),
    );
    assert_eq!(status, 413);
    assert!(body.get("type").is_none(), "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[test]
fn a_request_without_the_token_is_refused_in_the_envelope_of_its_path() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&["--token", "tok-123"]);
    let r = s.post("/v1/messages", &messages_body());
    assert_eq!(r.status, 401, "{r:?}");
    assert_anthropic(&r.json(), "authentication_error");
    assert_eq!(r.decision(), "none!rejected|skips=0");
    assert!(r.header("x-request-id").is_some());
    let r = s.post("/v1/messages/count_tokens", &messages_body());
    assert_eq!(r.status, 401);
    assert_anthropic(&r.json(), "authentication_error");
    let r = s.post("/v1/chat/completions", &messages_body());
    assert_eq!(r.status, 401);
    let e = r.json();
    assert_eq!(
        (e.get("type"), e["error"]["type"].as_str()),
        (None, Some("authentication_error")),
        "{e}"
    );
    // Claude Code's own header admits it.
    let r = s.post_with(
        "/v1/messages/count_tokens",
        &messages_body(),
        &[("x-api-key", "tok-123")],
    );
    assert_eq!(r.status, 200, "{r:?}");
}

#[test]
fn unknown_routes_under_messages_answer_in_anthropics_envelope() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&[]);
    let r = s.get("/v1/messages/batches");
    assert_eq!(r.status, 404);
    assert_anthropic(&r.json(), "not_found_error");
    let r = s.get("/v1/nothing");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "not_found_error");
    assert!(r.json().get("type").is_none());
}

#[test]
fn every_model_failing_on_messages_lists_the_attempts() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500", "empty_choices"]);
    let s = w.serve(&[]);
    let r = s.post("/v1/messages", &messages_body());
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(
        r.decision(),
        "none!all_failed|p/server_500:500->p/empty_choices:empty_choices|skips=0"
    );
    let body = r.json();
    assert_anthropic(&body, "overloaded_error");
    let attempts = body["error"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{body}");
    assert_eq!(
        attempts[0],
        json!({"model": "p/server_500", "status": 500, "kind": "provider_server_error", "detail": "internal error"})
    );
    assert_eq!(attempts[1]["kind"], "empty_choices");
}
