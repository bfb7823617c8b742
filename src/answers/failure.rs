//! A failed attempt: its verdict (kind, blame, what it does to health), the provider's
//! status and a one-line detail that is safe to show (keys redacted before it is cut).

use std::time::{Duration, Instant, SystemTime};

use crate::answers::classify::{classify_http, classify_transport, FailureKind, Verdict};
use crate::answers::gate::GateReject;
use crate::providers::exchange::io_failure;
use crate::providers::target::Target;

/// A failed attempt.
#[derive(Debug, Clone)]
pub struct Failure {
    pub verdict: Verdict,
    /// The provider's HTTP status, when it answered.
    pub status: Option<u16>,
    /// One line, safe to show (no key). Boxed: a failure is passed around by value.
    pub detail: Box<str>,
    pub elapsed: Duration,
    /// The provider's `Retry-After` (or reset header), whatever the status.
    pub retry_after: Option<Duration>,
    /// The rate-limit windows the answer's headers reported (none without an answer).
    pub rate: Box<[crate::providers::quota::Window]>,
    /// Whether the request may have reached the provider: not when its address did not
    /// resolve or no connection could be made. Only a request that left is charged to the
    /// provider's budget.
    pub reached: bool,
}

impl Failure {
    pub fn kind(&self) -> FailureKind {
        self.verdict.kind
    }
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
        detail: detail.into_boxed_str(),
        elapsed: started.elapsed(),
        retry_after: None,
        rate: Box::default(),
        reached: true,
    }
}

impl Target {
    pub(crate) fn gate_failure(&self, r: GateReject, started: Instant) -> Failure {
        self.gate_failure_after(r, None, started)
    }

    /// A 2xx answer the gate rejected, with the provider's `Retry-After` (an overloaded
    /// model's 200 error payload may say when to come back).
    pub(crate) fn gate_failure_after(
        &self,
        r: GateReject,
        retry_after: Option<&str>,
        started: Instant,
    ) -> Failure {
        let now = SystemTime::now();
        let verdict = classify_http(
            200,
            None,
            retry_after,
            r.detail.as_bytes(),
            Some(r.kind),
            None,
            now,
        );
        let mut f = failure(
            verdict,
            Some(200),
            one_line(&self.redact(&r.detail)),
            started,
        );
        f.retry_after =
            retry_after.and_then(|v| crate::answers::classify::parse_retry_after(v, now));
        f
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\n  b\tc"), "a b c");
        assert!(one_line(&"x".repeat(300)).ends_with('…'));
    }
}
