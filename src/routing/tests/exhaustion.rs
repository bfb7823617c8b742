//! Answers that say a free quota is used up: what they pause (the model, or every model on
//! the key), until when, and that the next request does not go into the same wall.

use serde_json::json;

use super::super::script::Reply;
use super::{ranked, status, Setup};
use crate::time::{next_utc_midnight, now_ms};

fn skip_reason(answer: &super::Answered, model: &str) -> Option<String> {
    answer
        .trace
        .skipped
        .iter()
        .find(|s| s.model == model)
        .map(|s| s.reason.as_str().to_string())
}

#[test]
fn a_used_up_grant_pauses_its_model_for_a_day_and_is_not_a_rejected_key() {
    let world = Setup {
        models: ranked(&["p/a", "p/b", "q/c"]),
        ..Setup::default()
    }
    .world();
    world.script.on(
        "a",
        [status(
            403,
            "AllocationQuota.FreeTierOnly: The free tier of the model has been exhausted.",
        )],
    );
    let first = world.auto();
    // The sibling on the same key still serves: the grant is the model's.
    assert_eq!(first.decision, "p/b!served|p/a:403->p/b:200|skips=0");
    for _ in 0..3 {
        let next = world.auto();
        assert_eq!(next.decision, "p/b!served|p/b:200|skips=1");
        assert_eq!(
            skip_reason(&next, "p/a").as_deref(),
            Some("quota_exhausted")
        );
    }
    let skip = &world.auto().trace.skipped[0];
    let until = crate::time::parse_rfc3339(skip.until.as_deref().unwrap()).unwrap();
    assert!(
        until > now_ms() + 23 * 3_600_000,
        "held for a day: {skip:?}"
    );
    assert_eq!(
        world.script.sent().len(),
        6,
        "one request into the wall, no more"
    );
    // No health damage, and no rejected key.
    assert!(world.live("p/a").is_empty());
}

#[test]
fn an_account_wide_quota_pauses_every_model_on_the_key() {
    let world = Setup {
        models: ranked(&["p/a", "p/b", "q/c"]),
        ..Setup::default()
    }
    .world();
    world.script.on(
        "a",
        [status(
            429,
            "You exceeded your current quota, please check your plan and billing details. (insufficient_quota)",
        )],
    );
    let first = world.auto();
    assert_eq!(first.decision, "q/c!served|p/a:429->q/c:200|skips=1");
    assert_eq!(
        skip_reason(&first, "p/b").as_deref(),
        Some("quota_exhausted")
    );
    let next = world.auto();
    assert_eq!(next.decision, "q/c!served|q/c:200|skips=2");
}

#[test]
fn a_day_limit_without_its_reach_in_words_takes_the_catalogs_scope_and_resets_at_midnight() {
    for (shared, decision) in [
        (true, "q/c!served|p/a:429->q/c:200|skips=1"),
        (false, "p/b!served|p/a:429->p/b:200|skips=0"),
    ] {
        let world = Setup {
            models: ranked(&["p/a", "p/b", "q/c"]),
            shared: if shared { &["p"] } else { &[] },
            ..Setup::default()
        }
        .world();
        world
            .script
            .on("a", [status(429, "Daily limit reached for free requests.")]);
        let first = world.auto();
        assert_eq!(first.decision, decision, "shared {shared}");
        let next = world.auto();
        let skip = next
            .trace
            .skipped
            .iter()
            .find(|s| s.model == "p/a")
            .expect("p/a skipped");
        let until = crate::time::parse_rfc3339(skip.until.as_deref().unwrap()).unwrap();
        // RFC 3339 is read to the second.
        assert_eq!(until, next_utc_midnight(now_ms()), "shared {shared}");
    }
}

#[test]
fn a_stated_reset_wins_and_the_next_key_serves() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        shared: &["p"],
        env: &[("P_KEY_2", "key-two")],
        ..Setup::default()
    }
    .world();
    let reset = (now_ms() + 3 * 3_600_000).to_string();
    world.script.on(
        "a",
        [Reply::Status(
            429,
            "Rate limit exceeded: free-models-per-day",
            vec![
                ("x-ratelimit-limit", "50"),
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", Box::leak(reset.into_boxed_str())),
            ],
        )],
    );
    let first = world.auto();
    assert_eq!(first.decision, "p/a!served|p/a:429->p/a:200|skips=0");
    let keys: Vec<Option<String>> = world.script.sent().into_iter().map(|s| s.api_key).collect();
    assert_ne!(keys[0], keys[1], "the other key, which has its own day");
    let usage = world.router.ledger.snapshot();
    let hold = usage.holds.first().expect("the first key is held");
    assert_eq!(hold.whose.scope, "p", "every model on that key");
    let left = hold.until_ms.saturating_sub(now_ms());
    assert!(
        (3 * 3_600_000 - 60_000..=3 * 3_600_000).contains(&left),
        "until the stated reset: {left}"
    );
    assert_eq!(
        serde_json::to_value(hold).unwrap()["signal"],
        json!("daily_limit")
    );
}

#[test]
fn a_notice_that_the_quota_is_used_up_is_an_exhaustion() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    world.script.on(
        "a",
        [Reply::Text("Your free quota has been exhausted for today.")],
    );
    let first = world.auto();
    assert_eq!(
        first.decision,
        "q/b!served|p/a:quota_exhausted->q/b:200|skips=0"
    );
    let next = world.auto();
    assert_eq!(
        skip_reason(&next, "p/a").as_deref(),
        Some("quota_exhausted")
    );
}

#[test]
fn a_prompt_over_a_models_tokens_a_minute_is_not_sent_there_again_but_a_small_one_is() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    world.script.on(
        "a",
        [status(
            413,
            "Request too large for model `a` on tokens per minute (TPM): Limit 8000, Requested 11881, Please reduce your message size and try again.",
        )],
    );
    let big = || super::chat(&"word ".repeat(10_000));
    let first = world.ask("fcm", big());
    assert_eq!(first.decision, "q/b!served|p/a:413->q/b:200|skips=0");
    let again = world.ask("fcm", big());
    assert_eq!(again.decision, "q/b!served|q/b:200|skips=1");
    let skip = &again.trace.skipped[0];
    assert_eq!(skip.reason.as_str(), "quota_budget");
    assert!(skip.limit.as_deref().unwrap().contains("8000"), "{skip:?}");
    // Not paused: a prompt that fits goes there.
    assert_eq!(world.auto().decision, "p/a!served|p/a:200|skips=0");
}

#[test]
fn a_model_that_never_answered_gets_one_request_at_a_time_so_a_notice_stops_the_wave() {
    let world = Setup {
        models: ranked(&["p/a", "q/b", "r/c", "s/d", "t/e"]),
        ..Setup::default()
    }
    .world();
    let notice = || {
        Reply::after(
            400,
            Reply::Text("This model now requires a paid plan. Add credits to continue."),
        )
    };
    world.script.on("a", (0..4).map(|_| notice()));
    let answers: Vec<super::Answered> = std::thread::scope(|s| {
        let first = s.spawn(|| world.auto());
        // The others arrive while the first is out at p/a.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let rest: Vec<_> = (0..3).map(|_| s.spawn(|| world.auto())).collect();
        std::iter::once(first)
            .chain(rest)
            .map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        answers[0].decision.contains("p/a:provider_notice->"),
        "{}",
        answers[0].decision
    );
    for a in &answers {
        assert_eq!(a.status, 200, "{}", a.decision);
    }
    for a in &answers[1..] {
        assert_eq!(
            skip_reason(a, "p/a").as_deref(),
            Some("untried_busy"),
            "{}",
            a.decision
        );
        assert!(!a.decision.contains("p/a:"), "{}", a.decision);
    }
    let to_a = world
        .script
        .sent()
        .iter()
        .filter(|s| s.model == "a")
        .count();
    assert_eq!(to_a, 1, "one request met the notice");
    // The notice pauses it for the requests after.
    assert_eq!(
        skip_reason(&world.auto(), "p/a").as_deref(),
        Some("provider_notice")
    );
}

#[test]
fn a_notice_streamed_in_pieces_is_seen_before_the_client_gets_a_word() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        ..Setup::default()
    }
    .world();
    world.script.on(
        "a",
        [Reply::stream(&[
            "This model ",
            "now requires ",
            "a paid plan. ",
            "Add credits ",
            "to continue.",
        ])],
    );
    world
        .script
        .on("b", [Reply::stream(&["Here ", "is the fix."])]);
    let mut body = super::chat("fix it");
    body["stream"] = json!(true);
    let got = world.ask("fcm", body);
    assert_eq!(
        got.decision,
        "q/b!served|p/a:provider_notice->q/b:200|skips=0"
    );
}
