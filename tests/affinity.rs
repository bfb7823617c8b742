//! Which model serves an agent: the strongest that works, kept for the whole conversation
//! on all three protocols, new conversations spread, kept across restarts.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::*;

/// A catalog on one fake provider: `(model id, tier, SWE score)`.
fn catalog(w: &World, url: &str, models: &[(&str, &str, f64)]) {
    let doc = json!({"version": 1, "providers": [{
        "id": "p", "baseUrl": url, "keyRequired": false,
        "models": models.iter().map(|(id, tier, swe)| json!({
            "id": id, "tier": tier, "sweBench": swe, "context": 131072})).collect::<Vec<_>>()}]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
}

fn served(r: &Resp) -> String {
    r.header("x-fcm-v2-model").unwrap_or_default().to_string()
}

/// Turn `n` of a conversation about `topic`, in `protocol`'s shape (`chat`, `messages`,
/// `responses`), with its history.
fn turn(protocol: &str, topic: &str, n: usize) -> String {
    let mut said = vec![("user", format!("Work on {topic}."))];
    for k in 1..n {
        said.push(("assistant", format!("step {k} done")));
        said.push(("user", "go on".to_string()));
    }
    let body = match protocol {
        "chat" => {
            json!({"model": "fcm", "messages": said.iter().map(|(r, t)| json!({"role": r, "content": t})).collect::<Vec<_>>()})
        }
        "messages" => json!({"model": "fcm", "max_tokens": 100, "system": "You are an agent.",
            "messages": said.iter().map(|(r, t)| json!({"role": r, "content": t})).collect::<Vec<_>>()}),
        _ => json!({"model": "fcm", "instructions": "You are an agent.",
            "input": said.iter().map(|(r, t)| json!({"role": r, "content": t})).collect::<Vec<_>>()}),
    };
    body.to_string()
}

fn path(protocol: &str) -> &'static str {
    match protocol {
        "chat" => "/v1/chat/completions",
        "messages" => "/v1/messages",
        _ => "/v1/responses",
    }
}

#[test]
fn after_a_bench_the_strongest_working_model_serves_not_the_fastest() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[("ok#fast-b", "B", 40.0), ("slow:300#strong", "S+", 74.0)],
    );
    let bench = w.fcm(&["bench", "--pings", "1", "--json"]);
    assert_eq!(bench.code, 0, "{bench:?}");
    let report = bench.json();
    assert_eq!(
        report["models"][0]["model"], "p/slow:300#strong",
        "the bench table too"
    );
    let s = w.serve(&[]);
    let r = s.post("/v1/chat/completions", &turn("chat", "x", 1));
    assert_eq!(served(&r), "p/slow:300#strong");
    s.stop();

    w.write_config(&json!({"router": {"prefer": "speed"}}));
    let s = w.serve(&[]);
    let r = s.post("/v1/chat/completions", &turn("chat", "y", 1));
    assert_eq!(
        served(&r),
        "p/ok#fast-b",
        "prefer speed keeps the older order"
    );
    s.stop();

    // Too slow for an agent: behind every responsive model, whatever its tier.
    w.write_config(&json!({"router": {"maxTtftMs": 1000}}));
    catalog(
        &w,
        &fake.base_url(),
        &[("ok#fast-b", "B", 40.0), ("slow:1500#strong", "S+", 74.0)],
    );
    assert_eq!(w.fcm(&["bench", "--pings", "1", "--json"]).code, 0);
    let s = w.serve(&[]);
    let r = s.post("/v1/chat/completions", &turn("chat", "z", 1));
    assert_eq!(served(&r), "p/ok#fast-b");
}

#[test]
fn a_reset_model_is_tried_again_first() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[("fails_first:2#top", "S+", 74.0), ("ok#other", "A", 60.0)],
    );
    let s = w.serve(&[]);
    // The top model fails twice: its breaker degrades and it goes behind the other model,
    // which serves and proves itself.
    for n in 0..5 {
        let r = s.post("/v1/chat/completions", &turn("chat", &format!("t{n}"), 1));
        assert_eq!(served(&r), "p/ok#other", "{}", r.decision());
    }
    assert_eq!(
        s.breaker("p/fails_first:2#top").unwrap()["state"],
        "DEGRADED"
    );
    assert_eq!(
        w.fcm(&["breakers", "--reset", "p/fails_first:2#top"]).code,
        0
    );
    let r = s.post("/v1/chat/completions", &turn("chat", "after reset", 1));
    assert_eq!(served(&r), "p/fails_first:2#top", "{}", r.decision());
}

#[test]
fn a_conversation_keeps_its_model_on_every_protocol_when_it_slows_down() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[
            ("ok#a", "S", 60.0),
            ("ok#b", "S", 60.0),
            ("ok#c", "S", 60.0),
        ],
    );
    let s = w.serve(&[]);
    for (protocol, header) in [
        ("chat", "x-fcm-session"),
        ("messages", "x-claude-code-session-id"),
        ("responses", "session-id"),
    ] {
        let session = [(header, format!("{protocol}-session-1"))];
        let headers: Vec<(&str, &str)> = session.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let first = s.post_with(path(protocol), &turn(protocol, "parser", 1), &headers);
        assert_eq!(first.status, 200, "{first:?}");
        assert_eq!(first.header("x-fcm-v2-affinity"), Some("new"), "{protocol}");
        let model = served(&first);
        // Its model slows down: the others are faster now.
        let id = model.trim_start_matches("p/");
        fake.set_latency(id, Duration::from_millis(150));
        for _ in 0..3 {
            s.post("/v1/chat/completions", &turn("chat", "warm others", 1));
        }
        let second = s.post_with(path(protocol), &turn(protocol, "parser", 2), &headers);
        assert_eq!(second.status, 200, "{second:?}");
        assert_eq!(served(&second), model, "{protocol}: {}", second.decision());
        assert_eq!(
            second.header("x-fcm-v2-affinity"),
            Some("kept"),
            "{protocol}"
        );
        fake.set_latency(id, Duration::ZERO);
    }
    // Without a session id, the beginning of the conversation names it.
    let first = s.post("/v1/chat/completions", &turn("chat", "docs", 1));
    let second = s.post("/v1/chat/completions", &turn("chat", "docs", 2));
    assert_eq!(second.header("x-fcm-v2-affinity"), Some("kept"));
    assert_eq!(served(&first), served(&second));
    let history = s.history();
    let last = history.last().unwrap();
    assert_eq!(last["affinity"], "kept");
    assert_eq!(
        last["session"].as_str().unwrap().len(),
        32,
        "a hash, never the words"
    );
}

#[test]
fn a_conversation_moves_for_good_when_its_model_fails() {
    let fake = fake();
    let w = World::new();
    w.write_config(
        &json!({"router": {"failover": {"firstTokenTimeoutMs": 1000, "bodyReadTimeoutMs": 1000}}}),
    );
    catalog(
        &w,
        &fake.base_url(),
        &[("ok#a", "S", 60.0), ("ok#b", "S", 60.0)],
    );
    let s = w.serve(&[]);
    let session = [("x-fcm-session", "moving")];
    let first = s.post_with("/v1/chat/completions", &turn("chat", "t", 1), &session);
    let model = served(&first);
    let id = model.trim_start_matches("p/").to_string();
    fake.set_latency(&id, Duration::from_millis(3000));
    let second = s.post_with("/v1/chat/completions", &turn("chat", "t", 2), &session);
    assert_ne!(served(&second), model);
    assert_eq!(second.header("x-fcm-v2-affinity"), Some("moved:timeout"));
    fake.set_latency(&id, Duration::ZERO);
    let third = s.post_with("/v1/chat/completions", &turn("chat", "t", 3), &session);
    assert_eq!(served(&third), served(&second), "moved for good");
    assert_eq!(third.header("x-fcm-v2-affinity"), Some("kept"));
}

#[test]
fn new_conversations_spread_over_equal_models_and_the_table_survives_a_restart() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[
            ("ok#a", "S", 60.0),
            ("ok#b", "S", 60.0),
            ("ok#c", "S", 60.0),
            ("ok#d", "S", 60.0),
        ],
    );
    let s = w.serve(&[]);
    let mut by_model: std::collections::BTreeMap<String, usize> = Default::default();
    let mut first_of = Vec::new();
    for n in 0..8 {
        let session = format!("agent-{n}");
        let r = s.post_with(
            "/v1/chat/completions",
            &turn("chat", "task", 1),
            &[("x-fcm-session", session.as_str())],
        );
        *by_model.entry(served(&r)).or_default() += 1;
        first_of.push((session, served(&r)));
    }
    assert_eq!(
        by_model.values().copied().collect::<Vec<_>>(),
        [2, 2, 2, 2],
        "{by_model:?}"
    );
    // Who keeps how many conversations: /health, `fcm status` and the dashboard say so.
    let health = s.get("/health").json();
    for model in ["p/ok#a", "p/ok#b", "p/ok#c", "p/ok#d"] {
        assert_eq!(health["conversations"][model], 2, "{health}");
    }
    let status = w.fcm(&["status", "--json"]).json();
    assert_eq!(status["conversations"]["p/ok#a"], 2, "{status}");
    let text = w.fcm(&["status"]).stdout;
    assert!(
        text.contains("conversations: 8 active (p/ok#a 2, "),
        "{text}"
    );
    assert!(s.get("/").body.contains("Conversations (8 active)"));
    assert_eq!(s.stop(), 0);
    // Without a server, from affinity.json.
    let status = w.fcm(&["status", "--json"]).json();
    assert_eq!(status["conversations"]["p/ok#d"], 2, "{status}");
    let file = w.home_file("affinity.json");
    assert_mode(&file, 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("agent-"), "only hashes are kept");
    let s = w.serve(&[]);
    for (session, model) in first_of {
        let r = s.post_with(
            "/v1/chat/completions",
            &turn("chat", "task", 2),
            &[("x-fcm-session", session.as_str())],
        );
        assert_eq!(served(&r), model, "kept across a restart");
        assert_eq!(r.header("x-fcm-v2-affinity"), Some("kept"));
    }
    let table = w.fcm(&["history", "-n", "3"]);
    assert!(table.stdout.contains("kept"), "{table:?}");
}

#[test]
fn affinity_can_be_turned_off() {
    let fake = fake();
    let w = World::new();
    w.write_config(&json!({"router": {"affinity": {"enabled": false}}}));
    catalog(&w, &fake.base_url(), &[("ok#a", "S", 60.0)]);
    let s = w.serve(&[]);
    let r = s.post("/v1/chat/completions", &turn("chat", "t", 2));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-fcm-v2-affinity"), None);
    let h: Vec<Value> = s.history();
    assert!(h[0].get("session").is_none());
}

#[test]
fn an_answer_no_model_served_says_nothing_of_affinity() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &[("bad_request_after:1#a", "S", 60.0)],
    );
    let s = w.serve(&[]);
    let session = [("x-fcm-session", "turned-down")];
    let first = s.post_with("/v1/chat/completions", &turn("chat", "t", 1), &session);
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.header("x-fcm-v2-affinity"), Some("new"));
    // The model that holds the conversation turns its next turn down: nothing is served,
    // and nothing moved.
    let second = s.post_with("/v1/chat/completions", &turn("chat", "t", 2), &session);
    assert_eq!(second.status, 400, "{second:?}");
    assert_eq!(
        second.header("x-fcm-v2-affinity"),
        None,
        "{}",
        second.decision()
    );
    let history = s.history();
    let last = history.last().unwrap();
    assert!(last.get("affinity").is_none(), "{last}");
    assert!(last["session"].is_string(), "still named: {last}");
    // A new conversation that no model serves neither.
    let other = [("x-fcm-session", "never-served")];
    let r = s.post_with("/v1/messages", &turn("messages", "u", 1), &other);
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.header("x-fcm-v2-affinity"), None);
}
