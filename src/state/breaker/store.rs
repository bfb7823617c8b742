//! The breakers of a running process ([`Breakers`]): the book behind a mutex, each
//! question and outcome applied to one model's [`Health`] under the lock, and whether the
//! book changed since it was last saved (`persist` writes it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::book::BreakerBook;
use super::health::{Admission, BreakerState, Health, Pause};
use super::rows::{rows, BreakerRow};
use crate::answers::classify::Verdict;
use crate::state::config::BreakerConfig;

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

    /// The book, also after a thread panicked while holding it.
    fn lock(&self) -> MutexGuard<'_, BreakerBook> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with<T>(&self, model: &str, f: impl FnOnce(&mut Health) -> T) -> T {
        let mut book = self.lock();
        f(book.models.entry(model.to_string()).or_default())
    }

    /// State and whether the model is tried now; see [`Health::admit`].
    pub fn admit(&self, model: &str, now: u64) -> Admission {
        let mut book = self.lock();
        match book.models.get_mut(model) {
            Some(h) => h.admit(now, &self.cfg),
            None => Admission::Yes,
        }
    }

    pub fn state(&self, model: &str, now: u64) -> BreakerState {
        let book = self.lock();
        book.models
            .get(model)
            .map_or(BreakerState::Closed, |h| h.state(now, &self.cfg))
    }

    /// States and pauses of many models under one lock (ranking).
    pub fn states(&self, models: &[&str], now: u64) -> Vec<(BreakerState, Option<Pause>)> {
        let book = self.lock();
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

    /// Lifts a model's pause: a request sent past it was answered, so what set it (an
    /// overload, a burst's 429) has passed.
    pub fn lift_pause(&self, model: &str, now: u64) {
        self.with(model, |h| h.lift_pause(now));
        self.dirty.store(true, Ordering::Release);
    }

    pub fn release_trial(&self, model: &str) {
        self.with(model, Health::release_trial);
    }

    /// Resets one model (or all with `None`) to CLOSED; returns how many were reset.
    pub fn reset(&self, model: Option<&str>) -> usize {
        let mut book = self.lock();
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
        rows(&self.lock(), now, &self.cfg)
    }

    /// A copy to save, if anything changed since the last call.
    pub fn take_dirty(&self) -> Option<BreakerBook> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return None;
        }
        Some(self.lock().clone())
    }

    /// Marks the book unsaved again (a write failed).
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::super::book::FORGET_AFTER_MS;
    use super::*;
    use crate::answers::classify::FailureKind::*;

    fn cfg() -> BreakerConfig {
        BreakerConfig::default()
    }

    #[test]
    fn a_clock_set_back_keeps_no_model_open_past_the_longest_cooldown() {
        let c = cfg();
        // Tripped while the clock read an hour later than it does now.
        let later = 50 * 3_600_000;
        let mut h = Health::default();
        for _ in 0..3 {
            h.record_failure(&Verdict::of(Timeout, None), later, &c, true);
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
}
