//! Routing strategies for what a request needs: capability pools.

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
