//! Exhaustion: an answer that says a free quota, grant, credit or balance is used up, as
//! opposed to "slow down for a second". A status alone cannot tell the two apart (a 429 is
//! both, a 403 may be a quota and not a key), so this reads the words and codes providers
//! really send (`AllocationQuota.FreeTierOnly`, `insufficient_quota`, OpenRouter's
//! `free-models-per-day`, Google's per-day `RESOURCE_EXHAUSTED`, Cloudflare's `4006`,
//! Z.ai's `1113`, Ollama's session and weekly caps, a day's limit in any wording) and says
//! what the limit covers and when it comes back: the reset the answer states, else the one
//! its window implies (the provider's day, a session), else a day for a grant that does
//! not come back by waiting.
//!
//! Pure: status, body text, header figures and the time in; an [`Exhaustion`] out. What it
//! pauses (a model, every model on the key) is the ledger's business.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::{next_pacific_midnight, next_utc_midnight};

/// How long a limit that does not come back by waiting (a free grant used up, no
/// balance, no free quota for the model at all) keeps its model or account out: a day,
/// after which one request finds out whether it was renewed or funded.
pub const NOT_BY_WAITING: Duration = Duration::from_secs(24 * 3600);
/// A session cap (Ollama Cloud's) whose answer states no reset: its usual window.
pub const SESSION_WINDOW: Duration = Duration::from_secs(5 * 3600);
/// A weekly cap whose answer states no reset.
pub const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

/// What the used-up limit belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// This model with this key (DashScope's per-model grant, Google's per-model day).
    Model,
    /// Every model on this key (OpenRouter's free day, Cloudflare's neurons, a balance).
    Account,
}

/// Which kind of limit ran out, as the answer says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// A model's free token grant is spent (DashScope's `AllocationQuota.FreeTierOnly`).
    FreeGrantUsedUp,
    /// The account's quota is spent (`insufficient_quota`, "exceeded your current quota").
    InsufficientQuota,
    /// No balance, credit or resource package (402, Z.ai's `1113`, a negative balance).
    NoBalance,
    /// The model has no free quota at all (Google's `limit: 0`).
    NoFreeQuota,
    /// A daily limit is reached (requests or tokens per day, a day's neurons).
    DailyLimit,
    /// A session cap of a few hours.
    SessionLimit,
    /// A weekly cap.
    WeeklyLimit,
}

impl Signal {
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::FreeGrantUsedUp => "free_grant_used_up",
            Signal::InsufficientQuota => "insufficient_quota",
            Signal::NoBalance => "no_balance",
            Signal::NoFreeQuota => "no_free_quota",
            Signal::DailyLimit => "daily_limit",
            Signal::SessionLimit => "session_limit",
            Signal::WeeklyLimit => "weekly_limit",
        }
    }

    /// For people: `the model's free grant is used up`.
    pub fn says(self) -> &'static str {
        match self {
            Signal::FreeGrantUsedUp => "its free grant is used up",
            Signal::InsufficientQuota => "the account's quota is used up",
            Signal::NoBalance => "no balance or credit left",
            Signal::NoFreeQuota => "no free quota for this model",
            Signal::DailyLimit => "the day's limit is reached",
            Signal::SessionLimit => "the session's usage limit is reached",
            Signal::WeeklyLimit => "the week's usage limit is reached",
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A used-up limit: what ran out, whose it is (`None`: the answer does not say, and the
/// catalog's scope for the provider decides) and when it comes back (ms since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhaustion {
    pub signal: Signal,
    pub reach: Option<Reach>,
    pub until_ms: u64,
}

/// When the provider's day ends: Google's quotas reset at midnight Pacific, the others'
/// at midnight UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Day {
    Utc,
    Pacific,
}

/// How one signal's limit comes back when the answer does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comes {
    /// Not by waiting: [`NOT_BY_WAITING`].
    Never,
    Day(Day),
    After(Duration),
}

/// One way providers say a limit is used up (or, with no signal, that it is only a
/// passing rate limit, which stops the search): every `all` needle (lower case) in the
/// body, what it means, whose it is, how it comes back.
struct Rule {
    all: &'static [&'static str],
    signal: Option<Signal>,
    reach: Option<Reach>,
    comes: Comes,
}

const fn rule(
    all: &'static [&'static str],
    signal: Signal,
    reach: Option<Reach>,
    comes: Comes,
) -> Rule {
    Rule {
        all,
        signal: Some(signal),
        reach,
        comes,
    }
}

/// Words that mark a passing rate limit however much else the body says of quotas.
const fn passing(all: &'static [&'static str]) -> Rule {
    Rule {
        all,
        signal: None,
        reach: None,
        comes: Comes::Never,
    }
}

use Comes::{After, Day as Daily, Never};
use Day::{Pacific, Utc};
use Reach::{Account, Model};
use Signal::*;

/// The signals, first match wins: specific codes before general words. Sources: the
/// quota signals in the project's reference notes (DashScope, OpenAI-style gateways,
/// OpenRouter, Google AI Studio, Cloudflare, Z.ai, Ollama Cloud) and Groq's wording.
const RULES: &[Rule] = &[
    rule(
        &["allocationquota.freetieronly"],
        FreeGrantUsedUp,
        Some(Model),
        Never,
    ),
    // Google AI Studio words every quota "You exceeded your current quota": the metric
    // says which. No free quota at all, a day's, else a minute's (only a rate limit).
    rule(
        &["resource_exhausted", "limit: 0"],
        NoFreeQuota,
        Some(Model),
        Never,
    ),
    rule(
        &["resource_exhausted", "perday"],
        DailyLimit,
        Some(Model),
        Daily(Pacific),
    ),
    rule(
        &["resource_exhausted", "per day"],
        DailyLimit,
        Some(Model),
        Daily(Pacific),
    ),
    passing(&["resource_exhausted"]),
    rule(
        &["free tier", "exhausted"],
        FreeGrantUsedUp,
        Some(Model),
        Never,
    ),
    rule(
        &["insufficient_quota"],
        InsufficientQuota,
        Some(Account),
        Never,
    ),
    rule(
        &["exceeded your current quota"],
        InsufficientQuota,
        Some(Account),
        Never,
    ),
    rule(
        &["free-models-per-day"],
        DailyLimit,
        Some(Account),
        Daily(Utc),
    ),
    // Cloudflare Workers AI: the day's free neurons.
    rule(
        &["4006", "allocation"],
        DailyLimit,
        Some(Account),
        Daily(Utc),
    ),
    rule(&["4006", "neuron"], DailyLimit, Some(Account), Daily(Utc)),
    rule(
        &["daily free allocation"],
        DailyLimit,
        Some(Account),
        Daily(Utc),
    ),
    // Z.ai: a paid-only model on a key without a package.
    rule(&["1113", "balance"], NoBalance, Some(Model), Never),
    rule(&["1113", "package"], NoBalance, Some(Model), Never),
    rule(&["no resource package"], NoBalance, Some(Model), Never),
    rule(&["insufficient balance"], NoBalance, Some(Account), Never),
    rule(&["negative balance"], NoBalance, Some(Account), Never),
    rule(&["insufficient credits"], NoBalance, Some(Account), Never),
    rule(&["out of credits"], NoBalance, Some(Account), Never),
    rule(&["credit balance"], NoBalance, Some(Account), Never),
    // Ollama Cloud and the like.
    rule(
        &["session usage limit"],
        SessionLimit,
        Some(Account),
        After(SESSION_WINDOW),
    ),
    rule(
        &["session limit"],
        SessionLimit,
        Some(Account),
        After(SESSION_WINDOW),
    ),
    rule(
        &["weekly usage limit"],
        WeeklyLimit,
        Some(Account),
        After(WEEK),
    ),
    rule(&["weekly limit"], WeeklyLimit, Some(Account), After(WEEK)),
    // A day's limit in any wording: whose it is, the catalog says.
    rule(&["per day"], DailyLimit, None, Daily(Utc)),
    rule(&["per-day"], DailyLimit, None, Daily(Utc)),
    rule(&["perday"], DailyLimit, None, Daily(Utc)),
    rule(&["daily limit"], DailyLimit, None, Daily(Utc)),
    rule(&["daily quota"], DailyLimit, None, Daily(Utc)),
    rule(&["daily request limit"], DailyLimit, None, Daily(Utc)),
    rule(&["(rpd)"], DailyLimit, None, Daily(Utc)),
    rule(&["(tpd)"], DailyLimit, None, Daily(Utc)),
    rule(&["quota has been exhausted"], DailyLimit, None, Daily(Utc)),
    rule(&["free tier has ended"], FreeGrantUsedUp, None, Never),
];

/// Statuses an exhaustion comes with: a limit (429), a refusal that is not about the key
/// (401/403), payment (402), a bad request that is really a quota (400), a notice (200).
fn may_say_exhausted(status: u16) -> bool {
    matches!(status, 200 | 400 | 401 | 402 | 403 | 429)
}

/// What `body` (an error answer or a notice, with `status`) says is used up, if anything,
/// and until when. `stated_ms`: the reset the answer's headers state (`Retry-After`
/// uncapped, a spent window's reset), which wins over any implied one; `now` in ms.
pub fn read(status: u16, body: &str, stated_ms: Option<u64>, now: u64) -> Option<Exhaustion> {
    if !may_say_exhausted(status) {
        return None;
    }
    let text = body.to_ascii_lowercase();
    let found = RULES
        .iter()
        .find(|r| r.all.iter().all(|needle| text.contains(needle)));
    let (signal, reach, comes) = match found {
        Some(Rule {
            signal: Some(signal),
            reach,
            comes,
            ..
        }) => (*signal, *reach, *comes),
        Some(_) => return None,
        // A payment status without words: the account has nothing left.
        None if status == 402 => (NoBalance, Some(Account), Never),
        None => return None,
    };
    let stated = stated_ms
        .or_else(|| stated_in_words(&text).map(|d| now + d.as_millis() as u64))
        .filter(|at| *at > now);
    let implied = match comes {
        Never => now + NOT_BY_WAITING.as_millis() as u64,
        Daily(Utc) => next_utc_midnight(now),
        Daily(Pacific) => next_pacific_midnight(now),
        After(d) => now + d.as_millis() as u64,
    };
    // A grant or balance never comes back by a timer, whatever a header says of a window;
    // Google's per-day answers say "retry in" a few seconds though the day is spent.
    let until_ms = match comes {
        Never | Daily(Pacific) => implied,
        _ => stated.unwrap_or(implied),
    };
    Some(Exhaustion {
        signal,
        reach,
        until_ms,
    })
}

/// A wait the text states: `try again in 1m26.4s`, `retry in 37.5s`, `retry after 20
/// seconds`.
fn stated_in_words(text: &str) -> Option<Duration> {
    for lead in ["try again in ", "retry in ", "retry after "] {
        let Some(at) = text.find(lead) else { continue };
        let rest = &text[at + lead.len()..];
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
            .collect();
        if let Some(d) = crate::providers::quota::parse_duration(word.trim_end_matches('.')) {
            return Some(d);
        }
        // `20 seconds`
        let mut parts = rest.split_whitespace();
        let n: f64 = parts.next()?.trim_end_matches(',').parse().ok()?;
        let unit = parts.next().unwrap_or("s");
        let secs = if unit.starts_with("min") {
            n * 60.0
        } else if unit.starts_with("hour") {
            n * 3600.0
        } else {
            n
        };
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_rfc3339;

    fn at(t: &str) -> u64 {
        parse_rfc3339(t).unwrap()
    }

    #[test]
    fn provider_signals_are_read_with_their_reach_and_reset() {
        let now = at("2026-12-04T18:30:00Z");
        let day = DayEnds::default();
        let cases: &[(u16, &str, Option<u64>, Want)] = &[
            (
                403,
                r#"{"error":{"code":"AllocationQuota.FreeTierOnly","message":"The free tier of the model has been exhausted."}}"#,
                None,
                Some((FreeGrantUsedUp, Some(Model), now + day.never)),
            ),
            (
                429,
                r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
                None,
                Some((InsufficientQuota, Some(Account), now + day.never)),
            ),
            (
                429,
                r#"{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429}}"#,
                Some(at("2026-12-05T00:00:00Z")),
                Some((DailyLimit, Some(Account), at("2026-12-05T00:00:00Z"))),
            ),
            (
                429,
                r#"[{"error":{"code":429,"message":"You exceeded your current quota. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 20, model: gemini-3-flash. Please retry in 37.5s.","status":"RESOURCE_EXHAUSTED","details":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}}]"#,
                None,
                // Google says "exceeded your current quota" of every quota: its metric
                // decides, and its day ends at midnight Pacific whatever "retry in" says.
                Some((DailyLimit, Some(Model), at("2026-12-05T08:00:00Z"))),
            ),
            (
                429,
                r#"[{"error":{"code":429,"message":"Quota exceeded for metric: generate_content_free_tier_requests, limit: 20. Please retry in 37.5s.","status":"RESOURCE_EXHAUSTED","details":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}}]"#,
                None,
                Some((DailyLimit, Some(Model), at("2026-12-05T08:00:00Z"))),
            ),
            (
                429,
                r#"[{"error":{"code":429,"message":"Quota exceeded for metric: generate_content_free_tier_requests, limit: 0","status":"RESOURCE_EXHAUSTED"}}]"#,
                None,
                Some((NoFreeQuota, Some(Model), now + day.never)),
            ),
            (
                429,
                r#"{"errors":[{"code":4006,"message":"you have used up your daily free allocation of 10,000 neurons, please upgrade to Cloudflare's Workers Paid plan"}],"success":false}"#,
                None,
                Some((DailyLimit, Some(Account), at("2026-12-05T00:00:00Z"))),
            ),
            (
                429,
                r#"{"error":{"code":"1113","message":"Insufficient balance or no resource package. Please recharge."}}"#,
                None,
                Some((NoBalance, Some(Model), now + day.never)),
            ),
            (
                429,
                r#"{"error":"you've reached your session usage limit, please wait or upgrade to continue"}"#,
                None,
                Some((
                    SessionLimit,
                    Some(Account),
                    now + SESSION_WINDOW.as_millis() as u64,
                )),
            ),
            (
                429,
                r#"{"error":"you've reached your weekly usage limit"}"#,
                Some(now + 3_600_000),
                Some((WeeklyLimit, Some(Account), now + 3_600_000)),
            ),
            (
                429,
                r#"{"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on requests per day (RPD): Limit 1000, Used 1000, Requested 1. Please try again in 1m26.4s.","type":"requests","code":"rate_limit_exceeded"}}"#,
                None,
                Some((DailyLimit, None, now + 86_400)),
            ),
            (
                402,
                r#"{"error":{"message":"Your account has a negative balance"}}"#,
                None,
                Some((NoBalance, Some(Account), now + day.never)),
            ),
            (
                402,
                "",
                None,
                Some((NoBalance, Some(Account), now + day.never)),
            ),
            (
                200,
                "Your daily limit reached for this model. Come back tomorrow.",
                None,
                Some((DailyLimit, None, at("2026-12-05T00:00:00Z"))),
            ),
            // Slow down, not used up.
            (
                429,
                r#"{"error":{"message":"Rate limit reached for model `x` on tokens per minute (TPM): Limit 6000. Please try again in 7.2s.","code":"rate_limit_exceeded"}}"#,
                None,
                None,
            ),
            (
                429,
                r#"{"message":"Requests per minute limit exceeded","type":"too_many_requests_error","code":"request_quota_exceeded"}"#,
                None,
                None,
            ),
            (
                429,
                r#"[{"error":{"code":429,"message":"You exceeded your current quota. Quota exceeded for metric: generate_content_free_tier_requests, quotaId: GenerateRequestsPerMinutePerProjectPerModel-FreeTier, limit: 5. Please retry in 12s.","status":"RESOURCE_EXHAUSTED"}}]"#,
                None,
                None,
            ),
            (
                403,
                r#"{"error":{"message":"Invalid API key"}}"#,
                None,
                None,
            ),
            (500, "daily limit", None, None),
        ];
        for (status, body, stated, want) in cases {
            let got = read(*status, body, *stated, now).map(|e| (e.signal, e.reach, e.until_ms));
            assert_eq!(got, *want, "{status} {body}");
        }
    }

    #[test]
    fn a_grant_is_not_back_by_a_header_and_a_stated_past_is_ignored() {
        let now = at("2026-12-04T18:30:00Z");
        let body = r#"{"code":"AllocationQuota.FreeTierOnly"}"#;
        let e = read(403, body, Some(now + 5_000), now).unwrap();
        assert_eq!(e.until_ms, now + NOT_BY_WAITING.as_millis() as u64);
        let e = read(429, "daily limit", Some(now - 5), now).unwrap();
        assert_eq!(e.until_ms, at("2026-12-05T00:00:00Z"));
    }

    #[test]
    fn waits_stated_in_words() {
        let cases: &[(&str, Option<u64>)] = &[
            ("please try again in 1m26.4s.", Some(86_400)),
            ("please retry in 37.5s.", Some(37_500)),
            ("retry after 20 seconds", Some(20_000)),
            ("retry after 2 minutes", Some(120_000)),
            ("nothing here", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                stated_in_words(text).map(|d| d.as_millis() as u64),
                *want,
                "{text}"
            );
        }
    }

    /// What a case must read: its signal, reach and reset, or nothing.
    type Want = Option<(Signal, Option<Reach>, u64)>;

    /// How far ahead the implied resets lie.
    struct DayEnds {
        never: u64,
    }

    impl Default for DayEnds {
        fn default() -> Self {
            DayEnds {
                never: NOT_BY_WAITING.as_millis() as u64,
            }
        }
    }
}
