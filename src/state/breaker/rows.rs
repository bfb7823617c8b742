//! What `fcm breakers`, a server's `/health` and `fcm status` show of the breakers: one
//! [`BreakerRow`] per model (states and time left, worst first) and the [`Counts`] per
//! state.

use serde::{Deserialize, Serialize};

use super::book::BreakerBook;
use super::health::{BreakerState, Health};
use crate::answers::classify::FailureKind;
use crate::state::config::BreakerConfig;

/// How many models are in each state, as a server's `/health` and `fcm status` count them:
/// of the `routable` models, those without a row or with a CLOSED breaker are healthy;
/// rows of models fcm no longer knows are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub routable: usize,
    pub closed: usize,
    pub degraded: usize,
    pub half_open: usize,
    pub open: usize,
    pub quota_paused: usize,
}

impl Counts {
    pub fn of(rows: &[BreakerRow], routable: usize, known: impl Fn(&str) -> bool) -> Counts {
        let count = |s: BreakerState| {
            rows.iter()
                .filter(|r| r.state == s && known(&r.model))
                .count()
        };
        let unhealthy = rows
            .iter()
            .filter(|r| r.state != BreakerState::Closed && known(&r.model))
            .count();
        Counts {
            routable,
            closed: routable.saturating_sub(unhealthy),
            degraded: count(BreakerState::Degraded),
            half_open: count(BreakerState::HalfOpen),
            open: count(BreakerState::Open),
            quota_paused: rows
                .iter()
                .filter(|r| r.quota_pause_ms_left > 0 || r.held_ms_left > 0)
                .count(),
        }
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
