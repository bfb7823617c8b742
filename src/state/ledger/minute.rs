//! The last minute of one counter and key ([`Minute`]): each request and token count with
//! the moment it was counted, how much of it is still inside the window, and when the
//! oldest leaves it. What a per-minute catalog limit is checked against.
//!
//! Providers count a rolling 60 seconds from when they received each request; fcm counts
//! it when it grants the request, a little earlier. So an entry is kept a second longer
//! than a minute ([`SLACK_MS`]): a request is never sent into the last moments of a window
//! the provider still sees as full.

use std::collections::VecDeque;

use crate::providers::quota::MINUTE_MS;

/// How much longer than a minute an entry counts: the time a request takes to reach the
/// provider, and the clocks' difference, with room to spare.
pub(super) const SLACK_MS: u64 = 1_000;

/// Requests and tokens of one counter and key, each with when it was counted (ms), for
/// the last minute.
#[derive(Debug, Default)]
pub(super) struct Minute {
    /// (when, requests, tokens), oldest first.
    entries: VecDeque<(u64, u64, u64)>,
}

impl Minute {
    pub(super) fn add(&mut self, now: u64, requests: u64, tokens: u64) {
        self.forget(now);
        match self.entries.back_mut() {
            // Counted in the same millisecond: one entry.
            Some(last) if last.0 == now => {
                last.1 += requests;
                last.2 += tokens;
            }
            _ => self.entries.push_back((now, requests, tokens)),
        }
    }

    /// Removes what [`add`](Self::add) counted at `at` (a request that was never sent);
    /// nothing when that moment has left the window already.
    pub(super) fn take_back(&mut self, at: u64, requests: u64, tokens: u64) {
        if let Some(entry) = self.entries.iter_mut().find(|e| e.0 == at) {
            entry.1 = entry.1.saturating_sub(requests);
            entry.2 = entry.2.saturating_sub(tokens);
        }
    }

    fn forget(&mut self, now: u64) {
        while self
            .entries
            .front()
            .is_some_and(|(t, _, _)| t + MINUTE_MS + SLACK_MS <= now)
        {
            self.entries.pop_front();
        }
    }

    /// (requests, tokens, when the oldest of them leaves the window).
    pub(super) fn spent(&self, now: u64) -> (u64, u64, u64) {
        let live = self
            .entries
            .iter()
            .filter(|(t, _, _)| t + MINUTE_MS + SLACK_MS > now);
        let (mut requests, mut tokens, mut oldest) = (0, 0, None);
        for (t, r, k) in live {
            requests += r;
            tokens += k;
            oldest = oldest.or(Some(*t));
        }
        (
            requests,
            tokens,
            oldest.map_or(0, |t| t + MINUTE_MS + SLACK_MS),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rolling_minute_counts_from_each_request_not_from_the_clocks_minute() {
        let mut m = Minute::default();
        m.add(10_900, 1, 0);
        m.add(30_000, 1, 500);
        let window = MINUTE_MS + SLACK_MS;
        assert_eq!(m.spent(30_000), (2, 500, 10_900 + window));
        // The first request leaves its window to the millisecond, not at a second's start.
        assert_eq!(m.spent(10_900 + window - 1).0, 2);
        assert_eq!(m.spent(10_900 + window), (1, 500, 30_000 + window));
        m.add(10_900 + window + 5, 1, 0);
        assert_eq!(m.entries.len(), 2, "what left the window is forgotten");
    }
}
