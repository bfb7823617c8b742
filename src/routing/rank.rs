//! The one ordering of models, best first, used by the router, the bench table and
//! `fcm check`: health now, then evidence of working (live traffic or the last bench), then
//! speed, then the catalog's tier and SWE-bench score, then headroom left in free-tier
//! budgets. Each caller fills a [`Standing`]
//! with what it knows; what it does not know it leaves equal, so that field never decides.

use std::cmp::Ordering;

use crate::state::breaker::BreakerState;

/// Evidence that a model works: proven by recent results, not known, or failing.
pub(crate) const PROVEN: u8 = 0;
pub(crate) const UNKNOWN: u8 = 1;
pub(crate) const FAILING: u8 = 2;

/// Where one model stands, for [`compare`].
#[derive(Debug, Clone)]
pub(crate) struct Standing<'a> {
    /// Breaker state (CLOSED first). The bench and check use CLOSED for every model.
    pub state: BreakerState,
    /// [`PROVEN`], [`UNKNOWN`] or [`FAILING`].
    pub evidence: u8,
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
    /// Breaks the remaining ties so equal models keep a stable order ("" keeps input order).
    pub key: &'a str,
}

/// Best first.
pub(crate) fn compare(a: &Standing<'_>, b: &Standing<'_>) -> Ordering {
    a.state
        .cmp(&b.state)
        .then(a.evidence.cmp(&b.evidence))
        .then(a.verdict.cmp(&b.verdict))
        .then(b.success_rate.total_cmp(&a.success_rate))
        .then(
            a.ttft_ms
                .unwrap_or(u64::MAX)
                .cmp(&b.ttft_ms.unwrap_or(u64::MAX)),
        )
        .then(a.tier.cmp(&b.tier))
        .then(b.swe.total_cmp(&a.swe))
        .then(b.headroom.total_cmp(&a.headroom))
        .then(a.key.cmp(b.key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(
        key: &str,
        state: BreakerState,
        evidence: u8,
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
            key,
        }
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
