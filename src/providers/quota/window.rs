//! One rate-limit [`Window`] as a provider reported it (what it counts, how long it lasts,
//! its limit, what is left, when it resets), and whether it stops one more request, with
//! requests still in flight and the share probes leave alone counted in.

use serde::{Deserialize, Serialize};

use super::limits::{probe_reserve, Exhausted};

/// What a rate-limit window counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Requests,
    Tokens,
}

/// How long a window lasts, when its header names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    Second,
    Minute,
    Hour,
    Day,
    Month,
}

/// One rate-limit window as a provider reported it on an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    /// The headers' own name for it, after `limit-`/`remaining-`/`reset-`: `requests`,
    /// `tokens`, `requests-day`, `tokens-minute`, `req-minute`; empty for the plain
    /// `x-ratelimit-remaining` (OpenRouter) and `ratelimit-remaining` (IETF draft).
    pub name: String,
    pub unit: Unit,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<u64>,
    /// When the window is full again (ms since epoch): from its reset header, else the end
    /// of its period, else a minute after it was seen (then the next answer says more).
    pub reset_at: u64,
}

impl Window {
    /// The header name of what is left in it, for people: `x-ratelimit-remaining-requests`.
    pub fn header(&self) -> String {
        if self.name.is_empty() {
            "x-ratelimit-remaining".to_string()
        } else {
            format!("x-ratelimit-remaining-{}", self.name)
        }
    }

    /// A daily window: named so, or a requests window of unnamed length with a limit (the
    /// common `x-ratelimit-*-requests` of OpenAI-style providers counts the day).
    pub(crate) fn daily(&self) -> bool {
        self.period == Some(Period::Day)
            || (self.period.is_none() && self.unit == Unit::Requests && self.limit.is_some())
    }

    /// Whether this window stops one more request needing `tokens` at `now`, with
    /// `in_flight` others sent since it was reported and not answered yet (each may take a
    /// unit this figure still counts as left); `probe` keeps the last tenth of a daily
    /// window out of reach. A window whose reset has passed says nothing any more.
    pub fn blocks(&self, tokens: u64, in_flight: u64, now: u64, probe: bool) -> Option<Exhausted> {
        if self.reset_at <= now {
            return None;
        }
        let remaining = self.remaining?;
        let one = match self.unit {
            Unit::Requests => 1,
            Unit::Tokens => tokens.max(1),
        };
        if let Some(limit) = self.limit.filter(|l| self.unit == Unit::Tokens && one > *l) {
            // Never fits this window, whatever is left: not sent (the provider would
            // answer 413), though a smaller prompt may be.
            return Some(Exhausted {
                until_ms: self.reset_at,
                what: format!(
                    "a prompt of ~{one} tokens is over {} {limit}",
                    self.limit_header()
                ),
            });
        }
        let keep = match self.limit {
            Some(limit) if probe && self.daily() => probe_reserve(limit),
            _ => 0,
        };
        let need = one.saturating_mul(in_flight + 1).saturating_add(keep);
        (remaining < need).then(|| Exhausted {
            until_ms: self.reset_at,
            what: match in_flight {
                0 => format!("{} {remaining}", self.header()),
                n => format!("{} {remaining}, {n} in flight", self.header()),
            },
        })
    }

    /// The header name of its limit, for people: `x-ratelimit-limit-tokens`.
    pub fn limit_header(&self) -> String {
        if self.name.is_empty() {
            "x-ratelimit-limit".to_string()
        } else {
            format!("x-ratelimit-limit-{}", self.name)
        }
    }

    /// Whether `other` counts the same thing (name and unit).
    pub fn same_counter(&self, other: &Window) -> bool {
        self.name == other.name && self.unit == other.unit
    }

    /// Takes the lower figure of what is left from `earlier`, a report of this window seen
    /// while this answer's request was out, when that window is still open at `now`: the
    /// provider may have counted this request before the ones answered first.
    pub fn fresher(&mut self, earlier: &Window, now: u64) {
        if earlier.reset_at <= now {
            return;
        }
        if let (Some(mine), Some(theirs)) = (self.remaining, earlier.remaining) {
            self.remaining = Some(mine.min(theirs));
        }
    }

    /// Takes one request off what is left: it was answered without fresh figures (an
    /// error, a lost connection), and may have counted all the same.
    pub fn spend_one(&mut self) {
        if self.unit == Unit::Requests {
            if let Some(r) = self.remaining.as_mut() {
                *r = r.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_796_102_301_000; // 2026-12-01T05:18:21Z

    #[test]
    fn windows_block_until_their_reset() {
        let w = |unit, limit, remaining, reset_at| Window {
            name: "x".into(),
            unit,
            period: None,
            limit,
            remaining: Some(remaining),
            reset_at,
        };
        let requests = Unit::Requests;
        let tokens = Unit::Tokens;
        let until = |w: Window, tokens: u64, in_flight: u64, probe: bool| {
            w.blocks(tokens, in_flight, NOW, probe).map(|e| e.until_ms)
        };
        assert_eq!(
            until(w(requests, None, 0, NOW + 5), 10, 0, false),
            Some(NOW + 5)
        );
        assert_eq!(
            until(w(requests, None, 0, NOW), 10, 0, false),
            None,
            "reset passed"
        );
        assert_eq!(until(w(requests, None, 1, NOW + 5), 10, 0, false), None);
        let on_its_way = until(w(requests, None, 1, NOW + 5), 10, 1, false);
        assert_eq!(
            on_its_way,
            Some(NOW + 5),
            "one is on its way for the last unit"
        );
        assert!(until(w(tokens, Some(12_000), 3000, NOW + 5), 5000, 0, false).is_some());
        let huge = until(w(tokens, Some(12_000), 3000, NOW + 5), 20_000, 0, false);
        assert_eq!(huge, Some(NOW + 5), "never fits: not sent there");
        // Probes keep a tenth of a daily window.
        assert!(until(w(requests, Some(1000), 100, NOW + 5), 1, 0, true).is_some());
        assert!(until(w(requests, Some(1000), 101, NOW + 5), 1, 0, true).is_none());
        let mut answered = w(requests, Some(10), 1, NOW + 5);
        answered.spend_one();
        answered.spend_one();
        assert_eq!(answered.remaining, Some(0));
    }
}
