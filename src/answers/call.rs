//! One attempt: send a chat request to one model and judge what comes back.
//!
//! This is the single path shared by `fcm bench`, `fcm check` and `fcm serve`, so a model
//! judged broken by the bench is judged broken by the router for the same reason. For
//! streams it holds the bytes until the first useful content (the hold buffer), so a failed
//! attempt never reaches a client; `stream` owns a committed stream from there on.

use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::answers::classify::{classify_http, classify_transport, FailureKind, Verdict};
use crate::answers::failure::{failure, one_line, Failure};
use crate::answers::gate::{check_answer, AnswerStats, ContentValidation, GateReject};
use crate::answers::limits::Limits;
use crate::answers::notice::only_a_notice;
use crate::providers::catalog::ApiKey;
use crate::providers::exchange::{
    read_limited, Exchange, ExchangeTimeouts, Incoming, Outgoing, TransportFailure,
};
use crate::providers::target::Target;

/// Error bodies are read up to this size for classification.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// Connection setup never waits longer than this, whatever the other deadlines.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A committed answer.
pub enum Answer {
    /// A complete non-stream body that passed the gate.
    Full {
        status: u16,
        body: Vec<u8>,
        /// The body as the gate parsed it (`None` when validation is off).
        parsed: Option<Value>,
        stats: AnswerStats,
        elapsed: Duration,
        /// The rate-limit windows the response head reported.
        rate: Vec<crate::providers::quota::Window>,
    },
    /// A stream with useful content (or past the hold limit); `held` goes to the client first.
    Stream(Box<crate::answers::stream::OpenStream>),
}

/// Sets a translated chat request's `stream`, and when it streams asks for the usage chunk
/// (`stream_options.include_usage`): the one rule every chat request fcm builds follows, so
/// that a streamed answer's tokens are counted whatever protocol the client spoke.
pub(crate) fn set_stream(out: &mut serde_json::Map<String, Value>, stream: bool) {
    out.insert("stream".into(), json!(stream));
    if stream {
        out.insert("stream_options".into(), json!({"include_usage": true}));
    }
}

/// Sends `client_body` to `target` with `key` (one of its keys, or none for a provider
/// without one) and judges the answer. Streams return once committed.
pub fn call(
    upstream: &dyn Exchange,
    target: &Target,
    key: Option<&ApiKey>,
    client_body: &Value,
    stream: bool,
    limits: &Limits,
) -> Result<Answer, Failure> {
    let started = Instant::now();
    let url = match &target.url {
        Ok(u) => u,
        Err(why) => {
            let v = Verdict::of(FailureKind::ProviderUrlUnresolvable, None);
            let mut f = failure(v, None, why.to_string(), started);
            f.reached = false;
            return Err(f);
        }
    };
    let remaining = limits.deadline.saturating_duration_since(started);
    if remaining.is_zero() {
        return Err(failure(
            Verdict::of(FailureKind::Timeout, None),
            None,
            "no time left in the budget".into(),
            started,
        ));
    }
    let timeouts = if stream {
        ExchangeTimeouts {
            connect: CONNECT_TIMEOUT.min(remaining),
            // A committed stream runs as long as data keeps coming: no overall cap.
            per_call: None,
            per_read: Some(
                limits.first_token.max(limits.stream_stall).min(remaining)
                    + Duration::from_millis(500),
            ),
            head: Some(limits.first_token.min(remaining)),
        }
    } else {
        ExchangeTimeouts {
            connect: CONNECT_TIMEOUT.min(remaining),
            per_call: Some(limits.body_read.min(remaining)),
            per_read: None,
            head: None,
        }
    };
    let out = Outgoing {
        url,
        api_key: key.map(|k| k.value.as_str()),
        headers: &target.headers,
        body: target.request_body(client_body),
        stream,
    };
    let mut incoming = upstream.send(out, timeouts).map_err(|(t, msg)| {
        let mut f = failure(classify_transport(t), None, target.redact(&msg), started);
        f.reached = t.reached_provider();
        if t == TransportFailure::Timeout && started.elapsed() >= limits.body_read.min(remaining) {
            f.detail = format!("no answer within {} ms", started.elapsed().as_millis()).into();
        }
        f
    })?;
    // When the answer says its limit comes back, uncapped: an exhausted day or grant is
    // kept until then, not for the longest pause.
    let stated_reset = stated_reset(incoming.retry_after.as_deref(), &incoming.rate);
    // `Retry-After` first; else the longest of the reset headers.
    incoming.retry_after = crate::answers::classify::wait_header(
        incoming.retry_after.take(),
        &std::mem::take(&mut incoming.resets),
    );
    // What the provider says is left goes with whatever comes of the answer.
    let rate = std::mem::take(&mut incoming.rate);
    let mut judged = judge(incoming, target, stream, limits, stated_reset, started);
    match &mut judged {
        Ok(Answer::Full { rate: r, .. }) => *r = rate,
        Ok(Answer::Stream(s)) => s.rate = rate,
        Err(f) => f.rate = rate.into(),
    }
    judged
}

/// Judges a provider's answer: an error status, a stream to hold, or a full body.
fn judge(
    mut incoming: Incoming,
    target: &Target,
    stream: bool,
    limits: &Limits,
    stated_reset: Option<u64>,
    started: Instant,
) -> Result<Answer, Failure> {
    if !(200..300).contains(&incoming.status) {
        let (body, _) = read_limited(&mut incoming.body, ERROR_BODY_LIMIT).unwrap_or_default();
        let verdict = classify_http(
            incoming.status,
            incoming.content_type.as_deref(),
            incoming.retry_after.as_deref(),
            &body,
            None,
            stated_reset,
            SystemTime::now(),
        );
        let detail = error_detail(target, &body);
        let mut f = failure(verdict, Some(incoming.status), detail, started);
        f.retry_after = incoming
            .retry_after
            .as_deref()
            .and_then(|v| crate::answers::classify::parse_retry_after(v, SystemTime::now()));
        return Err(f);
    }
    if stream && (incoming.is_event_stream() || incoming.content_type.is_none()) {
        let open = crate::answers::stream::open(incoming, target, limits, started)?;
        if limits.validation == ContentValidation::Strict {
            if let Some(notice) = held_notice(&open.held, target) {
                return Err(notice_failure(target, &notice, started));
            }
        }
        return Ok(Answer::Stream(Box::new(open)));
    }
    read_full(incoming, target, limits, started)
}

/// The provider notice a stream said before it was committed, when that is all it said: the
/// held events' deltas (a notice comes as one piece, written by the provider, not the
/// model; a stream's later text is the client's by then).
fn held_notice(held: &[u8], target: &Target) -> Option<String> {
    let mut events = Vec::new();
    crate::answers::sse::SseParser::new().feed(held, &mut events);
    let deltas: Vec<Value> = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .filter_map(|c| c.pointer("/choices/0/delta").cloned())
        .collect();
    if deltas.is_empty() {
        return None;
    }
    only_a_notice(&deltas, &target.notices)
}

/// A whole answer (or a stream's first words) that was the provider's notice, quoted: a
/// notice that a quota or the day's limit is used up is an exhaustion, kept at its scope
/// until its reset; any other (a paid plan, sign up) a provider notice.
pub(crate) fn notice_failure(target: &Target, notice: &str, started: Instant) -> Failure {
    let detail = one_line(&format!("a provider notice: {}", target.redact(notice)));
    let now = crate::time::now_ms();
    let verdict = match crate::answers::exhaustion::read(200, notice, None, now) {
        Some(e) => Verdict::of_exhaustion(e),
        None => Verdict::of(FailureKind::ProviderNotice, None),
    };
    failure(verdict, Some(200), detail, started)
}

/// When an answer's headers say its spent limit comes back (ms since the epoch),
/// uncapped: its `Retry-After` (seconds or a date), else the latest reset of a reported
/// window with nothing left.
fn stated_reset(
    retry_after: Option<&str>,
    rate: &[crate::providers::quota::Window],
) -> Option<u64> {
    let now = SystemTime::now();
    let now_ms = crate::time::unix_ms(now);
    let from_header = retry_after.and_then(|v| {
        let v = v.trim();
        match v.parse::<f64>() {
            Ok(secs) if secs.is_finite() && secs >= 0.0 => {
                Some(now_ms.saturating_add((secs.min(1e9) * 1000.0) as u64))
            }
            Ok(_) => None,
            Err(_) => crate::time::parse_http_date(v).map(crate::time::unix_ms),
        }
    });
    from_header.or_else(|| {
        rate.iter()
            .filter(|w| w.remaining == Some(0) && w.reset_at > now_ms)
            .map(|w| w.reset_at)
            .max()
    })
}

/// A provider error body as one line: the `error.message` when there is one.
/// Redacts before cutting to one line: a key that crossed the cut would not match.
fn error_detail(target: &Target, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let msg = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .or_else(|| v.get("error").filter(|e| e.is_string()))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| text.into_owned());
    one_line(&target.redact(&msg))
}

fn read_full(
    mut incoming: Incoming,
    target: &Target,
    limits: &Limits,
    started: Instant,
) -> Result<Answer, Failure> {
    let status = incoming.status;
    let (mut body, truncated) = match read_limited(&mut incoming.body, limits.max_body) {
        Ok(read) => read,
        // The answer said it was done: what happened to the connection after it does not
        // undo it (a body cut before its declared end, or a chunked one never ended).
        Err((_, body)) if says_done(&body) => (body, false),
        Err((e, _)) => return Err(target.io_error(&e, started)),
    };
    // Before the gate parses it: the parsed answer the protocols reuse is clean too.
    if let std::borrow::Cow::Owned(clean) = target.secrets.redact_bytes(&body) {
        body = clean;
    }
    if truncated {
        let v = Verdict::of(FailureKind::InvalidJson, None);
        let detail = format!("answer larger than {} MiB", limits.max_body / (1024 * 1024));
        return Err(failure(v, Some(status), detail, started));
    }
    let gate = check_answer(
        &body,
        limits.validation,
        limits.tools.as_deref(),
        &target.notices,
    );
    let gate = match gate {
        Err(r)
            if r.kind == FailureKind::InvalidJson
                && crate::answers::classify::looks_like_html(
                    incoming.content_type.as_deref(),
                    &body,
                ) =>
        {
            Err(GateReject {
                kind: FailureKind::HtmlMaintenance,
                detail: "an HTML page instead of JSON".into(),
            })
        }
        other => other,
    };
    match gate {
        Ok((stats, parsed)) => Ok(Answer::Full {
            status,
            body,
            parsed,
            stats,
            elapsed: started.elapsed(),
            rate: Vec::new(),
        }),
        Err(r) => Err(target.gate_failure_after(r, incoming.retry_after.as_deref(), started)),
    }
}

/// Whether `body` is a whole chat answer that says it is done: JSON whose every choice
/// has its `finish_reason`. Read only when its connection broke before the body's end.
fn says_done(body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let choices = v.get("choices").and_then(Value::as_array);
    choices.is_some_and(|c| {
        !c.is_empty()
            && c.iter()
                .all(|choice| choice.get("finish_reason").is_some_and(|f| !f.is_null()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::target::tests::target;

    #[test]
    fn an_answer_says_it_is_done_by_the_finish_of_every_choice() {
        let done = r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"stop"}]}"#;
        assert!(says_done(done.as_bytes()));
        for not in [
            r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"message":{"content":"Hi"}}]}"#,
            r#"{"choices":[]}"#,
            r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"stop"}"#,
            "",
        ] {
            assert!(!says_done(not.as_bytes()), "{not}");
        }
    }

    #[test]
    fn keys_are_redacted_before_the_detail_is_cut() {
        let t = target("zai/glm-5.3-flash");
        let body = format!(
            "{{\"error\":{{\"message\":\"{} bad key k-123456789012\"}}}}",
            "x".repeat(190)
        );
        let detail = error_detail(&t, body.as_bytes());
        assert!(!detail.contains("k-1234"), "{detail}");
    }
}
