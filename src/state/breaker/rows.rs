//! What `fcm breakers`, a server's `/health` and `fcm status` show of the breakers: one
//! [`BreakerRow`] per model (states and time left, worst first) and the [`Counts`] per
//! state, where a CLOSED model counts as healthy only with evidence that it answers.

use serde::{Deserialize, Serialize};

use super::book::BreakerBook;
use super::health::{BreakerState, Health};
use crate::answers::classify::FailureKind;
use crate::state::config::BreakerConfig;

/// What is known of whether a model answers: the evidence that lets `/health` and
/// `fcm status` call a model with a CLOSED breaker healthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answering {
    /// Recent results (or the last bench) show it answers.
    Proven,
    /// Recent results (or the last bench) show it does not.
    Failing,
    /// Nothing yet: never benched, no traffic.
    Untried,
}

/// How many of the routable models are in each state, as a server's `/health` and
/// `fcm status` count them. A model without a row has a CLOSED breaker; of those, only the
/// ones with evidence that they answer are `healthy`, the others `failing` or `untried`
/// (a breaker only opens after real failures, so a bench that found a model broken leaves
/// it CLOSED). Rows of models that are not routable are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub routable: usize,
    pub closed: usize,
    pub healthy: usize,
    pub failing: usize,
    pub untried: usize,
    pub degraded: usize,
    pub half_open: usize,
    pub open: usize,
    pub quota_paused: usize,
}

impl Counts {
    pub fn of<'m>(
        rows: &[BreakerRow],
        routable: impl IntoIterator<Item = (&'m str, Answering)>,
    ) -> Counts {
        let by_model: std::collections::HashMap<&str, &BreakerRow> =
            rows.iter().map(|r| (r.model.as_str(), r)).collect();
        let mut c = Counts {
            routable: 0,
            closed: 0,
            healthy: 0,
            failing: 0,
            untried: 0,
            degraded: 0,
            half_open: 0,
            open: 0,
            quota_paused: 0,
        };
        for (model, answering) in routable {
            c.routable += 1;
            let row = by_model.get(model);
            if row.is_some_and(|r| r.quota_pause_ms_left > 0 || r.held_ms_left > 0) {
                c.quota_paused += 1;
            }
            match row.map_or(BreakerState::Closed, |r| r.state) {
                BreakerState::Closed => {
                    c.closed += 1;
                    match answering {
                        Answering::Proven => c.healthy += 1,
                        Answering::Failing => c.failing += 1,
                        Answering::Untried => c.untried += 1,
                    }
                }
                BreakerState::Degraded => c.degraded += 1,
                BreakerState::HalfOpen => c.half_open += 1,
                BreakerState::Open => c.open += 1,
            }
        }
        c
    }
}

/// One model's row for `fcm breakers --json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerRow {
    pub model: String,
    pub state: BreakerState,
    pub consecutive_failures: u32,
    pub trip_count: u32,
    pub cooldown_ms_left: u64,
    /// Left of the current pause: a quota's, or an overloaded model's back-off.
    pub quota_pause_ms_left: u64,
    /// Why the model is paused (`model_overloaded` for a back-off); absent when it is not,
    /// or for a quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_for: Option<FailureKind>,
    pub last_failure_kind: Option<FailureKind>,
    pub updated_at: String,
    /// Kept out by its free quota or its provider rather than its health:
    /// `quota_exhausted` (every key's quota for it is used up) or `provider_down`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_for: Option<String>,
    /// What the provider said, for people: `the day's limit is reached (groq#1)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_reason: Option<String>,
    /// When it is back (RFC 3339), and how long that is from now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_until: Option<String>,
    #[serde(default)]
    pub held_ms_left: u64,
}

impl BreakerRow {
    /// A row for a model whose breaker has seen nothing (CLOSED).
    pub fn closed(model: &str, now: u64) -> BreakerRow {
        row(model, &Health::default(), now, &BreakerConfig::default())
    }

    /// Marks it held out until `until_ms` for `held_for` (`reason` for people).
    pub fn hold(&mut self, held_for: &str, reason: String, until_ms: u64, now: u64) {
        self.held_for = Some(held_for.to_string());
        self.held_reason = Some(reason);
        self.held_until = Some(crate::time::rfc3339(until_ms));
        self.held_ms_left = until_ms.saturating_sub(now);
    }
}

pub fn row(model: &str, h: &Health, now: u64, cfg: &BreakerConfig) -> BreakerRow {
    BreakerRow {
        model: model.to_string(),
        state: h.state(now, cfg),
        consecutive_failures: h.consecutive_failures,
        trip_count: h.trips(now, cfg),
        cooldown_ms_left: h.cooldown_left_ms(now),
        quota_pause_ms_left: h.quota_left_ms(now),
        paused_for: h.pause(now).and(h.paused_for),
        last_failure_kind: h.last_failure_kind,
        updated_at: crate::time::rfc3339(h.updated_at_ms),
        held_for: None,
        held_reason: None,
        held_until: None,
        held_ms_left: 0,
    }
}

/// Rows for every model in the book, worst first.
pub fn rows(book: &BreakerBook, now: u64, cfg: &BreakerConfig) -> Vec<BreakerRow> {
    let mut rows: Vec<BreakerRow> = book
        .models
        .iter()
        .map(|(k, h)| row(k, h, now, cfg))
        .collect();
    rows.sort_by(|a, b| {
        b.state
            .cmp(&a.state)
            .then(b.consecutive_failures.cmp(&a.consecutive_failures))
            .then(a.model.cmp(&b.model))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: &str, state: BreakerState, paused: bool) -> BreakerRow {
        BreakerRow {
            state,
            quota_pause_ms_left: if paused { 1_000 } else { 0 },
            ..BreakerRow::closed(model, 0)
        }
    }

    #[test]
    fn healthy_needs_a_closed_breaker_and_evidence_of_answers() {
        let rows = [
            row("p/open", BreakerState::Open, false),
            row("p/degraded", BreakerState::Degraded, false),
            row("p/paused", BreakerState::Closed, true),
            // Not routable (its key is gone): not counted.
            row("q/open", BreakerState::Open, false),
        ];
        let routable = [
            ("p/proven", Answering::Proven),
            ("p/failing", Answering::Failing),
            ("p/untried", Answering::Untried),
            ("p/open", Answering::Proven),
            ("p/degraded", Answering::Proven),
            ("p/paused", Answering::Proven),
        ];
        let c = Counts::of(&rows, routable);
        assert_eq!(
            c,
            Counts {
                routable: 6,
                closed: 4,
                healthy: 2,
                failing: 1,
                untried: 1,
                degraded: 1,
                half_open: 0,
                open: 1,
                quota_paused: 1,
            }
        );
    }
}
