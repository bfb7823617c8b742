//! Failure kinds and verdicts: what went wrong with one attempt and what that means.
//!
//! Pure: fed a status, headers, body text or transport error, never touching the network.
//! The same verdict drives `fcm bench` (a model's rating), `fcm check` (an exit code) and the
//! router (failover, breaker damage, provider blocks and quota pauses).

use std::fmt;
use std::time::{Duration, SystemTime};

pub use crate::providers::exchange::TransportFailure;

use super::exhaustion::{self, Exhaustion};

/// Default pause after a 429 that gives no `Retry-After`.
pub const DEFAULT_QUOTA_PAUSE: Duration = Duration::from_secs(60);
/// Longest pause fcm honours: a provider asking for hours is paused 15 min, then retried.
pub const MAX_QUOTA_PAUSE: Duration = Duration::from_secs(15 * 60);
/// How long a catalog model the provider says it does not serve (404, 410) is left out of
/// rotation: a retired or renamed model does not come back within minutes, and asking it
/// again every 30 s only costs each request an attempt.
pub const MODEL_NOT_FOUND_PAUSE: Duration = Duration::from_secs(24 * 3600);
/// How long a model whose answer was a provider notice (a paid plan, credits, sign up) is
/// left alone. Such a model has usually gone paid or run out of an account's credits: it
/// will not be back in minutes, and every request sent to it costs a failover. Six hours
/// rather than a day (a model that is gone, [`MODEL_NOT_FOUND_PAUSE`]): daily credits and
/// quotas come back within a working day, and `fcm breakers --reset` brings it back at once.
pub const PROVIDER_NOTICE_PAUSE: Duration = Duration::from_secs(6 * 3600);
/// How long a model that said it is overloaded (and gave no `Retry-After`) is left alone,
/// so the requests right after go elsewhere instead of asking it again at once: half of
/// [`DEFAULT_QUOTA_PAUSE`], since an overload is a passing moment rather than a spent quota.
pub const OVERLOAD_PAUSE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    AuthError,
    RateLimit,
    QuotaExhausted,
    InvalidRequest,
    ModelOverloaded,
    Timeout,
    StreamStall,
    NetworkError,
    ProviderServerError,
    ProviderUrlUnresolvable,
    HtmlMaintenance,
    InvalidJson,
    EmptyChoices,
    EmptyContent,
    ErrorPayload,
    EmptyStream,
    /// The request does not fit this model's context window: a larger model may take it.
    ContextOverflow,
    /// A tool call naming a tool the request did not offer, or whose arguments are not a
    /// JSON object with the tool's required properties: an agent cannot run it.
    InvalidToolCall,
    /// The provider does not serve this catalog model (404 or 410): retired or renamed.
    ModelNotFound,
    /// An HTTP 200 whose whole answer is the provider's notice (a paid plan, credits, a
    /// quota, sign up), not the model's reply.
    ProviderNotice,
    /// Asked to finish another model's answer, it started the answer over and departed
    /// from it: nothing of it can follow what the client has.
    ContinuationMisfit,
}

impl FailureKind {
    pub const ALL: [FailureKind; 21] = [
        FailureKind::AuthError,
        FailureKind::RateLimit,
        FailureKind::QuotaExhausted,
        FailureKind::InvalidRequest,
        FailureKind::ModelOverloaded,
        FailureKind::Timeout,
        FailureKind::StreamStall,
        FailureKind::NetworkError,
        FailureKind::ProviderServerError,
        FailureKind::ProviderUrlUnresolvable,
        FailureKind::HtmlMaintenance,
        FailureKind::InvalidJson,
        FailureKind::EmptyChoices,
        FailureKind::EmptyContent,
        FailureKind::ErrorPayload,
        FailureKind::EmptyStream,
        FailureKind::ContextOverflow,
        FailureKind::InvalidToolCall,
        FailureKind::ModelNotFound,
        FailureKind::ProviderNotice,
        FailureKind::ContinuationMisfit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::AuthError => "auth_error",
            FailureKind::RateLimit => "rate_limit",
            FailureKind::QuotaExhausted => "quota_exhausted",
            FailureKind::InvalidRequest => "invalid_request",
            FailureKind::ModelOverloaded => "model_overloaded",
            FailureKind::Timeout => "timeout",
            FailureKind::StreamStall => "stream_stall",
            FailureKind::NetworkError => "network_error",
            FailureKind::ProviderServerError => "provider_server_error",
            FailureKind::ProviderUrlUnresolvable => "provider_url_unresolvable",
            FailureKind::HtmlMaintenance => "html_maintenance",
            FailureKind::InvalidJson => "invalid_json",
            FailureKind::EmptyChoices => "empty_choices",
            FailureKind::EmptyContent => "empty_content",
            FailureKind::ErrorPayload => "error_payload",
            FailureKind::EmptyStream => "empty_stream",
            FailureKind::ContextOverflow => "context_overflow",
            FailureKind::InvalidToolCall => "invalid_tool_call",
            FailureKind::ModelNotFound => "model_not_found",
            FailureKind::ProviderNotice => "provider_notice",
            FailureKind::ContinuationMisfit => "continuation_misfit",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The answer came back but carried nothing usable (the content gate's kinds).
    pub fn is_unusable_answer(self) -> bool {
        matches!(
            self,
            FailureKind::HtmlMaintenance
                | FailureKind::InvalidJson
                | FailureKind::EmptyChoices
                | FailureKind::EmptyContent
                | FailureKind::ErrorPayload
                | FailureKind::EmptyStream
        )
    }

    pub fn is_quota(self) -> bool {
        matches!(self, FailureKind::RateLimit | FailureKind::QuotaExhausted)
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for FailureKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for FailureKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown failure kind {s}")))
    }
}

/// Who a failure is blamed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The provider account or endpoint: keys, quotas, the whole service being down.
    Provider,
    /// This model on this provider.
    Model,
    /// The request itself: another model would likely reject it too.
    Client,
}

/// What one failure means for routing and health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub kind: FailureKind,
    pub blame: Blame,
    /// Try another model for this request.
    pub failover: bool,
    /// Counts against the model's breaker.
    pub damages_health: bool,
    /// Skip every model of this provider for the rest of the request (a bad key).
    pub blocks_provider: bool,
    /// Leave the model alone this long (rate limits and quotas).
    pub quota_pause: Option<Duration>,
    /// Leave this model alone this long, and only this model (it said it is overloaded;
    /// a quota pause may stop its whole provider, a back-off never does).
    pub backoff: Option<Duration>,
    /// What the answer said of a limit that outlasts this attempt (boxed: rare, and a
    /// failure is passed around by value).
    pub limit: Option<Box<LimitSaid>>,
}

/// A limit an answer spoke of, which the ledger keeps beyond the attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitSaid {
    /// A free quota, grant, credit or balance is used up: what it covers and until when.
    /// Kept at its own scope (the model or every model on the key), in place of a quota
    /// pause.
    Exhausted(Exhaustion),
    /// The prompt is larger than the model's tokens-per-minute limit (Groq's 413): the
    /// limit it stated (0 when it did not), so that no prompt that large is sent there
    /// again. Only this prompt is too large: the model is not paused.
    PromptOverTpm(u32),
}

impl Verdict {
    /// The verdict a kind carries by itself; `retry_after` only matters for quota kinds
    /// and an overloaded model.
    pub fn of(kind: FailureKind, retry_after: Option<Duration>) -> Verdict {
        use FailureKind::*;
        let (blame, damages_health) = match kind {
            AuthError | RateLimit | QuotaExhausted => (Blame::Provider, false),
            InvalidRequest => (Blame::Client, false),
            // The model's limit, not its health: the next, larger model is tried.
            ContextOverflow => (Blame::Model, false),
            // Gone, not unhealthy: out of rotation for a day (its back-off), no breaker trip.
            ModelNotFound => (Blame::Model, false),
            // Gone paid (or out of credit), not unhealthy: out of rotation for a while.
            ProviderNotice => (Blame::Model, false),
            // It answered, only not as asked: its own answers are not in doubt.
            ContinuationMisfit => (Blame::Model, false),
            NetworkError | ProviderUrlUnresolvable | ProviderServerError | HtmlMaintenance => {
                (Blame::Provider, true)
            }
            ModelOverloaded | Timeout | StreamStall | InvalidJson | EmptyChoices | EmptyContent
            | ErrorPayload | EmptyStream | InvalidToolCall => (Blame::Model, true),
        };
        let pause = |default: Duration| retry_after.unwrap_or(default).min(MAX_QUOTA_PAUSE);
        Verdict {
            kind,
            blame,
            failover: true,
            damages_health,
            blocks_provider: kind == AuthError,
            quota_pause: kind.is_quota().then(|| pause(DEFAULT_QUOTA_PAUSE)),
            backoff: match kind {
                ModelOverloaded => Some(pause(OVERLOAD_PAUSE)),
                ModelNotFound => Some(MODEL_NOT_FOUND_PAUSE),
                ProviderNotice => Some(PROVIDER_NOTICE_PAUSE),
                _ => None,
            },
            limit: None,
        }
    }

    /// The used-up limit the answer spoke of, if any.
    pub fn exhausted(&self) -> Option<&Exhaustion> {
        match self.limit.as_deref() {
            Some(LimitSaid::Exhausted(e)) => Some(e),
            _ => None,
        }
    }

    /// The tokens-a-minute limit a prompt was refused for, if that was the failure.
    pub fn over_tpm(&self) -> Option<u32> {
        match self.limit.as_deref() {
            Some(LimitSaid::PromptOverTpm(n)) => Some(*n),
            _ => None,
        }
    }

    /// An answer that says a limit is used up: no health damage, no pause of a minute, no
    /// rejected key; the exhaustion says what waits and how long.
    pub fn of_exhaustion(e: Exhaustion) -> Verdict {
        Verdict {
            quota_pause: None,
            limit: Some(Box::new(LimitSaid::Exhausted(e))),
            ..Verdict::of(FailureKind::QuotaExhausted, None)
        }
    }
}

/// Error wording that names the real cause whatever the status says. Checked before the
/// status code, case-insensitively, first match wins: a 400 or a 200 error payload saying
/// "rate limit" is a rate limit.
pub const WORDING_RULES: &[(&str, FailureKind)] = &[
    ("context length", FailureKind::ContextOverflow),
    ("context_length", FailureKind::ContextOverflow),
    ("maximum context", FailureKind::ContextOverflow),
    ("context window", FailureKind::ContextOverflow),
    ("too many tokens", FailureKind::ContextOverflow),
    ("prompt is too long", FailureKind::ContextOverflow),
    ("input is too long", FailureKind::ContextOverflow),
    ("reduce the length", FailureKind::ContextOverflow),
    ("quota exceeded", FailureKind::QuotaExhausted),
    ("exceeded your current quota", FailureKind::QuotaExhausted),
    ("insufficient_quota", FailureKind::QuotaExhausted),
    ("insufficient credits", FailureKind::QuotaExhausted),
    ("quota", FailureKind::QuotaExhausted),
    // OpenRouter's free pool: the model's upstream is at capacity, not this account.
    ("rate-limited upstream", FailureKind::ModelOverloaded),
    ("rate limit", FailureKind::RateLimit),
    ("rate_limit", FailureKind::RateLimit),
    ("ratelimit", FailureKind::RateLimit),
    ("too many requests", FailureKind::RateLimit),
    ("overloaded", FailureKind::ModelOverloaded),
    ("capacity", FailureKind::ModelOverloaded),
];

/// The kind an error text's wording points to, if any.
pub fn kind_from_wording(text: &str) -> Option<FailureKind> {
    let lower = text.to_ascii_lowercase();
    WORDING_RULES
        .iter()
        .find(|(needle, _)| lower.contains(needle))
        .map(|&(_, kind)| kind)
}

/// A refusal of a prompt above the model's tokens-per-minute limit (Groq: 413, "Request
/// too large for model ... on tokens per minute (TPM): Limit 8000, Requested 11881"): the
/// limit it states, 0 when it states none. `code: rate_limit_exceeded` alone cannot tell
/// this from a 429's "retry later".
pub fn over_tpm(status: u16, text: &str) -> Option<u32> {
    let lower = text.to_ascii_lowercase();
    let per_minute = lower.contains("tokens per minute") || lower.contains("(tpm)");
    let too_large = status == 413
        || lower.contains("request too large")
        || lower.contains("reduce your message size");
    if !(per_minute && too_large) {
        return None;
    }
    let limit = lower.find("limit ").and_then(|at| {
        let digits: String = lower[at + 6..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<u32>().ok()
    });
    Some(limit.unwrap_or(0))
}

/// True when a body is an HTML page (a maintenance or login page) rather than an API answer.
pub fn looks_like_html(content_type: Option<&str>, body: &[u8]) -> bool {
    let html = b"text/html";
    if content_type.is_some_and(|c| {
        c.as_bytes()
            .windows(html.len())
            .any(|w| w.eq_ignore_ascii_case(html))
    }) {
        return true;
    }
    let at = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(body.len());
    let starts = |tag: &[u8]| {
        body[at..]
            .get(..tag.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(tag))
    };
    starts(b"<!doctype html") || starts(b"<html")
}

/// Reads `Retry-After`: delta seconds or an HTTP date, relative to `now`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        // Capped before converting: a provider may send any number.
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(MAX_QUOTA_PAUSE.as_secs_f64())));
    }
    let at = crate::time::parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Reads a rate-limit reset header: plain seconds (`30`, `6.5`) or a duration such as `1m30s`,
/// `120ms`, `2h`. Values that look like epoch timestamps are not durations and are ignored.
pub fn parse_reset(value: &str) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        // Some providers send an absolute Unix time here; that is not a wait.
        return (secs.is_finite() && (0.0..1_000_000_000.0).contains(&secs))
            .then(|| Duration::from_secs_f64(secs.min(MAX_QUOTA_PAUSE.as_secs_f64())));
    }
    let mut total = 0.0f64;
    let mut number = String::new();
    let mut chars = v.chars().peekable();
    let mut any = false;
    while let Some(ch) = chars.next() {
        if ch.is_ascii_digit() || ch == '.' {
            number.push(ch);
            continue;
        }
        let n: f64 = number.parse().ok()?;
        number.clear();
        let unit = match ch {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += n * unit;
        any = true;
    }
    (any && number.is_empty())
        .then(|| Duration::from_secs_f64(total.min(MAX_QUOTA_PAUSE.as_secs_f64())))
}

/// How long a provider asks to be left alone, as a `Retry-After` value: its own
/// `Retry-After`, else the longest of its rate-limit reset headers (in whole seconds).
pub fn wait_header(retry_after: Option<String>, resets: &[String]) -> Option<String> {
    retry_after.or_else(|| {
        resets
            .iter()
            .filter_map(|v| parse_reset(v))
            .max()
            .map(|d| d.as_secs_f64().ceil().to_string())
    })
}

/// Classifies an HTTP answer that is not a usable success: a non-2xx status, or a 2xx whose
/// body the gate rejected (`gate_kind`). `body` is the (possibly truncated) error text.
/// `stated_reset_ms`: when the answer's headers say its limit comes back (uncapped), for
/// an answer that says a limit is used up ([`exhaustion`]). A quota body is never read as
/// a rejected key, whatever its status.
pub fn classify_http(
    status: u16,
    content_type: Option<&str>,
    retry_after: Option<&str>,
    body: &[u8],
    gate_kind: Option<FailureKind>,
    stated_reset_ms: Option<u64>,
    now: SystemTime,
) -> Verdict {
    let retry = retry_after.and_then(|v| parse_retry_after(v, now));
    let text = String::from_utf8_lossy(body);
    let html = looks_like_html(content_type, body);
    // A 2xx is read for it only when its body was the provider's error or notice: the
    // gate's other details are fcm's own words, or a model's.
    let may_say = status != 200
        || matches!(
            gate_kind,
            Some(FailureKind::ErrorPayload | FailureKind::ProviderNotice)
        );
    if !html && may_say {
        let now_ms = crate::time::unix_ms(now);
        if let Some(e) = exhaustion::read(status, &text, stated_reset_ms, now_ms) {
            return Verdict::of_exhaustion(e);
        }
        if let Some(limit) = over_tpm(status, &text) {
            return Verdict {
                limit: Some(Box::new(LimitSaid::PromptOverTpm(limit))),
                ..Verdict::of(FailureKind::ContextOverflow, None)
            };
        }
    }
    // Wording in an HTML page is marketing copy, not an API error: don't read it.
    let worded = if html { None } else { kind_from_wording(&text) };
    let kind = match status {
        401 | 403 => FailureKind::AuthError,
        402 => FailureKind::QuotaExhausted,
        // A 429 that speaks of the model's capacity (Mistral's 3505, OpenRouter's
        // upstream) is the model's passing moment, not this account's limit.
        429 => match worded {
            Some(k @ (FailureKind::QuotaExhausted | FailureKind::ModelOverloaded)) => k,
            _ => FailureKind::RateLimit,
        },
        // A notice says "quota" or "credits" in the provider's words, not as an error.
        _ if worded.is_some()
            && !matches!(
                gate_kind,
                Some(FailureKind::EmptyStream | FailureKind::ProviderNotice)
            ) =>
        {
            worded.unwrap()
        }
        _ if html => FailureKind::HtmlMaintenance,
        408 => FailureKind::Timeout,
        413 => FailureKind::ContextOverflow,
        529 => FailureKind::ModelOverloaded,
        500..=599 => FailureKind::ProviderServerError,
        400..=499 => FailureKind::InvalidRequest,
        _ => gate_kind.unwrap_or(FailureKind::InvalidJson),
    };
    // The model is gone or unknown at this provider: a stale catalog entry, not the
    // client's fault, and it should stop being routed to.
    let kind = match (kind, status) {
        (FailureKind::InvalidRequest, 404 | 410) => FailureKind::ModelNotFound,
        _ => kind,
    };
    Verdict::of(kind, retry)
}

pub fn classify_transport(failure: TransportFailure) -> Verdict {
    Verdict::of(
        match failure {
            TransportFailure::Timeout => FailureKind::Timeout,
            TransportFailure::DnsFailure => FailureKind::ProviderUrlUnresolvable,
            TransportFailure::Connection | TransportFailure::NotConnected => {
                FailureKind::NetworkError
            }
        },
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureKind::*;

    fn http(status: u16, ct: Option<&str>, ra: Option<&str>, body: &str) -> Verdict {
        classify_http(
            status,
            ct,
            ra,
            body.as_bytes(),
            None,
            None,
            SystemTime::UNIX_EPOCH,
        )
    }

    fn gated(kind: FailureKind, body: &str) -> Verdict {
        classify_http(
            200,
            Some("application/json"),
            None,
            body.as_bytes(),
            Some(kind),
            None,
            SystemTime::UNIX_EPOCH,
        )
    }

    #[test]
    fn auth_error_blocks_provider_without_damage() {
        for status in [401, 403] {
            let v = http(
                status,
                None,
                None,
                r#"{"error":{"message":"invalid api key"}}"#,
            );
            assert_eq!(v.kind, AuthError);
            assert!(v.blocks_provider && v.failover && !v.damages_health);
            assert_eq!(v.blame, Blame::Provider);
        }
    }

    #[test]
    fn rate_limit_pauses_by_retry_after_capped() {
        let v = http(429, None, Some("7"), "slow down");
        assert_eq!(
            (v.kind, v.quota_pause),
            (RateLimit, Some(Duration::from_secs(7)))
        );
        assert!(!v.damages_health && !v.blocks_provider);
        assert_eq!(
            http(429, None, None, "").quota_pause,
            Some(DEFAULT_QUOTA_PAUSE)
        );
        assert_eq!(
            http(429, None, Some("86400"), "").quota_pause,
            Some(MAX_QUOTA_PAUSE)
        );
        assert_eq!(
            http(429, None, Some("1e300"), "").quota_pause,
            Some(MAX_QUOTA_PAUSE)
        );
        assert_eq!(
            http(429, None, Some("Sun, 06 Nov 300000000000 08:49:37 GMT"), "").quota_pause,
            Some(DEFAULT_QUOTA_PAUSE)
        );
        let date = "Thu, 01 Jan 1970 00:00:42 GMT";
        assert_eq!(
            http(429, None, Some(date), "").quota_pause,
            Some(Duration::from_secs(42))
        );
    }

    #[test]
    fn quota_exhausted_from_429_wording_or_402() {
        assert_eq!(
            http(429, None, None, "daily quota exceeded").kind,
            QuotaExhausted
        );
        assert_eq!(
            http(402, None, None, "negative balance").kind,
            QuotaExhausted
        );
        // A balance is not back in a minute: the exhaustion says how long, not a pause.
        let v = http(402, None, None, "");
        assert!(v.exhausted().is_some() && v.quota_pause.is_none());
        assert!(!v.blocks_provider, "a quota is not a rejected key");
        let v = http(
            403,
            None,
            None,
            r#"{"error":{"code":"AllocationQuota.FreeTierOnly","message":"The free tier of the model has been exhausted."}}"#,
        );
        assert_eq!((v.kind, v.blocks_provider), (QuotaExhausted, false));
    }

    #[test]
    fn wording_beats_status() {
        assert_eq!(
            http(400, None, None, r#"{"error":"Rate limit reached"}"#).kind,
            RateLimit
        );
        assert_eq!(http(500, None, None, "Too Many Requests").kind, RateLimit);
        assert_eq!(
            gated(ErrorPayload, r#"{"error":{"message":"quota exceeded"}}"#).kind,
            QuotaExhausted
        );
        assert_eq!(
            http(503, None, None, "model is overloaded").kind,
            ModelOverloaded
        );
        assert_eq!(kind_from_wording("no capacity left"), Some(ModelOverloaded));
        assert_eq!(kind_from_wording("fine"), None);
    }

    #[test]
    fn a_429_about_the_models_capacity_is_an_overload_not_this_accounts_limit() {
        let upstream = r#"{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"moonshotai/kimi-k2-0905 is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits","provider_name":"GMICloud"}}}"#;
        let tier = r#"{"object":"error","message":"Service tier capacity exceeded for this model.","type":"service_tier_capacity_exceeded","param":null,"code":"3505"}"#;
        for body in [upstream, tier] {
            let v = http(429, None, None, body);
            assert_eq!(v.kind, ModelOverloaded, "{body}");
            assert_eq!(v.quota_pause, None, "no pause for the account: {body}");
            assert_eq!(v.backoff, Some(OVERLOAD_PAUSE));
        }
        assert_eq!(
            http(429, None, Some("7"), upstream).backoff,
            Some(Duration::from_secs(7))
        );
        let own = r#"{"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429}}"#;
        assert_eq!(http(429, None, None, own).kind, RateLimit);
    }

    #[test]
    fn every_wording_rule_is_honoured_inside_any_status() {
        for (needle, kind) in WORDING_RULES {
            let body = format!(
                "{{\"error\":{{\"message\":\"Upstream says: {}.\"}}}}",
                needle.to_uppercase()
            );
            // The first rule that matches wins: a later rule may be shadowed by an earlier one.
            let expected = kind_from_wording(needle).unwrap();
            assert_eq!(http(400, None, None, &body).kind, expected, "{needle}");
            assert_eq!(
                gated(ErrorPayload, &body).kind,
                expected,
                "{needle} in a 200 error payload"
            );
            assert_eq!(expected, *kind, "{needle} is reached, not shadowed");
        }
    }

    #[test]
    fn reset_headers() {
        let cases: &[(&str, Option<u64>)] = &[
            ("30", Some(30_000)),
            ("6.5", Some(6_500)),
            ("1m30s", Some(90_000)),
            ("120ms", Some(120)),
            ("2h", Some(MAX_QUOTA_PAUSE.as_millis() as u64)),
            ("1796107501", None),
            ("soon", None),
            ("5x", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_reset(text).map(|d| d.as_millis() as u64),
                *want,
                "{text}"
            );
        }
    }

    #[test]
    fn context_overflow_fails_over_without_damage() {
        let v = http(
            400,
            None,
            None,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#,
        );
        assert_eq!(
            (v.kind, v.failover, v.damages_health, v.blame),
            (ContextOverflow, true, false, Blame::Model)
        );
        assert_eq!(http(413, None, None, "").kind, ContextOverflow);
    }

    #[test]
    fn a_prompt_over_the_models_tpm_is_too_large_there_not_a_rate_limit() {
        let groq = r#"{"error":{"message":"Request too large for model `openai/gpt-oss-120b` in organization `org_abc` service tier `on_demand` on tokens per minute (TPM): Limit 8000, Requested 11881, Please reduce your message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}"#;
        let v = http(413, None, None, groq);
        assert_eq!((v.kind, v.over_tpm()), (ContextOverflow, Some(8000)));
        assert_eq!((v.quota_pause, v.damages_health), (None, false));
        let v = http(
            429,
            None,
            None,
            "Rate limit reached on tokens per minute (TPM): Limit 6000. Please try again in 7.2s.",
        );
        assert_eq!(
            (v.kind, v.over_tpm()),
            (RateLimit, None),
            "a full minute, not a large prompt"
        );
        assert_eq!(http(413, None, None, "").over_tpm(), None);
    }

    #[test]
    fn invalid_request_is_blamed_on_client() {
        let v = http(400, None, None, r#"{"error":{"message":"bad field"}}"#);
        assert_eq!((v.kind, v.blame), (InvalidRequest, Blame::Client));
        assert!(v.failover && !v.damages_health);
        assert_eq!(http(422, None, None, "").kind, InvalidRequest);
    }

    #[test]
    fn a_gone_model_is_out_for_a_day_without_damage() {
        for status in [404, 410] {
            let v = http(status, None, None, "gone");
            assert_eq!(
                (v.kind, v.blame, v.damages_health, v.backoff, v.failover),
                (
                    ModelNotFound,
                    Blame::Model,
                    false,
                    Some(MODEL_NOT_FOUND_PAUSE),
                    true
                )
            );
        }
        assert_eq!(http(400, None, None, "bad").kind, InvalidRequest);
    }

    #[test]
    fn model_overloaded_on_529() {
        let v = http(529, None, None, "");
        assert_eq!((v.kind, v.damages_health), (ModelOverloaded, true));
    }

    #[test]
    fn an_overloaded_model_backs_off_alone() {
        let payload = r#"{"error":{"message":"The model is overloaded. Please try again later."}}"#;
        let cases: &[(Verdict, Option<Duration>)] = &[
            // A 200 whose whole body is the error, as the gate hands it over.
            (gated(ErrorPayload, payload), Some(OVERLOAD_PAUSE)),
            (http(529, None, None, ""), Some(OVERLOAD_PAUSE)),
            (
                http(503, None, Some("7"), "model overloaded"),
                Some(Duration::from_secs(7)),
            ),
            (http(529, None, Some("86400"), ""), Some(MAX_QUOTA_PAUSE)),
            (http(500, None, Some("7"), "boom"), None),
            (http(429, None, Some("7"), ""), None),
        ];
        for (v, backoff) in cases {
            assert_eq!(v.backoff, *backoff, "{v:?}");
        }
        let v = gated(ErrorPayload, payload);
        assert_eq!(
            (v.kind, v.quota_pause),
            (ModelOverloaded, None),
            "no quota pause"
        );
    }

    #[test]
    fn server_errors_and_timeouts() {
        assert_eq!(http(500, None, None, "boom").kind, ProviderServerError);
        assert_eq!(http(502, None, None, "").kind, ProviderServerError);
        assert_eq!(http(408, None, None, "").kind, Timeout);
        assert!(http(500, None, None, "").damages_health);
    }

    #[test]
    fn html_pages_are_maintenance() {
        let page =
            "<!DOCTYPE html><html><body>Scheduled maintenance: capacity upgrade</body></html>";
        assert_eq!(
            http(503, Some("text/html"), None, page).kind,
            HtmlMaintenance
        );
        assert_eq!(gated(InvalidJson, page).kind, HtmlMaintenance);
        assert_eq!(http(200, None, None, "  <html>").kind, HtmlMaintenance);
    }

    #[test]
    fn gate_kinds_pass_through() {
        for kind in [
            InvalidJson,
            EmptyChoices,
            EmptyContent,
            ErrorPayload,
            EmptyStream,
        ] {
            let v = gated(kind, "{}");
            assert_eq!(
                (v.kind, v.blame, v.damages_health),
                (kind, Blame::Model, true)
            );
            assert!(kind.is_unusable_answer());
        }
    }

    #[test]
    fn transport_failures() {
        assert_eq!(classify_transport(TransportFailure::Timeout).kind, Timeout);
        assert_eq!(
            classify_transport(TransportFailure::DnsFailure).kind,
            ProviderUrlUnresolvable
        );
        assert_eq!(
            classify_transport(TransportFailure::Connection).kind,
            NetworkError
        );
        assert!(classify_transport(TransportFailure::Connection).damages_health);
    }

    #[test]
    fn stream_stall_and_url_kinds_have_verdicts() {
        assert_eq!(Verdict::of(StreamStall, None).blame, Blame::Model);
        assert_eq!(
            Verdict::of(ProviderUrlUnresolvable, None).blame,
            Blame::Provider
        );
    }

    #[test]
    fn kind_names_round_trip() {
        for kind in FailureKind::ALL {
            assert_eq!(FailureKind::parse(kind.as_str()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(serde_json::from_str::<FailureKind>(&json).unwrap(), kind);
        }
    }
}
