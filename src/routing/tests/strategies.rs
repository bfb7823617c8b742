//! Sets that say their own order: races and fusions side by side, round-robin rotation.

use serde_json::json;

use super::super::script::Reply;
use super::{chat, ranked, Setup};

fn sets(value: serde_json::Value) -> serde_json::Value {
    json!({"sets": value})
}

#[test]
fn a_race_serves_the_first_good_answer_and_cancels_the_rest() {
    let world = Setup {
        models: ranked(&["p/a", "q/b", "r/c"]),
        config: sets(json!({"r": {"strategy": "race", "width": 2, "models": ["p/a", "q/b"]}})),
        ..Setup::default()
    }
    .world();
    world
        .script
        .on("a", [Reply::after(2_000, Reply::Text("late"))]);
    let got = world.ask("fcm:r", chat("hi"));
    assert_eq!(got.decision, "q/b!served|q/b:200->p/a:raced_out|skips=0");
    assert!(got.trace.notes.contains(&"race:2".to_string()));
    // Cancelled, not failed: its breaker and live window know nothing of it.
    assert!(world
        .breaker("p/a")
        .is_none_or(|r| r.consecutive_failures == 0));
    assert!(world.live("p/a").is_empty());
    assert_eq!(world.script.cut(), ["a"], "the loser's call was cut short");
}

#[test]
fn a_race_whose_racers_all_fail_goes_on_one_by_one() {
    let world = Setup {
        models: ranked(&["p/a", "q/b", "r/c"]),
        config: sets(json!({"r": {"strategy": "race", "width": 2, "models": ["p/a", "q/b"]}})),
        ..Setup::default()
    }
    .world();
    world.script.on("a", [Reply::Status(500, "boom", vec![])]);
    world.script.on("b", [Reply::Json(json!({"choices": []}))]);
    let got = world.ask("fcm:r", chat("hi"));
    assert_eq!(got.status, 200);
    assert!(
        got.decision.starts_with("r/c!served|") && got.decision.ends_with("->r/c:200|skips=0"),
        "{}",
        got.decision
    );
    assert_eq!(got.trace.attempts.len(), 3);
}

#[test]
fn a_fusion_asks_its_panel_and_serves_the_judges_merge() {
    let world = Setup {
        models: ranked(&["p/a", "q/b", "r/c"]),
        config: sets(json!({"f": {"strategy": "fusion", "panel": ["p/a", "q/b"], "judge": "r/c"}})),
        ..Setup::default()
    }
    .world();
    world.script.on("a", [Reply::Text("answer one")]);
    world.script.on("b", [Reply::Text("answer two")]);
    world.script.on("c", [Reply::Text("merged")]);
    let got = world.ask("fcm:f", chat("hi"));
    assert!(got.decision.starts_with("r/c!served|"), "{}", got.decision);
    assert!(got
        .trace
        .notes
        .contains(&"fusion:judged:2_of_2".to_string()));
    let judge = world
        .script
        .sent()
        .into_iter()
        .find(|s| s.model == "c")
        .expect("the judge was asked");
    let said = judge.body["messages"].to_string();
    assert!(said.contains("answer one") && said.contains("answer two"));
}

#[test]
fn a_fusion_with_one_answer_passes_it_through() {
    let world = Setup {
        models: ranked(&["p/a", "q/b", "r/c"]),
        config: sets(json!({"f": {"strategy": "fusion", "panel": ["p/a", "q/b"], "judge": "r/c"}})),
        ..Setup::default()
    }
    .world();
    world.script.on("a", [Reply::Status(503, "down", vec![])]);
    let got = world.ask("fcm:f", chat("hi"));
    assert!(got.decision.starts_with("q/b!served|"), "{}", got.decision);
    assert!(got
        .trace
        .notes
        .contains(&"fusion:passed_through:1_of_2".to_string()));
    assert!(
        !world.script.models_sent().contains(&"c".to_string()),
        "no judge for one answer"
    );
}

#[test]
fn a_round_robin_set_rotates_its_first_model() {
    let world = Setup {
        models: ranked(&["p/a", "q/b", "r/c"]),
        config: sets(json!({"rr": {"strategy": "round-robin", "models": ["r/c", "q/b"]}})),
        ..Setup::default()
    }
    .world();
    let firsts: Vec<String> = (0..4)
        .map(|_| world.ask("fcm:rr", chat("hi")).trace.served_model.unwrap())
        .collect();
    assert_eq!(firsts, ["r/c", "q/b", "r/c", "q/b"]);
}
