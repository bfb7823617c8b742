//! What a bench run found: each model's verdict, statistics and tool-call tally, the ranking,
//! and the report saved as `bench.json`. Pure functions over ping results.

use crate::answers::classify::FailureKind;
use crate::providers::catalog::{tier_rank, ModelRef};
use crate::routing::rank::{Policy, Standing, FAILING, PROVEN};
pub use crate::state::bench_file::{BenchReport, BenchVerdict, ModelResult};
use crate::state::breaker::BreakerState;

use crate::routing::ping::{Judged, Ping, Question};

/// Median time to first token at or under which a fully successful model is `Perfect`.
pub const PERFECT_TTFT_MS: u64 = 1000;
/// Median time to first token from which a fully successful model is `Slow`.
pub const SLOW_TTFT_MS: u64 = 2000;

/// What one model's tool pings showed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolTally {
    pub pings: u32,
    /// Answered with a call that passed the check.
    pub calls: u32,
    /// Failed, for any reason (a broken or invented call is `invalid_tool_call`).
    pub failures: u32,
}

impl ToolTally {
    /// Counts the tool pings among `pings`; a ping answered in text only is neither a call
    /// nor a failure: the model answered, it just did not prove it calls tools.
    pub fn of(pings: &[(Question, Ping)]) -> ToolTally {
        let mut tally = ToolTally::default();
        for (_, p) in pings.iter().filter(|(q, _)| *q == Question::ToolCall) {
            tally.pings += 1;
            match p {
                Ping::Ok {
                    tool_calls,
                    judged: Judged::Right,
                    ..
                } if *tool_calls > 0 => tally.calls += 1,
                // A call for another city than the one asked is not a proof.
                Ping::Ok { .. } => {}
                Ping::Failed { .. } => tally.failures += 1,
            }
        }
        tally
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn std_dev(values: &[u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<u64>() as f64 / n;
    let var = values
        .iter()
        .map(|v| (*v as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    Some(var.sqrt().round() as u64)
}

/// Whether a ping is a success: an answer that is right (or could not be checked: reasoning
/// cut by `max_tokens`).
pub fn answered(p: &Ping) -> bool {
    matches!(
        p,
        Ping::Ok {
            judged: Judged::Right | Judged::Unverified,
            ..
        }
    )
}

/// The verdict for a set of pings (empty pings: the model was not contacted for lack of a
/// key). A wrong answer or a provider notice is no success: with no right answer at all the
/// model is `WrongAnswer` or `ProviderNotice`, unusable; beside right answers, `Unstable`.
pub fn verdict<'a>(
    pings: impl IntoIterator<Item = &'a Ping>,
    ttft_p50: Option<u64>,
) -> BenchVerdict {
    let mut sent = 0;
    let mut failures: Vec<FailureKind> = Vec::new();
    let (mut wrong, mut notices) = (0, 0);
    for p in pings {
        sent += 1;
        match p {
            Ping::Failed { kind, .. } => failures.push(*kind),
            Ping::Ok {
                judged: Judged::Wrong,
                ..
            } => wrong += 1,
            Ping::Ok {
                judged: Judged::Notice,
                ..
            } => notices += 1,
            Ping::Ok { .. } => {}
        }
    }
    if sent == 0 {
        return BenchVerdict::NoKey;
    }
    let successes = sent - failures.len() - wrong - notices;
    if successes == 0 && notices > 0 {
        return BenchVerdict::ProviderNotice;
    }
    if successes == 0 && wrong > 0 {
        return BenchVerdict::WrongAnswer;
    }
    if successes == 0 {
        let last = *failures.last().expect("pings is not empty");
        return if failures.contains(&FailureKind::AuthError) {
            BenchVerdict::AuthFailed
        } else if failures.contains(&FailureKind::ProviderNotice) {
            BenchVerdict::ProviderNotice
        } else if last.is_quota() {
            BenchVerdict::RateLimited
        } else if last.is_unusable_answer() {
            BenchVerdict::EmptyAnswers
        } else {
            BenchVerdict::Down
        };
    }
    if wrong + notices > 0 {
        return BenchVerdict::Unstable;
    }
    if !failures.is_empty() {
        return if failures.iter().all(|k| k.is_quota()) {
            BenchVerdict::RateLimited
        } else {
            BenchVerdict::Unstable
        };
    }
    match ttft_p50.unwrap_or(0) {
        t if t <= PERFECT_TTFT_MS => BenchVerdict::Perfect,
        t if t < SLOW_TTFT_MS => BenchVerdict::Normal,
        _ => BenchVerdict::Slow,
    }
}

/// Summarises one model's pings, in the order they were sent (rank is filled in by
/// [`rank`]). Every ping counts for health (answered, failed, verdict); times come from the
/// plain question only, so a run with `--tools` compares with one without.
pub fn summarize(m: ModelRef<'_>, pings: &[(Question, Ping)], measured_at: &str) -> ModelResult {
    let mut ttft = Vec::new();
    let mut total = Vec::new();
    let mut tps = Vec::new();
    let mut last_failure = None;
    let mut successes = 0;
    for (question, p) in pings {
        match p {
            Ping::Ok { judged, said, .. } if !answered(p) => {
                let what = match judged {
                    Judged::Notice => "a provider notice",
                    _ => "a wrong answer",
                };
                last_failure = Some((None, None, format!("{what}: {said:?}")));
            }
            Ping::Ok {
                ttft_ms,
                total_ms,
                tokens,
                ..
            } => {
                successes += 1;
                if *question == Question::Sum {
                    ttft.push(*ttft_ms);
                    total.push(*total_ms);
                    tps.push(*tokens as f64 * 1000.0 / (*total_ms).max(1) as f64);
                }
            }
            Ping::Failed {
                kind,
                status,
                detail,
                ..
            } => last_failure = Some((Some(*kind), *status, detail.clone())),
        }
    }
    let jitter = std_dev(&total);
    ttft.sort_unstable();
    total.sort_unstable();
    tps.sort_by(f64::total_cmp);
    let ttft_p50 = percentile(&ttft, 50.0);
    let v = verdict(pings.iter().map(|(_, p)| p), ttft_p50);
    let tools = ToolTally::of(pings);
    let measured = |n: u32| (tools.pings > 0).then_some(n);
    ModelResult {
        rank: 0,
        model: m.key(),
        provider: m.provider.id.clone(),
        label: m.model.label.clone(),
        tier: m.model.tier.clone(),
        swe_bench: m.model.swe_bench,
        usable: successes > 0,
        verdict: v,
        pings: pings.len() as u32,
        successes,
        success_rate: if pings.is_empty() {
            0.0
        } else {
            successes as f64 / pings.len() as f64
        },
        tool_pings: measured(tools.pings),
        tool_calls: measured(tools.calls),
        tool_failures: measured(tools.failures),
        tools_measured_at: (tools.pings > 0).then(|| measured_at.to_string()),
        ttft_ms_p50: ttft_p50,
        ttft_ms_p95: percentile(&ttft, 95.0),
        latency_ms_p50: percentile(&total, 50.0),
        latency_ms_p95: percentile(&total, 95.0),
        jitter_ms: jitter,
        tokens_per_sec: (!tps.is_empty()).then(|| (tps[(tps.len() - 1) / 2] * 10.0).round() / 10.0),
        last_failure_kind: last_failure.as_ref().and_then(|f| f.0),
        last_failure_status: last_failure.as_ref().and_then(|f| f.1),
        last_failure: last_failure.map(|f| f.2),
        measured_at: measured_at.to_string(),
        budget_capped: false,
    }
}

/// The entry of a model the bench did not contact because its known budget is spent.
pub fn over_budget(m: ModelRef<'_>, measured_at: &str) -> ModelResult {
    ModelResult {
        verdict: BenchVerdict::QuotaBudget,
        ..summarize(m, &[], measured_at)
    }
}

/// Sorts best first, in the router's own order (`policy`), and numbers the ranks: usable
/// models first; with `quality`, too slow ones behind the rest, then the catalog's tier and
/// SWE-bench score, then the verdict (Perfect, Normal, Slow, Unstable, ...), success rate
/// and median time to first token; with `speed`, verdict, success rate and time to first
/// token before tier and score. Then the model key, so equal results keep a stable order.
pub fn rank(results: &mut [ModelResult], policy: Policy) {
    results.sort_by(|a, b| policy.compare(&standing(a), &standing(b)));
    for (i, r) in results.iter_mut().enumerate() {
        r.rank = i + 1;
    }
}

/// A bench result's place in the one ordering (every model counts as CLOSED here).
fn standing(r: &ModelResult) -> Standing<'_> {
    Standing {
        state: BreakerState::Closed,
        evidence: if r.usable { PROVEN } else { FAILING },
        verdict: r.verdict as u8,
        success_rate: r.success_rate,
        ttft_ms: r.ttft_ms_p50,
        tier: tier_rank(&r.tier),
        swe: r.swe_bench.unwrap_or(-1.0),
        headroom: 1.0,
        room: crate::state::ledger::Headroom::OPEN,
        key: &r.model,
    }
}

/// Merges a new run into the saved report: this run's models replace their old entries,
/// models not probed this time keep theirs, and a model probed without tool pings keeps its
/// last tool results. Ranks are recomputed over the whole. An interrupted run marks the
/// result partial, naming the models it did not finish.
pub fn merge(previous: BenchReport, current: &BenchReport, policy: Policy) -> BenchReport {
    let mut models = current.models.clone();
    for old in previous.models {
        match models.iter_mut().find(|m| m.model == old.model) {
            // Not contacted this time (over budget): what it showed before still stands.
            Some(new) if new.verdict == BenchVerdict::QuotaBudget && old.pings > 0 => *new = old,
            Some(new) => new.keep_tools_of(&old),
            None => models.push(old),
        }
    }
    rank(&mut models, policy);
    BenchReport {
        generated_at: current.generated_at.clone(),
        models,
        partial: current.partial,
        unfinished: current.unfinished.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::config::Prefer;

    const SPEED: Policy = Policy {
        prefer: Prefer::Speed,
        max_ttft_ms: 8_000,
    };
    use crate::bench::*;
    use crate::providers::catalog::Provider;
    use serde_json::json;

    fn ok(ttft: u64, total: u64) -> Ping {
        Ping::Ok {
            ttft_ms: ttft,
            total_ms: total,
            tokens: 2,
            tool_calls: 0,
            judged: Judged::Right,
            said: "42".into(),
        }
    }

    fn judged(judged: Judged, said: &str) -> Ping {
        match ok(100, 120) {
            Ping::Ok { .. } => Ping::Ok {
                ttft_ms: 100,
                total_ms: 120,
                tokens: 2,
                tool_calls: 0,
                judged,
                said: said.into(),
            },
            p => p,
        }
    }

    #[test]
    fn wrong_answers_and_provider_notices_are_not_successes() {
        let right = ok(100, 120);
        let wrong = judged(Judged::Wrong, "41");
        let notice = judged(Judged::Notice, "This model now requires a paid plan.");
        let unverified = judged(Judged::Unverified, "");
        let cases: Vec<(Vec<Ping>, BenchVerdict)> = vec![
            (
                vec![wrong.clone(), wrong.clone()],
                BenchVerdict::WrongAnswer,
            ),
            (
                vec![wrong.clone(), notice.clone()],
                BenchVerdict::ProviderNotice,
            ),
            (vec![right.clone(), wrong.clone()], BenchVerdict::Unstable),
            (vec![unverified.clone(), unverified], BenchVerdict::Perfect),
            (vec![right.clone(), right], BenchVerdict::Perfect),
        ];
        for (pings, want) in cases {
            assert_eq!(verdict(pings.iter(), Some(100)), want, "{pings:?}");
        }
        let p = provider();
        let m = ModelRef {
            provider: &p,
            model: &p.models[0],
        };
        let r = summarize(m, &sums(&[notice.clone(), notice]), "t");
        assert!(!r.usable);
        assert_eq!(r.verdict, BenchVerdict::ProviderNotice);
        assert!(r.last_failure.unwrap().contains("paid plan"));
        assert_eq!(r.successes, 0);
    }

    /// Plain pings, as a run without `--tools` sends them.
    fn sums(pings: &[Ping]) -> Vec<(Question, Ping)> {
        pings.iter().map(|p| (Question::Sum, p.clone())).collect()
    }

    fn fail(kind: FailureKind) -> Ping {
        Ping::Failed {
            kind,
            status: None,
            detail: String::new(),
            pause: None,
        }
    }

    #[test]
    fn percentiles_nearest_rank() {
        let v = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 95.0), Some(100));
        assert_eq!(percentile(&[7], 95.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn verdict_table() {
        use BenchVerdict::*;
        use FailureKind::*;
        let cases: Vec<(Vec<Ping>, BenchVerdict)> = vec![
            (vec![], NoKey),
            (vec![ok(300, 400); 3], Perfect),
            (vec![ok(1500, 1600); 3], Normal),
            (vec![ok(2500, 2600); 3], Slow),
            (
                vec![ok(300, 400), fail(ProviderServerError), ok(300, 400)],
                Unstable,
            ),
            (vec![ok(300, 400), fail(RateLimit)], RateLimited),
            (vec![fail(RateLimit)], RateLimited),
            (vec![fail(QuotaExhausted)], RateLimited),
            (vec![fail(AuthError)], AuthFailed),
            (vec![fail(EmptyChoices); 3], EmptyAnswers),
            (vec![fail(ErrorPayload); 3], EmptyAnswers),
            (vec![fail(EmptyStream); 3], EmptyAnswers),
            (vec![fail(Timeout), fail(Timeout)], Down),
            (vec![fail(NetworkError)], Down),
            (vec![fail(HtmlMaintenance)], EmptyAnswers),
        ];
        for (pings, want) in cases {
            let ttft: Vec<u64> = pings
                .iter()
                .filter_map(|p| {
                    if let Ping::Ok { ttft_ms, .. } = p {
                        Some(*ttft_ms)
                    } else {
                        None
                    }
                })
                .collect();
            let mut sorted = ttft.clone();
            sorted.sort_unstable();
            assert_eq!(
                verdict(&pings, percentile(&sorted, 50.0)),
                want,
                "{pings:?}"
            );
        }
    }

    fn provider() -> Provider {
        serde_json::from_value(
            json!({"id": "p", "baseUrl": "http://127.0.0.1:1/v1", "models": [
            {"id": "a", "context": 1, "tier": "S"}, {"id": "b", "context": 1, "tier": "A"}]}),
        )
        .unwrap()
    }

    #[test]
    fn summary_statistics() {
        let p = provider();
        let m = ModelRef {
            provider: &p,
            model: &p.models[0],
        };
        let r = summarize(
            m,
            &sums(&[ok(100, 200), ok(300, 400), fail(FailureKind::Timeout)]),
            "t",
        );
        assert_eq!(r.model, "p/a");
        assert_eq!((r.pings, r.successes), (3, 2));
        assert!((r.success_rate - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!((r.ttft_ms_p50, r.ttft_ms_p95), (Some(100), Some(300)));
        assert_eq!((r.latency_ms_p50, r.latency_ms_p95), (Some(200), Some(400)));
        assert_eq!(r.jitter_ms, Some(100));
        assert_eq!(r.tokens_per_sec, Some(5.0));
        assert_eq!(r.last_failure_kind, Some(FailureKind::Timeout));
        assert_eq!(r.verdict, BenchVerdict::Unstable);
    }

    #[test]
    fn ranking_order() {
        let p = provider();
        let a = ModelRef {
            provider: &p,
            model: &p.models[0],
        };
        let b = ModelRef {
            provider: &p,
            model: &p.models[1],
        };
        let mut results = vec![
            summarize(a, &[], "t"),
            summarize(a, &sums(&[fail(FailureKind::AuthError)]), "t"),
            summarize(b, &sums(&[ok(900, 950), ok(900, 950), ok(900, 950)]), "t"),
            summarize(a, &sums(&[ok(500, 700), ok(500, 700), ok(500, 700)]), "t"),
            summarize(a, &sums(&[ok(50, 70), fail(FailureKind::Timeout)]), "t"),
            summarize(a, &sums(&[ok(2500, 2600), ok(2500, 2600)]), "t"),
        ];
        results[0].model = "p/nokey".into();
        rank(&mut results, SPEED);
        let order: Vec<(BenchVerdict, Option<u64>)> =
            results.iter().map(|r| (r.verdict, r.ttft_ms_p50)).collect();
        use BenchVerdict::*;
        assert_eq!(
            order,
            vec![
                (Perfect, Some(500)),
                (Perfect, Some(900)),
                (Slow, Some(2500)),
                (Unstable, Some(50)),
                (AuthFailed, None),
                (NoKey, None)
            ]
        );
        assert_eq!(
            results.iter().map(|r| r.rank).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5, 6]
        );
    }

    fn tool(p: Ping) -> (Question, Ping) {
        (Question::ToolCall, p)
    }

    fn called(ttft: u64) -> Ping {
        Ping::Ok {
            ttft_ms: ttft,
            total_ms: ttft,
            tokens: 9,
            tool_calls: 1,
            judged: Judged::Right,
            said: String::new(),
        }
    }

    #[test]
    fn tool_pings_follow_each_plain_ping() {
        use Question::*;
        assert_eq!(questions(2, false), [Sum, Sum]);
        assert_eq!(questions(2, true), [Sum, ToolCall, Sum, ToolCall]);
    }

    #[test]
    fn tool_pings_count_for_health_but_not_for_speed() {
        let p = provider();
        let m = ModelRef {
            provider: &p,
            model: &p.models[0],
        };
        let pings = [
            (Question::Sum, ok(100, 200)),
            tool(called(5000)),
            (Question::Sum, ok(300, 400)),
            tool(ok(6000, 6000)),
            (Question::Sum, ok(200, 300)),
            tool(fail(FailureKind::InvalidToolCall)),
        ];
        let r = summarize(m, &pings, "t");
        assert_eq!((r.pings, r.successes), (6, 5));
        assert_eq!(
            (r.tool_pings, r.tool_calls, r.tool_failures),
            (Some(3), Some(1), Some(1))
        );
        assert_eq!(r.tools_measured_at.as_deref(), Some("t"));
        assert_eq!(r.ttft_ms_p50, Some(200), "tool pings do not move the times");
        assert_eq!(r.last_failure_kind, Some(FailureKind::InvalidToolCall));
        assert_eq!(r.verdict, BenchVerdict::Unstable);
        assert!(!r.proves_tool_calls());
        let plain = summarize(m, &sums(&[ok(1, 1)]), "t");
        assert_eq!((plain.tool_pings, plain.tool_calls), (None, None));
        assert!(!plain.proves_tool_calls());
    }

    #[test]
    fn merge_keeps_tool_results_of_a_run_without_tools() {
        let p = provider();
        let a = ModelRef {
            provider: &p,
            model: &p.models[0],
        };
        let old = BenchReport {
            generated_at: "old".into(),
            models: vec![summarize(
                a,
                &[(Question::Sum, ok(1, 1)), tool(called(2))],
                "old",
            )],
            ..Default::default()
        };
        let plain = BenchReport {
            generated_at: "new".into(),
            models: vec![summarize(a, &sums(&[ok(1, 1)]), "new")],
            ..Default::default()
        };
        let merged = merge(old.clone(), &plain, SPEED);
        let m = &merged.models[0];
        assert_eq!((m.measured_at.as_str(), m.tool_calls), ("new", Some(1)));
        assert_eq!(m.tools_measured_at.as_deref(), Some("old"));
        assert!(m.proves_tool_calls());
        let retested = BenchReport {
            generated_at: "new".into(),
            models: vec![summarize(
                a,
                &[(Question::Sum, ok(1, 1)), tool(ok(1, 1))],
                "new",
            )],
            ..Default::default()
        };
        let m = &merge(old, &retested, SPEED).models[0];
        assert_eq!((m.tool_pings, m.tool_calls), (Some(1), Some(0)));
        assert_eq!(m.tools_measured_at.as_deref(), Some("new"));
        assert!(
            !m.proves_tool_calls(),
            "a new tool run replaces the old one"
        );
    }

    #[test]
    fn a_bench_file_from_before_tool_pings_loads() {
        let old = json!({"generatedAt": "x", "models": [{"rank": 1, "model": "p/m",
            "provider": "p", "label": "M", "tier": "A", "usable": true, "verdict": "perfect",
            "pings": 1, "successes": 1, "successRate": 1.0, "measuredAt": "x"}]});
        let report: BenchReport = serde_json::from_value(old).unwrap();
        assert_eq!(report.models[0].tool_pings, None);
        assert!(!report.models[0].proves_tool_calls());
    }

    #[test]
    fn merge_keeps_unprobed_models() {
        let p = provider();
        let a = ModelRef {
            provider: &p,
            model: &p.models[0],
        };
        let b = ModelRef {
            provider: &p,
            model: &p.models[1],
        };
        let old = BenchReport {
            generated_at: "old".into(),
            models: vec![
                summarize(a, &sums(&[ok(1, 1)]), "old"),
                summarize(b, &sums(&[ok(1, 1)]), "old"),
            ],
            ..Default::default()
        };
        let new = BenchReport {
            generated_at: "new".into(),
            models: vec![summarize(a, &sums(&[fail(FailureKind::Timeout)]), "new")],
            ..Default::default()
        };
        let merged = merge(old.clone(), &new, SPEED);
        assert_eq!(merged.models.len(), 2);
        assert_eq!(merged.models[0].model, "p/b");
        assert_eq!(merged.models[1].measured_at, "new");
        assert!(!merged.partial);
        // An interrupted run: marked partial, the unfinished model keeps its entry.
        let cut = BenchReport {
            partial: true,
            unfinished: vec!["p/b".into()],
            ..new
        };
        let merged = merge(old, &cut, SPEED);
        assert!(merged.partial);
        assert_eq!(merged.unfinished, ["p/b"]);
        let b = merged.models.iter().find(|m| m.model == "p/b").unwrap();
        assert_eq!(b.measured_at, "old");
    }
}
