//! The last minute of one counter and key ([`Minute`]): requests and tokens per second,
//! how much of them is still inside the window, and when the oldest leaves it. What a
//! per-minute catalog limit is checked against.

use std::collections::VecDeque;

use crate::providers::quota::MINUTE_MS;

/// Requests and tokens of one counter and key per second, for the last minute.
#[derive(Debug, Default)]
pub(super) struct Minute {
    /// (second, requests, tokens), oldest first.
    seconds: VecDeque<(u64, u64, u64)>,
}

impl Minute {
    pub(super) fn add(&mut self, now: u64, requests: u64, tokens: u64) {
        let sec = now / 1000;
        self.forget(now);
        match self.seconds.back_mut() {
            Some(last) if last.0 == sec => {
                last.1 += requests;
                last.2 += tokens;
            }
            _ => self.seconds.push_back((sec, requests, tokens)),
        }
    }

    fn forget(&mut self, now: u64) {
        while self
            .seconds
            .front()
            .is_some_and(|(s, _, _)| s * 1000 + MINUTE_MS <= now)
        {
            self.seconds.pop_front();
        }
    }

    /// (requests, tokens, when the oldest of them leaves the window).
    pub(super) fn spent(&self, now: u64) -> (u64, u64, u64) {
        let live = self
            .seconds
            .iter()
            .filter(|(s, _, _)| s * 1000 + MINUTE_MS > now);
        let (mut requests, mut tokens, mut oldest) = (0, 0, None);
        for (s, r, t) in live {
            requests += r;
            tokens += t;
            oldest = oldest.or(Some(*s));
        }
        // The whole second counts: a request late in it leaves the window late too.
        (
            requests,
            tokens,
            oldest.map_or(0, |s| (s + 1) * 1000 + MINUTE_MS),
        )
    }
}
