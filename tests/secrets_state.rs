//! Secrets in partial form and fcm's state files: a provider that echoes the key masked
//! (`fake-key****cdef`) never gets it past fcm, files that hold a secret are the user's
//! alone, an overloaded model is left alone a moment, oversized and clock-skewed state is
//! handled on load, and a broken catalog names the field that is wrong.

mod support;

use serde_json::{json, Value};
use support::*;

/// What a masked echo keeps of the key: any run of six leading characters is a leak.
fn leak() -> &'static str {
    &KEY[..6]
}

/// One provider `p` whose key is [`KEY`] (in `FAKE_KEY`), with these models.
fn keyed(w: &mut World, base_url: &str, models: &[&str]) {
    w.catalog(&[("p", base_url, Some("FAKE_KEY"), models)]);
    w.set_env("FAKE_KEY", KEY);
}

#[test]
fn masked_keys_never_reach_a_client_the_history_or_the_disk() {
    let fake = fake();
    let mut w = World::new();
    // `p` takes the key in FAKE_KEY; `h` a credential header from the catalog.
    let header_secret = "hdr-CREDENTIAL-5555";
    let model = |id: &str| json!({"id": id, "context": 131072});
    let catalog = json!({"version": 1, "providers": [
        {"id": "p", "baseUrl": fake.base_url(), "apiKeyEnv": ["FAKE_KEY"],
         "models": [model("echo_masked_key"), model("echo_masked_key:401")]},
        {"id": "h", "baseUrl": fake.base_url(), "keyRequired": false,
         "headers": {"x-api-key": header_secret}, "models": [model("echo_masked_key")]}]});
    std::fs::write(&w.catalog, catalog.to_string()).unwrap();
    w.set_env("FAKE_KEY", KEY);
    let token = "fcm-token-PRIVATE-9876543210";
    let s = w.serve(&["--token", token]);
    let auth = format!("Bearer {token}");
    let post = |path: &str, body: &Value| {
        s.post_with(path, &body.to_string(), &[("authorization", &auth)])
    };
    let chat = |model: &str, stream: bool| json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
    let anthropic = |stream: bool| {
        json!({"model": "fcm:p/echo_masked_key", "max_tokens": 64, "stream": stream,
               "messages": [{"role": "user", "content": "hi"}]})
    };
    let responses =
        |stream: bool| json!({"model": "fcm:p/echo_masked_key", "stream": stream, "input": "hi"});
    let mut answers = Vec::new();
    for stream in [false, true] {
        answers.push(post(
            "/v1/chat/completions",
            &chat("fcm:p/echo_masked_key", stream),
        ));
        answers.push(post("/v1/messages", &anthropic(stream)));
        answers.push(post("/v1/responses", &responses(stream)));
    }
    for r in &answers {
        assert_eq!(r.status, 200, "{r:?}");
        assert!(
            r.body.contains("[redacted]****cdef"),
            "the answer still comes: {r:?}"
        );
        assert!(!r.body.contains(leak()), "key leaked in an answer: {r:?}");
    }
    for stream in [false, true] {
        let r = post(
            "/v1/chat/completions",
            &chat("fcm:h/echo_masked_key", stream),
        );
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r.body.contains("[redacted]****5555"), "{r:?}");
        assert!(
            !r.body.contains(&header_secret[..6]),
            "header leaked: {r:?}"
        );
    }
    // The provider's 401 message, in the refusal's message and its attempts.
    let refused = post(
        "/v1/chat/completions",
        &chat("fcm:p/echo_masked_key:401", false),
    );
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(
        refused
            .body
            .contains("Incorrect API key provided: [redacted]****cdef"),
        "{refused:?}"
    );
    assert!(!refused.body.contains(leak()), "{refused:?}");
    // A client that put the access token where the model name goes.
    let misplaced = post(
        "/v1/chat/completions",
        &chat(&format!("fcm:{token}"), false),
    );
    assert_eq!(misplaced.status, 404, "{misplaced:?}");
    let history = s
        .get_with("/fcm/admin/history", &[("authorization", &auth)])
        .body;
    assert!(history.contains("[redacted]"), "{history}");
    for (what, text) in [("history", &history), ("stderr", &s.stderr())] {
        assert!(!text.contains(leak()), "key leaked in the {what}: {text}");
        assert!(
            !text.contains(&token[..6]),
            "token leaked in the {what}: {text}"
        );
    }
    assert_eq!(s.stop(), 0);
    assert_not_in_files(&w.home, leak());
    assert_not_in_files(&w.home, &token[..6]);
    assert_not_in_files(&w.home, &header_secret[..6]);
}

#[test]
fn check_and_bench_never_show_a_masked_key() {
    let fake = fake();
    let mut w = World::new();
    keyed(
        &mut w,
        &fake.base_url(),
        &["echo_masked_key", "echo_masked_key:401"],
    );
    let model = "p/echo_masked_key:401";
    let out = w.fcm(&["check", model]);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        out.stdout
            .contains("Incorrect API key provided: [redacted]****cdef"),
        "{out:?}"
    );
    let json = w.fcm(&["check", model, "--json"]);
    assert_eq!(json.json()["exitCode"], 4, "{json:?}");
    // An earlier run's bench.json that kept a masked key: cleaned when the file is written.
    std::fs::create_dir_all(&w.home).unwrap();
    let stale = json!({"generatedAt": "2026-01-01T00:00:00Z", "models": [{
        "rank": 1, "model": "old/model", "provider": "old", "label": "old", "tier": "A",
        "sweBench": null, "usable": false, "verdict": "auth_failed", "pings": 1, "successes": 0,
        "successRate": 0.0, "ttftMsP50": null, "ttftMsP95": null, "latencyMsP50": null,
        "latencyMsP95": null, "jitterMs": null, "tokensPerSec": null,
        "lastFailureKind": "auth_error", "lastFailureStatus": 401,
        "lastFailure": format!("Incorrect API key provided: {}****cdef", &KEY[..8]),
        "measuredAt": "2026-01-01T00:00:00Z"}]});
    std::fs::write(w.home_file("bench.json"), stale.to_string()).unwrap();
    let bench = w.fcm(&["bench", "--model", model, "--pings", "1", "--json"]);
    assert_eq!(bench.code, 1, "no usable model: {bench:?}");
    let report = bench.json();
    assert_eq!(report["models"][0]["lastFailureKind"], "auth_error");
    let table = w.fcm(&["bench", "--model", "p/echo_masked_key", "--pings", "1"]);
    assert_eq!(table.code, 0, "{table:?}");
    let saved = std::fs::read_to_string(w.home_file("bench.json")).unwrap();
    assert!(
        saved.contains("old/model"),
        "the earlier entry is kept: {saved}"
    );
    for (what, out) in [
        ("check", &out),
        ("check --json", &json),
        ("bench --json", &bench),
        ("bench", &table),
    ] {
        assert!(
            !out.stdout.contains(leak()),
            "{what} leaked the key: {out:?}"
        );
        assert!(
            !out.stderr.contains(leak()),
            "{what} leaked the key: {out:?}"
        );
    }
    assert!(
        !saved.contains(leak()),
        "bench.json leaked the key: {saved}"
    );
    assert_not_in_files(&w.home, leak());
}

#[test]
fn an_overloaded_model_is_left_alone_on_the_next_request() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["overloaded_200", "ok"]);
    let s = w.serve(&[]);
    let first = s.chat("fcm", false);
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(
        first.decision(),
        "p/ok!served|p/overloaded_200:model_overloaded->p/ok:200|skips=0"
    );
    for stream in [false, true] {
        let next = s.chat("fcm", stream);
        assert_eq!(next.status, 200, "{next:?}");
        assert_eq!(next.decision(), "p/ok!served|p/ok:200|skips=1");
    }
    assert_eq!(
        fake.requests_for("overloaded_200").len(),
        1,
        "asked once, then left alone"
    );
    let history = s.history();
    assert_eq!(
        history[1]["skipped"][0],
        json!({"model": "p/overloaded_200", "reason": "overload_paused"})
    );
    let paused = s.breaker("p/overloaded_200").unwrap();
    let left = paused["quotaPauseMsLeft"].as_u64().unwrap();
    assert!(
        (20_000..=30_000).contains(&left),
        "a 30 s back-off: {paused}"
    );
    assert_eq!(paused["lastFailureKind"], "model_overloaded");
}

#[test]
fn an_overloaded_models_retry_after_sets_its_back_off() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["overloaded_200:600", "ok"]);
    let s = w.serve(&[]);
    assert_eq!(s.chat("fcm", true).status, 200);
    let left = s.breaker("p/overloaded_200:600").unwrap()["quotaPauseMsLeft"]
        .as_u64()
        .unwrap();
    assert!(
        (590_000..=600_000).contains(&left),
        "Retry-After 600: {left}"
    );
}

#[test]
fn a_state_file_over_16_mib_is_set_aside_unread() {
    let w = World::new();
    w.catalog(&[("p", "http://127.0.0.1:9/v1", None, &["m"])]);
    std::fs::create_dir_all(&w.home).unwrap();
    let path = w.home_file("history.json");
    // Valid JSON, padded past the limit.
    let mut text = String::from(r#"{"version": 1, "entries": []}"#);
    text.push_str(&" ".repeat(17 * 1024 * 1024));
    std::fs::write(&path, text).unwrap();
    let out = w.fcm(&["history", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json(), json!([]));
    assert!(
        out.stderr
            .contains(&format!("{} is larger than 16 MiB", path.display()))
            && out.stderr.contains("moved it to"),
        "{out:?}"
    );
    assert!(!path.exists(), "moved aside");
    let aside = std::fs::read_dir(&w.home)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("history.json.corrupt-")
        })
        .count();
    assert_eq!(aside, 1);
}

#[test]
fn breakers_saved_under_a_clock_ahead_open_no_longer_than_the_longest_cooldown() {
    let w = World::new();
    w.catalog(&[("p", "http://127.0.0.1:9/v1", None, &["m"])]);
    std::fs::create_dir_all(&w.home).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let ten_hours = 10 * 3_600_000;
    let book = json!({"version": 1, "models": {"p/m": {
        "consecutiveFailures": 3, "tripCount": 1, "openUntilMs": now + ten_hours,
        "lastTripMs": now + ten_hours, "quotaUntilMs": now + ten_hours,
        "lastFailureKind": "timeout", "updatedAtMs": now + ten_hours}}});
    std::fs::write(w.home_file("breakers.json"), book.to_string()).unwrap();
    let offline = w.fcm(&["breakers", "--json"]);
    assert_eq!(offline.code, 0, "{offline:?}");
    let s = w.serve(&[]);
    let served = s.breaker("p/m").unwrap();
    for row in [offline.json()[0].clone(), served] {
        assert_eq!(row["state"], "OPEN", "{row}");
        let cooldown = row["cooldownMsLeft"].as_u64().unwrap();
        let pause = row["quotaPauseMsLeft"].as_u64().unwrap();
        assert!(cooldown <= 300_000, "cut to maxCooldownMs: {row}");
        assert!(pause <= 15 * 60_000, "cut to the longest pause: {row}");
    }
}

#[cfg(unix)]
#[cfg(unix)]
#[test]
fn files_holding_a_token_are_readable_by_their_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    w.catalog(&[("p", "http://127.0.0.1:9/v1", None, &["m"])]);
    let token = "fcm-token-PRIVATE-9876543210";
    w.write_config(&json!({"serve": {"token": token}}));
    let config = w.home_file("config.json");
    let shared = std::fs::Permissions::from_mode(0o644);
    std::fs::set_permissions(&config, shared.clone()).unwrap();
    let dir = w.dir.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = dir.join("settings.json");
    std::fs::write(&settings, "{\"theme\": \"dark\"}\n").unwrap();
    std::fs::set_permissions(&settings, shared.clone()).unwrap();

    let out = w.fcm(&["install", "claude-code"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(std::fs::read_to_string(&settings).unwrap().contains(token));
    assert_eq!(
        mode(&settings),
        0o600,
        "the tool's file holds the token now"
    );
    // The backup is the file as it was, without the token: its mode is left alone.

    let out = w.fcm(&["sets", "add", "fast", "p/m"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(mode(&config), 0o600, "config.json holds the token");

    // Without a token the tool gets `fcm-local`, no secret: the file keeps its mode.
    let w = World::new();
    w.catalog(&[("p", "http://127.0.0.1:9/v1", None, &["m"])]);
    let dir = w.dir.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = dir.join("settings.json");
    std::fs::write(&settings, "{}\n").unwrap();
    std::fs::set_permissions(&settings, shared).unwrap();
    assert_eq!(w.fcm(&["install", "claude-code"]).code, 0);
    assert_eq!(mode(&settings), 0o644);
}

#[test]
fn a_malformed_catalog_names_the_json_path_of_the_wrong_value() {
    let w = World::new();
    let model = |id: &str, context: Value| json!({"id": id, "context": context});
    let doc = json!({"version": 1, "providers": [
        {"id": "a", "baseUrl": "http://127.0.0.1:9/v1", "models": [model("m0", json!(1))]},
        {"id": "b", "baseUrl": "http://127.0.0.1:9/v1", "models": [
            model("m0", json!(1)), model("m1", json!(1)), model("m2", json!(1)),
            model("m3", json!("128k"))]}]});
    std::fs::write(&w.catalog, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 1, "{out:?}");
    let err = out.stderr.trim();
    assert!(
        err.contains(&format!(
            "malformed catalog {}: providers[1].models[3].context",
            w.catalog.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("invalid type: string \"128k\", expected u64") && err.contains("line "),
        "what is wrong, and where in the file: {err}"
    );
}
