//! One attempt: send a chat request to one model and judge what comes back.
//!
//! This is the single path shared by `fcm bench`, `fcm check` and `fcm serve`, so a model
//! judged broken by the bench is judged broken by the router for the same reason. For
//! streams it holds the bytes until the first useful content (the hold buffer), so a failed
//! attempt never reaches a client; `stream` owns a committed stream from there on.

use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::catalog::{KeySource, ModelRef};
use crate::classify::{classify_http, classify_transport, FailureKind, TransportFailure, Verdict};
use crate::gate::{check_payload, AnswerStats, ContentValidation, GateReject};
use crate::upstream::{io_failure, read_limited, ExchangeTimeouts, Incoming, Outgoing, Upstream};

/// Error bodies are read up to this size for classification.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// Connection setup never waits longer than this, whatever the other deadlines.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything needed to call one model, resolved once.
#[derive(Debug, Clone)]
pub struct Target {
    /// `provider/modelId`.
    pub key: String,
    pub provider_id: String,
    /// The model id sent on the wire.
    pub wire_model: String,
    /// The chat URL, or why it cannot be built (a missing URL variable).
    pub url: Result<String, String>,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub drop_fields: Vec<String>,
}

impl Target {
    pub fn resolve(m: ModelRef<'_>, keys: &KeySource<'_>, session_id: &str) -> Target {
        let (_, api_key) = keys.lookup(m.provider);
        let mut headers: Vec<(String, String)> = m
            .provider
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(h) = &m.provider.session_header {
            headers.push((h.clone(), session_id.to_string()));
        }
        Target {
            key: m.key(),
            provider_id: m.provider.id.clone(),
            wire_model: m.model.id.clone(),
            url: m.provider.chat_url(keys.env),
            api_key,
            headers,
            drop_fields: m.provider.drop_fields.clone(),
        }
    }

    /// The client's request made this target's: `model` replaced, rejected fields dropped,
    /// orphan tool results left out. Written straight from the client's body, without
    /// copying it (a long history is megabytes, and every attempt sends it).
    pub fn request_body(&self, client: &Value) -> Vec<u8> {
        let Some(obj) = client.as_object() else {
            return serde_json::to_vec(client).expect("JSON values serialise");
        };
        let outgoing = TargetBody {
            body: obj,
            model: &self.wire_model,
            drop_fields: &self.drop_fields,
            messages: obj
                .get("messages")
                .and_then(Value::as_array)
                .map(|m| answered_messages(m)),
        };
        serde_json::to_vec(&outgoing).expect("JSON values serialise")
    }

    /// Removes the key from a text that might echo it (provider error messages do).
    fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(k) if k.len() >= 4 => text.replace(k.as_str(), "[redacted]"),
            _ => text.to_string(),
        }
    }
}

/// One target's view of the client's body, serialised in the body's key order.
struct TargetBody<'a> {
    body: &'a serde_json::Map<String, Value>,
    model: &'a str,
    drop_fields: &'a [String],
    messages: Option<Vec<&'a Value>>,
}

impl serde::Serialize for TargetBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.body {
            if self.drop_fields.iter().any(|f| f == key) {
                continue;
            }
            match (key.as_str(), &self.messages) {
                ("model", _) => map.serialize_entry(key, self.model)?,
                ("messages", Some(messages)) => map.serialize_entry(key, messages)?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        if !self.body.contains_key("model") {
            map.serialize_entry("model", self.model)?;
        }
        map.end()
    }
}

/// The messages without `tool` results that answer no earlier assistant tool call: strict
/// providers reject the whole request for one (clients trimming long histories leave them
/// behind).
fn answered_messages(messages: &[Value]) -> Vec<&Value> {
    let mut calls = std::collections::HashSet::new();
    messages
        .iter()
        .filter(|m| {
            for call in m
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    calls.insert(id);
                }
            }
            m.get("role").and_then(Value::as_str) != Some("tool")
                || m.get("tool_call_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| calls.contains(id))
        })
        .collect()
}

/// Deadlines and strictness for one attempt.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Non-stream: the whole answer must arrive within this.
    pub body_read: Duration,
    /// Stream: the first useful content must arrive within this.
    pub first_token: Duration,
    /// Stream: after content, the longest silence between chunks.
    pub stream_stall: Duration,
    /// Hard end of the attempt (the caller's overall budget).
    pub deadline: Instant,
    pub validation: ContentValidation,
    /// Largest non-stream answer accepted.
    pub max_body: usize,
    /// Streams: keep the parsed chat chunks for a protocol translator.
    pub keep_chunks: bool,
}

/// A failed attempt.
#[derive(Debug, Clone)]
pub struct Failure {
    pub verdict: Verdict,
    /// The provider's HTTP status, when it answered.
    pub status: Option<u16>,
    /// One line, safe to show (no key).
    pub detail: String,
    pub elapsed: Duration,
    /// The provider's `Retry-After` (or reset header), whatever the status.
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn kind(&self) -> FailureKind {
        self.verdict.kind
    }
}

/// A committed answer.
pub enum Answer {
    /// A complete non-stream body that passed the gate.
    Full {
        status: u16,
        body: Vec<u8>,
        stats: AnswerStats,
        elapsed: Duration,
    },
    /// A stream with useful content (or past the hold limit); `held` goes to the client first.
    Stream(Box<crate::stream::OpenStream>),
}

pub(crate) fn failure(
    verdict: Verdict,
    status: Option<u16>,
    detail: String,
    started: Instant,
) -> Failure {
    Failure {
        verdict,
        status,
        detail,
        elapsed: started.elapsed(),
        retry_after: None,
    }
}

impl Target {
    pub(crate) fn gate_failure(&self, r: GateReject, started: Instant) -> Failure {
        let verdict = classify_http(
            200,
            None,
            None,
            r.detail.as_bytes(),
            Some(r.kind),
            SystemTime::now(),
        );
        failure(
            verdict,
            Some(200),
            one_line(&self.redact(&r.detail)),
            started,
        )
    }

    pub(crate) fn io_error(&self, e: &std::io::Error, started: Instant) -> Failure {
        let (t, msg) = io_failure(e);
        failure(classify_transport(t), None, self.redact(&msg), started)
    }
}

/// The first 200 characters of a text, on one line.
pub fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// Sends `client_body` to `target` and judges the answer. Streams return once committed.
pub fn attempt(
    upstream: &Upstream,
    target: &Target,
    client_body: &Value,
    stream: bool,
    limits: &Limits,
) -> Result<Answer, Failure> {
    let started = Instant::now();
    let url = match &target.url {
        Ok(u) => u,
        Err(why) => {
            let v = Verdict::of(FailureKind::ProviderUrlUnresolvable, None);
            return Err(failure(v, None, why.clone(), started));
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
        api_key: target.api_key.as_deref(),
        headers: &target.headers,
        body: target.request_body(client_body),
        stream,
    };
    let mut incoming = upstream.send(out, timeouts).map_err(|(t, msg)| {
        let mut f = failure(classify_transport(t), None, target.redact(&msg), started);
        if t == TransportFailure::Timeout && started.elapsed() >= limits.body_read.min(remaining) {
            f.detail = format!("no answer within {} ms", started.elapsed().as_millis());
        }
        f
    })?;
    if !(200..300).contains(&incoming.status) {
        let (body, _) = read_limited(&mut incoming.body, ERROR_BODY_LIMIT).unwrap_or_default();
        let verdict = classify_http(
            incoming.status,
            incoming.content_type.as_deref(),
            incoming.retry_after.as_deref(),
            &body,
            None,
            SystemTime::now(),
        );
        let detail = error_detail(target, &body);
        let mut f = failure(verdict, Some(incoming.status), detail, started);
        f.retry_after = incoming
            .retry_after
            .as_deref()
            .and_then(|v| crate::classify::parse_retry_after(v, SystemTime::now()));
        return Err(f);
    }
    if stream && (incoming.is_event_stream() || incoming.content_type.is_none()) {
        return crate::stream::open(incoming, target, limits, started)
            .map(|s| Answer::Stream(Box::new(s)));
    }
    read_full(incoming, target, limits, started)
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
    let (body, truncated) = read_limited(&mut incoming.body, limits.max_body)
        .map_err(|e| target.io_error(&e, started))?;
    if truncated {
        let v = Verdict::of(FailureKind::InvalidJson, None);
        let detail = format!("answer larger than {} MiB", limits.max_body / (1024 * 1024));
        return Err(failure(v, Some(status), detail, started));
    }
    let gate = check_payload(&body, limits.validation);
    let gate = match gate {
        Err(r)
            if r.kind == FailureKind::InvalidJson
                && crate::classify::looks_like_html(incoming.content_type.as_deref(), &body) =>
        {
            Err(GateReject {
                kind: FailureKind::HtmlMaintenance,
                detail: "an HTML page instead of JSON".into(),
            })
        }
        other => other,
    };
    match gate {
        Ok(stats) => Ok(Answer::Full {
            status,
            body,
            stats,
            elapsed: started.elapsed(),
        }),
        Err(r) => Err(target.gate_failure(r, started)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn target(key: &str) -> Target {
        let catalog = Catalog::parse(crate::catalog::EMBEDDED, "embedded").unwrap();
        let env = |v: &str| {
            (v == "ZAI_API_KEY" || v == "OPENCODE_ZEN_API_KEY")
                .then(|| "k-123456789012".to_string())
        };
        let keys = KeySource {
            env: &env,
            config_keys: &BTreeMap::new(),
        };
        Target::resolve(catalog.find(key).unwrap(), &keys, "session-1")
    }

    #[test]
    fn request_body_replaces_model_and_drops_rejected_fields() {
        let t = target("zai/glm-5.3-flash");
        let client = json!({"model": "fcm", "messages": [], "stream": true, "parallel_tool_calls": true, "user": "u"});
        let sent: Value = serde_json::from_slice(&t.request_body(&client)).unwrap();
        assert_eq!(
            sent,
            json!({"model": "glm-5.3-flash", "messages": [], "stream": true})
        );
        assert_eq!(t.api_key.as_deref(), Some("k-123456789012"));
    }

    #[test]
    fn orphan_tool_results_are_dropped() {
        let t = target("zai/glm-5.3-flash");
        let client = json!({"messages": [
            {"role": "tool", "tool_call_id": "gone", "content": "old"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "tool", "tool_call_id": "c9", "content": "stray"}
        ]});
        let sent: Value = serde_json::from_slice(&t.request_body(&client)).unwrap();
        let roles: Vec<&str> = sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool"]);
        assert_eq!(sent["messages"][2]["tool_call_id"], "c1");
    }

    #[test]
    fn provider_headers_and_session_id_are_sent() {
        let t = target("opencode-zen/big-pickle");
        assert!(t
            .headers
            .contains(&("x-opencode-session".to_string(), "session-1".to_string())));
        let t = target("zai/glm-5.3-flash");
        assert!(t.headers.is_empty());
    }

    #[test]
    fn redaction_hides_the_key() {
        let t = target("zai/glm-5.3-flash");
        assert_eq!(
            t.redact("bad key k-123456789012 given"),
            "bad key [redacted] given"
        );
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

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\n  b\tc"), "a b c");
        assert!(one_line(&"x".repeat(300)).ends_with('…'));
    }
}
