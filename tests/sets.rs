//! Model sets: the user's own order, with fallback and round-robin strategies.

mod support;

use serde_json::json;
use support::*;

fn world(fake: &FakeProvider) -> World {
    let w = World::new();
    // Ranking alone would pick p/ok#a first.
    ordered(
        &w,
        &fake.base_url(),
        &["ok#a", "ok#b", "server_500#c", "ok#d"],
    );
    w
}

#[test]
fn a_fallback_set_goes_first_and_the_rest_still_follow() {
    let fake = fake();
    let w = world(&fake);
    let out = w.fcm(&["sets", "add", "mine", "p/server_500#c", "p/ok#b"]);
    assert_eq!(out.code, 0, "{out:?}");
    let s = w.serve(&[]);
    let r = s.chat("fcm:mine", false);
    assert_eq!(
        r.decision(),
        "p/ok#b!served|p/server_500#c:500->p/ok#b:200|skips=0"
    );
    let r = s.chat("fcm", false);
    assert_eq!(
        r.decision(),
        "p/ok#a!served|p/ok#a:200|skips=0",
        "model fcm ignores sets until one is chosen"
    );
    drop(s);

    assert_eq!(w.fcm(&["sets", "use", "mine"]).code, 0);
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert!(
        r.decision()
            .starts_with("p/ok#b!served|p/server_500#c:500->"),
        "{}",
        r.decision()
    );
    let table = w.fcm(&["sets"]);
    assert!(
        table.stdout.contains("mine") && table.stdout.contains("yes"),
        "{table:?}"
    );
}

#[test]
fn round_robin_rotates_with_sticky() {
    let fake = fake();
    let w = world(&fake);
    assert_eq!(
        w.fcm(&[
            "sets",
            "add",
            "rr",
            "--strategy",
            "round-robin",
            "--sticky",
            "2",
            "p/ok#b",
            "p/ok#d"
        ])
        .code,
        0
    );
    let s = w.serve(&["--quiet"]);
    let served: Vec<String> = (0..4)
        .map(|_| {
            s.chat("fcm:rr", false)
                .header("x-fcm-v2-model")
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(served, ["p/ok#b", "p/ok#b", "p/ok#d", "p/ok#d"]);
}

#[test]
fn stale_members_are_reported_not_ignored() {
    let fake = fake();
    let w = world(&fake);
    w.write_config(&json!({"router": {"sets": {"old": {"models": ["p/gone", "p/ok#d"]}}}}));
    let table = w.fcm(&["sets"]);
    assert!(table.stdout.contains("p/gone (stale)"), "{table:?}");
    let s = w.serve(&[]);
    assert!(
        s.stderr()
            .contains("\"p/gone\", which is not in the catalog"),
        "{}",
        s.stderr()
    );
    let r = s.chat("fcm:old", false);
    assert_eq!(r.decision(), "p/ok#d!served|p/ok#d:200|skips=1");
    assert_eq!(
        s.history()[0]["skipped"][0],
        json!({"model": "p/gone", "reason": "stale"})
    );
}

#[test]
fn set_commands_check_their_input_and_keep_the_config() {
    let fake = fake();
    let w = world(&fake);
    w.write_config(&json!({"port": 19555, "apiKeys": {"x": "y"}}));
    assert_eq!(w.fcm(&["sets", "add", "bad/name", "p/ok#a"]).code, 2);
    assert_eq!(w.fcm(&["sets", "add", "s", "p/nope"]).code, 2);
    assert_eq!(
        w.fcm(&["sets", "add", "s", "--strategy", "random", "p/ok#a"])
            .code,
        2
    );
    assert_eq!(w.fcm(&["sets", "use", "missing"]).code, 2);
    assert_eq!(w.fcm(&["sets", "add", "s", "p/ok#a"]).code, 0);
    assert_eq!(w.fcm(&["sets", "use", "s"]).code, 0);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("config.json")).unwrap())
            .unwrap();
    assert_eq!(
        (config["port"].as_u64(), config["apiKeys"]["x"].as_str()),
        (Some(19555), Some("y")),
        "other settings kept"
    );
    assert_eq!(config["router"]["activeSet"], "s");
    assert_eq!(w.fcm(&["sets", "rm", "s"]).code, 0);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("config.json")).unwrap())
            .unwrap();
    assert!(
        config["router"].get("activeSet").is_none() && config["router"]["sets"].get("s").is_none(),
        "{config}"
    );
}

#[test]
fn config_edits_change_only_what_they_change() {
    // A config.json laid out by hand (4 spaces, a comment-free order of its own): keys set,
    // a set added, used and removed, the key removed: the file is byte for byte as before.
    let fake = fake();
    let w = world(&fake);
    let mine = "{\n    \"port\": 19280,\n    \"router\": {\n        \"prefer\": \"quality\"\n    },\n    \"serve\": {\"requestTimeoutMs\": 300000}\n}\n";
    let path = w.home_file("config.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, mine).unwrap();
    let out = w.fcm_stdin(
        &["keys", "set", "p", "--no-check"],
        "key-0123456789abcdef\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let with_key = std::fs::read_to_string(&path).unwrap();
    assert!(
        with_key.starts_with(
            "{\n    \"port\": 19280,\n    \"router\": {\n        \"prefer\": \"quality\"\n    },"
        ),
        "the rest as it was: {with_key}"
    );
    assert!(
        with_key.contains("\n    \"apiKeys\": {\n        \"p\": "),
        "in the file's own indentation: {with_key}"
    );
    for args in [
        &["sets", "add", "mine", "p/ok#a", "p/ok#b"][..],
        &["sets", "use", "mine"],
        &["sets", "rm", "mine"],
        &["keys", "rm", "p"],
    ] {
        let out = w.fcm(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), mine);
}
