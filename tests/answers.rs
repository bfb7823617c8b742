//! Answers that are what they claim: a provider notice written as the model's reply is a
//! failure that fails over, not an answer.

mod support;

use serde_json::{json, Value};
use support::*;

fn chat(stream: bool) -> String {
    json!({"model": "fcm", "stream": stream, "messages": [{"role": "user", "content": "Refactor this."}]})
        .to_string()
}

#[test]
fn a_provider_notice_fails_over_and_takes_the_model_out_for_a_while() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["paid_notice", "ok"]);
    let s = w.serve(&[]);
    for stream in [false, true] {
        let r = s.post("/v1/chat/completions", &chat(stream));
        assert_eq!(r.status, 200, "{r:?}");
        assert!(
            !r.body.contains("paid plan"),
            "the notice never reaches the agent: {r:?}"
        );
        // Streamed word by word: `Hello `, `from `, `ok.`.
        assert!(r.body.contains("ok."), "{r:?}");
        if !stream {
            assert_eq!(
                r.decision(),
                "p/ok!served|p/paid_notice:provider_notice->p/ok:200|skips=0"
            );
        } else {
            // Out of rotation now: passed over before dispatch.
            assert_eq!(r.decision(), "p/ok!served|p/ok:200|skips=1");
        }
    }
    let h: Vec<Value> = s.history();
    assert_eq!(h[1]["skipped"][0]["reason"], "provider_notice");
    let b = s.breaker("p/paid_notice").unwrap();
    assert_eq!(b["pausedFor"], "provider_notice", "{b}");
    assert!(
        b["quotaPauseMsLeft"].as_u64().unwrap() > 5 * 3600 * 1000,
        "{b}"
    );
    assert_eq!(b["consecutiveFailures"], 0, "not ill health: {b}");
    assert_eq!(b["state"], "CLOSED");
}

#[test]
fn a_streamed_notice_is_caught_before_commit() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["paid_notice", "ok"]);
    let s = w.serve(&[]);
    let r = s.post("/v1/chat/completions", &chat(true));
    assert_eq!(
        r.decision(),
        "p/ok!served|p/paid_notice:provider_notice->p/ok:200|skips=0"
    );
    assert!(!r.body.contains("paid plan"), "{r:?}");
    let last = s.history().pop().unwrap();
    assert!(last["attempts"][0]["kind"] == "provider_notice", "{last}");
}

#[test]
fn a_pinned_model_that_answers_with_a_notice_is_a_502_quoting_it() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["paid_notice", "ok"]);
    let s = w.serve(&[]);
    let body =
        json!({"model": "fcm:p/paid_notice", "messages": [{"role": "user", "content": "hi"}]});
    let r = s.post("/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 502, "{r:?}");
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("provider_notice"), "{message}");
    assert!(
        message.contains("requires a paid plan"),
        "the user sees what it said: {message}"
    );
}
