//! Models that do not start. How long a model may take to send its first token is learned
//! from its own recent starts (and, while it has none, from every model's), so a model
//! that never starts costs seconds rather than the configured ceiling; a model that missed
//! that deadline is silent: it goes behind every responsive model until a probe (or, when
//! nothing else is left, a real request) hears it answer again.
//!
//! What it keeps: each model's slowest recent start and when it fell silent, as atomics
//! read on every request (no lock on the request's path). The probe itself is sent by
//! `probe`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Models with starts of their own needed before they set the deadline of one without.
const SHARED_MIN: usize = 5;
/// A model is given this multiple of its slowest recent start (about its 95th
/// percentile), plus [`MARGIN`]: a heavy tail is waited for, a silence is not.
const FACTOR: u64 = 2;
const MARGIN: Duration = Duration::from_millis(1_000);
/// The least any model is given, plus a second for each [`TOKENS_PER_SECOND`] of prompt:
/// a long prompt takes longer to read before the first token.
const FLOOR: Duration = Duration::from_secs(4);
const TOKENS_PER_SECOND: u64 = 8_000;
/// A silent model is probed this long after it fell silent, then twice as long after each
/// probe it misses, up to [`MAX_PROBE_GAP`].
pub(crate) const FIRST_PROBE: Duration = Duration::from_secs(60);
const MAX_PROBE_GAP: Duration = Duration::from_secs(15 * 60);

/// Per model (by index) and across models: recent starts and silences.
pub(crate) struct Silence {
    /// The slowest of each model's recent successful starts (ms + 1; 0: none known).
    slowest: Vec<AtomicU64>,
    /// When each model fell silent (ms + 1; 0: it answers).
    since: Vec<AtomicU64>,
    /// Probes each silent model missed in a row.
    missed: Vec<AtomicU64>,
}

impl Silence {
    pub(crate) fn new(models: usize) -> Silence {
        let zeros = || (0..models).map(|_| AtomicU64::new(0)).collect();
        Silence {
            slowest: zeros(),
            since: zeros(),
            missed: zeros(),
        }
    }

    /// Model `i` answered; `slowest` is the slowest of its recent starts (`None` until
    /// there are enough). It is not silent.
    pub(crate) fn heard(&self, i: usize, slowest: Option<u64>) {
        self.slowest[i].store(slowest.map_or(0, |s| s + 1), Ordering::Release);
        if self.since[i].load(Ordering::Acquire) != 0 {
            self.since[i].store(0, Ordering::Release);
            self.missed[i].store(0, Ordering::Release);
        }
    }

    /// Model `i` missed its first-token deadline at `now`: silent from then (a miss while
    /// silent is a missed probe, and the next one waits longer).
    pub(crate) fn missed(&self, i: usize, now: u64) {
        let was = self.since[i].swap(now + 1, Ordering::AcqRel);
        if was != 0 {
            self.missed[i].fetch_add(1, Ordering::AcqRel);
        }
    }

    pub(crate) fn is_silent(&self, i: usize) -> bool {
        self.since[i].load(Ordering::Acquire) != 0
    }

    /// Whether silent model `i` is due a probe at `now`.
    pub(crate) fn due(&self, i: usize, now: u64) -> bool {
        let since = self.since[i].load(Ordering::Acquire);
        if since == 0 {
            return false;
        }
        let missed = self.missed[i].load(Ordering::Acquire).min(16) as u32;
        let gap = FIRST_PROBE
            .saturating_mul(1 << missed)
            .min(MAX_PROBE_GAP)
            .as_millis() as u64;
        now >= since - 1 + gap
    }

    /// Forgets what is known of model `i` (a reset).
    pub(crate) fn forget(&self, i: usize) {
        self.slowest[i].store(0, Ordering::Release);
        self.since[i].store(0, Ordering::Release);
        self.missed[i].store(0, Ordering::Release);
    }

    /// How long model `i` may take to start on a prompt of `prompt_tokens`: [`FACTOR`]
    /// times its slowest recent start plus [`MARGIN`] (the models' median slowest start
    /// while it has none of its own), at least the floor for the prompt, at most `ceiling`
    /// (`router.failover.firstTokenTimeoutMs`). The ceiling while nothing is known at all.
    pub(crate) fn first_token(&self, i: usize, prompt_tokens: u64, ceiling: Duration) -> Duration {
        let own = self.slowest[i].load(Ordering::Acquire).checked_sub(1);
        let Some(slowest) = own.or_else(|| self.typical_slowest()) else {
            return ceiling;
        };
        let floor = FLOOR.saturating_add(Duration::from_secs(prompt_tokens / TOKENS_PER_SECOND));
        let wait = Duration::from_millis(slowest.saturating_mul(FACTOR)).saturating_add(MARGIN);
        wait.max(floor).min(ceiling)
    }

    /// The median of the models' slowest recent starts, once [`SHARED_MIN`] models have
    /// one.
    fn typical_slowest(&self) -> Option<u64> {
        let mut known: Vec<u64> = self
            .slowest
            .iter()
            .filter_map(|s| s.load(Ordering::Acquire).checked_sub(1))
            .collect();
        if known.len() < SHARED_MIN {
            return None;
        }
        known.sort_unstable();
        known.get(known.len() / 2).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CEILING: Duration = Duration::from_secs(30);

    #[test]
    fn a_deadline_follows_the_models_own_starts_within_floor_and_ceiling() {
        let s = Silence::new(3);
        assert_eq!(s.first_token(0, 1_000, CEILING), CEILING, "nothing known");
        s.heard(0, Some(3_000));
        assert_eq!(
            s.first_token(0, 1_000, CEILING),
            Duration::from_millis(7_000)
        );
        s.heard(1, Some(200));
        assert_eq!(
            s.first_token(1, 1_000, CEILING),
            FLOOR,
            "at least the floor"
        );
        assert_eq!(
            s.first_token(1, 40_000, CEILING),
            FLOOR + Duration::from_secs(5),
            "a long prompt is given longer"
        );
        s.heard(2, Some(20_000));
        assert_eq!(s.first_token(2, 1_000, CEILING), CEILING);
    }

    #[test]
    fn a_model_without_starts_is_given_what_models_typically_take() {
        let s = Silence::new(7);
        for (i, slowest) in [1_000, 2_000, 3_000, 4_000].into_iter().enumerate() {
            s.heard(i, Some(slowest));
        }
        assert_eq!(
            s.first_token(6, 0, CEILING),
            CEILING,
            "four models say too little"
        );
        s.heard(4, Some(5_000));
        // The median of 1..5 s is 3 s.
        assert_eq!(
            s.first_token(6, 0, CEILING),
            Duration::from_millis(2 * 3_000 + 1_000)
        );
    }

    #[test]
    fn a_silent_model_is_probed_later_and_later_until_heard() {
        let s = Silence::new(1);
        assert!(!s.is_silent(0));
        s.missed(0, 1_000);
        assert!(s.is_silent(0));
        let first = 1_000 + FIRST_PROBE.as_millis() as u64;
        assert!(!s.due(0, first - 1));
        assert!(s.due(0, first));
        s.missed(0, first);
        assert!(!s.due(0, first + FIRST_PROBE.as_millis() as u64));
        assert!(s.due(0, first + 2 * FIRST_PROBE.as_millis() as u64));
        s.heard(0, None);
        assert!(!s.is_silent(0) && !s.due(0, u64::MAX / 2));
    }
}
