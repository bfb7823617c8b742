//! `fcm serve` and the hold buffer as a client meets them: streams read in awkward pieces
//! reach the client whole in every validation mode, an event far over the buffer cap is
//! passed on in full, and a stream that breaks after commit is recorded as a failure
//! (and finished by the next model: see `broken_streams`).

mod support;

use serde_json::{json, Value};
use support::*;

/// The events of an SSE chat stream, as a client's parser reads them (`\r\n` and `\n`
/// alike), without `[DONE]`.
fn chunks(body: &str) -> Vec<Value> {
    let normal = body.replace("\r\n", "\n").replace('\r', "\n");
    normal
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            let data = data.join("\n");
            (!data.is_empty() && data != "[DONE]").then(|| serde_json::from_str(&data).unwrap())
        })
        .collect()
}

/// The text content of an SSE chat stream.
fn text(body: &str) -> String {
    chunks(body)
        .iter()
        .filter_map(|c| {
            c.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect()
}

fn validation(w: &World, mode: Option<&str>) {
    if let Some(mode) = mode {
        w.write_config(&json!({"router": {"failover": {"contentValidation": mode}}}));
    }
}

#[test]
fn blank_lines_then_split_reads_reach_the_client_whole_in_every_mode() {
    let fake = fake();
    let model = "sse_blank_lines_then_split";
    for mode in [Some("off"), None, Some("basic"), Some("strict")] {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[model, "ok"]);
        validation(&w, mode);
        let s = w.serve(&[]);
        let r = s.chat("fcm", true);
        assert_eq!(r.status, 200, "{mode:?}: {r:?}");
        assert_eq!(
            r.decision(),
            format!("p/{model}!served|p/{model}:200|skips=0"),
            "{mode:?}"
        );
        assert_eq!(text(&r.body), format!("Hello from {model}."), "{mode:?}");
        assert!(r.body.trim_end().ends_with("data: [DONE]"), "{mode:?}");
        let h = s.history();
        assert_eq!(h.len(), 1, "{mode:?}: one history entry");
        assert_eq!(h[0]["outcome"], "served", "{mode:?}");
        assert_eq!(h[0]["attempts"][0]["kind"], Value::Null, "{mode:?}");
        // Still serving, and nothing went wrong inside.
        assert_eq!(s.get("/health").status, 200);
        assert_eq!(
            text(&s.chat("fcm", true).body),
            format!("Hello from {model}.")
        );
        assert!(!s.stderr().contains("panicked"), "{mode:?}: {}", s.stderr());
        assert_eq!(s.stop(), 0, "{mode:?}");
    }
}

#[test]
fn an_event_over_the_buffer_cap_reaches_the_client_in_full() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["sse_huge_event", "ok"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm", true);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.decision(),
        "p/sse_huge_event!served|p/sse_huge_event:200|skips=0"
    );
    let long = fcm::fake_provider::huge_text(3 * 1024 * 1024);
    assert_eq!(text(&r.body), format!("Hello {long} and goodbye."));
    let events = chunks(&r.body);
    assert_eq!(
        events[1]["choices"][0]["delta"]["content"]
            .as_str()
            .map(str::len),
        Some(long.len()),
        "the long event is one event, as it was sent"
    );
    assert!(r.body.trim_end().ends_with("data: [DONE]"));
    let h = s.history();
    assert_eq!((h.len(), h[0]["outcome"].as_str()), (1, Some("served")));
    assert_eq!(s.get("/health").status, 200);
    // With tools offered, chat bytes with a `<` are rebuilt from parsed chunks; the pieces
    // of an event too long to parse go as they came, so the event arrives whole.
    let body = json!({"model": "fcm", "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}]});
    let r = s.post("/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 200);
    assert_eq!(text(&r.body), format!("Hello {long} and goodbye."));
}

#[test]
fn a_stream_broken_after_commit_is_a_recorded_failure() {
    let fake = fake();
    // An error frame after content, then a stall after content.
    for (model, kind, said, failover) in [
        (
            "sse_error_after_content",
            "error_payload",
            "Partial answer from sse_error_after_content#top",
            json!({}),
        ),
        (
            "stall_after_content:4000",
            "stream_stall",
            "Hello from stall_after_content:4000#top.",
            json!({"streamStallTimeoutMs": 1000}),
        ),
    ] {
        let w = World::new();
        let top = format!("{model}#top");
        ordered(&w, &fake.base_url(), &[&top, "ok#next"]);
        // A high threshold keeps the breaker closed: only the live ranking moves the model.
        w.write_config(
            &json!({"router": {"failover": failover, "breaker": {"failureThreshold": 50}}}),
        );
        let s = w.serve(&["--quiet"]);
        for n in 1..=3u64 {
            let r = s.chat("fcm", true);
            assert_eq!(r.status, 200, "{model}");
            assert_eq!(
                r.decision(),
                format!("p/{top}!served|p/{top}:200|skips=0"),
                "{model}: committed before it broke"
            );
            // What came before the break, then the next model's continuation of it.
            let got = text(&r.body);
            assert!(
                got.starts_with(said) && got.len() > said.len(),
                "{model}: {got}"
            );
            assert!(
                r.body.trim_end().ends_with("data: [DONE]"),
                "{model}: ends cleanly, once finished"
            );
            let h = s.history();
            let last = h.last().unwrap();
            assert_eq!(last["outcome"], "continued", "{model}");
            assert_eq!(
                (
                    last["attempts"][0]["status"].as_u64(),
                    last["attempts"][0]["kind"].as_str()
                ),
                (Some(200), Some(kind)),
                "{model}: the history names how the committed stream failed"
            );
            let row = s.breaker(&format!("p/{top}")).unwrap();
            assert_eq!(
                (
                    row["consecutiveFailures"].as_u64(),
                    row["lastFailureKind"].as_str()
                ),
                (Some(n), Some(kind)),
                "{model}"
            );
        }
        // Three failures in the live window: the model now ranks below the healthy one.
        let r = s.chat("fcm", true);
        assert_eq!(
            r.decision(),
            "p/ok#next!served|p/ok#next:200|skips=0",
            "{model}"
        );
    }
}
