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
