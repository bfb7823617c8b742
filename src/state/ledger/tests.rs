//! The ledger's decisions with plain values: budgets, key rotation, holds, storms, saving.

use super::*;
use crate::answers::gate::AnswerStats;
use crate::providers::catalog::{ApiKey, Catalog, KeyList, KeySource};
use crate::providers::quota::{Period, Unit};
use std::collections::BTreeMap;

const NOW: u64 = 1_796_102_301_000; // 2026-12-01T05:18:21Z

/// A catalog of one provider `p` with models `a` and `b`, its `quota` as given.
fn catalog(quota: &str, shared: bool) -> Catalog {
    let text = format!(
        r#"{{"version":1,"providers":[{{"id":"p","baseUrl":"http://127.0.0.1:9/v1","apiKeyEnv":["P_KEY"],"sharedQuota":{shared},{quota}"models":[{{"id":"a","context":1000}},{{"id":"b","context":1000}}]}}]}}"#
    );
    Catalog::parse(&text, "test").unwrap()
}

fn metered(c: &Catalog, model: &str, keys: usize) -> (Metered, Vec<ApiKey>) {
    let values: Vec<String> = (1..=keys).map(|n| format!("key-{n}-0123456789")).collect();
    let mut cfg = BTreeMap::new();
    cfg.insert("p".to_string(), KeyList::Many(values));
    let none = |_: &str| None;
    let source = KeySource {
        env: &none,
        config_keys: &cfg,
    };
    let m = c.find(model).unwrap();
    let keys = source.keys(m.provider);
    (Metered::new(m, &keys), keys)
}

fn window(remaining: u64, reset_at: u64) -> Window {
    Window {
        name: "requests".into(),
        unit: Unit::Requests,
        period: Some(Period::Day),
        limit: Some(100),
        remaining: Some(remaining),
        reset_at,
    }
}

#[test]
fn a_daily_limit_is_never_overstepped_and_frees_at_midnight() {
    let c = catalog(r#""quota":{"requestsPerDay":2},"#, false);
    let (m, _) = metered(&c, "p/a", 1);
    let l = Ledger::new(UsageBook::default(), NOW, DEFAULT_STICKY);
    assert!(l.reserve(&m, 10, NOW, false).is_ok());
    assert!(l.reserve(&m, 10, NOW, false).is_ok());
    let b = l.reserve(&m, 10, NOW, false).unwrap_err();
    assert_eq!(crate::time::rfc3339(b.until_ms), "2026-12-02T00:00:00Z");
    assert_eq!(b.why, Why::Budget("requestsPerDay 2 reached".into()));
    assert_eq!(l.blocked(&m, 10, NOW), Some(b.clone()));
    // The provider-wide counter: model b shares it.
    let (other, _) = metered(&c, "p/b", 1);
    assert!(l.reserve(&other, 10, NOW, false).is_err());
    // A new UTC day.
    assert!(l.reserve(&m, 10, b.until_ms, false).is_ok());
}

#[test]
fn a_per_minute_limit_frees_as_the_minute_passes() {
    let c = catalog(r#""quota":{"requestsPerMinute":2,"scope":"model"},"#, false);
    let (m, _) = metered(&c, "p/a", 1);
    let (other, _) = metered(&c, "p/b", 1);
    let l = Ledger::new(UsageBook::default(), NOW, DEFAULT_STICKY);
    l.reserve(&m, 1, NOW, false).unwrap();
    l.reserve(&m, 1, NOW + 10_000, false).unwrap();
    let b = l.reserve(&m, 1, NOW + 20_000, false).unwrap_err();
    assert_eq!(b.until_ms, (NOW / 1000 + 1) * 1000 + 60_000);
    assert!(
        l.reserve(&other, 1, NOW + 20_000, false).is_ok(),
        "each model its own"
    );
    assert!(l.reserve(&m, 1, b.until_ms, false).is_ok());
}

#[test]
fn what_the_provider_said_is_left_decides_until_its_reset() {
    let c = catalog("", false);
    let (m, _) = metered(&c, "p/a", 1);
    let l = Ledger::new(UsageBook::default(), NOW, DEFAULT_STICKY);
    let g = l.reserve(&m, 1, NOW, false).unwrap();
    l.answered(&m, &g, &[window(1, NOW + 30_000)], NOW);
    // One left: this request takes it, the next one waits for the reset.
    assert!(l.reserve(&m, 1, NOW + 1, false).is_ok());
    let b = l.reserve(&m, 1, NOW + 2, false).unwrap_err();
    assert_eq!(b.until_ms, NOW + 30_000);
    assert_eq!(
        b.why,
        Why::Budget("x-ratelimit-remaining-requests 1, 1 in flight".into())
    );
    assert!(
        l.reserve(&m, 1, NOW + 30_000, false).is_ok(),
        "routable again after the reset"
    );
}

#[test]
fn an_answer_older_than_the_last_figures_does_not_raise_them() {
    let c = catalog("", false);
    let (m, _) = metered(&c, "p/a", 1);
    let l = Ledger::new(UsageBook::default(), NOW, DEFAULT_STICKY);
    let first = l.reserve(&m, 1, NOW, false).unwrap();
    l.answered(&m, &first, &[window(3, NOW + 30_000)], NOW);
    // Three go out together; the provider counts them b, c, a, and a's answer comes first.
    let [a, b, c] = [(); 3].map(|_| l.reserve(&m, 1, NOW + 10, false).unwrap());
    assert!(
        l.reserve(&m, 1, NOW + 10, false).is_err(),
        "3 left, 3 in flight"
    );
    l.answered(&m, &a, &[window(0, NOW + 30_000)], NOW + 20);
    l.answered(&m, &c, &[window(1, NOW + 30_000)], NOW + 21);
    l.answered(&m, &b, &[window(2, NOW + 30_000)], NOW + 22);
    let blocked = l.reserve(&m, 1, NOW + 30, false).unwrap_err();
    assert_eq!(
        blocked.why,
        Why::Budget("x-ratelimit-remaining-requests 0".into())
    );
    // A request sent after the last figures were seen brings newer ones: they stand.
    let later = l.reserve(&m, 1, NOW + 30_000, false).unwrap();
    l.answered(&m, &later, &[window(5, NOW + 60_000)], NOW + 30_001);
    // One sent before them and answered once their window closed brings the new window's.
    let slow = l.reserve(&m, 1, NOW + 30_002, false).unwrap();
    let quick = l.reserve(&m, 1, NOW + 30_002, false).unwrap();
    l.answered(&m, &quick, &[window(0, NOW + 30_010)], NOW + 30_003);
    l.answered(&m, &slow, &[window(9, NOW + 90_000)], NOW + 30_020);
    assert!(l.reserve(&m, 1, NOW + 30_021, false).is_ok());
}

#[test]
fn keys_rotate_with_the_sticky_count_and_spent_keys_are_passed_over() {
    let c = catalog(r#""quota":{"requestsPerDay":4},"#, false);
    let (m, _) = metered(&c, "p/a", 2);
    let l = Ledger::new(UsageBook::default(), NOW, 3);
    let used: Vec<String> = (0..8)
        .map(|_| l.reserve(&m, 1, NOW, false).unwrap().label.unwrap())
        .collect();
    assert_eq!(
        used,
        ["p#1", "p#1", "p#1", "p#2", "p#2", "p#2", "p#1", "p#2"]
    );
    assert!(
        l.reserve(&m, 1, NOW, false).is_err(),
        "both keys spent their 4"
    );
}

#[test]
fn a_rejected_key_and_a_rate_limited_key_are_passed_over_while_the_other_serves() {
    let c = catalog("", false);
    let (m, _) = metered(&c, "p/a", 2);
    let l = Ledger::new(UsageBook::default(), NOW, 3);
    let first = l.reserve(&m, 1, NOW, false).unwrap();
    l.rejected(&m, &first, NOW);
    for _ in 0..5 {
        assert_eq!(
            l.reserve(&m, 1, NOW, false).unwrap().label.as_deref(),
            Some("p#2")
        );
    }
    let second = Grant {
        key: 1,
        label: Some("p#2".into()),
        sent_at_ms: NOW,
    };
    let pause = l.rate_limited(&m, &second, Duration::from_secs(20), NOW);
    assert_eq!(pause, Duration::from_secs(20));
    let b = l.reserve(&m, 1, NOW, false).unwrap_err();
    assert_eq!(
        (b.until_ms, b.why),
        (NOW + 20_000, Why::Paused),
        "the earlier of the two"
    );
    assert_eq!(
        l.reserve(&m, 1, NOW + 20_000, false)
            .unwrap()
            .label
            .as_deref(),
        Some("p#2")
    );
    // One key alone is never held by the ledger: the router's breaker pauses the model.
    let l = Ledger::new(UsageBook::default(), NOW, 3);
    let (single, _) = metered(&c, "p/b", 1);
    let g = l.reserve(&single, 1, NOW, false).unwrap();
    l.rejected(&single, &g, NOW);
    l.rate_limited(&single, &g, Duration::from_secs(20), NOW);
    assert!(l.reserve(&single, 1, NOW, false).is_ok());
}

#[test]
fn three_429s_within_a_minute_pause_fifteen_minutes() {
    let c = catalog("", false);
    let (m, _) = metered(&c, "p/a", 1);
    let l = Ledger::new(UsageBook::default(), NOW, 3);
    let g = l.reserve(&m, 1, NOW, false).unwrap();
    let short = Duration::from_secs(2);
    assert_eq!(l.rate_limited(&m, &g, short, NOW), short);
    l.tokens(&m, &g, Tokens::default(), NOW);
    assert_eq!(
        l.rate_limited(&m, &g, short, NOW + 70_000),
        short,
        "the first one is a minute old, and an answer came between"
    );
    l.tokens(&m, &g, Tokens::default(), NOW);
    assert_eq!(l.rate_limited(&m, &g, short, NOW + 80_000), short);
    assert_eq!(l.rate_limited(&m, &g, short, NOW + 90_000), STORM_PAUSE);
    let today = &l.snapshot().days[0].rows[0];
    assert_eq!((today.requests, today.rate_limited), (1, 4));
}

#[test]
fn a_run_of_429s_without_an_answer_pauses_longer_each_time() {
    let c = catalog("", false);
    let (m, _) = metered(&c, "p/a", 1);
    let l = Ledger::new(UsageBook::default(), NOW, 3);
    let g = l.reserve(&m, 1, NOW, false).unwrap();
    let short = Duration::from_secs(2);
    // Minutes apart, so never a storm: a hidden hourly cap answering 429 each time.
    let pauses: Vec<u64> = (0..7)
        .map(|n| {
            l.rate_limited(&m, &g, short, NOW + n * 20 * 60_000)
                .as_secs()
        })
        .collect();
    assert_eq!(pauses, [2, 60, 120, 240, 480, 900, 900]);
    l.tokens(&m, &g, Tokens::default(), NOW);
    assert_eq!(
        l.rate_limited(&m, &g, short, NOW + 200 * 60_000),
        short,
        "answered since"
    );
}

#[test]
fn probes_keep_a_tenth_of_the_day() {
    let c = catalog(r#""quota":{"requestsPerDay":50},"#, true);
    let (m, _) = metered(&c, "p/a", 1);
    let l = Ledger::new(UsageBook::default(), NOW, 3);
    assert_eq!(
        l.probe_room(&m, NOW),
        Some(Room {
            counter: "p".into(),
            left: 45,
            daily_limit: 50
        })
    );
    for _ in 0..45 {
        l.reserve(&m, 1, NOW, true).unwrap();
    }
    assert!(l.reserve(&m, 1, NOW, true).is_err(), "a probe stops at 90%");
    assert!(
        l.reserve(&m, 1, NOW, false).is_ok(),
        "real work may use the rest"
    );
    assert_eq!(l.probe_room(&m, NOW).unwrap().left, 0);
    let (none, _) = metered(&catalog("", false), "p/a", 1);
    assert_eq!(l.probe_room(&none, NOW), None, "no known daily limit");
}

#[test]
fn tokens_are_counted_from_usage_or_estimated() {
    let stats = AnswerStats {
        completion_tokens: Some(7),
        prompt_tokens: Some(30),
        cached_tokens: Some(24),
        content_chars: 40,
        tool_calls: 0,
    };
    assert_eq!(
        Tokens::of(&stats, 99),
        Tokens {
            prompt: 30,
            completion: 7,
            cached: 24,
            estimated: 0
        }
    );
    let bare = AnswerStats {
        content_chars: 40,
        ..AnswerStats::default()
    };
    assert_eq!(
        Tokens::of(&bare, 99),
        Tokens {
            prompt: 99,
            completion: 10,
            cached: 0,
            estimated: 109
        }
    );
}

#[test]
fn saving_merges_with_another_process_and_learns_its_additions() {
    let dir = std::env::temp_dir().join(format!("fcm-ledger-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("usage.json");
    let c = catalog(r#""quota":{"requestsPerDay":5},"#, false);
    let (m, _) = metered(&c, "p/a", 1);
    let now = crate::time::now_ms();
    let server = Ledger::load(&path, now, 3).unwrap();
    let bench = Ledger::load(&path, now, 3).unwrap();
    let grant = server.reserve(&m, 1, now, false).unwrap();
    server.saved(&m, &grant, 40, now);
    server.reserve(&m, 1, now, false).unwrap();
    let grant = bench.reserve(&m, 1, now, true).unwrap();
    bench.saved(&m, &grant, 2, now);
    assert!(server.sync(&path, now).unwrap());
    assert!(bench.sync(&path, now).unwrap());
    assert!(!bench.sync(&path, now).unwrap(), "nothing new");
    let on_disk: UsageBook = crate::state::files::load_json(&path).unwrap();
    assert_eq!(on_disk.days[0].rows[0].requests, 3);
    assert_eq!(
        on_disk.days[0].rows[0].saved_tokens, 42,
        "compression's saving adds up"
    );
    // The server learns the bench's request at its next look (reading, not writing: it
    // added nothing), and counts it.
    assert!(!server.sync(&path, now).unwrap());
    server.reserve(&m, 1, now, false).unwrap();
    server.reserve(&m, 1, now, false).unwrap();
    assert!(
        server.reserve(&m, 1, now, false).is_err(),
        "2 + 1 + 2 = the day's 5"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_429_that_states_no_limit_teaches_what_the_model_took_a_minute() {
    let c = catalog("", false);
    let (m, _) = metered(&c, "p/a", 1);
    let l = Ledger::new(UsageBook::default(), NOW, 3);
    let mut last = None;
    for n in 0..6 {
        last = Some(l.reserve(&m, 1, NOW + n * 1_000, false).unwrap());
    }
    l.learn_from_429(&m, &last.unwrap(), NOW + 6_000);
    // It took six in the minute and refused the sixth: five a minute.
    let b = l.blocked(&m, 1, NOW + 7_000).expect("held to what it took");
    assert!(
        matches!(&b.why, Why::Budget(what) if what.contains("5 requests a minute")),
        "{b:?}"
    );
    assert!(
        l.blocked(&m, 1, NOW + 62_000).is_none(),
        "the minute rolls on"
    );
    // A quiet minute teaches nothing.
    let (quiet, _) = metered(&c, "p/b", 1);
    let g = l.reserve(&quiet, 1, NOW, false).unwrap();
    l.learn_from_429(&quiet, &g, NOW + 1);
    assert!(l.blocked(&quiet, 1, NOW + 2).is_none());
}
