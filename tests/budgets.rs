//! Free-tier budgets against the fake provider: what providers say is left, the catalog's
//! limits, the usage ledger across restarts, several keys per provider, the retry-storm
//! guard and a bench that spends carefully.

mod support;

use std::time::Duration;

use fcm::fake_provider::COUNTDOWN_WINDOW;
use serde_json::{json, Value};
use support::*;

/// A provider `p` (no key) whose models are tried in the order given; `quota` goes on the
/// provider, `model_quota` on its first model.
fn catalog(
    w: &World,
    url: &str,
    models: &[&str],
    quota: Option<Value>,
    model_quota: Option<Value>,
) {
    let tiers = ["S+", "S", "A+", "A"];
    let mut list: Vec<Value> = models
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"id": m, "tier": tiers[i.min(3)], "context": 131072}))
        .collect();
    if let Some(q) = model_quota {
        list[0]["quota"] = q;
    }
    let mut p = json!({"id": "p", "baseUrl": url, "keyRequired": false, "models": list});
    if let Some(q) = quota {
        p["quota"] = q;
    }
    std::fs::write(
        &w.catalog,
        json!({"version": 1, "providers": [p]}).to_string(),
    )
    .unwrap();
}

fn skipped(entry: &Value) -> Vec<(String, String)> {
    entry["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["model"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn what_a_provider_says_is_left_is_never_overstepped_in_any_style() {
    for style in ["groq", "openrouter", "cerebras"] {
        let fake = fake();
        let w = World::new();
        let limited = format!("countdown_{style}:3");
        // The backup is slower, so live ranking keeps the limited model first once it is
        // free again.
        catalog(
            &w,
            &fake.base_url(),
            &[&limited, "slow:100#backup"],
            None,
            None,
        );
        let s = w.serve(&[]);
        let mut served = Vec::new();
        for n in 0..6 {
            let r = s.chat("fcm", n % 2 == 1);
            assert_eq!(r.status, 200, "{style}: {r:?}");
            served.push(r.header("x-fcm-v2-model").unwrap().to_string());
        }
        let limited_key = format!("p/{limited}");
        assert_eq!(
            served,
            [
                &limited_key,
                &limited_key,
                &limited_key,
                "p/slow:100#backup",
                "p/slow:100#backup",
                "p/slow:100#backup"
            ]
            .map(str::to_string),
            "{style}"
        );
        // The request that would have been refused was never sent: no 429 at all.
        assert_eq!(fake.requests_for(&limited).len(), 3, "{style}");
        let history = s.history();
        let skip = &history[3]["skipped"][0];
        assert_eq!(skip["reason"], "quota_budget", "{style}: {skip}");
        assert!(
            skip["limit"].as_str().unwrap().ends_with(" 0"),
            "{style}: {skip}"
        );
        assert!(
            skip["until"].as_str().unwrap().ends_with('Z'),
            "{style}: {skip}"
        );
        // After the provider's reset it serves again, and was never counted as failing.
        std::thread::sleep(COUNTDOWN_WINDOW + Duration::from_millis(300));
        let r = s.chat("fcm", false);
        assert_eq!(
            r.header("x-fcm-v2-model"),
            Some(limited_key.as_str()),
            "{style}: {r:?}"
        );
        assert_eq!(
            r.decision(),
            format!("{limited_key}!served|{limited_key}:200|skips=0")
        );
        let breaker = s.breaker(&limited_key);
        assert!(
            breaker
                .as_ref()
                .is_none_or(|b| b["consecutiveFailures"] == 0),
            "{style}: {breaker:?}"
        );
        s.stop();
    }
}

#[test]
fn requests_at_once_do_not_all_count_on_the_last_units() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &["countdown_groq:4", "ok#backup"],
        None,
        None,
    );
    let s = w.serve(&[]);
    // The first answer says 3 are left; then 8 at once.
    assert_eq!(
        s.chat("fcm", false).header("x-fcm-v2-model"),
        Some("p/countdown_groq:4")
    );
    let answers: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| s.chat("fcm", false)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(answers.iter().all(|r| r.status == 200), "{answers:?}");
    assert!(
        fake.requests_for("countdown_groq:4").len() <= 4,
        "never past the limit"
    );
    assert!(
        answers.iter().all(|r| !r.decision().contains(":429")),
        "no 429: {answers:?}"
    );
}

#[test]
fn a_daily_limit_from_the_catalog_holds_across_a_restart() {
    let fake = fake();
    let w = World::new();
    catalog(
        &w,
        &fake.base_url(),
        &["ok#limited", "ok#backup"],
        None,
        Some(json!({"requestsPerDay": 2})),
    );
    let s = w.serve(&[]);
    let models: Vec<String> = (0..3)
        .map(|_| {
            s.chat("fcm", false)
                .header("x-fcm-v2-model")
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(models, ["p/ok#limited", "p/ok#limited", "p/ok#backup"]);
    let skip = &s.history()[2]["skipped"][0];
    assert_eq!(skip["reason"], "quota_budget");
    assert_eq!(skip["limit"], "requestsPerDay 2 reached");
    assert!(
        skip["until"].as_str().unwrap().ends_with("T00:00:00Z"),
        "frees at midnight UTC: {skip}"
    );
    // A pinned request is refused unsent, with when it frees up.
    let r = s.chat("fcm:p/ok#limited", false);
    assert_eq!(r.status, 429, "{r:?}");
    assert!(r.header("retry-after").is_some(), "{r:?}");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requestsPerDay 2 reached"),
        "{r:?}"
    );
    assert_eq!(r.decision(), "none!all_failed|skips=1");
    let history = s.history();
    let pinned = [("p/ok#limited".to_string(), "quota_budget".to_string())];
    assert_eq!(skipped(&history[3]), pinned);
    assert_eq!(s.stop(), 0);
    let usage_file = w.home_file("usage.json");
    assert_mode(&usage_file, 0o600);
    // Restarted: the ledger remembers today's two.
    let s = w.serve(&[]);
    assert_eq!(
        s.chat("fcm", false).header("x-fcm-v2-model"),
        Some("p/ok#backup")
    );
    assert_eq!(fake.requests_for("ok#limited").len(), 2);
    assert_eq!(s.stop(), 0);
    // fcm check knows it without asking, and says so.
    let out = w.fcm(&["check", "p/ok#limited"]);
    assert_eq!(out.code, 5, "{out:?}");
    assert!(
        out.stdout
            .contains("not sent: its known budget is spent (requestsPerDay 2 reached)"),
        "{out:?}"
    );
    assert_eq!(fake.requests_for("ok#limited").len(), 2);
    // fcm usage reports what was spent.
    let out = w.fcm(&["usage", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let u = out.json();
    let p = &u["providers"][0];
    assert_eq!(p["provider"], "p");
    assert_eq!(p["requests"], 4, "2 limited + 2 backup: {u}");
    assert_eq!(p["promptTokens"], 48, "the fake reports 12 per answer: {u}");
    assert_eq!(p["estimatedTokens"], 0, "{u}");
    assert_eq!(p["rateLimited"], 0);
    let limited = u["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "p/ok#limited")
        .unwrap();
    assert_eq!(
        (limited["requests"].clone(), limited["limits"].clone()),
        (json!(2), json!({"requestsPerDay": 2, "scope": "model"}))
    );
    assert_eq!(u["day"], u["from"]);
}

#[test]
fn the_ledger_and_usage_show_what_the_provider_says_is_left() {
    let fake = fake();
    let w = World::new();
    catalog(&w, &fake.base_url(), &["countdown_groq:5"], None, None);
    let out = w.fcm(&["check", "p/countdown_groq:5"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("left: 4 requests (resets in"),
        "{out:?}"
    );
    let s = w.serve(&[]);
    // A stream without usage: its tokens are estimated, and marked so.
    assert_eq!(s.chat("fcm", true).status, 200);
    let u: Value = serde_json::from_str(&w.fcm(&["usage", "--json", "-v"]).stdout).unwrap();
    let p = &u["providers"][0];
    assert_eq!(p["requests"], 2, "check's and the server's: {u}");
    assert!(p["estimatedTokens"].as_u64().unwrap() > 0, "{u}");
    // Less the estimates, what is left is the usage check's answer reported (12 + 1: the
    // sum's answer is one word).
    let reported = p["promptTokens"].as_u64().unwrap() + p["completionTokens"].as_u64().unwrap()
        - p["estimatedTokens"].as_u64().unwrap();
    assert_eq!(reported, 13, "{u}");
    assert_eq!(p["remaining"]["requests"], 3, "{u}");
    assert_eq!(p["remaining"]["tokens"], 12_000 - 2 * 20, "{u}");
    assert!(
        p["resetAt"]["requests"].as_str().unwrap().ends_with('Z'),
        "{u}"
    );
    let table = w.fcm(&["usage"]);
    assert!(
        table.stdout.contains("3 requests, 11960 tokens"),
        "{table:?}"
    );
    assert!(table.stdout.contains("live from the server"), "{table:?}");
}

#[test]
fn two_keys_rotate_with_the_sticky_count_and_a_spent_or_rejected_key_is_passed_over() {
    let fake = fake();
    let mut w = World::new();
    let doc = json!({"version": 1, "providers": [
        {"id": "two", "baseUrl": fake.base_url(), "apiKeyEnv": ["TWO_KEY"], "models": [{"id": "ok#two", "tier": "S", "context": 131072}]},
        {"id": "spent", "baseUrl": fake.base_url(), "apiKeyEnv": ["SPENT_KEY"], "models": [{"id": "countdown_openrouter:2", "tier": "A", "context": 131072}]},
        {"id": "bad", "baseUrl": fake.base_url(), "apiKeyEnv": ["BAD_KEY"], "models": [{"id": "rejects_revoked", "tier": "B", "context": 131072}]},
        {"id": "z", "baseUrl": fake.base_url(), "keyRequired": false, "models": [{"id": "ok#backup", "tier": "C", "context": 131072}]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    w.set_env("TWO_KEY", "fake-key-ONE-0123456789")
        .set_env("TWO_KEY_2", "fake-key-TWO-0123456789")
        .set_env("SPENT_KEY", "fake-key-ALPHA-0123456789")
        .set_env("SPENT_KEY_2", "fake-key-BETA-0123456789")
        .set_env("BAD_KEY", "fake-key-REVOKED-0123456789");
    w.write_config(
        &json!({"apiKeys": {"bad": ["fake-key-REVOKED-0123456789", "fake-key-GOOD-0123456789"]}}),
    );
    let s = w.serve(&[]);
    let sent = |model: &str| -> Vec<String> {
        fake.requests_for(model)
            .iter()
            .map(|r| {
                r.header("authorization")
                    .unwrap()
                    .split('-')
                    .nth(2)
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    for _ in 0..8 {
        assert_eq!(s.chat("fcm:two/ok#two", false).status, 200);
    }
    assert_eq!(
        sent("ok#two"),
        ["ONE", "ONE", "ONE", "TWO", "TWO", "TWO", "ONE", "ONE"]
    );
    let keys: Vec<Value> = s
        .history()
        .iter()
        .map(|h| h["attempts"][0]["key"].clone())
        .collect();
    assert_eq!(
        keys[..4],
        [
            json!("two#1"),
            json!("two#1"),
            json!("two#1"),
            json!("two#2")
        ]
    );
    // Each key may send 2 in the provider's window: the spent one is passed over, then
    // both are, and nothing gets a 429.
    let statuses: Vec<u16> = (0..6)
        .map(|_| s.chat("fcm:spent/countdown_openrouter:2", false).status)
        .collect();
    assert_eq!(statuses, [200, 200, 200, 200, 429, 429]);
    assert_eq!(
        sent("countdown_openrouter:2"),
        ["ALPHA", "ALPHA", "BETA", "BETA"]
    );
    // A rejected key: the same model again at once with the other key; then only that one.
    let r = s.chat("fcm:bad/rejects_revoked", false);
    assert_eq!(r.status, 401, "a pinned model gets one attempt: {r:?}");
    let r = s.chat("fcm:bad/rejects_revoked", false);
    assert_eq!(r.status, 200, "the rejected key is passed over: {r:?}");
    assert_eq!(sent("rejects_revoked"), ["REVOKED", "GOOD"]);
    let u: Value = serde_json::from_str(&w.fcm(&["usage", "--json"]).stdout).unwrap();
    let bad = u["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == "bad")
        .unwrap();
    assert_eq!(bad["keys"][0]["key"], "bad#1");
    assert_eq!(bad["keys"][0]["heldFor"], "key_rejected", "{u}");
    let text = std::fs::read_to_string(w.home_file("usage.json")).unwrap_or_default()
        + &serde_json::to_string(&s.history()).unwrap();
    for secret in [
        "fake-key-ONE",
        "fake-key-TWO",
        "fake-key-REVOKED",
        "fake-key-GOOD",
    ] {
        assert!(!text.contains(secret), "{secret} in usage.json or history");
    }
}

#[test]
fn a_rejected_key_fails_over_to_the_providers_other_key_within_the_request() {
    let fake = fake();
    let mut w = World::new();
    let doc = json!({"version": 1, "providers": [
        {"id": "bad", "baseUrl": fake.base_url(), "apiKeyEnv": ["BAD_KEY"], "models": [{"id": "rejects_revoked", "tier": "S", "context": 131072}]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    w.set_env("BAD_KEY", "fake-key-REVOKED-0123456789")
        .set_env("BAD_KEY_2", "fake-key-GOOD-0123456789");
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.decision(),
        "bad/rejects_revoked!served|bad/rejects_revoked:401->bad/rejects_revoked:200|skips=0"
    );
    let attempts = &s.history()[0]["attempts"];
    assert_eq!(
        (attempts[0]["key"].clone(), attempts[1]["key"].clone()),
        (json!("bad#1"), json!("bad#2"))
    );
    for _ in 0..3 {
        assert_eq!(s.chat("fcm", true).status, 200);
    }
    assert_eq!(
        fake.requests_for("rejects_revoked").len(),
        5,
        "the revoked key only once"
    );
}

#[test]
fn a_run_of_429s_pauses_a_model_longer_each_time() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["rate_limit:1", "ok#backup"]);
    let s = w.serve(&[]);
    for n in 0..2 {
        if n > 0 {
            // The first 429 asked for one second.
            std::thread::sleep(Duration::from_millis(1100));
        }
        let r = s.chat("fcm", false);
        assert_eq!(
            r.decision(),
            "p/ok#backup!served|p/rate_limit:1:429->p/ok#backup:200|skips=0"
        );
    }
    // The second in a row, with no answer between: a minute, whatever it asked for.
    let b = s.breaker("p/rate_limit:1").unwrap();
    let left = b["quotaPauseMsLeft"].as_u64().unwrap();
    assert!(left > 55_000 && left <= 60_000, "{b}");
    std::thread::sleep(Duration::from_millis(1100));
    let r = s.chat("fcm", false);
    assert_eq!(r.decision(), "p/ok#backup!served|p/ok#backup:200|skips=1");
    assert_eq!(
        skipped(&s.history()[2]),
        [("p/rate_limit:1".to_string(), "quota_paused".to_string())]
    );
    assert_eq!(fake.requests_for("rate_limit:1").len(), 2);
    let u: Value = serde_json::from_str(&w.fcm(&["usage", "--json"]).stdout).unwrap();
    assert_eq!(u["providers"][0]["rateLimited"], 2, "{u}");
}

#[test]
fn the_bench_spends_a_small_share_of_a_day_says_so_and_nothing_once_it_is_spent() {
    let fake = fake();
    let w = World::new();
    // One account's 50 requests a day for two models: the bench may spend 2% of it, one
    // request, whatever `--pings` asks.
    catalog(
        &w,
        &fake.base_url(),
        &["ok#a", "ok#b"],
        Some(json!({"requestsPerDay": 50, "scope": "provider"})),
        None,
    );
    let out = w.fcm(&["bench", "--pings", "3", "--tools", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(
            "p: 1 of the 12 requests asked for, a known 50 a day allowing the bench 2% of it; 1 of its 2 models not contacted"
        ),
        "{out:?}"
    );
    assert_eq!(fake.requests().len(), 1);
    let models = out.json()["models"].as_array().unwrap().clone();
    let a = models.iter().find(|m| m["model"] == "p/ok#a").unwrap();
    assert_eq!(
        (a["pings"].clone(), a["budgetCapped"].clone()),
        (json!(1), json!(true)),
        "{a}"
    );
    let b = models.iter().find(|m| m["model"] == "p/ok#b").unwrap();
    assert_eq!(b["verdict"], "quota_budget", "{b}");
    // The table says so.
    let out = w.fcm(&["bench", "--pings", "3"]);
    assert!(out.stdout.contains("1/1*"), "{out:?}");
    assert!(
        out.stdout
            .contains("* fewer pings than asked: a known daily limit gives the bench 2% of it"),
        "{out:?}"
    );
    assert_eq!(fake.requests().len(), 2);
    // A spent day: nothing is sent, and the saved ranking keeps what was measured.
    let usage: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("usage.json")).unwrap()).unwrap();
    let mut spent = usage.clone();
    spent["days"][0]["rows"][0]["requests"] = json!(50);
    std::fs::write(w.home_file("usage.json"), spent.to_string()).unwrap();
    let out = w.fcm(&["bench", "--pings", "1"]);
    assert_eq!(out.code, 1, "nothing usable: {out:?}");
    assert!(out.stderr.contains("nothing more today"), "{out:?}");
    assert!(
        out.stdout
            .contains("2 models not contacted (over budget): p (see `fcm usage`"),
        "{out:?}"
    );
    assert_eq!(fake.requests().len(), 2, "not contacted");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("bench.json")).unwrap()).unwrap();
    let a = saved["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "p/ok#a")
        .unwrap()
        .clone();
    assert_eq!(a["pings"], 1, "{saved}");
    let u: Value = serde_json::from_str(&w.fcm(&["usage", "--json"]).stdout).unwrap();
    assert_eq!(
        u["providers"][0]["limits"],
        json!({"requestsPerDay": 50, "scope": "provider"})
    );
}

#[test]
fn requests_that_never_left_are_not_charged_and_usage_can_be_reset() {
    // A provider whose port refuses connections, with 20 requests a day: three benches of
    // three pings spend none of them.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", l.local_addr().unwrap());
        drop(l);
        url
    };
    let w = World::new();
    catalog(
        &w,
        &refused,
        &["m"],
        Some(json!({"requestsPerDay": 20})),
        None,
    );
    for _ in 0..3 {
        let out = w.fcm(&["bench", "--pings", "3"]);
        assert_ne!(out.stdout, "", "{out:?}");
    }
    let out = w.fcm(&["usage", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let u = out.json();
    let spent: u64 = u["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["requests"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(spent, 0, "nothing reached the provider: {u}");
    let out = w.fcm(&["check", "p/m"]);
    assert!(!out.stdout.contains("known budget is spent"), "{out:?}");
    // Requests that did reach a provider are counted; `--reset` forgets them.
    let fake = fake();
    catalog(
        &w,
        &fake.base_url(),
        &["ok"],
        Some(json!({"requestsPerDay": 20})),
        None,
    );
    let out = w.fcm(&["check", "p/ok"]);
    assert_eq!(out.code, 0, "{out:?}");
    // (A provider without a key and nothing spent is not listed.)
    let requests = |w: &World| {
        w.fcm(&["usage", "--json"]).json()["providers"][0]["requests"]
            .as_u64()
            .unwrap_or(0)
    };
    assert_eq!(requests(&w), 1);
    let out = w.fcm(&["usage", "--reset", "nosuch"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("fcm models"), "{out:?}");
    let out = w.fcm(&["usage", "--reset", "p"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("forgot 1 request(s)"), "{out:?}");
    assert_eq!(requests(&w), 0);
}
