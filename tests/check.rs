//! `fcm check`: one completion, one line, an exit code per failure class.

mod support;

use support::*;

#[test]
fn exit_codes_per_failure_class() {
    let fake = fake();
    let mut w = World::new();
    let models = [
        "ok",
        "auth_401",
        "rate_limit:60",
        "empty_choices",
        "error_payload_200",
        "html",
        "hang",
        "server_500",
        "wrong_sum",
        "paid_notice",
    ];
    w.catalog(&[("fake", &fake.base_url(), Some("FAKE_KEY"), &models)]);
    w.set_env("FAKE_KEY", KEY);
    for (model, code, needle) in [
        ("ok", 0, "ok   fake/ok: answered in"),
        ("auth_401", 4, "key rejected (HTTP 401, auth_error)"),
        ("rate_limit:60", 5, "rate limited (HTTP 429, rate_limit)"),
        ("empty_choices", 6, "no content"),
        ("error_payload_200", 6, "error_payload"),
        ("html", 6, "HTML"),
        ("hang", 7, "timed out"),
        ("server_500", 7, "HTTP 500"),
        // HTTP 200, but not an answer a CI job can rely on.
        ("wrong_sum", 8, "a wrong answer to 17 + 25"),
        ("paid_notice", 9, "a provider notice instead of an answer"),
    ] {
        let out = w.fcm(&["check", &format!("fake/{model}"), "--timeout", "2"]);
        assert_eq!(out.code, code, "{model}: {out:?}");
        assert!(out.stdout.contains(needle), "{model}: {out:?}");
        assert_eq!(out.stdout.lines().count(), 1, "{model}: one line");
        assert!(
            out.stdout.contains("FAKE_KEY …cdef"),
            "{model}: names the variable and the last 4 chars: {out:?}"
        );
        assert!(
            !out.stdout.contains(KEY) && !out.stderr.contains(KEY),
            "{model}: key leaked"
        );
    }
}

#[test]
fn missing_key_is_exit_three_naming_the_variable() {
    let w = World::new();
    w.catalog(&[("fake", "http://127.0.0.1:9/v1", Some("FAKE_KEY"), &["ok"])]);
    let out = w.fcm(&["check", "fake"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stdout.contains("key not set; set FAKE_KEY"), "{out:?}");
}

#[test]
fn provider_alone_picks_a_model_and_json_is_one_object() {
    let fake = fake();
    let mut w = World::new();
    w.catalog(&[("fake", &fake.base_url(), Some("FAKE_KEY"), &["ok"])]);
    w.set_env("FAKE_KEY", KEY);
    let out = w.fcm(&["check", "fake", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json();
    assert_eq!(
        (
            v["model"].as_str(),
            v["ok"].as_bool(),
            v["exitCode"].as_i64()
        ),
        (Some("fake/ok"), Some(true), Some(0))
    );
    let out = w.fcm(&["check", "fake/auth_401", "--json"]);
    assert_eq!(out.code, 2, "unknown model is a usage error: {out:?}");
}

#[test]
fn key_from_config_json() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[("fake", &fake.base_url(), Some("FAKE_KEY"), &["ok"])]);
    w.write_config(&serde_json::json!({"apiKeys": {"fake": KEY}}));
    let out = w.fcm(&["check", "fake/ok"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("config.json apiKeys.fake …cdef"),
        "{out:?}"
    );
    assert_eq!(
        fake.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn unknown_provider_is_usage_error() {
    let w = World::new();
    w.catalog(&[("fake", "http://127.0.0.1:9/v1", None, &["ok"])]);
    let out = w.fcm(&["check", "nope"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("valid providers: fake"), "{out:?}");
}

#[test]
fn unreachable_provider_is_exit_seven() {
    // A port nothing listens on: the connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let w = World::new();
    w.catalog(&[(
        "fake",
        &format!("http://127.0.0.1:{port}/v1"),
        None,
        &["ok"],
    )]);
    let out = w.fcm(&["check", "fake/ok", "--timeout", "3"]);
    assert_eq!(out.code, 7, "{out:?}");
    assert!(out.stdout.contains("network_error"), "{out:?}");
}

#[test]
fn a_key_works_when_any_model_of_its_provider_answers() {
    // The provider's first model is broken; the second answers with the same key.
    let fake = fake();
    let w = World::new();
    w.catalog(&[(
        "fake",
        &fake.base_url(),
        Some("FAKE_KEY"),
        &["empty_choices", "ok", "html"],
    )]);
    let out = w.fcm_stdin(&["keys", "set", "fake"], &format!("{KEY}\n"));
    assert_eq!(out.code, 0, "keys set: {out:?}");
    assert!(out.stdout.contains("FAIL fake/empty_choices"), "{out:?}");
    assert!(out.stdout.contains("ok   fake/ok: answered"), "{out:?}");
    assert!(
        out.stdout
            .contains("the key works: fake/ok answered after 1 of its provider's models failed"),
        "{out:?}"
    );
    let out = w.fcm(&["check", "fake", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json();
    assert_eq!(v["model"], "fake/ok", "{v}");
    assert_eq!(v["alsoTried"][0]["model"], "fake/empty_choices", "{v}");
    assert_eq!(v["alsoTried"][0]["exitCode"], 6, "{v}");
    // A model named alone is checked alone.
    let out = w.fcm(&["check", "fake/empty_choices"]);
    assert_eq!(out.code, 6, "{out:?}");
    assert_eq!(
        fake.requests_for("html").len(),
        0,
        "stops at the first answer"
    );
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
}

#[test]
fn a_rejected_key_is_not_tried_on_every_model() {
    let fake = fake();
    let mut w = World::new();
    w.catalog(&[(
        "fake",
        &fake.base_url(),
        Some("FAKE_KEY"),
        &["auth_401", "ok"],
    )]);
    w.set_env("FAKE_KEY", KEY);
    let out = w.fcm(&["check", "fake"]);
    assert_eq!(out.code, 4, "{out:?}");
    assert_eq!(fake.requests_for("ok").len(), 0, "{out:?}");
}
