//! Ctrl-C during `fcm bench`: what was measured is printed and saved, marked partial, and
//! the bench exits 130; what it did not finish keeps its earlier results. (Unix: the test
//! sends SIGINT with `kill`; on Windows Ctrl-C reaches the same flag through signal-hook.)
#![cfg(unix)]

mod support;

use serde_json::Value;
use support::*;

#[test]
fn ctrl_c_saves_what_was_measured_marked_partial_and_exits_130() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[(
        "p",
        &fake.base_url(),
        None,
        &["ok#a", "ok#b", "hang#c", "ok#d"],
    )]);
    // An earlier run measured p/ok#d, which this run will not reach.
    let earlier = w.fcm(&["bench", "--model", "p/ok#d", "--pings", "1"]);
    assert_eq!(earlier.code, 0, "{earlier:?}");
    let bench_file = w.home_file("bench.json");
    let read = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&bench_file).unwrap()).unwrap()
    };
    let earlier_at = read()["models"][0]["measuredAt"].clone();

    // One model at a time, in catalog order: when the hanging model has been asked, the
    // two before it are done.
    let child = w.start(&["bench", "--pings", "2", "--concurrency", "1"]);
    eventually("the bench to reach the hanging model", || {
        fake.requests().iter().any(|r| r.model() == "hang#c")
    });
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = finish(child);
    assert_eq!(out.code, 130, "{out:?}");
    assert!(
        out.stderr
            .contains("interrupted: 2 models measured, 2 not finished"),
        "{out:?}"
    );
    assert!(out.stderr.contains("marked partial"), "{out:?}");
    // The table of what was measured.
    assert!(out.stdout.contains("1\tp/ok#a\tPerfect\t2/2"), "{out:?}");
    assert!(out.stdout.contains("\tp/ok#b\tPerfect\t2/2"), "{out:?}");
    assert!(!out.stdout.contains("hang#c"), "{out:?}");

    let saved = read();
    assert_eq!(saved["partial"], true, "{saved}");
    assert_eq!(
        saved["unfinished"],
        serde_json::json!(["p/hang#c", "p/ok#d"]),
        "{saved}"
    );
    let entry = |model: &str| {
        saved["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == model)
            .cloned()
    };
    for model in ["p/ok#a", "p/ok#b"] {
        let m = entry(model).unwrap_or_else(|| panic!("{model} not saved: {saved}"));
        assert_eq!(
            (m["pings"].as_u64(), m["usable"].as_bool()),
            (Some(2), Some(true)),
            "{m}"
        );
        assert_eq!(m["measuredAt"], saved["generatedAt"], "{m}");
    }
    assert!(
        entry("p/hang#c").is_none(),
        "nothing measured of it: {saved}"
    );
    assert_eq!(
        entry("p/ok#d").unwrap()["measuredAt"],
        earlier_at,
        "{saved}"
    );
    // No model is started after the interruption: ok#d has only the earlier run's ping.
    let to_d = fake
        .requests()
        .iter()
        .filter(|r| r.model() == "ok#d")
        .count();
    assert_eq!(to_d, 1);
}
