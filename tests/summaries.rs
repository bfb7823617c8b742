//! What fcm's summaries say, held to what happened: ranks numbered as the rows are shown,
//! a stream that broke mid-answer counted as failed, and "healthy" only for models with
//! evidence that they answer.

mod support;

use serde_json::json;
use support::*;

/// A catalog of a provider that needs a key nobody set (its models strong, so the ranking
/// puts them between the free provider's models) and a free one with `free` models.
fn keyed_and_free(w: &World, base_url: &str, free: &[(&str, &str)]) {
    let doc = json!({"version": 1, "providers": [
        {"id": "keyed", "name": "Keyed", "baseUrl": base_url, "apiKeyEnv": ["KEYED_KEY"],
         "keyRequired": true, "models": [
            {"id": "strong-1", "tier": "S+", "context": 131072},
            {"id": "strong-2", "tier": "S+", "context": 131072}]},
        {"id": "free", "name": "Free", "baseUrl": base_url, "keyRequired": false,
         "models": free.iter().map(|(id, tier)| json!({"id": id, "tier": tier, "context": 131072})).collect::<Vec<_>>()},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
}

#[test]
fn the_bench_table_numbers_the_rows_it_shows_without_gaps() {
    let fake = fake();
    let w = World::new();
    keyed_and_free(
        &w,
        &fake.base_url(),
        &[("ok", "A"), ("empty_choices", "B"), ("server_500", "C")],
    );
    let out = w.fcm(&["bench", "--pings", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    let shown: Vec<(String, String)> = out
        .stdout
        .lines()
        .skip(1)
        .take_while(|l| l.contains('\t'))
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("1".to_string(), "free/ok".to_string()),
            ("2".to_string(), "free/empty_choices".to_string()),
            ("3".to_string(), "free/server_500".to_string()),
        ],
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("2 models not contacted (no key): keyed"),
        "{out:?}"
    );
    // The JSON shows every model, and numbers every one.
    let all = w
        .fcm(&["bench", "--pings", "1", "--json", "--no-save"])
        .json();
    let ranks: Vec<u64> = all["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [1, 2, 3, 4, 5], "{all}");
}

#[test]
fn history_counts_a_stream_that_broke_mid_answer_as_failed() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok", "sse_error_after_content"]);
    let s = w.serve(&["--quiet"]);
    assert_eq!(s.chat("fcm:p/ok", true).status, 200);
    // Pinned: no other model may finish it, so the client gets half an answer and an error.
    let broken = s.chat("fcm:p/sse_error_after_content", true);
    assert!(broken.body.contains("stream_broken"), "{}", broken.body);
    let out = w.fcm(&["history"]);
    assert_eq!(out.code, 0, "{out:?}");
    let summary = out.stdout.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("2 requests: 50.0% served, 50.0% failed (1 broken mid-answer)"),
        "{out:?}"
    );
    assert_eq!(s.stop(), 0);
    // The same from history.json, without a server.
    let out = w.fcm(&["history"]);
    assert!(out.stdout.contains("50.0% served, 50.0% failed"), "{out:?}");
}

#[test]
fn status_calls_healthy_only_the_models_with_evidence_that_they_answer() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok", "empty_choices", "server_500"]);
    let counts = |s: &serde_json::Value| {
        let m = &s["models"];
        (
            m["routable"].as_u64(),
            m["healthy"].as_u64(),
            m["failing"].as_u64(),
            m["untried"].as_u64(),
        )
    };
    // Nothing known yet: no model has shown it answers.
    let s = w.fcm(&["status", "--json"]).json();
    assert_eq!(counts(&s), (Some(3), Some(0), Some(0), Some(3)), "{s}");
    // A bench finds one of the three usable.
    let bench = w.fcm(&["bench", "--pings", "1"]);
    assert_eq!(bench.code, 0, "{bench:?}");
    let s = w.fcm(&["status", "--json"]).json();
    assert_eq!(counts(&s), (Some(3), Some(1), Some(2), Some(0)), "{s}");
    let text = w.fcm(&["status"]).stdout;
    assert!(
        text.contains("3 routable: 1 healthy, 2 not answering, 0 untried"),
        "{text}"
    );
    // A running server says the same from its evidence.
    let server = w.serve(&["--quiet"]);
    let s = w.fcm(&["status", "--json"]).json();
    assert_eq!(s["server"]["running"], true, "{s}");
    assert_eq!(counts(&s), (Some(3), Some(1), Some(2), Some(0)), "{s}");
    let health = server.get("/health").json();
    assert_eq!(
        (
            health["models"]["healthy"].as_u64(),
            health["models"]["closed"].as_u64()
        ),
        (Some(1), Some(3)),
        "{health}"
    );
    assert_eq!(server.stop(), 0);
}
