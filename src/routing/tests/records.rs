//! What attempts leave behind: breakers, pauses, live windows and the ledger, the same for
//! a request's attempt and a background probe's.

use std::time::Duration;

use serde_json::json;

use super::super::script::Reply;
use super::{ranked, status, Setup};
use crate::state::breaker::BreakerState;

#[test]
fn repeated_failures_open_a_breaker_and_the_next_request_skips_it() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    world.script.on("a", (0..3).map(|_| status(500, "boom")));
    // The first failure makes it DEGRADED, ranked behind the healthy model: asked by name.
    for _ in 0..3 {
        let pinned = world.ask("fcm:p/a", super::chat("hi"));
        assert_eq!(pinned.decision, "none!all_failed|p/a:500|skips=0");
    }
    let a = world.breaker("p/a").unwrap();
    assert_eq!((a.state, a.consecutive_failures), (BreakerState::Open, 3));
    assert_eq!(world.live("p/a"), [None, None, None]);
    let next = world.auto();
    assert_eq!(next.decision, "q/b!served|q/b:200|skips=1");
    assert_eq!(next.trace.skipped[0].model, "p/a");
}

#[test]
fn a_rate_limit_pauses_the_model_or_its_whole_provider() {
    for (shared, skips) in [(false, 1), (true, 2)] {
        let world = Setup {
            models: ranked(&["p/a", "p/b", "q/c"]),
            shared: if shared { &["p"] } else { &[] },
            ..Setup::default()
        }
        .world();
        world.script.on(
            "a",
            [Reply::Status(
                429,
                "rate limit",
                vec![("retry-after", "60")],
            )],
        );
        let first = world.auto();
        let served = if shared { "q/c" } else { "p/b" };
        assert_eq!(
            first.decision,
            format!("{served}!served|p/a:429->{served}:200|skips={}", skips - 1),
            "shared {shared}"
        );
        let next = world.auto();
        assert_eq!(
            next.decision,
            format!("{served}!served|{served}:200|skips={skips}"),
            "shared {shared}"
        );
        // A rate limit is not ill health: the live window does not count it.
        assert!(world.live("p/a").is_empty());
    }
}

#[test]
fn what_a_provider_says_is_left_holds_the_next_request_back() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    world.script.on(
        "a",
        [Reply::Status(
            200,
            "",
            vec![
                ("x-ratelimit-limit-requests", "10"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "60s"),
            ],
        )],
    );
    // The 200 above carries an error body, so it fails over; what it said is left counts.
    let first = world.auto();
    assert_eq!(
        first.decision,
        "q/b!served|p/a:error_payload->q/b:200|skips=0"
    );
    let next = world.auto();
    assert_eq!(next.decision, "q/b!served|q/b:200|skips=1");
    assert_eq!(
        serde_json::to_value(&next.trace.skipped[0]).unwrap()["reason"],
        json!("quota_budget")
    );
}

#[test]
fn the_ledger_counts_each_attempt_and_its_tokens() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    world.script.on("a", [status(500, "boom")]);
    world.auto();
    let book = world.router.ledger.snapshot();
    let rows = &book.days.last().expect("today").rows;
    let row = |m: &str| rows.iter().find(|r| r.model == m).expect(m).clone();
    assert_eq!(row("p/a").requests, 1);
    assert_eq!(row("q/b").requests, 1);
    // The scripted answer reports 10 prompt and 2 completion tokens.
    assert_eq!(
        (row("q/b").prompt_tokens, row("q/b").completion_tokens),
        (10, 2)
    );
}

#[test]
fn a_probe_is_recorded_as_a_request_is() {
    let world = Setup {
        models: ranked(&["p/a", "p/b", "q/c"]),
        shared: &["p"],
        config: json!({"breaker": {"failureThreshold": 1, "initialCooldownMs": 30}}),
        ..Setup::default()
    }
    .world();
    world.script.on("a", [status(500, "boom")]);
    world.auto();
    assert_eq!(world.breaker("p/a").unwrap().state, BreakerState::Open);
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(world.breaker("p/a").unwrap().state, BreakerState::HalfOpen);
    // The probe's trial is rate limited: the provider's shared quota pauses its other model,
    // as a request's 429 would.
    world.script.on(
        "a",
        [Reply::Status(
            429,
            "rate limit",
            vec![("retry-after", "60")],
        )],
    );
    let probed = world.router.probe_recovered(Duration::from_secs(5));
    assert_eq!(probed, [("p/a".to_string(), false)]);
    let next = world.auto();
    assert_eq!(next.decision, "q/c!served|q/c:200|skips=2");
    // A failed probe of a broken model reaches its live window, like a request's failure.
    std::thread::sleep(Duration::from_millis(40));
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        config: json!({"breaker": {"failureThreshold": 1, "initialCooldownMs": 30}}),
        ..Setup::default()
    }
    .world();
    world
        .script
        .on("a", [status(500, "boom"), status(500, "still")]);
    world.auto();
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(
        world.router.probe_recovered(Duration::from_secs(5)),
        [("p/a".to_string(), false)]
    );
    assert_eq!(world.live("p/a"), [None, None]);
    let a = world.breaker("p/a").unwrap();
    assert_eq!((a.state, a.trip_count), (BreakerState::Open, 2));
}
