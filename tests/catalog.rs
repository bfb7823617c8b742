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
    assert!(models.len() >= 200, "{} models", models.len());
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

/// Today's UTC date as `YYYY-MM-DD` (Howard Hinnant's civil-from-days).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let z = secs.div_euclid(86_400) + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{:04}-{m:02}-{d:02}", yoe + era * 400 + i64::from(m <= 2))
}

/// A catalog of one keyless provider with `models`, dated `updated` (`None`: no date).
fn dated_catalog(w: &World, updated: Option<&str>, models: &[&str]) {
    let mut doc = serde_json::json!({"version": 1, "providers": [{"id": "p", "baseUrl": "http://127.0.0.1:9/v1",
        "keyRequired": false, "models": models.iter().map(|m| serde_json::json!({"id": m, "tier": "A", "context": 131072})).collect::<Vec<_>>()}]});
    if let Some(day) = updated {
        doc["updated"] = day.into();
    }
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
}

#[test]
fn models_says_how_old_the_catalog_is() {
    let mut w = World::new();
    dated_catalog(&w, Some(&today()), &["m1", "m2"]);
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "Catalog of {} (0 days old): 2 models across 1 provider\n",
            today()
        )),
        "{out:?}"
    );
    // The JSON stays an array of models: the date is not mixed into it.
    let json = w.fcm(&["models", "--json"]).json();
    assert_eq!(json.as_array().map(Vec::len), Some(2), "{json}");
    // A catalog of one's own may leave the date out.
    dated_catalog(&w, None, &["m1"]);
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("Catalog undated: 1 model across 1 provider"),
        "{out:?}"
    );
    // A date that is no day of the calendar is named, like any wrong value.
    dated_catalog(&w, Some("2026-02-30"), &["m1"]);
    let out = w.fcm(&["models"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains(": updated")
            && out.stderr.contains(
                "invalid date \"2026-02-30\": expected a day of the calendar as YYYY-MM-DD"
            ),
        "{out:?}"
    );
    // The embedded catalog carries its date.
    let embedded: serde_json::Value =
        serde_json::from_str(include_str!("../providers.json")).unwrap();
    let updated = embedded["updated"]
        .as_str()
        .expect("providers.json is dated");
    w.set_env("FCM_CATALOG", "");
    let out = w.fcm(&["models"]);
    assert!(
        out.stdout.contains(&format!("Catalog of {updated} (")),
        "{out:?}"
    );
}

#[cfg(unix)]
#[test]
fn doctor_notes_a_catalog_older_than_sixty_days() {
    let w = World::new();
    // A free port of its own, so that the port check does not meet another test's server.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    w.write_config(&serde_json::json!({"port": port}));
    std::fs::set_permissions(&w.home, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::fs::set_permissions(
        w.home_file("config.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    dated_catalog(&w, Some("2020-01-01"), &["m1"]);
    let out = w.fcm(&["doctor"]);
    assert_eq!(out.code, 0, "a note is not a failure: {out:?}");
    let note = out
        .stdout
        .lines()
        .find(|l| l.starts_with("note catalog: "))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        note.starts_with("note catalog: 1 model across 1 provider, of 2020-01-01 (")
            && note.ends_with(
                " days old): older than 60 days; since 2020-01-01 providers may have retired models, made them paid or changed their limits"
            ),
        "{note}"
    );
    assert!(
        out.stdout.contains("     fix: `fcm models --refresh` asks each provider with a key which models it serves now"),
        "{out:?}"
    );
    assert!(out.stdout.contains("fcm doctor: all"), "{out:?}");
    // A current catalog passes, with its date.
    dated_catalog(&w, Some(&today()), &["m1"]);
    let out = w.fcm(&["doctor"]);
    assert!(
        out.stdout.contains(&format!(
            "ok   catalog: 1 model across 1 provider, of {} (0 days old)\n",
            today()
        )),
        "{out:?}"
    );
}
