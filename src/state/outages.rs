//! Provider outages: a provider whose connections are refused or reset (or whose name does
//! not resolve) is down for all its models at once, and a breaker that learns it one model
//! at a time sends a request into the outage through every model. Two such failures of one
//! provider within [`WINDOW_MS`] mark it down for a short pause that grows while the
//! outage lasts; when the pause ends, one request (a trial) goes first and says whether the
//! provider is back before the others are sent.
//!
//! In memory only: an outage is minutes long, and a restarted server finds out again with
//! the first two refused connections. Nothing here sends anything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Two connection failures of one provider this close together are an outage.
pub const WINDOW_MS: u64 = 10_000;
/// The first pause of an outage; it doubles with each failed trial, up to [`MAX_PAUSE_MS`].
pub const FIRST_PAUSE_MS: u64 = 20_000;
pub const MAX_PAUSE_MS: u64 = 5 * 60_000;
/// A trial that never reported back frees its slot after this long.
const TRIAL_LEASE_MS: u64 = 30_000;

/// Whether a request may go to a provider now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reachable {
    /// Go ahead.
    Yes,
    /// Go ahead as the trial that says whether the provider is back; report the result.
    Trial,
    /// Down until then (or its trial is out).
    Down { until_ms: u64 },
}

/// One provider's recent connection failures and outage.
#[derive(Debug, Default, Clone)]
struct Watch {
    /// Times of recent connection failures.
    recent: Vec<u64>,
    /// End of the current pause.
    down_until: u64,
    /// Pauses in this outage so far (0: not in an outage).
    pauses: u32,
    /// A trial in flight since then.
    trial_since: Option<u64>,
}

impl Watch {
    fn reachable(&self, now: u64) -> Reachable {
        if self.pauses == 0 {
            return Reachable::Yes;
        }
        if now < self.down_until {
            return Reachable::Down {
                until_ms: self.down_until,
            };
        }
        match self.trial_since {
            Some(since) if now < since + TRIAL_LEASE_MS => Reachable::Down {
                until_ms: since + TRIAL_LEASE_MS,
            },
            _ => Reachable::Trial,
        }
    }

    fn pause(&mut self, now: u64) {
        let ms = FIRST_PAUSE_MS
            .saturating_mul(1 << self.pauses.min(16))
            .min(MAX_PAUSE_MS);
        self.pauses += 1;
        self.down_until = now + ms;
        self.trial_since = None;
        self.recent.clear();
    }
}

/// The outages of every provider, shared by a server's requests.
#[derive(Debug, Default)]
pub struct Outages {
    watches: Mutex<HashMap<String, Watch>>,
    /// Whether any provider is watched: a request asks nothing of the lock while none is
    /// (nearly always).
    watching: AtomicBool,
}

impl Outages {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Watch>> {
        self.watches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `provider` may be sent a request now, for planning (nothing is taken).
    pub fn state(&self, provider: &str, now: u64) -> Reachable {
        if !self.watching.load(Ordering::Acquire) {
            return Reachable::Yes;
        }
        self.lock()
            .get(provider)
            .map_or(Reachable::Yes, |w| w.reachable(now))
    }

    /// Whether `provider` may be sent a request now; takes the trial slot when it grants
    /// one.
    pub fn admit(&self, provider: &str, now: u64) -> Reachable {
        if !self.watching.load(Ordering::Acquire) {
            return Reachable::Yes;
        }
        let mut watches = self.lock();
        let Some(w) = watches.get_mut(provider) else {
            return Reachable::Yes;
        };
        let r = w.reachable(now);
        if r == Reachable::Trial {
            w.trial_since = Some(now);
        }
        r
    }

    /// A connection to `provider` failed (refused, reset, its name unresolved). Returns
    /// whether the provider is now down: the second such failure within [`WINDOW_MS`], or
    /// one after its pause ended (its trial's, which makes the next pause longer).
    pub fn connection_failed(&self, provider: &str, now: u64) -> bool {
        let mut watches = self.lock();
        self.watching.store(true, Ordering::Release);
        let w = watches.entry(provider.to_string()).or_default();
        if w.pauses > 0 {
            if now >= w.down_until {
                w.pause(now);
            }
            return true;
        }
        w.recent.retain(|t| now.saturating_sub(*t) < WINDOW_MS);
        w.recent.push(now);
        if w.recent.len() >= 2 {
            w.pause(now);
            return true;
        }
        false
    }

    /// `provider` answered (whatever it said): it is reachable.
    pub fn answered(&self, provider: &str) {
        if !self.watching.load(Ordering::Acquire) {
            return;
        }
        let mut watches = self.lock();
        watches.remove(provider);
        if watches.is_empty() {
            self.watching.store(false, Ordering::Release);
        }
    }

    /// Providers down now, with when their pause ends (for `fcm top` and `/metrics`).
    pub fn down(&self, now: u64) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = self
            .lock()
            .iter()
            .filter(|(_, w)| w.pauses > 0 && now < w.down_until)
            .map(|(p, w)| (p.clone(), w.down_until))
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_refused_connections_take_a_provider_down_and_one_trial_brings_it_back() {
        let o = Outages::default();
        assert!(!o.connection_failed("p", 1_000));
        assert_eq!(
            o.state("p", 1_000),
            Reachable::Yes,
            "one failure is not an outage"
        );
        assert!(o.connection_failed("p", 5_000));
        assert_eq!(
            o.state("p", 6_000),
            Reachable::Down {
                until_ms: 5_000 + FIRST_PAUSE_MS
            }
        );
        assert_eq!(o.state("q", 6_000), Reachable::Yes, "other providers go on");
        let after = 5_000 + FIRST_PAUSE_MS;
        assert_eq!(o.admit("p", after), Reachable::Trial);
        assert!(
            matches!(o.admit("p", after + 1), Reachable::Down { .. }),
            "one trial at a time"
        );
        // The trial fails: a longer pause.
        assert!(o.connection_failed("p", after + 10));
        assert_eq!(
            o.state("p", after + 11),
            Reachable::Down {
                until_ms: after + 10 + 2 * FIRST_PAUSE_MS
            }
        );
        let later = after + 10 + 2 * FIRST_PAUSE_MS;
        assert_eq!(o.admit("p", later), Reachable::Trial);
        o.answered("p");
        assert_eq!(o.state("p", later + 1), Reachable::Yes);
    }

    #[test]
    fn failures_far_apart_are_not_an_outage_and_a_lost_trial_frees_its_slot() {
        let o = Outages::default();
        assert!(!o.connection_failed("p", 0));
        assert!(!o.connection_failed("p", WINDOW_MS + 1));
        assert_eq!(o.state("p", WINDOW_MS + 2), Reachable::Yes);
        assert!(o.connection_failed("p", WINDOW_MS + 3));
        // Failures of requests sent before the pause do not lengthen it.
        assert!(o.connection_failed("p", WINDOW_MS + 4));
        let after = WINDOW_MS + 3 + FIRST_PAUSE_MS;
        assert_eq!(o.down(after - 1), vec![("p".to_string(), after)]);
        assert_eq!(o.admit("p", after), Reachable::Trial);
        assert!(
            o.down(after + 2).is_empty(),
            "a trial's wait is not a pause"
        );
        assert_eq!(o.admit("p", after + TRIAL_LEASE_MS), Reachable::Trial);
    }
}
