//! Free-tier limits: what the catalog says a provider or model allows (`quota`), what a
//! provider says is left (`x-ratelimit-*` headers on every answer), and whether one more
//! request fits in either. Pure: numbers and header values in, verdicts out. The usage
//! ledger (`ledger`) keeps the counts and the latest figures, and asks this module.
//!
//! What it does not do: count anything, or decide which key or model to use.

use serde::{Deserialize, Serialize};

use crate::time::{next_utc_midnight, DAY_MS};

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
                // A request larger than a whole window never fits it: the provider says so
                // itself (413), and fcm does not skip a model forever on an estimate.
                let never_fits = need > limit && need > 1;
                (used.saturating_add(need) > limit && !never_fits).then(|| Exhausted {
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
        if self.unit == Unit::Tokens && self.limit.is_some_and(|l| one > l) {
            return None; // never fits: the provider's own 413 says so
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

/// Which window a header belongs to and what it says of it.
enum Field {
    Limit,
    Remaining,
    Reset,
}

/// Reads every rate-limit window in a response's headers (names compared without case):
/// `x-ratelimit-{limit,remaining,reset}[-NAME]` and `ratelimit-{limit,remaining,reset}`.
/// Resets are Go-style durations (`1m26.4s`, `185ms`), seconds, or Unix times in seconds
/// or milliseconds. Windows without a `remaining` or `limit` figure are left out.
pub fn read_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    now: u64,
) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    let mut resets: Vec<(String, u64)> = Vec::new();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        let Some(rest) = name
            .strip_prefix("x-ratelimit-")
            .or_else(|| name.strip_prefix("ratelimit-"))
        else {
            continue;
        };
        let (field, window) = match rest.split_once('-') {
            Some((f, w)) => (f, w),
            None => (rest, ""),
        };
        let field = match field {
            "limit" => Field::Limit,
            "remaining" => Field::Remaining,
            "reset" => Field::Reset,
            _ => continue,
        };
        let value = value.trim();
        if let Field::Reset = field {
            if let Some(at) = reset_at(value, now) {
                resets.push((window.to_string(), at));
            }
            continue;
        }
        let Some(n) = value
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
        else {
            continue;
        };
        let n = n as u64;
        let w = match windows.iter_mut().position(|w| w.name == window) {
            Some(i) => &mut windows[i],
            None => {
                windows.push(window_named(window, now));
                windows.last_mut().expect("just pushed")
            }
        };
        match field {
            Field::Limit => w.limit = Some(n),
            Field::Remaining => w.remaining = Some(n),
            Field::Reset => unreachable!("handled above"),
        }
    }
    for (name, at) in resets {
        if let Some(w) = windows.iter_mut().find(|w| w.name == name) {
            w.reset_at = at;
        }
    }
    windows
}

/// A window with no figures yet, its unit and period read from its name.
fn window_named(name: &str, now: u64) -> Window {
    let unit = if name.contains("tok") {
        Unit::Tokens
    } else {
        Unit::Requests
    };
    let period = name.rsplit('-').find_map(|part| match part {
        "second" | "sec" | "s" => Some(Period::Second),
        "minute" | "min" | "m" | "1m" => Some(Period::Minute),
        "hour" | "h" => Some(Period::Hour),
        "day" | "d" | "1d" => Some(Period::Day),
        "month" => Some(Period::Month),
        _ => None,
    });
    let reset_at = match period {
        Some(Period::Second) => now + 1000,
        Some(Period::Day) => next_utc_midnight(now),
        Some(Period::Hour) => now + 3_600_000,
        // A month's end is a long way off; look again within a day.
        Some(Period::Month) => now + DAY_MS,
        Some(Period::Minute) | None => now + MINUTE_MS,
    };
    Window {
        name: name.to_string(),
        unit,
        period,
        limit: None,
        remaining: None,
        reset_at,
    }
}

/// When a reset header says the window is full again (ms since epoch): a duration from
/// now (`1m26.4s`, `185ms`, `30`, `6.5`), or a Unix time in seconds or milliseconds.
pub fn reset_at(value: &str, now: u64) -> Option<u64> {
    let v = value.trim();
    if let Ok(n) = v.parse::<f64>() {
        if !n.is_finite() || n < 0.0 {
            return None;
        }
        return Some(if n >= 1e12 {
            n as u64 // Unix ms (OpenRouter)
        } else if n >= 1e9 {
            (n * 1000.0) as u64 // Unix seconds
        } else {
            now.saturating_add((n * 1000.0).ceil() as u64)
        });
    }
    let d = parse_duration(v)?;
    Some(now.saturating_add(d.as_millis().min(u128::from(u64::MAX / 2)) as u64))
}

/// A Go-style duration: `1m26.4s`, `185ms`, `2h3m`, `1.5us`, `0s`. Uncapped.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let mut total = 0.0f64;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += n * scale;
    }
    (total.is_finite() && total < 1e12).then(|| std::time::Duration::from_secs_f64(total))
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

    #[test]
    fn go_durations_seconds_and_unix_times() {
        let cases: &[(&str, Option<u64>)] = &[
            ("1m26.4s", Some(NOW + 86_400)),
            ("185ms", Some(NOW + 185)),
            ("2h3m", Some(NOW + 7_380_000)),
            ("0s", Some(NOW)),
            ("30", Some(NOW + 30_000)),
            ("6.5", Some(NOW + 6_500)),
            ("1796102400", Some(1_796_102_400_000)),
            ("1796102400123", Some(1_796_102_400_123)),
            ("soon", None),
            ("-3", None),
            ("1x", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(reset_at(text, NOW), *want, "{text}");
        }
        assert_eq!(
            parse_duration("1.5us"),
            Some(std::time::Duration::from_nanos(1500))
        );
    }

    #[test]
    fn groq_headers_from_a_real_answer() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/reference/realwire/groq__200_ratelimit_headers.headers"
        );
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            // A CI elsewhere, without the samples beside the checkout.
            Err(_) if std::env::var_os("FCM_REALWIRE_OPTIONAL").is_some() => return,
            Err(e) => panic!(
                "{path}: {e} (the realwire samples sit beside the checkout; set FCM_REALWIRE_OPTIONAL=1 to skip)"
            ),
        };
        let headers: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let w = read_headers(headers, NOW);
        assert_eq!(
            w,
            vec![
                Window {
                    name: "requests".into(),
                    unit: Unit::Requests,
                    period: None,
                    limit: Some(1000),
                    remaining: Some(999),
                    reset_at: NOW + 86_400,
                },
                Window {
                    name: "tokens".into(),
                    unit: Unit::Tokens,
                    period: None,
                    limit: Some(12_000),
                    remaining: Some(11_963),
                    reset_at: NOW + 185,
                },
            ]
        );
    }

    #[test]
    fn windows_in_every_providers_style() {
        // Cerebras: named periods, resets in seconds.
        let w = read_headers(
            [
                ("x-ratelimit-limit-requests-day", "14400"),
                ("x-ratelimit-remaining-requests-day", "0"),
                ("x-ratelimit-reset-requests-day", "33011.38"),
                ("X-RateLimit-Remaining-Tokens-Minute", "59000"),
            ],
            NOW,
        );
        assert_eq!(
            (w[0].period, w[0].remaining, w[0].reset_at),
            (Some(Period::Day), Some(0), NOW + 33_011_380)
        );
        assert_eq!(
            (w[1].unit, w[1].period, w[1].reset_at),
            (Unit::Tokens, Some(Period::Minute), NOW + 60_000)
        );
        // OpenRouter: plain names, reset in Unix ms.
        let w = read_headers(
            [
                ("X-RateLimit-Limit", "50"),
                ("X-RateLimit-Remaining", "3"),
                ("X-RateLimit-Reset", "1796169600000"),
            ],
            NOW,
        );
        assert_eq!(
            (
                w[0].name.as_str(),
                w[0].limit,
                w[0].remaining,
                w[0].reset_at
            ),
            ("", Some(50), Some(3), 1_796_169_600_000)
        );
        // Mistral: no reset header; a minute window is full again within the minute.
        let w = read_headers(
            [
                ("x-ratelimit-limit-req-minute", "15"),
                ("x-ratelimit-remaining-req-minute", "0"),
            ],
            NOW,
        );
        assert_eq!(
            (w[0].unit, w[0].period, w[0].reset_at),
            (Unit::Requests, Some(Period::Minute), NOW + 60_000)
        );
        // IETF draft; junk is ignored.
        let w = read_headers(
            [
                ("ratelimit-remaining", "7"),
                ("ratelimit-reset", "12"),
                ("x-ratelimit-remaining-requests", "lots"),
                ("content-type", "x"),
            ],
            NOW,
        );
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].remaining, w[0].reset_at), (Some(7), NOW + 12_000));
    }

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
        assert_eq!(huge, None, "never fits: the provider says so");
        // Probes keep a tenth of a daily window.
        assert!(until(w(requests, Some(1000), 100, NOW + 5), 1, 0, true).is_some());
        assert!(until(w(requests, Some(1000), 101, NOW + 5), 1, 0, true).is_none());
        let mut answered = w(requests, Some(10), 1, NOW + 5);
        answered.spend_one();
        answered.spend_one();
        assert_eq!(answered.remaining, Some(0));
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
        assert!(
            q.blocks(&Spent::default(), 5000, NOW, false).is_none(),
            "larger than the window"
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

    fn time_of(ms: u64) -> String {
        crate::time::rfc3339(ms)
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
