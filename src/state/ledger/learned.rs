//! What one model's answers taught about its limits that the catalog and its headers do
//! not say ([`Learned`], per model and key): a requests-a-minute limit a 429 revealed (from
//! what it took in the last minute, which the ledger counts beside), a tokens-a-minute limit
//! a 413 stated, its run of 429s, and until when it is a poor home for a conversation. Kept
//! in memory: what a limit looks like is relearned within minutes after a restart. Pure
//! values; the ledger keeps them for the models that taught something, looked up once per
//! check.

use super::minute::Minute;
use crate::providers::quota::{Exhausted, MINUTE_MS};

/// Requests in the last minute below which a 429 teaches no per-minute limit: such a 429
/// is about something else (an hourly cap, the provider's own load).
const LEARN_FROM: u64 = 3;
/// A prompt within a `1 / TPM_MARGIN` share of a stated tokens-a-minute limit is taken as
/// over it: the provider counts tokens its own way.
const TPM_MARGIN: u64 = 10;

#[derive(Debug, Default)]
pub(super) struct Learned {
    /// Requests a minute it took before a 429 that stated no limit, and until when that
    /// is believed.
    rpm: Option<(u64, u64)>,
    /// Tokens a minute its provider stated when it refused a prompt as too large.
    tpm: Option<u64>,
    /// 429s since its last answer.
    pub(super) streak: u32,
    /// Until when it is a poor home for a conversation (a 429, a used-up quota).
    pub(super) poor_until: u64,
}

impl Learned {
    /// A 429 that stated no limit, after `took` requests in the last minute: those less
    /// the request refused are its limit a minute until `until` (the lower of two such
    /// figures stands).
    pub(super) fn refused_at(&mut self, took: u64, now: u64, until: u64) {
        if took < LEARN_FROM {
            return;
        }
        let limit = took - 1;
        match &mut self.rpm {
            Some((old, end)) if *end > now && *old <= limit => *end = until,
            slot => *slot = Some((limit, until)),
        }
    }

    /// Whether a 429 taught its limit a minute, believed still at `now`.
    pub(super) fn knows_its_minute(&self, now: u64) -> bool {
        self.rpm.is_some_and(|(_, until)| until > now)
    }

    /// A prompt of `tokens` refused as larger than `limit` tokens a minute (0: the limit
    /// was not stated, and the prompt's size less one is taken).
    pub(super) fn too_large(&mut self, limit: u64, tokens: u64) {
        let limit = if limit > 0 {
            limit
        } else {
            tokens.saturating_sub(1)
        };
        self.tpm = Some(self.tpm.map_or(limit, |t| t.min(limit)));
    }

    /// What stops one more request of `tokens` at `now`, if anything, with `recent` the
    /// model's requests of the last minute; and the requests a minute its limits allow,
    /// for how roomy it is.
    pub(super) fn check(
        &self,
        tokens: u64,
        recent: Option<&Minute>,
        now: u64,
    ) -> (Option<Exhausted>, Option<u64>) {
        let mut stop = None;
        let mut per_minute: Option<u64> = None;
        if let Some((limit, until)) = self.rpm.filter(|r| r.1 > now) {
            let (took, _, frees_at) = recent.map_or((0, 0, now), |r| r.spent(now));
            if took >= limit {
                stop = Some(Exhausted {
                    until_ms: frees_at.min(until),
                    what: format!("{limit} requests a minute, as its 429s said"),
                });
            }
            per_minute = Some(limit);
        }
        if let Some(limit) = self.tpm {
            if tokens + tokens / TPM_MARGIN > limit {
                stop = Some(Exhausted {
                    until_ms: now + MINUTE_MS,
                    what: format!(
                        "a prompt of ~{tokens} tokens is over the {limit} tokens a minute its provider stated"
                    ),
                });
            }
            let fits = limit / tokens.max(1);
            per_minute = Some(per_minute.map_or(fits, |p| p.min(fits)));
        }
        (stop, per_minute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_429_after_a_busy_minute_teaches_its_limit_a_quiet_one_does_not() {
        let mut recent = Minute::default();
        for t in 0..6 {
            recent.add(t * 1_000, 1, 0);
        }
        let mut l = Learned::default();
        l.refused_at(recent.spent(6_000).0, 6_000, 3_600_000);
        let (stop, per_minute) = l.check(1, Some(&recent), 7_000);
        assert_eq!(per_minute, Some(5));
        assert!(stop.unwrap().what.contains("5 requests a minute"));
        assert!(
            l.check(1, Some(&recent), 62_000).0.is_none(),
            "the minute rolled on"
        );
        assert!(
            l.check(1, Some(&recent), 3_600_001).1.is_none(),
            "believed for a while only"
        );
        let mut quiet = Learned::default();
        quiet.refused_at(1, 1, 3_600_000);
        assert_eq!(quiet.check(1, None, 2), (None, None));
    }

    #[test]
    fn a_stated_tokens_limit_keeps_larger_prompts_away_with_a_margin() {
        let mut l = Learned::default();
        l.too_large(8_000, 11_881);
        assert!(l.check(7_500, None, 0).0.is_some(), "within a tenth of it");
        assert_eq!(l.check(1_000, None, 0), (None, Some(8)));
        l.too_large(0, 5_001);
        assert!(
            l.check(4_700, None, 0).0.is_some(),
            "unstated: the prompt less one"
        );
    }
}
