//! The one ordering of models, best first, used by the router, the bench table and
//! `fcm check`. By default (`router.prefer: "quality"`) the strongest model that works:
//! health now (the breaker), then recent failures (a model failing now goes back), then
//! whether it answers in time for an agent (a first token slower than `router.maxTtftMs`
//! goes behind every responsive model), then coding strength (the catalog's tier, then its
//! SWE-bench score), then speed and budget headroom to break ties. A model with no evidence
//! yet counts as one that works: a stronger model never tried, or just reset, is tried
//! first, and a failure costs one failover. `"speed"` keeps the older order: health, then
//! evidence, then the fastest first token, and strength only after speed.
//!
//! Each caller fills a [`Standing`] with what it knows; what it does not know it leaves
//! equal, so that field never decides.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::state::breaker::BreakerState;
use crate::state::config::Prefer;
use crate::state::ledger::Headroom;

/// Evidence that a model works: proven by recent results, not known, or failing, in the
/// order ranking puts them. The one type for it: the ranking, the live windows (packed into
/// a word), `fcm status`, `/fcm/admin/live` and `fcm top` all read this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Evidence {
    Proven,
    Unknown,
    Failing,
}

/// The variants by the names the ranking code reads best.
pub(crate) const PROVEN: Evidence = Evidence::Proven;
pub(crate) const UNKNOWN: Evidence = Evidence::Unknown;
pub(crate) const FAILING: Evidence = Evidence::Failing;

/// Where one model stands, for [`compare`].
#[derive(Debug, Clone)]
pub(crate) struct Standing<'a> {
    /// Breaker state (CLOSED first). The bench and check use CLOSED for every model.
    pub state: BreakerState,
    /// [`PROVEN`], [`UNKNOWN`] or [`FAILING`].
    pub evidence: Evidence,
    /// Finer order within the evidence class (the bench's verdict); 0 where unknown.
    pub verdict: u8,
    /// Share of recent probes that succeeded, higher first; equal where unknown.
    pub success_rate: f64,
    pub ttft_ms: Option<u64>,
    /// Catalog tier as a rank (S+ is 0).
    pub tier: usize,
    /// SWE-bench score, higher first (-1 when unknown).
    pub swe: f64,
    /// Share of its tightest known free-tier limit left, higher first (1.0 when no limit
    /// is known or the caller does not know): of two otherwise equal models, the one
    /// further from a 429.
    pub headroom: f64,
    /// What its limits leave (see `Headroom`); [`Headroom::OPEN`] when the caller does
    /// not know.
    pub room: Headroom,
    /// Breaks the remaining ties so equal models keep a stable order ("" keeps input order).
    pub key: &'a str,
}

/// How models are ordered: `router.prefer` and `router.maxTtftMs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    pub prefer: Prefer,
    /// A median first token slower than this (ms) is too slow for an agent.
    pub max_ttft_ms: u64,
}

impl Policy {
    pub(crate) fn of(router: &crate::state::config::RouterConfig) -> Policy {
        Policy {
            prefer: router.prefer,
            max_ttft_ms: router.max_ttft_ms,
        }
    }

    /// Best first.
    pub(crate) fn compare(&self, a: &Standing<'_>, b: &Standing<'_>) -> Ordering {
        match self.prefer {
            Prefer::Quality => self.strength_class(a, b).then_with(|| tie_break(a, b)),
            Prefer::Speed => a
                .state
                .cmp(&b.state)
                .then(a.evidence.cmp(&b.evidence))
                .then(a.verdict.cmp(&b.verdict))
                .then(b.success_rate.total_cmp(&a.success_rate))
                .then(ttft(a).cmp(&ttft(b)))
                .then(a.tier.cmp(&b.tier))
                .then(b.swe.total_cmp(&a.swe))
                .then(b.headroom.total_cmp(&a.headroom))
                .then(a.key.cmp(b.key)),
        }
    }

    /// Everything but the tie-breakers (quality): health, failing now, too slow, tier,
    /// SWE-bench score. Models equal here are equally strong: a new conversation is spread
    /// over them.
    pub(crate) fn strength_class(&self, a: &Standing<'_>, b: &Standing<'_>) -> Ordering {
        self.placement_class(a, b).then(b.swe.total_cmp(&a.swe))
    }

    /// What makes one model a stronger home for a conversation than another: health,
    /// failing now, too slow, and the catalog's tier. Models of one tier are equally
    /// strong here whatever their SWE-bench scores: conversations are spread over them.
    /// A prefix of [`strength_class`](Self::strength_class), so ranked models of one
    /// placement class stand together.
    pub(crate) fn placement_class(&self, a: &Standing<'_>, b: &Standing<'_>) -> Ordering {
        a.state
            .cmp(&b.state)
            .then((a.evidence == FAILING).cmp(&(b.evidence == FAILING)))
            .then(self.too_slow(a).cmp(&self.too_slow(b)))
            .then(a.tier.cmp(&b.tier))
    }

    fn too_slow(&self, s: &Standing<'_>) -> bool {
        s.ttft_ms.is_some_and(|t| t > self.max_ttft_ms)
    }
}

/// Among equally strong models: the bench's finer verdict and success rate, then the
/// faster first token, then the budget further from a 429, then the key.
fn tie_break(a: &Standing<'_>, b: &Standing<'_>) -> Ordering {
    a.verdict
        .cmp(&b.verdict)
        .then(b.success_rate.total_cmp(&a.success_rate))
        .then(ttft(a).cmp(&ttft(b)))
        .then(b.headroom.total_cmp(&a.headroom))
        .then(a.key.cmp(b.key))
}

fn ttft(s: &Standing<'_>) -> u64 {
    s.ttft_ms.unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(
        key: &str,
        state: BreakerState,
        evidence: Evidence,
        ttft: Option<u64>,
        tier: usize,
        swe: f64,
    ) -> Standing<'_> {
        Standing {
            state,
            evidence,
            verdict: 0,
            success_rate: 0.0,
            ttft_ms: ttft,
            tier,
            swe,
            headroom: 1.0,
            room: Headroom::OPEN,
            key,
        }
    }

    const SPEED: Policy = Policy {
        prefer: Prefer::Speed,
        max_ttft_ms: 8_000,
    };
    const QUALITY: Policy = Policy {
        prefer: Prefer::Quality,
        max_ttft_ms: 8_000,
    };

    fn compare(a: &Standing<'_>, b: &Standing<'_>) -> Ordering {
        SPEED.compare(a, b)
    }

    fn sorted<'a>(policy: Policy, mut v: Vec<Standing<'a>>) -> Vec<&'a str> {
        v.sort_by(|a, b| policy.compare(a, b));
        v.iter().map(|r| r.key).collect()
    }

    #[test]
    fn quality_puts_the_strongest_working_model_first() {
        use BreakerState::*;
        let v = vec![
            standing("b-fast-proven", Closed, PROVEN, Some(50), 5, 40.0),
            standing("s-plus-slow-proven", Closed, PROVEN, Some(2_500), 0, 70.0),
            standing("s-plus-never-tried", Closed, UNKNOWN, None, 0, 74.0),
            standing("s-plus-failing-now", Closed, FAILING, None, 0, 80.0),
            standing("s-plus-degraded", Degraded, PROVEN, Some(300), 0, 78.0),
            standing("s-plus-too-slow", Closed, PROVEN, Some(20_000), 0, 77.0),
            standing("a-tier", Closed, PROVEN, Some(400), 3, 60.0),
        ];
        assert_eq!(
            sorted(QUALITY, v),
            [
                // Never tried and proven are equal: strength decides (the higher SWE score).
                "s-plus-never-tried",
                "s-plus-slow-proven",
                "a-tier",
                "b-fast-proven",
                // Too slow for an agent: behind every responsive model, whatever its tier.
                "s-plus-too-slow",
                // Failing now: behind every model that works.
                "s-plus-failing-now",
                // Health first of all.
                "s-plus-degraded",
            ]
        );
    }

    #[test]
    fn speed_and_headroom_break_ties_within_equal_strength() {
        use BreakerState::*;
        let mut roomy = standing("roomy", Closed, PROVEN, Some(900), 1, 60.0);
        let tight = {
            let mut t = standing("tight", Closed, PROVEN, Some(900), 1, 60.0);
            t.headroom = 0.1;
            t
        };
        let fast = standing("fast", Closed, UNKNOWN, Some(100), 1, 60.0);
        assert_eq!(
            sorted(QUALITY, vec![tight.clone(), roomy.clone(), fast.clone()]),
            ["fast", "roomy", "tight"]
        );
        roomy.swe = 61.0;
        assert_eq!(
            sorted(QUALITY, vec![tight, fast, roomy]),
            ["roomy", "fast", "tight"],
            "strength before speed"
        );
    }

    #[test]
    fn speed_keeps_the_fastest_first() {
        use BreakerState::*;
        let v = vec![
            standing("s-plus-slow", Closed, PROVEN, Some(2_000), 0, 70.0),
            standing("b-fast", Closed, PROVEN, Some(50), 5, 40.0),
        ];
        assert_eq!(sorted(SPEED, v.clone()), ["b-fast", "s-plus-slow"]);
        assert_eq!(sorted(QUALITY, v), ["s-plus-slow", "b-fast"]);
    }

    #[test]
    fn health_then_evidence_then_speed() {
        let mut v = [
            standing("half", BreakerState::HalfOpen, PROVEN, Some(10), 0, 0.0),
            standing("degraded", BreakerState::Degraded, PROVEN, Some(10), 0, 0.0),
            standing(
                "unbenched-top-tier",
                BreakerState::Closed,
                UNKNOWN,
                None,
                0,
                0.0,
            ),
            standing("slow", BreakerState::Closed, PROVEN, Some(900), 5, 0.0),
            standing("fast", BreakerState::Closed, PROVEN, Some(100), 5, 0.0),
            standing(
                "bench-unusable",
                BreakerState::Closed,
                FAILING,
                None,
                0,
                0.0,
            ),
        ];
        v.sort_by(compare);
        let keys: Vec<&str> = v.iter().map(|r| r.key).collect();
        assert_eq!(
            keys,
            [
                "fast",
                "slow",
                "unbenched-top-tier",
                "bench-unusable",
                "degraded",
                "half"
            ]
        );
    }

    #[test]
    fn tier_then_swe_break_ties() {
        let mut v = [
            standing("b", BreakerState::Closed, UNKNOWN, None, 1, 70.0),
            standing("a", BreakerState::Closed, UNKNOWN, None, 1, 60.0),
            standing("c", BreakerState::Closed, UNKNOWN, None, 0, 10.0),
        ];
        v.sort_by(compare);
        assert_eq!(v.iter().map(|r| r.key).collect::<Vec<_>>(), ["c", "b", "a"]);
    }

    #[test]
    fn headroom_breaks_a_tie_before_the_key() {
        let mut a = standing("a", BreakerState::Closed, UNKNOWN, None, 1, 60.0);
        let mut b = a.clone();
        b.key = "b";
        a.headroom = 0.05;
        assert_eq!(compare(&a, &b), Ordering::Greater, "b has more left");
        a.tier = 0;
        assert_eq!(
            compare(&a, &b),
            Ordering::Less,
            "only a tie: a better tier wins"
        );
    }

    #[test]
    fn verdict_and_success_rate_order_within_evidence() {
        let mut a = standing("a", BreakerState::Closed, PROVEN, Some(10), 0, 0.0);
        let mut b = a.clone();
        b.key = "b";
        a.verdict = 1;
        assert_eq!(
            compare(&a, &b),
            Ordering::Greater,
            "worse verdict goes later"
        );
        a.verdict = 0;
        a.success_rate = 0.5;
        b.success_rate = 1.0;
        assert_eq!(
            compare(&a, &b),
            Ordering::Greater,
            "lower success rate later"
        );
    }
}
