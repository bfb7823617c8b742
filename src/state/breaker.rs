//! Circuit breakers: per-model health that keeps failing models out of rotation.
//!
//! States: CLOSED (healthy), DEGRADED (some consecutive failures: still routed, ranked after
//! healthy ones), OPEN (too many: skipped until the cooldown ends), HALF_OPEN (cooldown over:
//! exactly one trial request at a time). OPEN → HALF_OPEN is computed from the clock when
//! asked, so no timer thread exists. Cooldowns escalate with each trip and trips are
//! forgotten after a quiet day. Pauses are kept beside the breaker: quota pauses (429s) and
//! an overloaded model's short back-off skip a model without counting the pause against its
//! health. [`Health`] is the pure state machine; the [`Breakers`] store wraps the book in a
//! mutex and tracks whether it needs saving.
//!
//! Times are fcm's clock in ms (`time::now_ms`, which never runs backwards within a run). A
//! book loaded from disk may have been written under a clock that was ahead: its cooldowns
//! and pauses are cut to the longest fcm would set from now ([`BreakerBook::clamp`]), so a
//! clock set back never keeps a model out for longer than `maxCooldownMs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::answers::classify::{FailureKind, Verdict, MAX_QUOTA_PAUSE, MODEL_NOT_FOUND_PAUSE};
use crate::state::config::BreakerConfig;

/// Entries not updated for this long are dropped when the file is loaded.
pub const FORGET_AFTER_MS: u64 = 30 * 86_400_000;
/// A HALF_OPEN trial that never reported back frees its slot after this long.
const TRIAL_LEASE_MS: u64 = 5 * 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakerState {
    Closed,
    Degraded,
    HalfOpen,
    Open,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "CLOSED",
            BreakerState::Degraded => "DEGRADED",
            BreakerState::HalfOpen => "HALF_OPEN",
            BreakerState::Open => "OPEN",
        }
    }
}

/// One model's health, as stored in `breakers.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Health {
    pub consecutive_failures: u32,
    pub trip_count: u32,
    /// End of the current cooldown (wall clock, ms). Set while OPEN or HALF_OPEN.
    pub open_until_ms: Option<u64>,
    pub last_trip_ms: Option<u64>,
    /// End of the current pause (a quota, or an overloaded model's back-off).
    pub quota_until_ms: Option<u64>,
    /// What set the current pause: `model_overloaded` for a back-off; absent for a quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused_for: Option<FailureKind>,
    pub last_failure_kind: Option<FailureKind>,
    pub updated_at_ms: u64,
    /// A HALF_OPEN trial in flight since then (not persisted: a restart frees it).
    #[serde(skip)]
    pub trial_since_ms: Option<u64>,
}

/// Whether a model may be tried now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead.
    Yes,
    /// Go ahead as the single HALF_OPEN trial; report the result.
    Trial,
    /// Skip: OPEN (or its trial is taken) until `until_ms`.
    CircuitOpen { until_ms: u64 },
    /// Skip: paused (a rate limit or quota, or an overloaded model's back-off).
    Paused(Pause),
}

/// A model skipped for a while without damage to its health, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    pub until_ms: u64,
    /// It said it was overloaded (a short back-off), rather than out of quota.
    pub overloaded: bool,
    /// The provider said it does not serve the model (out of rotation for a day).
    pub not_found: bool,
}

/// Consecutive failures from which a model is DEGRADED: ceil(0.6 × threshold).
pub fn degraded_at(cfg: &BreakerConfig) -> u32 {
    (cfg.failure_threshold * 6).div_ceil(10).max(1)
}

/// Cooldown for the n-th trip in memory: initial × 2^(n−1), capped.
pub fn cooldown_ms(cfg: &BreakerConfig, trips: u32) -> u64 {
    let doublings = trips.saturating_sub(1).min(32);
    cfg.initial_cooldown_ms
        .saturating_mul(1u64 << doublings)
        .min(cfg.max_cooldown_ms)
}

impl Health {
    pub fn state(&self, now: u64, cfg: &BreakerConfig) -> BreakerState {
        match self.open_until_ms {
            Some(until) if now < until => BreakerState::Open,
            Some(_) => BreakerState::HalfOpen,
            None if self.consecutive_failures >= degraded_at(cfg) => BreakerState::Degraded,
            None => BreakerState::Closed,
        }
    }

    /// Trips still remembered (they are forgotten after `tripMemoryMs` without a trip).
    pub fn trips(&self, now: u64, cfg: &BreakerConfig) -> u32 {
        match self.last_trip_ms {
            Some(t) if now.saturating_sub(t) < cfg.trip_memory_ms => self.trip_count,
            _ => 0,
        }
    }

    pub fn quota_left_ms(&self, now: u64) -> u64 {
        self.quota_until_ms.map_or(0, |t| t.saturating_sub(now))
    }

    /// The pause in force at `now`, if any.
    pub fn pause(&self, now: u64) -> Option<Pause> {
        let until_ms = self.quota_until_ms.filter(|t| *t > now)?;
        Some(Pause {
            until_ms,
            overloaded: self.paused_for == Some(FailureKind::ModelOverloaded),
            not_found: self.paused_for == Some(FailureKind::ModelNotFound),
        })
    }

    /// Pauses until `until` unless a longer pause is already set; `why` is what set it.
    fn pause_until(&mut self, until: u64, why: Option<FailureKind>) {
        if self.quota_until_ms.is_none_or(|t| t < until) {
            self.quota_until_ms = Some(until);
            self.paused_for = why;
        }
    }

    /// Cuts what lies further ahead of `now` than fcm ever sets it: a cooldown past
    /// `maxCooldownMs`, a pause past the longest pause, a trip or update in the future
    /// (the clock that wrote them was ahead of this one).
    pub fn clamp(&mut self, now: u64, cfg: &BreakerConfig) {
        let cut = |t: &mut Option<u64>, most: u64| {
            if let Some(v) = t.as_mut() {
                *v = (*v).min(now.saturating_add(most));
            }
        };
        cut(&mut self.open_until_ms, cfg.max_cooldown_ms);
        let longest_pause = match self.paused_for {
            Some(FailureKind::ModelNotFound) => MODEL_NOT_FOUND_PAUSE,
            _ => MAX_QUOTA_PAUSE,
        };
        cut(&mut self.quota_until_ms, longest_pause.as_millis() as u64);
        cut(&mut self.last_trip_ms, 0);
        self.updated_at_ms = self.updated_at_ms.min(now);
    }

    pub fn cooldown_left_ms(&self, now: u64) -> u64 {
        self.open_until_ms.map_or(0, |t| t.saturating_sub(now))
    }

    /// Decides whether the router may send this model a request now; takes the HALF_OPEN
    /// trial slot when it grants one.
    pub fn admit(&mut self, now: u64, cfg: &BreakerConfig) -> Admission {
        if let Some(pause) = self.pause(now) {
            return Admission::Paused(pause);
        }
        match self.state(now, cfg) {
            BreakerState::Closed | BreakerState::Degraded => Admission::Yes,
            BreakerState::Open => Admission::CircuitOpen {
                until_ms: self.open_until_ms.unwrap_or(now),
            },
            BreakerState::HalfOpen => match self.trial_since_ms {
                Some(since) if now.saturating_sub(since) < TRIAL_LEASE_MS => {
                    Admission::CircuitOpen {
                        until_ms: since + TRIAL_LEASE_MS,
                    }
                }
                _ => {
                    self.trial_since_ms = Some(now);
                    Admission::Trial
                }
            },
        }
    }

    /// Frees a trial slot whose request ended without a verdict (the client went away).
    pub fn release_trial(&mut self) {
        self.trial_since_ms = None;
    }

    pub fn record_success(&mut self, now: u64) {
        self.consecutive_failures = 0;
        self.open_until_ms = None;
        self.trial_since_ms = None;
        self.updated_at_ms = now;
    }

    /// Records a failure. `trial` says whether this request held the HALF_OPEN trial slot:
    /// only the trial's failure reopens the breaker, and only the trial frees the slot.
    pub fn record_failure(
        &mut self,
        verdict: &Verdict,
        now: u64,
        cfg: &BreakerConfig,
        trial: bool,
    ) {
        self.last_failure_kind = Some(verdict.kind);
        self.updated_at_ms = now;
        if let Some(pause) = verdict.quota_pause {
            self.pause_until(now + pause.as_millis() as u64, None);
        }
        if let Some(backoff) = verdict.backoff {
            self.pause_until(now + backoff.as_millis() as u64, Some(verdict.kind));
        }
        let state = self.state(now, cfg);
        if trial {
            self.trial_since_ms = None;
        }
        if !verdict.damages_health {
            return;
        }
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        let trip = match state {
            BreakerState::HalfOpen => trial,
            BreakerState::Open => false,
            BreakerState::Closed | BreakerState::Degraded => {
                self.consecutive_failures >= cfg.failure_threshold
            }
        };
        if trip {
            let trips = self.trips(now, cfg) + 1;
            self.trip_count = trips;
            self.last_trip_ms = Some(now);
            self.open_until_ms = Some(now + cooldown_ms(cfg, trips));
        }
    }
}

/// The file format of `breakers.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BreakerBook {
    pub version: u32,
    pub models: HashMap<String, Health>,
}

impl BreakerBook {
    /// Drops entries not updated for 30 days.
    pub fn forget_stale(&mut self, now: u64) {
        self.models
            .retain(|_, h| now.saturating_sub(h.updated_at_ms) < FORGET_AFTER_MS);
    }

    /// [`Health::clamp`] for every model: a book written under a clock that was ahead.
    pub fn clamp(&mut self, now: u64, cfg: &BreakerConfig) {
        for h in self.models.values_mut() {
            h.clamp(now, cfg);
        }
    }
}

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
            quota_paused: rows.iter().filter(|r| r.quota_pause_ms_left > 0).count(),
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

/// The shared, mutable breaker book of a running server.
pub struct Breakers {
    book: Mutex<BreakerBook>,
    pub cfg: BreakerConfig,
    dirty: AtomicBool,
}

impl Breakers {
    pub fn new(mut book: BreakerBook, cfg: BreakerConfig, now: u64) -> Breakers {
        book.version = 1;
        book.forget_stale(now);
        book.clamp(now, &cfg);
        Breakers {
            book: Mutex::new(book),
            cfg,
            dirty: AtomicBool::new(false),
        }
    }

    fn with<T>(&self, model: &str, f: impl FnOnce(&mut Health) -> T) -> T {
        let mut book = self.book.lock().unwrap_or_else(|e| e.into_inner());
        f(book.models.entry(model.to_string()).or_default())
    }

    /// State and whether the model is tried now; see [`Health::admit`].
    pub fn admit(&self, model: &str, now: u64) -> Admission {
        let mut book = self.book.lock().unwrap_or_else(|e| e.into_inner());
        match book.models.get_mut(model) {
            Some(h) => h.admit(now, &self.cfg),
            None => Admission::Yes,
        }
    }

    pub fn state(&self, model: &str, now: u64) -> BreakerState {
        let book = self.book.lock().unwrap_or_else(|e| e.into_inner());
        book.models
            .get(model)
            .map_or(BreakerState::Closed, |h| h.state(now, &self.cfg))
    }

    /// States and pauses of many models under one lock (ranking).
    pub fn states(&self, models: &[&str], now: u64) -> Vec<(BreakerState, Option<Pause>)> {
        let book = self.book.lock().unwrap_or_else(|e| e.into_inner());
        models
            .iter()
            .map(|m| match book.models.get(*m) {
                Some(h) => (h.state(now, &self.cfg), h.pause(now)),
                None => (BreakerState::Closed, None),
            })
            .collect()
    }

    pub fn record_success(&self, model: &str, now: u64) {
        self.with(model, |h| h.record_success(now));
        self.dirty.store(true, Ordering::Release);
    }

    pub fn record_failure(&self, model: &str, verdict: &Verdict, now: u64, trial: bool) {
        let cfg = self.cfg.clone();
        self.with(model, |h| h.record_failure(verdict, now, &cfg, trial));
        self.dirty.store(true, Ordering::Release);
    }

    /// Pauses a model until `until_ms` (a provider-wide quota ran out).
    pub fn pause(&self, model: &str, until_ms: u64) {
        self.with(model, |h| h.pause_until(until_ms, None));
        self.dirty.store(true, Ordering::Release);
    }

    pub fn release_trial(&self, model: &str) {
        self.with(model, Health::release_trial);
    }

    /// Resets one model (or all with `None`) to CLOSED; returns how many were reset.
    pub fn reset(&self, model: Option<&str>) -> usize {
        let mut book = self.book.lock().unwrap_or_else(|e| e.into_inner());
        let n = match model {
            None => {
                let n = book.models.len();
                book.models.clear();
                n
            }
            Some(m) => usize::from(book.models.remove(m).is_some()),
        };
        self.dirty.store(true, Ordering::Release);
        n
    }

    pub fn rows(&self, now: u64) -> Vec<BreakerRow> {
        rows(
            &self.book.lock().unwrap_or_else(|e| e.into_inner()),
            now,
            &self.cfg,
        )
    }

    /// A copy to save, if anything changed since the last call.
    pub fn take_dirty(&self) -> Option<BreakerBook> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return None;
        }
        Some(self.book.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Marks the book unsaved again (a write failed).
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use FailureKind::*;

    fn cfg() -> BreakerConfig {
        BreakerConfig::default()
    }

    fn fail(h: &mut Health, kind: FailureKind, now: u64) {
        h.record_failure(&Verdict::of(kind, None), now, &cfg(), true);
    }

    #[test]
    fn degraded_at_two_open_at_three() {
        let c = cfg();
        assert_eq!(degraded_at(&c), 2);
        let mut h = Health::default();
        fail(&mut h, Timeout, 0);
        assert_eq!(h.state(0, &c), BreakerState::Closed);
        fail(&mut h, Timeout, 0);
        assert_eq!(h.state(0, &c), BreakerState::Degraded);
        assert_eq!(h.admit(0, &c), Admission::Yes);
        fail(&mut h, Timeout, 0);
        assert_eq!(h.state(0, &c), BreakerState::Open);
        assert_eq!(h.admit(10, &c), Admission::CircuitOpen { until_ms: 30_000 });
    }

    #[test]
    fn half_open_allows_exactly_one_trial() {
        let c = cfg();
        let mut h = Health::default();
        for _ in 0..3 {
            fail(&mut h, EmptyChoices, 0);
        }
        assert_eq!(h.state(30_000, &c), BreakerState::HalfOpen);
        assert_eq!(h.admit(30_000, &c), Admission::Trial);
        assert!(matches!(h.admit(30_001, &c), Admission::CircuitOpen { .. }));
        h.record_success(30_500);
        assert_eq!(h.state(30_500, &c), BreakerState::Closed);
        assert_eq!(h.trip_count, 1, "success keeps the trip count as memory");
        assert_eq!(h.admit(30_600, &c), Admission::Yes);
    }

    #[test]
    fn failed_trial_reopens_with_escalating_cooldown() {
        let c = cfg();
        let mut h = Health::default();
        for _ in 0..3 {
            fail(&mut h, Timeout, 0);
        }
        assert_eq!(h.open_until_ms, Some(30_000));
        assert_eq!(h.admit(30_000, &c), Admission::Trial);
        fail(&mut h, Timeout, 30_000);
        assert_eq!(
            (h.trip_count, h.open_until_ms),
            (2, Some(90_000)),
            "second trip: 60 s"
        );
        assert_eq!(h.admit(90_000, &c), Admission::Trial);
        fail(&mut h, Timeout, 90_000);
        assert_eq!(h.open_until_ms, Some(90_000 + 120_000), "third trip: 120 s");
        let mut t = 210_000;
        for _ in 0..4 {
            assert_eq!(h.admit(t, &c), Admission::Trial);
            fail(&mut h, Timeout, t);
            t = h.open_until_ms.unwrap();
        }
        assert_eq!(cooldown_ms(&c, h.trip_count), 300_000, "capped at 300 s");
    }

    #[test]
    fn only_the_trial_reopens_a_half_open_breaker() {
        let c = cfg();
        let mut h = Health::default();
        for _ in 0..3 {
            fail(&mut h, Timeout, 0);
        }
        assert_eq!(h.admit(30_000, &c), Admission::Trial);
        // A request admitted earlier, while CLOSED, fails now: no new trip, slot still taken.
        h.record_failure(&Verdict::of(Timeout, None), 30_100, &c, false);
        assert_eq!(
            (h.state(30_100, &c), h.trip_count),
            (BreakerState::HalfOpen, 1)
        );
        assert!(
            matches!(h.admit(30_200, &c), Admission::CircuitOpen { .. }),
            "the trial still holds the slot"
        );
        h.record_failure(&Verdict::of(Timeout, None), 30_300, &c, true);
        assert_eq!((h.state(30_300, &c), h.trip_count), (BreakerState::Open, 2));
    }

    #[test]
    fn trips_are_forgotten_after_a_quiet_day() {
        let c = cfg();
        let mut h = Health::default();
        for _ in 0..3 {
            fail(&mut h, Timeout, 0);
        }
        h.record_success(40_000);
        let later = 40_000 + c.trip_memory_ms + 1;
        assert_eq!(h.trips(later, &c), 0);
        for _ in 0..3 {
            fail(&mut h, Timeout, later);
        }
        assert_eq!(
            (h.trip_count, h.open_until_ms),
            (1, Some(later + 30_000)),
            "back to the first cooldown"
        );
    }

    #[test]
    fn only_damaging_failures_count() {
        let c = cfg();
        let mut h = Health::default();
        for _ in 0..10 {
            fail(&mut h, InvalidRequest, 0);
            fail(&mut h, AuthError, 0);
        }
        assert_eq!(h.state(0, &c), BreakerState::Closed);
        assert_eq!(h.consecutive_failures, 0);
        assert_eq!(h.last_failure_kind, Some(AuthError));
    }

    #[test]
    fn quota_pause_skips_without_damage() {
        let c = cfg();
        let mut h = Health::default();
        h.record_failure(
            &Verdict::of(RateLimit, Some(Duration::from_secs(7))),
            1000,
            &c,
            false,
        );
        assert_eq!(
            h.admit(1000, &c),
            Admission::Paused(Pause {
                until_ms: 8000,
                overloaded: false,
                not_found: false
            })
        );
        assert_eq!(h.state(1000, &c), BreakerState::Closed);
        assert_eq!(h.admit(8000, &c), Admission::Yes);
    }

    #[test]
    fn a_model_the_provider_does_not_serve_is_out_for_a_day() {
        let c = cfg();
        let mut h = Health::default();
        let v = crate::answers::classify::classify_http(
            404,
            None,
            None,
            br#"{"error":{"message":"The model `x` does not exist"}}"#,
            None,
            std::time::SystemTime::now(),
        );
        assert_eq!(
            (v.kind, v.damages_health),
            (FailureKind::ModelNotFound, false)
        );
        h.record_failure(&v, 1000, &c, false);
        let day = MODEL_NOT_FOUND_PAUSE.as_millis() as u64;
        assert_eq!(
            h.pause(1000),
            Some(Pause {
                until_ms: 1000 + day,
                overloaded: false,
                not_found: true
            })
        );
        assert_eq!(
            h.state(1000, &c),
            BreakerState::Closed,
            "gone, not unhealthy"
        );
        // A book loaded later keeps the day (not cut to a quota's 15 min).
        h.clamp(2000, &c);
        assert_eq!(h.quota_until_ms, Some(1000 + day));
    }

    #[test]
    fn an_overloaded_model_backs_off_and_says_why() {
        let c = cfg();
        let mut h = Health::default();
        h.record_failure(&Verdict::of(ModelOverloaded, None), 1000, &c, false);
        let until = 1000 + crate::answers::classify::OVERLOAD_PAUSE.as_millis() as u64;
        assert_eq!(
            h.admit(1000, &c),
            Admission::Paused(Pause {
                until_ms: until,
                overloaded: true,
                not_found: false
            })
        );
        assert_eq!(
            h.pause(1000),
            Some(Pause {
                until_ms: until,
                overloaded: true,
                not_found: false
            })
        );
        assert_eq!(h.consecutive_failures, 1, "an overload still counts");
        assert_eq!(h.pause(until), None);
        assert_eq!(h.admit(until, &c), Admission::Yes);
        // A longer quota pause that follows takes over, and is a quota pause.
        h.record_failure(&Verdict::of(ModelOverloaded, None), 2000, &c, false);
        h.record_failure(&Verdict::of(RateLimit, None), 2000, &c, false);
        assert_eq!(h.pause(2000).map(|p| p.overloaded), Some(false));
        // A shorter back-off leaves the longer pause as it was.
        h.record_failure(&Verdict::of(ModelOverloaded, None), 2001, &c, false);
        assert_eq!(h.pause(2001).map(|p| p.overloaded), Some(false));
    }

    #[test]
    fn times_ahead_of_the_clock_are_cut_when_loaded() {
        let c = cfg();
        let hour = 3_600_000;
        let now = 10 * hour;
        let max_pause = MAX_QUOTA_PAUSE.as_millis() as u64;
        let times = |open: Option<u64>, quota: Option<u64>, trip: Option<u64>, updated| Health {
            open_until_ms: open,
            quota_until_ms: quota,
            last_trip_ms: trip,
            updated_at_ms: updated,
            ..Default::default()
        };
        let cases = [
            // Written an hour ahead of this clock: cut to the longest fcm would set now.
            (
                times(
                    Some(now + hour),
                    Some(now + hour),
                    Some(now + hour),
                    now + hour,
                ),
                times(
                    Some(now + c.max_cooldown_ms),
                    Some(now + max_pause),
                    Some(now),
                    now,
                ),
            ),
            // Within the limits: left alone.
            (
                times(
                    Some(now + 1000),
                    Some(now - 1000),
                    Some(now - 5000),
                    now - 5000,
                ),
                times(
                    Some(now + 1000),
                    Some(now - 1000),
                    Some(now - 5000),
                    now - 5000,
                ),
            ),
            (Health::default(), Health::default()),
        ];
        for (before, after) in cases {
            let mut h = before.clone();
            h.clamp(now, &c);
            assert_eq!(h, after, "{before:?}");
        }
    }

    #[test]
    fn a_clock_set_back_keeps_no_model_open_past_the_longest_cooldown() {
        let c = cfg();
        // Tripped while the clock read an hour later than it does now.
        let later = 50 * 3_600_000;
        let mut h = Health::default();
        for _ in 0..3 {
            fail(&mut h, Timeout, later);
        }
        let mut book = BreakerBook::default();
        book.models.insert("a/m".into(), h);
        let now = later - 3_600_000;
        let b = Breakers::new(book, c.clone(), now);
        assert_eq!(b.state("a/m", now), BreakerState::Open);
        assert_eq!(
            b.admit("a/m", now + c.max_cooldown_ms),
            Admission::Trial,
            "HALF_OPEN once maxCooldownMs has passed"
        );
    }

    #[test]
    fn abandoned_trial_is_released() {
        let c = cfg();
        let mut h = Health {
            open_until_ms: Some(10),
            ..Default::default()
        };
        assert_eq!(h.admit(20, &c), Admission::Trial);
        h.release_trial();
        assert_eq!(h.admit(21, &c), Admission::Trial);
        assert_eq!(
            h.admit(21 + TRIAL_LEASE_MS, &c),
            Admission::Trial,
            "an expired lease frees the slot"
        );
    }

    #[test]
    fn stale_entries_are_dropped_and_store_tracks_dirt() {
        let mut book = BreakerBook::default();
        book.models.insert(
            "old/m".into(),
            Health {
                updated_at_ms: 0,
                ..Default::default()
            },
        );
        book.models.insert(
            "new/m".into(),
            Health {
                updated_at_ms: FORGET_AFTER_MS,
                ..Default::default()
            },
        );
        let b = Breakers::new(book, cfg(), FORGET_AFTER_MS + 1);
        assert_eq!(b.rows(FORGET_AFTER_MS + 1).len(), 1);
        assert!(b.take_dirty().is_none());
        b.record_failure(
            "new/m",
            &Verdict::of(Timeout, None),
            FORGET_AFTER_MS + 2,
            false,
        );
        assert!(b.take_dirty().is_some());
        assert!(b.take_dirty().is_none());
        assert_eq!(b.reset(None), 1);
    }

    #[test]
    fn book_round_trips_without_trial_slot() {
        let mut book = BreakerBook::default();
        book.models.insert(
            "a/b".into(),
            Health {
                trip_count: 2,
                trial_since_ms: Some(5),
                open_until_ms: Some(9),
                ..Default::default()
            },
        );
        let text = serde_json::to_string(&book).unwrap();
        assert!(text.contains("openUntilMs") && !text.contains("trial"));
        let back: BreakerBook = serde_json::from_str(&text).unwrap();
        assert_eq!(back.models["a/b"].trip_count, 2);
        assert_eq!(back.models["a/b"].trial_since_ms, None);
    }
}
