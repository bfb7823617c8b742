//! A day on the free tiers, as a user sees it: a used-up quota is remembered (across a
//! restart too) at its own scope and shown with its reset in `fcm breakers`, `fcm usage`
//! and `/metrics`; a provider whose connections are refused is left alone after two.

mod support;

use serde_json::{json, Value};
use support::*;

/// Two providers: `p` with a model whose free tier is used up and one that answers, and
/// `q` whose account quota is used up, with a sibling; then `r`, which answers. No keys.
fn catalog(w: &World, url: &str) {
    let model =
        |id: &str, tier: &str| json!({"id": id, "label": id, "tier": tier, "context": 131072});
    let doc = json!({"version": 1, "providers": [
        {"id": "p", "name": "P", "baseUrl": url, "keyRequired": false,
         "models": [model("free_tier_exhausted", "S+"), model("ok#p", "A")]},
        {"id": "q", "name": "Q", "baseUrl": url, "keyRequired": false,
         "models": [model("insufficient_quota", "S+"), model("ok#q", "S")]},
        {"id": "r", "name": "R", "baseUrl": url, "keyRequired": false,
         "models": [model("ok#r", "S")]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
}

fn held(rows: &[Value], model: &str) -> Option<(String, String)> {
    rows.iter().find(|r| r["model"] == model).and_then(|r| {
        Some((
            r["heldFor"].as_str()?.to_string(),
            r["heldReason"].as_str()?.to_string(),
        ))
    })
}

#[test]
fn a_used_up_quota_is_remembered_at_its_scope_shown_with_its_reset_and_kept_across_a_restart() {
    let fake = fake();
    let w = World::new();
    catalog(&w, &fake.base_url());
    let s = w.serve(&[]);
    // Both S+ models answer that their quota is gone: instant refusals, no attempt used.
    let r = s.chat("fcm", true);
    assert_eq!(r.status, 200, "{r:?}");
    let decision = r.decision().to_string();
    assert!(
        decision.contains("p/free_tier_exhausted:403")
            && decision.contains("q/insufficient_quota:429"),
        "{decision}"
    );
    let served = r.header("x-fcm-v2-model").unwrap().to_string();
    assert_eq!(
        served, "r/ok#r",
        "q's account is out, so its sibling is not tried: {decision}"
    );
    // The next requests go into neither wall again.
    for _ in 0..3 {
        let r = s.chat("fcm", false);
        assert_eq!(r.status, 200);
    }
    assert_eq!(fake.requests_for("free_tier_exhausted").len(), 1);
    assert_eq!(fake.requests_for("insufficient_quota").len(), 1);
    assert!(
        fake.requests_for("ok#q").is_empty(),
        "the account's other model waits too"
    );
    let rows = s.breakers();
    let (why, reason) = held(&rows, "p/free_tier_exhausted").expect("shown in breakers");
    assert_eq!(why, "quota_exhausted");
    assert!(reason.contains("free grant"), "{reason}");
    assert_eq!(held(&rows, "q/ok#q").unwrap().0, "quota_exhausted");
    assert!(
        held(&rows, "p/ok#p").is_none(),
        "a model's grant is its own"
    );
    let table = w.fcm(&["breakers"]).stdout;
    assert!(
        table.contains("quota_exhausted") && table.contains("until"),
        "{table}"
    );
    let usage = w.fcm(&["usage"]).stdout;
    assert!(usage.contains("free quota used up"), "{usage}");
    let metrics = s.get("/metrics").body;
    assert!(
        metrics.contains(r#"fcm_model_pause_reason{model="q/ok#q",reason="quota_exhausted"} 1"#),
        "{metrics}"
    );
    assert_eq!(s.stop(), 0);

    // A new server remembers: nothing goes to either wall.
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.header("x-fcm-v2-attempts"), Some("1"), "{}", r.decision());
    assert_eq!(fake.requests_for("free_tier_exhausted").len(), 1);
    assert_eq!(fake.requests_for("insufficient_quota").len(), 1);
    drop(s);
    // Without a server, `fcm breakers` reads the same from usage.json.
    let out = w.fcm(&["breakers", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        held(&rows, "q/insufficient_quota").unwrap().0,
        "quota_exhausted"
    );
}

#[test]
fn a_provider_refusing_connections_is_left_alone_after_two() {
    let fake = fake();
    let w = World::new();
    // Nothing listens on port 9 of loopback: every connection is refused.
    let dead = "http://127.0.0.1:9/v1";
    let model =
        |id: &str, tier: &str| json!({"id": id, "label": id, "tier": tier, "context": 131072});
    let doc = json!({"version": 1, "providers": [
        {"id": "down", "name": "Down", "baseUrl": dead, "keyRequired": false,
         "models": [model("a", "S+"), model("b", "S+"), model("c", "S+")]},
        {"id": "up", "name": "Up", "baseUrl": fake.base_url(), "keyRequired": false,
         "models": [model("ok", "S")]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 200);
    let tried = r
        .header("x-fcm-v2-attempts")
        .unwrap()
        .parse::<u32>()
        .unwrap();
    assert_eq!(
        tried,
        3,
        "two refusals, then the provider is down: {}",
        r.decision()
    );
    let r = s.chat("fcm", false);
    assert_eq!(r.decision(), "up/ok!served|up/ok:200|skips=3");
    let rows = s.breakers();
    assert_eq!(held(&rows, "down/c").unwrap().0, "provider_down");
}
