//! One model's breaker as a pure state machine: [`Health`] (what `breakers.json` stores
//! per model), its [`BreakerState`], and whether a request may go now ([`Admission`]):
//! failures trip it OPEN with escalating cooldowns, one HALF_OPEN trial at a time, trips
//! forgotten after a quiet day, pauses (a quota, an overloaded model's back-off) kept
//! beside it. Plain values in and out; the shared store and the file are `store`'s and
//! `book`'s.

use serde::{Deserialize, Serialize};

use crate::answers::classify::{
    FailureKind, Verdict, MAX_QUOTA_PAUSE, MODEL_NOT_FOUND_PAUSE, PROVIDER_NOTICE_PAUSE,
};
use crate::state::config::BreakerConfig;

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
    /// What set it: `model_overloaded` (a short back-off), `model_not_found` (out for a
    /// day), `provider_notice` (gone paid); `None` for a rate limit or quota.
    pub why: Option<FailureKind>,
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
            why: self.paused_for,
        })
    }

    /// Pauses until `until` unless a longer pause is already set; `why` is what set it.
    pub(super) fn pause_until(&mut self, until: u64, why: Option<FailureKind>) {
        if self.quota_until_ms.is_none_or(|t| t < until) {
            self.quota_until_ms = Some(until);
            self.paused_for = why;
        }
    }

    /// No pause from `now` on (see `Breakers::lift_pause`).
    pub(super) fn lift_pause(&mut self, now: u64) {
        self.quota_until_ms = None;
        self.paused_for = None;
        self.updated_at_ms = now;
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
            Some(FailureKind::ProviderNotice) => PROVIDER_NOTICE_PAUSE,
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
                why: None
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
                why: Some(FailureKind::ModelNotFound)
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
                why: Some(FailureKind::ModelOverloaded)
            })
        );
        assert_eq!(
            h.pause(1000),
            Some(Pause {
                until_ms: until,
                why: Some(FailureKind::ModelOverloaded)
            })
        );
        assert_eq!(h.consecutive_failures, 1, "an overload still counts");
        assert_eq!(h.pause(until), None);
        assert_eq!(h.admit(until, &c), Admission::Yes);
        // A longer quota pause that follows takes over, and is a quota pause.
        h.record_failure(&Verdict::of(ModelOverloaded, None), 2000, &c, false);
        h.record_failure(&Verdict::of(RateLimit, None), 2000, &c, false);
        assert_eq!(h.pause(2000).map(|p| p.why), Some(None));
        // A shorter back-off leaves the longer pause as it was.
        h.record_failure(&Verdict::of(ModelOverloaded, None), 2001, &c, false);
        assert_eq!(h.pause(2001).map(|p| p.why), Some(None));
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
}
