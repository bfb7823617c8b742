//! Conversation affinity: a conversation keeps its model and key while that model can take
//! it, moves for good when it cannot, and new conversations spread over equal models.

use serde_json::{json, Value};

use super::super::script::Reply;
use super::{status, Model, Setup};

/// Models of one tier and score, so that only speed and load tell them apart.
fn equals(keys: &[&'static str]) -> Vec<Model> {
    keys.iter()
        .map(|key| Model::new(key, "S", 131_072))
        .collect()
}

/// Turn `n` (from 1) of conversation `topic`: its history grows, its beginning stays.
fn turn(topic: &str, n: usize) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": format!("Work on {topic}.")}),
    ];
    for k in 1..n {
        messages.push(json!({"role": "assistant", "content": format!("step {k} done")}));
        messages.push(json!({"role": "user", "content": "go on"}));
    }
    json!({"model": "fcm", "messages": messages})
}

#[test]
fn a_conversation_keeps_its_model_whatever_the_speed_ranking_says() {
    for enabled in [true, false] {
        let world = Setup {
            models: equals(&["p/a", "q/b", "r/c"]),
            config: json!({"affinity": {"enabled": enabled}}),
            ..Setup::default()
        }
        .world();
        let first = world.ask("fcm", turn("parser", 1));
        let served = first.trace.served_model.clone().unwrap();
        // Another model turns out faster meanwhile.
        let faster = if served == "p/a" { "q/b" } else { "p/a" };
        for _ in 0..5 {
            world.router.evidence.observe(&served, Some(900));
            world.router.evidence.observe(faster, Some(50));
        }
        let second = world.ask("fcm", turn("parser", 2));
        if enabled {
            assert_eq!(first.trace.affinity.as_deref(), Some("new"));
            assert_eq!(second.trace.served_model.as_deref(), Some(served.as_str()));
            assert_eq!(second.trace.affinity.as_deref(), Some("kept"));
            assert_eq!(
                first.trace.session, second.trace.session,
                "one conversation"
            );
            assert!(second.decision.starts_with(&format!("{served}!served")));
        } else {
            assert_eq!(second.trace.served_model.as_deref(), Some(faster));
            assert_eq!(second.trace.affinity, None);
        }
    }
}

#[test]
fn a_failure_moves_the_conversation_for_good() {
    let world = Setup {
        models: equals(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    let first = world.ask("fcm", turn("docs", 1));
    let held = first.trace.served_model.unwrap();
    let (id, other) = if held == "p/a" {
        ("a", "q/b")
    } else {
        ("b", "p/a")
    };
    // Twice: one passing server error is asked again, a second moves the conversation.
    world
        .script
        .on(id, (0..2).map(|_| Reply::Status(503, "busy", vec![])));
    let second = world.ask("fcm", turn("docs", 2));
    assert_eq!(second.trace.served_model.as_deref(), Some(other));
    assert_eq!(second.trace.affinity.as_deref(), Some("moved:503"));
    // The first model answers again, and faster: the conversation stays where it moved.
    for _ in 0..5 {
        world.router.evidence.observe(&held, Some(10));
    }
    world.router.reset(Some(&held));
    let third = world.ask("fcm", turn("docs", 3));
    assert_eq!(third.trace.served_model.as_deref(), Some(other));
    assert_eq!(third.trace.affinity.as_deref(), Some("kept"));
}

#[test]
fn a_held_model_that_cannot_take_the_turn_is_passed_over_and_says_why() {
    let world = Setup {
        models: equals(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    let held = world.ask("fcm", turn("api", 1)).trace.served_model.unwrap();
    let id = &held[2..];
    // Rate limited with a long Retry-After (asked by name in between): paused before the
    // conversation's next turn is planned.
    world.script.on(
        id,
        [Reply::Status(
            429,
            "rate limit",
            vec![("retry-after", "120")],
        )],
    );
    assert_eq!(
        world.ask(&format!("fcm:{held}"), turn("other", 1)).status,
        429
    );
    let next = world.ask("fcm", turn("api", 2));
    assert_eq!(next.trace.affinity.as_deref(), Some("moved:quota_paused"));
    assert_ne!(next.trace.served_model.as_deref(), Some(held.as_str()));
}

#[test]
fn a_turn_the_held_model_lacks_a_capability_for_goes_to_one_that_has_it() {
    let mut models = equals(&["p/a", "q/b"]);
    models[1].capabilities = &["tools", "vision"];
    let world = Setup {
        models,
        ..Setup::default()
    }
    .world();
    // Load and speed favour p/a for the conversation's first turn.
    for _ in 0..5 {
        world.router.evidence.observe("p/a", Some(10));
    }
    assert_eq!(
        world
            .ask("fcm", turn("ui", 1))
            .trace
            .served_model
            .as_deref(),
        Some("p/a")
    );
    let mut with_image = turn("ui", 2);
    with_image["messages"][3]["content"] = json!([
        {"type": "text", "text": "what is wrong here?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]);
    let seen = world.ask("fcm", with_image);
    assert_eq!(seen.trace.served_model.as_deref(), Some("q/b"));
    assert_eq!(seen.trace.affinity.as_deref(), Some("moved:capability"));
}

#[test]
fn a_capability_nobody_has_does_not_move_a_conversation() {
    let mut models = equals(&["p/a", "q/b"]);
    models[0].capabilities = &[];
    models[1].capabilities = &[];
    let world = Setup {
        models,
        ..Setup::default()
    }
    .world();
    let mut body = turn("tools", 1);
    body["tools"] = json!([{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}]);
    let first = world.ask("fcm", body.clone());
    let held = first.trace.served_model.unwrap();
    let other = if held == "p/a" { "q/b" } else { "p/a" };
    for _ in 0..5 {
        world.router.evidence.observe(other, Some(5));
    }
    body["messages"] = turn("tools", 2)["messages"].clone();
    let second = world.ask("fcm", body);
    assert_eq!(second.trace.served_model.as_deref(), Some(held.as_str()));
    assert_eq!(second.trace.affinity.as_deref(), Some("kept"));
}

#[test]
fn new_conversations_spread_over_equally_strong_models() {
    let world = Setup {
        models: equals(&["p/a", "q/b", "r/c", "s/d"]),
        ..Setup::default()
    }
    .world();
    let mut served: Vec<String> = (0..8)
        .map(|n| {
            let got = world.ask("fcm", turn(&format!("task {n}"), 1));
            assert_eq!(got.trace.affinity.as_deref(), Some("new"));
            got.trace.served_model.unwrap()
        })
        .collect();
    served.sort();
    assert_eq!(
        served,
        ["p/a", "p/a", "q/b", "q/b", "r/c", "r/c", "s/d", "s/d"]
    );
    let active = world
        .router
        .affinity
        .as_ref()
        .unwrap()
        .active(crate::time::now_ms());
    assert!(active.values().all(|n| *n == 2), "{active:?}");
}

#[test]
fn a_stronger_model_is_never_spread_away_from() {
    let world = Setup {
        models: vec![
            Model::new("p/a", "S+", 131_072),
            Model::new("q/b", "A", 131_072),
        ],
        ..Setup::default()
    }
    .world();
    for n in 0..4 {
        let got = world.ask("fcm", turn(&format!("t{n}"), 1));
        assert_eq!(
            got.trace.served_model.as_deref(),
            Some("p/a"),
            "strength before load"
        );
    }
}

#[test]
fn a_conversation_keeps_its_key_while_other_requests_rotate() {
    let world = Setup {
        models: equals(&["p/a"]),
        env: &[("P_KEY_2", "key-two"), ("P_KEY_3", "key-three")],
        config: json!({"keys": {"sticky": 1}}),
        ..Setup::default()
    }
    .world();
    for n in 1..=4 {
        world.ask("fcm", turn("long task", n));
        // Someone else's request between the turns moves the rotation on.
        world.ask("fcm", json!({"model": "fcm", "messages": [{"role": "user", "content": format!("one-off {n}")}]}));
    }
    let keys: Vec<Option<String>> = world.script.sent().into_iter().map(|s| s.api_key).collect();
    let conversation: Vec<&Option<String>> = keys.iter().step_by(2).collect();
    assert!(conversation.windows(2).all(|w| w[0] == w[1]), "{keys:?}");
    let others: std::collections::BTreeSet<&Option<String>> =
        keys.iter().skip(1).step_by(2).collect();
    assert!(
        others.len() > 1,
        "the rotation went on for the others: {keys:?}"
    );
}

/// A conversation on one of two equal models whose second turn first gets `reply` from its
/// model: that model is asked again and serves the turn (`status` the failed attempt's).
/// Returns the world and the held model, for what follows.
fn asked_again_after(reply: Reply, status: u16) -> (super::World, String) {
    let world = Setup {
        models: equals(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    let held = world
        .ask_in(Some("c"), "fcm", turn("c", 1))
        .trace
        .served_model
        .unwrap();
    world.script.on(&held[2..], [reply]);
    let next = world.ask_in(Some("c"), "fcm", turn("c", 2));
    assert_eq!(
        next.decision,
        format!("{held}!served|{held}:{status}->{held}:200|skips=0")
    );
    assert_eq!(next.trace.affinity.as_deref(), Some("kept"));
    (world, held)
}

/// Mistral's 429: no reset, the minute's requests left in its headers.
fn rate_limited(left: &'static str) -> Reply {
    Reply::Status(
        429,
        r#"{"message":"Rate limit exceeded"}"#,
        vec![
            ("x-ratelimit-limit-req-minute", "60"),
            ("x-ratelimit-remaining-req-minute", left),
        ],
    )
}

#[test]
fn a_passing_server_error_on_the_held_model_is_asked_again_once_not_moved() {
    asked_again_after(Reply::Status(502, "bad gateway", vec![]), 502);
}

#[test]
fn an_instant_overloaded_on_the_held_model_is_asked_again_and_its_back_off_lifted() {
    let overloaded = Reply::Status(503, "The server is overloaded or not ready yet.", vec![]);
    let (world, held) = asked_again_after(overloaded, 503);
    // It answered past its back-off: the conversation's next turn is not held back by it.
    let third = world.ask_in(Some("c"), "fcm", turn("c", 3));
    assert_eq!(third.decision, format!("{held}!served|{held}:200|skips=0"));
}

#[test]
fn a_429_with_room_left_in_its_windows_is_a_burst_the_held_model_is_asked_again() {
    let (world, held) = asked_again_after(rate_limited("41"), 429);
    // A minute spent is no burst: the conversation moves.
    world.script.on(&held[2..], [rate_limited("0")]);
    let moved = world.ask_in(Some("c"), "fcm", turn("c", 3));
    assert_eq!(moved.trace.affinity.as_deref(), Some("moved:429"));
    assert!(
        moved.decision.contains(&format!("|{held}:429->")),
        "{}",
        moved.decision
    );
}

#[test]
fn a_conversation_that_must_move_goes_to_another_account_before_a_sibling() {
    let world = Setup {
        models: equals(&["p/a", "p/b", "q/c"]),
        ..Setup::default()
    }
    .world();
    // A conversation on one of p's models.
    let (session, held) = (0..10)
        .map(|n| format!("s{n}"))
        .find_map(|s| {
            let served = world
                .ask_in(Some(&s), "fcm", turn(&s, 1))
                .trace
                .served_model?;
            served.starts_with("p/").then_some((s, served))
        })
        .expect("some conversation lands on p");
    // Its model fails twice (asked again once): it moves, and not to p's other model.
    world.script.on(
        &held[2..],
        (0..2).map(|_| Reply::Status(500, "internal error", vec![])),
    );
    let moved = world.ask_in(Some(&session), "fcm", turn(&session, 2));
    assert_eq!(
        moved.trace.served_model.as_deref(),
        Some("q/c"),
        "{}",
        moved.decision
    );
    assert_eq!(moved.trace.affinity.as_deref(), Some("moved:500"));
}

#[test]
fn a_session_id_names_the_conversation_whatever_its_words() {
    let world = Setup {
        models: equals(&["p/a", "q/b", "r/c"]),
        ..Setup::default()
    }
    .world();
    let first = world.ask_in(Some("s-1"), "fcm", turn("one thing", 1));
    let held = first.trace.served_model.unwrap();
    for (n, other) in ["q/b", "r/c", "p/a"].iter().enumerate() {
        for _ in 0..5 {
            world.router.evidence.observe(other, Some(5));
        }
        let again = world.ask_in(Some("s-1"), "fcm", turn(&format!("another {n}"), 1));
        assert_eq!(again.trace.served_model.as_deref(), Some(held.as_str()));
        assert_eq!(again.trace.affinity.as_deref(), Some("kept"));
    }
}

#[test]
fn pinned_models_and_races_say_their_own_order() {
    let world = Setup {
        models: equals(&["p/a", "q/b"]),
        config: json!({"sets": {"r": {"strategy": "race", "models": ["p/a", "q/b"]}}}),
        ..Setup::default()
    }
    .world();
    assert_eq!(world.ask("fcm:p/a", turn("x", 2)).trace.affinity, None);
    assert_eq!(world.ask("fcm:r", turn("x", 2)).trace.affinity, None);
    world.script.on("a", [status(500, "boom")]);
    assert!(world.ask("fcm", turn("y", 1)).trace.affinity.is_some());
}

#[test]
fn conversations_spread_over_a_tier_and_its_accounts_whatever_the_scores() {
    // Four S+ models on two providers, scores all different: load, then the account.
    let mut models = vec![
        Model::new("p/a", "S+", 131_072),
        Model::new("p/b", "S+", 131_072),
        Model::new("q/c", "S+", 131_072),
        Model::new("q/d", "S+", 131_072),
        Model::new("r/e", "S", 131_072),
    ];
    for (n, m) in models.iter_mut().enumerate() {
        m.swe = 70.0 - n as f64;
    }
    let world = Setup {
        models,
        ..Setup::default()
    }
    .world();
    let served: Vec<String> = (0..4)
        .map(|n| {
            let got = world.ask_in(Some(&format!("s{n}")), "fcm", turn(&format!("task {n}"), 1));
            got.trace.served_model.unwrap()
        })
        .collect();
    let providers: Vec<&str> = served.iter().map(|m| &m[..1]).collect();
    assert_ne!(
        providers[0], providers[1],
        "a second account first: {served:?}"
    );
    let mut sorted = served.clone();
    sorted.sort();
    assert_eq!(sorted, ["p/a", "p/b", "q/c", "q/d"], "one each, none on S");
    // A fifth shares an S+ model rather than drop a tier.
    let fifth = world.ask_in(Some("s4"), "fcm", turn("task 4", 1));
    assert_ne!(fifth.trace.served_model.as_deref(), Some("r/e"));
}

#[test]
fn a_moving_conversation_goes_where_the_load_is_least() {
    let world = Setup {
        models: equals(&["p/a", "q/b", "r/c"]),
        ..Setup::default()
    }
    .world();
    let a = world
        .ask_in(Some("a"), "fcm", turn("a", 1))
        .trace
        .served_model
        .unwrap();
    let b = world
        .ask_in(Some("b"), "fcm", turn("b", 1))
        .trace
        .served_model
        .unwrap();
    assert_ne!(a, b);
    // a's model goes away: it moves to the third model, not onto b's.
    world
        .script
        .on(&a[2..], (0..2).map(|_| Reply::Status(503, "down", vec![])));
    let moved = world.ask_in(Some("a"), "fcm", turn("a", 2));
    assert_eq!(moved.trace.affinity.as_deref(), Some("moved:503"));
    let to = moved.trace.served_model.unwrap();
    assert!(to != a && to != b, "{a} {b} -> {to}");
}

#[test]
fn a_conversation_moved_down_a_tier_goes_back_up_once_the_tier_has_room() {
    let world = Setup {
        models: vec![
            Model::new("p/a", "S+", 131_072),
            Model::new("q/b", "A", 131_072),
        ],
        ..Setup::default()
    }
    .world();
    // The strong model is paused for a second when the conversation starts: it begins a
    // tier down.
    world.script.on(
        "a",
        [Reply::Status(429, "rate limit", vec![("retry-after", "1")])],
    );
    assert_eq!(world.ask("fcm:p/a", turn("other", 1)).status, 429);
    let down = world.ask_in(Some("c"), "fcm", turn("c", 2));
    assert_eq!(down.trace.served_model.as_deref(), Some("q/b"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let up = world.ask_in(Some("c"), "fcm", turn("c", 3));
    assert_eq!(up.trace.served_model.as_deref(), Some("p/a"));
    assert_eq!(up.trace.affinity.as_deref(), Some("moved:stronger_tier"));
    let stays = world.ask_in(Some("c"), "fcm", turn("c", 4));
    assert_eq!(stays.trace.affinity.as_deref(), Some("kept"));
}

#[test]
fn a_model_with_a_few_requests_left_today_is_no_home_while_a_roomy_one_is_free() {
    let world = Setup {
        models: equals(&["p/a", "q/b"]),
        config: json!({}),
        ..Setup::default()
    }
    .world();
    // p/a says it has 5 requests left today.
    world.script.on(
        "a",
        [Reply::Status(
            200,
            "",
            vec![
                ("x-ratelimit-limit-requests", "20"),
                ("x-ratelimit-remaining-requests", "5"),
                ("x-ratelimit-reset-requests", "20h"),
            ],
        )],
    );
    world.ask("fcm:p/a", super::chat("hi"));
    for n in 0..3 {
        let got = world.ask_in(Some(&format!("c{n}")), "fcm", turn(&format!("c{n}"), 1));
        if n == 0 {
            assert_eq!(got.trace.served_model.as_deref(), Some("q/b"));
        }
    }
}

#[test]
fn requests_failing_over_together_do_not_all_land_on_one_model() {
    let world = Setup {
        models: equals(&["p/a", "q/b", "r/c", "s/d"]),
        ..Setup::default()
    }
    .world();
    let x = world.ask_in(Some("x"), "fcm", turn("x", 1));
    assert_eq!(x.trace.served_model.as_deref(), Some("p/a"));
    let z = world.ask_in(Some("z"), "fcm", turn("z", 1));
    assert_eq!(z.trace.served_model.as_deref(), Some("q/b"));
    // x's model is slow to fail; meanwhile a new conversation takes the model x's plan
    // would have failed over to.
    world.script.on(
        "a",
        (0..2).map(|_| Reply::after(200, Reply::Status(503, "down", vec![]))),
    );
    let (x2, w) = std::thread::scope(|s| {
        let x2 = s.spawn(|| world.ask_in(Some("x"), "fcm", turn("x", 2)));
        std::thread::sleep(std::time::Duration::from_millis(100));
        let w = world.ask_in(Some("w"), "fcm", turn("w", 1));
        (x2.join().unwrap(), w)
    });
    assert_eq!(w.trace.served_model.as_deref(), Some("r/c"));
    assert_eq!(x2.trace.affinity.as_deref(), Some("moved:503"));
    assert_eq!(
        x2.trace.served_model.as_deref(),
        Some("s/d"),
        "{}",
        x2.decision
    );
}

#[test]
fn a_conversation_waits_seconds_for_its_model_rather_than_moving() {
    let world = Setup {
        models: equals(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    let first = world.ask_in(Some("c"), "fcm", turn("c", 1));
    let held = first.trace.served_model.unwrap();
    let (short, other) = if held == "p/a" {
        ("a", "q/b")
    } else {
        ("b", "p/a")
    };
    // A request pinned to it meets a 429 that says one second.
    world.script.on(
        short,
        [Reply::Status(429, "rate limit", vec![("retry-after", "1")])],
    );
    let pinned = world.ask(&format!("fcm:{held}"), turn("d", 1));
    assert_eq!(pinned.status, 429);
    // The held conversation's next turn waits the second out on its own model.
    let next = world.ask_in(Some("c"), "fcm", turn("c", 2));
    assert_eq!(next.trace.served_model.as_deref(), Some(held.as_str()));
    assert_eq!(next.trace.affinity.as_deref(), Some("kept"));
    assert!(
        next.trace
            .notes
            .iter()
            .any(|n| n.starts_with("waited_for_held:")),
        "{:?}",
        next.trace.notes
    );
    // A pause longer than a few seconds is not waited for: the conversation moves.
    world.script.on(
        short,
        [Reply::Status(
            429,
            "rate limit",
            vec![("retry-after", "120")],
        )],
    );
    let _ = world.ask(&format!("fcm:{held}"), turn("e", 1));
    let later = world.ask_in(Some("c"), "fcm", turn("c", 3));
    assert_eq!(later.trace.served_model.as_deref(), Some(other));
}

#[test]
fn a_short_429_on_the_conversations_model_is_waited_out_once() {
    let world = Setup {
        models: equals(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    let first = world.ask_in(Some("c"), "fcm", turn("c", 1));
    let held = first.trace.served_model.unwrap();
    let short = if held == "p/a" { "a" } else { "b" };
    world.script.on(
        short,
        [Reply::Status(429, "rate limit", vec![("retry-after", "1")])],
    );
    let next = world.ask_in(Some("c"), "fcm", turn("c", 2));
    assert_eq!(next.trace.served_model.as_deref(), Some(held.as_str()));
    assert_eq!(
        next.decision,
        format!("{held}!served|{held}:429->{held}:200|skips=0")
    );
    assert_eq!(next.trace.affinity.as_deref(), Some("kept"));
}
