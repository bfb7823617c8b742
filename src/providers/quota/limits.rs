//! Limits as the catalog states them ([`Quota`], per model or for the whole provider),
//! the [`Rule`]s that apply to one model, and whether one more request fits what its
//! counter [`Spent`] (else [`Exhausted`]: which limit, and when it frees up). Also the
//! share of a daily limit that probes leave alone. Pure numbers.

use serde::{Deserialize, Serialize};

use crate::time::next_utc_midnight;

/// One minute in ms: the length of a per-minute window.
pub const MINUTE_MS: u64 = 60_000;

/// Probes (bench pings, background probes) never spend the last tenth of a known daily
/// limit: that part is kept for real work.
pub const PROBE_RESERVE_DIVISOR: u64 = 10;

/// What probes leave untouched of a daily `limit`: its last tenth.
pub fn probe_reserve(limit: u64) -> u64 {
    limit.div_ceil(PROBE_RESERVE_DIVISOR)
}

/// Whose counter a limit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Each model has its own counter (Groq's per-model limits).
    Model,
    /// One counter for every model of the provider (one account: OpenRouter's free quota).
    Provider,
}

/// Limits as the catalog states them, on a provider or a model. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Quota {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_day: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_day: Option<u64>,
    /// On a provider: `provider` (the default) for one shared counter, `model` for the
    /// same limits on each model's own counter. On a model it is always `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

impl Quota {
    /// Its scope as written, a provider's quota being provider-wide unless it says not.
    pub fn scope_or_provider(&self) -> Scope {
        self.scope.unwrap_or(Scope::Provider)
    }

    /// Whether it states a daily limit (requests or tokens).
    pub fn has_daily_limit(&self) -> bool {
        self.requests_per_day.is_some() || self.tokens_per_day.is_some()
    }

    fn is_empty(&self) -> bool {
        self.requests_per_minute.is_none()
            && self.requests_per_day.is_none()
            && self.tokens_per_minute.is_none()
            && self.tokens_per_day.is_none()
    }

    /// `self` with `over`'s limits where `over` has them.
    fn overlaid(&self, over: &Quota) -> Quota {
        Quota {
            requests_per_minute: over.requests_per_minute.or(self.requests_per_minute),
            requests_per_day: over.requests_per_day.or(self.requests_per_day),
            tokens_per_minute: over.tokens_per_minute.or(self.tokens_per_minute),
            tokens_per_day: over.tokens_per_day.or(self.tokens_per_day),
            scope: Some(Scope::Model),
        }
    }

    /// `30/min, 1000/day, 12k tok/min`, or `-` when it states nothing.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let tokens = |n: u64| crate::table::tokens(n);
        if let Some(n) = self.requests_per_minute {
            parts.push(format!("{n}/min"));
        }
        if let Some(n) = self.requests_per_day {
            parts.push(format!("{n}/day"));
        }
        if let Some(n) = self.tokens_per_minute {
            parts.push(format!("{} tok/min", tokens(n)));
        }
        if let Some(n) = self.tokens_per_day {
            parts.push(format!("{} tok/day", tokens(n)));
        }
        if parts.is_empty() {
            "-".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Whether one more request needing `tokens` stays within these limits, given what its
    /// counter spent; `probe` keeps the last tenth of each daily limit out of reach.
    pub fn blocks(&self, spent: &Spent, tokens: u64, now: u64, probe: bool) -> Option<Exhausted> {
        let day_end = next_utc_midnight(now);
        let minute_end = spent.minute_frees_at.max(now + 1);
        let day_limit = |limit: u64| {
            if probe {
                limit - probe_reserve(limit)
            } else {
                limit
            }
        };
        let checks = [
            (
                self.requests_per_minute,
                spent.minute_requests,
                1,
                minute_end,
                "requestsPerMinute",
            ),
            (
                self.requests_per_day.map(day_limit),
                spent.day_requests,
                1,
                day_end,
                "requestsPerDay",
            ),
            (
                self.tokens_per_minute,
                spent.minute_tokens,
                tokens,
                minute_end,
                "tokensPerMinute",
            ),
            (
                self.tokens_per_day.map(day_limit),
                spent.day_tokens,
                tokens,
                day_end,
                "tokensPerDay",
            ),
        ];
        checks
            .into_iter()
            .filter_map(|(limit, used, need, until, name)| {
                let limit = limit?;
                // A prompt larger than a whole window never fits it (the provider would
                // answer 413): not sent there, though a smaller one may be.
                if need > limit && need > 1 {
                    return Some(Exhausted {
                        until_ms: until,
                        what: format!("a prompt of ~{need} tokens is over {name} {limit}"),
                    });
                }
                (used.saturating_add(need) > limit).then(|| Exhausted {
                    until_ms: until,
                    what: format!("{name} {limit} reached"),
                })
            })
            .max_by_key(|e| e.until_ms)
    }
}

/// The limits that apply to one model, each with its counter's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub scope: Scope,
    pub quota: Quota,
}

/// The rules for a model from its provider's `quota` and its own: a provider-scoped quota
/// is one rule on the provider's counter; a model-scoped provider quota is overlaid by the
/// model's own (its fields win) on the model's counter.
pub fn rules(provider: Option<&Quota>, model: Option<&Quota>) -> Vec<Rule> {
    let mut out = Vec::new();
    let mut per_model = Quota::default();
    if let Some(p) = provider.filter(|q| !q.is_empty()) {
        match p.scope_or_provider() {
            Scope::Provider => out.push(Rule {
                scope: Scope::Provider,
                quota: p.clone(),
            }),
            Scope::Model => per_model = p.clone(),
        }
    }
    if let Some(m) = model {
        per_model = per_model.overlaid(m);
    }
    if !per_model.is_empty() {
        per_model.scope = Some(Scope::Model);
        out.push(Rule {
            scope: Scope::Model,
            quota: per_model,
        });
    }
    out
}

/// What one counter spent: in the last minute (and when the oldest of it leaves the
/// window) and today (UTC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    pub minute_requests: u64,
    pub minute_tokens: u64,
    /// When the oldest request of the last minute leaves the window (0 when none).
    pub minute_frees_at: u64,
    pub day_requests: u64,
    pub day_tokens: u64,
}

/// A limit that stops the next request, and when it frees up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhausted {
    /// When it frees up (ms since epoch).
    pub until_ms: u64,
    /// Which limit: `requestsPerDay 50 reached`, `x-ratelimit-remaining-requests 0`.
    pub what: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_796_102_301_000; // 2026-12-01T05:18:21Z

    fn quota(rpm: Option<u64>, rpd: Option<u64>, tpm: Option<u64>, tpd: Option<u64>) -> Quota {
        Quota {
            requests_per_minute: rpm,
            requests_per_day: rpd,
            tokens_per_minute: tpm,
            tokens_per_day: tpd,
            scope: None,
        }
    }

    fn time_of(ms: u64) -> String {
        crate::time::rfc3339(ms)
    }

    #[test]
    fn catalog_limits_block_until_the_minute_or_the_day_ends() {
        let q = quota(Some(2), Some(5), Some(1000), None);
        let minute = Spent {
            minute_requests: 2,
            minute_frees_at: NOW + 20_000,
            day_requests: 2,
            ..Spent::default()
        };
        let e = q.blocks(&minute, 10, NOW, false).unwrap();
        assert_eq!(
            (e.until_ms, e.what.as_str()),
            (NOW + 20_000, "requestsPerMinute 2 reached")
        );
        let day = Spent {
            day_requests: 5,
            ..Spent::default()
        };
        let e = q.blocks(&day, 10, NOW, false).unwrap();
        assert_eq!(
            (time_of(e.until_ms), e.what.as_str()),
            ("2026-12-02T00:00:00Z".into(), "requestsPerDay 5 reached")
        );
        let tokens = Spent {
            minute_tokens: 900,
            minute_frees_at: NOW + 1,
            ..Spent::default()
        };
        assert!(q.blocks(&tokens, 200, NOW, false).is_some());
        assert!(q.blocks(&tokens, 100, NOW, false).is_none());
        let too_large = q.blocks(&Spent::default(), 5000, NOW, false).unwrap();
        assert!(
            too_large.what.contains("over tokensPerMinute"),
            "a prompt larger than the window is not sent: {}",
            too_large.what
        );
        // Probes stop at 90% of the day.
        let q = quota(None, Some(50), None, None);
        let used = |n| Spent {
            day_requests: n,
            ..Spent::default()
        };
        assert!(q.blocks(&used(44), 1, NOW, true).is_none());
        assert!(q.blocks(&used(45), 1, NOW, true).is_some());
        assert!(q.blocks(&used(49), 1, NOW, false).is_none());
    }

    #[test]
    fn rules_from_provider_and_model() {
        let shared = Quota {
            scope: Some(Scope::Provider),
            ..quota(Some(20), Some(50), None, None)
        };
        let each = Quota {
            scope: Some(Scope::Model),
            ..quota(Some(30), None, None, None)
        };
        let own = quota(None, Some(1000), Some(12_000), None);
        assert_eq!(rules(None, None), vec![]);
        assert_eq!(
            rules(Some(&shared), None),
            vec![Rule {
                scope: Scope::Provider,
                quota: shared.clone()
            }]
        );
        let merged = rules(Some(&each), Some(&own));
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].scope, Scope::Model);
        assert_eq!(merged[0].quota.describe(), "30/min, 1000/day, 12k tok/min");
        let both = rules(Some(&shared), Some(&own));
        assert_eq!(
            both.iter().map(|r| r.scope).collect::<Vec<_>>(),
            [Scope::Provider, Scope::Model]
        );
        assert_eq!(Quota::default().describe(), "-");
    }

    #[test]
    fn unknown_quota_fields_are_errors() {
        let err = serde_json::from_str::<Quota>(r#"{"requestPerDay": 5}"#).unwrap_err();
        assert!(err.to_string().contains("requestPerDay"), "{err}");
        let q: Quota = serde_json::from_str(r#"{"requestsPerDay": 5, "scope": "model"}"#).unwrap();
        assert_eq!((q.requests_per_day, q.scope), (Some(5), Some(Scope::Model)));
    }
}
