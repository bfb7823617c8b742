//! Decision traces: what the router did for one request, for headers and history.
//!
//! Every answer carries `x-fcm-v2-model`, `x-fcm-v2-attempts`, `x-fcm-v2-decision` and
//! `x-request-id`. The same record, without prompts, answers or keys, goes into the history
//! ring (`history.json`, the last 500 requests) that `fcm history` shows.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::answers::classify::FailureKind;

/// Requests kept in `history.json`.
pub(crate) const HISTORY_LEN: usize = 500;

/// Why a candidate was not tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SkipReason {
    MissingKey,
    ProviderBlocked,
    CircuitOpen,
    QuotaPaused,
    /// The request (estimated) does not fit the model's context window.
    ContextTooSmall,
    /// A set names a model fcm does not know.
    Stale,
    /// The model said it was overloaded a moment ago: left alone for a short back-off.
    OverloadPaused,
    /// A known budget is spent: the catalog's limit, or what the provider said is left.
    QuotaBudget,
    /// Every key of the provider was rejected a moment ago (another provider serves).
    KeyRejected,
    /// The provider said it does not serve this model (404/410): out for a day.
    ModelNotFound,
    /// Its answer was the provider's notice (a paid plan, credits, sign up): out for a while.
    ProviderNotice,
    /// A free quota, grant or balance it draws on is used up (on this key, for this model
    /// or the whole account): out until its reset.
    QuotaExhausted,
    /// Its provider refused or reset connections a moment ago: down for a short pause.
    ProviderDown,
    /// It has not answered yet and a request to it is out: one at a time until it does,
    /// so that a model gone paid or silent is met once, not by every request at once.
    UntriedBusy,
}

impl SkipReason {
    /// Every reason, in declaration order (`ALL[r as usize] == r`).
    pub(crate) const ALL: [SkipReason; 14] = [
        SkipReason::MissingKey,
        SkipReason::ProviderBlocked,
        SkipReason::CircuitOpen,
        SkipReason::QuotaPaused,
        SkipReason::ContextTooSmall,
        SkipReason::Stale,
        SkipReason::OverloadPaused,
        SkipReason::QuotaBudget,
        SkipReason::KeyRejected,
        SkipReason::ModelNotFound,
        SkipReason::ProviderNotice,
        SkipReason::QuotaExhausted,
        SkipReason::ProviderDown,
        SkipReason::UntriedBusy,
    ];

    /// Its name in history, headers and `x-fcm-v2-affinity` (as serialised).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SkipReason::MissingKey => "missing_key",
            SkipReason::ProviderBlocked => "provider_blocked",
            SkipReason::CircuitOpen => "circuit_open",
            SkipReason::QuotaPaused => "quota_paused",
            SkipReason::ContextTooSmall => "context_too_small",
            SkipReason::Stale => "stale",
            SkipReason::OverloadPaused => "overload_paused",
            SkipReason::QuotaBudget => "quota_budget",
            SkipReason::KeyRejected => "key_rejected",
            SkipReason::ModelNotFound => "model_not_found",
            SkipReason::ProviderNotice => "provider_notice",
            SkipReason::QuotaExhausted => "quota_exhausted",
            SkipReason::ProviderDown => "provider_down",
            SkipReason::UntriedBusy => "untried_busy",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skip {
    pub(crate) model: String,
    pub(crate) reason: SkipReason,
    /// The provider whose account-wide quota paused this model (`sharedQuota` providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provider: Option<String>,
    /// When it can be tried again (RFC 3339), where fcm knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) until: Option<String>,
    /// The limit that was reached (`requestsPerDay 50 reached`,
    /// `x-ratelimit-remaining-requests 0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) limit: Option<String>,
}

impl Skip {
    pub(crate) fn new(model: impl Into<String>, reason: SkipReason) -> Skip {
        Skip {
            model: model.into(),
            reason,
            provider: None,
            until: None,
            limit: None,
        }
    }

    /// A model skipped because its provider's shared quota is paused.
    pub(crate) fn provider_paused(model: impl Into<String>, provider: &str) -> Skip {
        Skip {
            provider: Some(provider.to_string()),
            ..Skip::new(model, SkipReason::QuotaPaused)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AttemptRecord {
    pub(crate) model: String,
    /// The provider's HTTP status, when it answered.
    pub(crate) status: Option<u16>,
    /// Why it failed; `None` for the attempt that served.
    pub(crate) kind: Option<FailureKind>,
    pub(crate) latency_ms: u64,
    /// The key it was sent with, as `<provider>#<n>` (never the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
    /// Sent in a race that another model won: cancelled, not a failure.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) raced_out: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl AttemptRecord {
    /// `429`, `empty_choices`, `200` or `raced_out`: how the decision header shows an
    /// attempt.
    pub(crate) fn label(&self) -> String {
        if self.raced_out {
            return "raced_out".to_string();
        }
        match (self.kind, self.status) {
            (Some(_), Some(s)) if !(200..300).contains(&s) => s.to_string(),
            (Some(k), _) => k.to_string(),
            (None, s) => s.unwrap_or(200).to_string(),
        }
    }
}

/// The final word on a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// A model answered with real content.
    Served,
    /// Every attempt failed (or no candidate was eligible).
    AllFailed,
    /// Every failure was blamed on the request; its 4xx was returned.
    ClientError,
    /// The request was refused before routing (bad JSON, too large, unknown model).
    Rejected,
    /// Content was forwarded, then the stream broke (error frame, stall, cut), and no other
    /// model finished the answer.
    StreamFailedAfterContent,
    /// The stream broke after content and another model finished the answer (the client
    /// saw one answer).
    Continued,
    /// The client went away mid-answer.
    ClientAborted,
}

impl Outcome {
    /// Every outcome, in declaration order (`ALL[o as usize] == o`).
    pub(crate) const ALL: [Outcome; 7] = [
        Outcome::Served,
        Outcome::AllFailed,
        Outcome::ClientError,
        Outcome::Rejected,
        Outcome::StreamFailedAfterContent,
        Outcome::Continued,
        Outcome::ClientAborted,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Served => "served",
            Outcome::AllFailed => "all_failed",
            Outcome::ClientError => "client_error",
            Outcome::Rejected => "rejected",
            Outcome::StreamFailedAfterContent => "stream_failed_after_content",
            Outcome::Continued => "continued",
            Outcome::ClientAborted => "client_aborted",
        }
    }
}

/// One request's decisions: a history entry, and the source of the response headers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    pub(crate) id: String,
    pub(crate) time: String,
    pub(crate) requested_model: String,
    pub(crate) stream: bool,
    pub(crate) skipped: Vec<Skip>,
    pub(crate) attempts: Vec<AttemptRecord>,
    pub(crate) served_model: Option<String>,
    pub(crate) outcome: Outcome,
    pub(crate) wall_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) completion_tokens: Option<u64>,
    /// Remarks on the choice, e.g. `capability_unknown:vision`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    /// Messages dropped from the middle of the history to fit a smaller window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trimmed: Option<usize>,
    /// The conversation's hash (never its id or words), when affinity applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
    /// What affinity did: `new`, `kept`, or `moved:<why>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) affinity: Option<String>,
    /// Tokens tool-result compression took out of the request (estimated); absent when it
    /// was off or the request held no tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) saved_tokens: Option<u64>,
    /// The answer budget sent when the one asked for was larger than the serving model's
    /// room (`tokens::lowered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u64>,
}

impl Trace {
    pub(crate) fn new(id: &str, requested_model: &str, stream: bool) -> Trace {
        Trace {
            id: id.to_string(),
            time: stamp(crate::time::now_ms()),
            requested_model: requested_model.to_string(),
            stream,
            skipped: Vec::new(),
            attempts: Vec::new(),
            served_model: None,
            outcome: Outcome::Rejected,
            wall_ms: 0,
            completion_tokens: None,
            notes: Vec::new(),
            trimmed: None,
            session: None,
            affinity: None,
            saved_tokens: None,
            max_tokens: None,
        }
    }

    /// Removes secrets from what the client wrote into the trace (its model name and
    /// request id); the rest is fcm's own words and catalog names.
    pub(crate) fn redact(&mut self, secrets: &crate::secrets::Secrets) {
        for text in [&mut self.id, &mut self.requested_model] {
            if let std::borrow::Cow::Owned(clean) = secrets.redact(text) {
                *text = clean;
            }
        }
    }

    /// `x-fcm-v2-decision`: `<served|none>!<outcome>|<m1>:<label>-><m2>:200|skips=<N>`, as
    /// a string of its own (answers and the log write it in place: [`Trace::write_headers`],
    /// [`Trace::write_decision`]).
    #[cfg(test)]
    pub(crate) fn decision_header(&self) -> String {
        let mut s = String::with_capacity(64);
        self.write_decision(&mut s);
        s
    }

    /// Appends the decision header's value to `out`.
    pub(crate) fn write_decision(&self, out: &mut String) {
        use std::fmt::Write;
        out.push_str(self.served_model.as_deref().unwrap_or("none"));
        out.push('!');
        out.push_str(self.outcome.as_str());
        if !self.attempts.is_empty() {
            out.push('|');
            self.write_chain(out, "->");
        }
        let _ = write!(out, "|skips={}", self.skipped.len());
    }

    /// The attempts in order as `model:label`, joined by `separator`: `->` in the decision
    /// header (model ids contain hyphens, so no spaces there), ` -> ` in `fcm history`,
    /// ` → ` on the dashboard. Empty when nothing was attempted.
    pub(crate) fn attempt_chain(&self, separator: &str) -> String {
        let mut s = String::new();
        self.write_chain(&mut s, separator);
        s
    }

    fn write_chain(&self, out: &mut String, separator: &str) {
        for (i, a) in self.attempts.iter().enumerate() {
            if i > 0 {
                out.push_str(separator);
            }
            out.push_str(&a.model);
            out.push(':');
            out.push_str(&a.label());
        }
    }

    /// `x-fcm-v2-model`: the model that served, else the last one tried.
    pub(crate) fn model_header(&self) -> &str {
        self.served_model
            .as_deref()
            .or_else(|| self.attempts.last().map(|a| a.model.as_str()))
            .unwrap_or("none")
    }

    /// Appends the trace headers to a response head, as `name: value` lines: the four
    /// always, `x-fcm-v2-trimmed` when history was trimmed, `x-fcm-v2-affinity` when the
    /// request belongs to a conversation and a model served it, `x-fcm-v2-compressed` (tokens saved) when its tool
    /// results were compressed, `x-fcm-v2-max-tokens` when the answer budget was lowered. Written straight into the head: every answer carries them.
    pub(crate) fn write_headers(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(
            out,
            "x-fcm-v2-model: {}\r\nx-fcm-v2-attempts: {}\r\nx-fcm-v2-decision: ",
            self.model_header(),
            self.attempts.len()
        );
        self.write_decision(out);
        out.push_str("\r\nx-request-id: ");
        out.push_str(&self.id);
        out.push_str("\r\n");
        if let Some(n) = self.trimmed {
            let _ = write!(out, "x-fcm-v2-trimmed: {n}\r\n");
        }
        if let Some(a) = &self.affinity {
            let _ = write!(out, "x-fcm-v2-affinity: {a}\r\n");
        }
        if let Some(n) = self.saved_tokens {
            let _ = write!(out, "x-fcm-v2-compressed: {n}\r\n");
        }
        if let Some(n) = self.max_tokens {
            let _ = write!(out, "x-fcm-v2-max-tokens: {n}\r\n");
        }
    }
}

/// `time::rfc3339` of `ms`, formatted once a second per thread: every request's trace is
/// stamped, and formatting a date cost more than the rest of `Trace::new`.
fn stamp(ms: u64) -> String {
    thread_local! {
        static LAST: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((u64::MAX, String::new())) };
    }
    let second = ms / 1000;
    LAST.with_borrow_mut(|(at, text)| {
        if *at != second {
            *text = crate::time::rfc3339(ms);
            *at = second;
        }
        text.clone()
    })
}

/// The history file's format.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct HistoryFile {
    pub(crate) version: u32,
    pub(crate) entries: Vec<Trace>,
}

/// The ring of recent requests of a running server.
pub struct History {
    ring: Mutex<VecDeque<Trace>>,
    /// Entries ever pushed (those loaded at start included): the newest entry's sequence
    /// number, so a reader asks for what came after the last one it saw.
    pushed: AtomicU64,
    dirty: AtomicBool,
}

impl History {
    pub(crate) fn new(file: HistoryFile) -> History {
        let mut ring: VecDeque<Trace> = file.entries.into();
        while ring.len() > HISTORY_LEN {
            ring.pop_front();
        }
        History {
            pushed: AtomicU64::new(ring.len() as u64),
            ring: Mutex::new(ring),
            dirty: AtomicBool::new(false),
        }
    }

    pub(crate) fn push(&self, trace: Trace) {
        let oldest = {
            let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
            let oldest = (ring.len() == HISTORY_LEN)
                .then(|| ring.pop_front())
                .flatten();
            ring.push_back(trace);
            // Under the lock, so the numbers of the entries in the ring are consecutive.
            self.pushed.fetch_add(1, Ordering::Release);
            oldest
        };
        self.dirty.store(true, Ordering::Release);
        // Freed outside the lock: its strings are long out of the cache.
        drop(oldest);
    }

    /// The entries after sequence number `seq` (at most the last `max` of them), oldest
    /// first, each with its number; and the newest number (0: none yet).
    pub(crate) fn since(&self, seq: u64, max: usize) -> (u64, Vec<(u64, Trace)>) {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let newest = self.pushed.load(Ordering::Acquire);
        let first = newest + 1 - ring.len() as u64;
        let skip = ring
            .len()
            .saturating_sub(newest.saturating_sub(seq).min(max as u64) as usize);
        let entries = ring
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(i, t)| (first + i as u64, t.clone()))
            .collect();
        (newest, entries)
    }

    /// The last `n` entries, oldest first.
    pub(crate) fn last(&self, n: usize) -> Vec<Trace> {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        ring.iter()
            .skip(ring.len().saturating_sub(n))
            .cloned()
            .collect()
    }

    pub(crate) fn take_dirty(&self) -> Option<HistoryFile> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return None;
        }
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        Some(HistoryFile {
            version: 1,
            entries: ring.iter().cloned().collect(),
        })
    }

    pub(crate) fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }
}

static REQUEST_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new request id: `fcm-<ms since epoch, hex>-<counter>`, unique within a process.
pub(crate) fn new_request_id() -> String {
    use std::fmt::Write;
    let n = REQUEST_COUNTER.fetch_add(1, Ordering::Relaxed);
    // Sized for the whole id at once (`format!` guesses from the literal parts and grows).
    let mut id = String::with_capacity(40);
    let _ = write!(id, "fcm-{:x}-{n}", crate::time::now_ms());
    id
}

/// An attempt of `model` for tests: 5 ms, no key.
#[cfg(test)]
pub(crate) fn test_attempt(
    model: &str,
    status: Option<u16>,
    kind: Option<FailureKind>,
) -> AttemptRecord {
    AttemptRecord {
        model: model.into(),
        status,
        kind,
        latency_ms: 5,
        key: None,
        raced_out: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_attempt as attempt;

    #[test]
    fn redaction_cleans_what_the_client_wrote() {
        let secrets = crate::secrets::Secrets::new(["sk-CLIENT-0123456789"]);
        let mut t = Trace::new("req-sk-CLIENT-01", "sk-CLIENT-0123456789", false);
        t.redact(&secrets);
        assert_eq!(
            (t.id.as_str(), t.requested_model.as_str()),
            ("req-[redacted]", "[redacted]")
        );
        let mut clean = Trace::new("r1", "fcm", false);
        clean.redact(&secrets);
        assert_eq!(
            (clean.id.as_str(), clean.requested_model.as_str()),
            ("r1", "fcm")
        );
    }

    #[test]
    fn decision_header_shapes() {
        let mut t = Trace::new("r1", "fcm", false);
        t.skipped = vec![
            Skip::new("a/x", SkipReason::CircuitOpen),
            Skip::new("b/y", SkipReason::QuotaPaused),
        ];
        t.attempts = vec![
            attempt("nvidia/x", Some(429), Some(FailureKind::RateLimit)),
            attempt("p/empty", Some(200), Some(FailureKind::EmptyChoices)),
            attempt("groq/llama-3.3-70b-versatile", Some(200), None),
        ];
        t.served_model = Some("groq/llama-3.3-70b-versatile".into());
        t.outcome = Outcome::Served;
        assert_eq!(
            t.decision_header(),
            "groq/llama-3.3-70b-versatile!served|nvidia/x:429->p/empty:empty_choices->groq/llama-3.3-70b-versatile:200|skips=2"
        );
        assert_eq!(t.model_header(), "groq/llama-3.3-70b-versatile");
        assert_eq!(
            t.attempt_chain(" -> "),
            "nvidia/x:429 -> p/empty:empty_choices -> groq/llama-3.3-70b-versatile:200"
        );

        let rejected = Trace::new("r2", "fcm", false);
        assert_eq!(rejected.decision_header(), "none!rejected|skips=0");
        assert_eq!(rejected.model_header(), "none");
        assert_eq!(rejected.attempt_chain(" -> "), "");

        let mut failed = Trace::new("r3", "fcm", true);
        failed.attempts = vec![attempt("a/t", None, Some(FailureKind::Timeout))];
        failed.outcome = Outcome::AllFailed;
        assert_eq!(
            failed.decision_header(),
            "none!all_failed|a/t:timeout|skips=0"
        );
        assert_eq!(failed.model_header(), "a/t", "the last model tried");
    }

    #[test]
    fn the_headers_of_every_answer() {
        let mut t = Trace::new("req-1", "fcm", false);
        t.attempts = vec![attempt("p/a", Some(200), None)];
        t.served_model = Some("p/a".into());
        t.outcome = Outcome::Served;
        let mut head = String::new();
        t.write_headers(&mut head);
        assert_eq!(
            head,
            "x-fcm-v2-model: p/a\r\nx-fcm-v2-attempts: 1\r\nx-fcm-v2-decision: p/a!served|p/a:200|skips=0\r\nx-request-id: req-1\r\n"
        );
        t.trimmed = Some(12);
        let mut head = String::new();
        t.write_headers(&mut head);
        assert!(head.ends_with("x-request-id: req-1\r\nx-fcm-v2-trimmed: 12\r\n"));
    }

    #[test]
    fn ring_keeps_the_last_500() {
        let h = History::new(HistoryFile::default());
        for i in 0..HISTORY_LEN + 20 {
            h.push(Trace::new(&i.to_string(), "fcm", false));
        }
        let all = h.last(usize::MAX);
        assert_eq!(all.len(), HISTORY_LEN);
        assert_eq!(all[0].id, "20");
        assert_eq!(h.last(2)[1].id, (HISTORY_LEN + 19).to_string());
        assert_eq!(h.take_dirty().unwrap().entries.len(), HISTORY_LEN);
        assert!(h.take_dirty().is_none());
    }

    #[test]
    fn entries_since_a_sequence_number() {
        let h = History::new(HistoryFile {
            version: 1,
            entries: vec![Trace::new("old", "fcm", false)],
        });
        assert_eq!(h.since(0, 10).0, 1, "a loaded entry has a number too");
        for i in 0..5 {
            h.push(Trace::new(&i.to_string(), "fcm", false));
        }
        let ids = |(_, e): (u64, Vec<(u64, Trace)>)| {
            e.into_iter()
                .map(|(n, t)| format!("{n}:{}", t.id))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(h.since(4, 10)), ["5:3", "6:4"]);
        assert_eq!(ids(h.since(0, 2)), ["5:3", "6:4"], "at most the last `max`");
        assert!(ids(h.since(6, 10)).is_empty());
        assert_eq!(
            ids(h.since(99, 10)),
            Vec::<String>::new(),
            "a number from a restarted server"
        );
        for i in 0..HISTORY_LEN {
            h.push(Trace::new(&format!("n{i}"), "fcm", false));
        }
        let (newest, e) = h.since(0, usize::MAX);
        assert_eq!((newest, e.len()), (6 + HISTORY_LEN as u64, HISTORY_LEN));
        assert_eq!(e[0].0, 7, "the ring's oldest entry keeps its number");
    }

    #[test]
    fn a_trace_is_stamped_with_its_second() {
        for ms in [
            0,
            999,
            1_000,
            1_764_000_123_456,
            1_764_000_123_999,
            1_764_000_124_000,
        ] {
            assert_eq!(stamp(ms), crate::time::rfc3339(ms), "{ms}");
        }
    }

    #[test]
    fn request_ids_are_unique() {
        assert_ne!(new_request_id(), new_request_id());
    }
}
