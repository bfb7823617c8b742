//! The catalog as users meet it: `fcm models`, `FCM_CATALOG`, custom providers, bad files.

mod support;

use support::*;

#[test]
fn embedded_catalog_lists_every_model_with_key_status() {
    let mut w = World::new();
    w.set_env("GROQ_API_KEY", KEY);
    // An empty FCM_CATALOG means the embedded catalog.
    w.set_env("FCM_CATALOG", "");
    let out = w.fcm(&["models", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let models = out.json();
    let models = models.as_array().unwrap();
    assert!(models.len() >= 240, "{} models", models.len());
    let status = |key: &str| {
        models
            .iter()
            .find(|m| m["model"] == key)
            .map(|m| m["keyStatus"].as_str().unwrap().to_string())
    };
    assert_eq!(status("groq/openai/gpt-oss-120b").as_deref(), Some("set"));
    assert_eq!(
        status("nvidia/openai/gpt-oss-20b").as_deref(),
        Some("missing")
    );
    assert_eq!(status("kilo/kilo-auto/free").as_deref(), Some("not_needed"));
    for m in models {
        for field in [
            "model",
            "provider",
            "label",
            "tier",
            "context",
            "capabilities",
            "keyStatus",
        ] {
            assert!(m.get(field).is_some(), "{field} missing in {m}");
        }
    }
    assert!(!out.stdout.contains(KEY));
}

#[test]
fn table_filters_and_usage_errors() {
    let w = World::new();
    w.catalog(&[
        ("a", "http://127.0.0.1:9/v1", Some("A_KEY"), &["m1"]),
        ("b", "http://127.0.0.1:9/v1", None, &["m2"]),
    ]);
    let out = w.fcm(&["models", "--provider", "b"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("b/m2")
            && out.stdout.contains("no key needed")
            && !out.stdout.contains("a/m1"),
        "{out:?}"
    );
    let out = w.fcm(&["models"]);
    assert!(out.stdout.contains("missing: A_KEY"), "{out:?}");
    let out = w.fcm(&["models", "--provider", "zzz"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("valid providers: a, b"), "{out:?}");
    let out = w.fcm(&["models", "--tier", "Q"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("valid tiers: S+, S, A+"), "{out:?}");
}

#[test]
fn malformed_catalog_names_file_line_and_field() {
    let w = World::new();
    std::fs::write(
        &w.catalog,
        "{\"version\": 1,\n \"providers\": [{\"id\": \"x\",\n \"models\": []}]}",
    )
    .unwrap();
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 1, "{out:?}");
    let err = out.stderr.trim();
    assert!(
        err.contains(&w.catalog.display().to_string())
            && err.contains("baseUrl")
            && err.contains("line 3"),
        "{err}"
    );
    std::fs::write(&w.catalog, "not json").unwrap();
    assert_eq!(w.fcm(&["models"]).code, 1);
    std::fs::remove_file(&w.catalog).unwrap();
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("FCM_CATALOG"), "{out:?}");
}

#[test]
fn custom_providers_from_config_are_marked() {
    let w = World::new();
    w.catalog(&[("a", "http://127.0.0.1:9/v1", None, &["m1"])]);
    w.write_config(&serde_json::json!({"providers": [{"id": "local", "name": "Ollama", "baseUrl": "http://127.0.0.1:11434/v1",
        "keyRequired": false, "models": [{"id": "qwen3-coder", "context": 32768}]}], "typo": 1}));
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("local (custom)") && out.stdout.contains("local/qwen3-coder"),
        "{out:?}"
    );
    assert!(out.stderr.contains("unknown setting typo"), "{out:?}");
}

#[test]
fn broken_config_is_an_error_not_a_reset() {
    let w = World::new();
    w.catalog(&[("a", "http://127.0.0.1:9/v1", None, &["m1"])]);
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(w.home_file("config.json"), "{\"apiKeys\": ").unwrap();
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("config.json"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(w.home_file("config.json")).unwrap(),
        "{\"apiKeys\": ",
        "the user's file is untouched"
    );
}

#[test]
fn demo_runs_without_keys_or_network() {
    let w = World::new();
    let out = w.fcm(&["demo", "--json", "--pings", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = out.json();
    let verdict = |key: &str| {
        report["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == key)
            .unwrap()["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(verdict("demo/healthy-fast"), "perfect");
    assert_eq!(verdict("demo/slow-thinker"), "slow");
    assert_eq!(verdict("demo/empty-choices"), "empty_answers");
    assert_eq!(verdict("demo/stream-error"), "empty_answers");
    assert_eq!(verdict("demo/rate-limited"), "rate_limited");
    assert!(
        !w.home_file("bench.json").exists(),
        "the demo never overwrites real results"
    );
    // The router part: one request that fails over from the empty model.
    let router = &report["router"];
    assert_eq!(
        router["decision"],
        "demo/healthy-fast!served|demo/empty-choices:empty_choices->demo/healthy-fast:200|skips=0",
        "{router}"
    );
    assert_eq!(router["answer"], "\"Hello from healthy-fast.\"");
    let breakers = router["breakers"].as_array().unwrap();
    assert!(
        breakers
            .iter()
            .any(|b| b["model"] == "demo/empty-choices" && b["lastFailureKind"] == "empty_choices"),
        "{router}"
    );
    assert!(
        !w.home.exists() || std::fs::read_dir(&w.home).unwrap().next().is_none(),
        "nothing written to FCM_HOME"
    );
    // The table form says the same to a person.
    let out = w.fcm(&["demo", "--pings", "1"]);
    assert!(out.stdout.contains("x-fcm-v2-decision: demo/healthy-fast!served|demo/empty-choices:empty_choices->demo/healthy-fast:200"), "{out:?}");
    assert!(
        out.stdout
            .contains("demo/empty-choices  CLOSED  1 failure(s), last empty_choices"),
        "{out:?}"
    );
}
