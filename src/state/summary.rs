//! The summary line of `fcm history`: how many requests got a whole answer, how many got
//! none (every attempt failed, or the stream broke mid-answer and no model finished it),
//! how many were served after a failover, and attempts per request. Pure: traces in,
//! figures out.

use super::trace::{Outcome, Trace};

/// Summary figures for `fcm history`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    pub(crate) requests: usize,
    /// Answered whole: `served`, or `continued` (broken off, finished by another model).
    pub(crate) served_pct: f64,
    /// No whole answer: every attempt failed, or the stream broke after content and nothing
    /// finished it (the client got half an answer, told it was broken).
    pub(crate) failed_pct: f64,
    /// Of those, the streams that broke mid-answer.
    pub(crate) broken_streams: usize,
    pub(crate) failover_pct: f64,
    pub(crate) avg_attempts: f64,
}

impl Outcome {
    /// The client got a whole answer.
    pub(crate) fn answered(self) -> bool {
        matches!(self, Outcome::Served | Outcome::Continued)
    }

    /// fcm owed the client an answer and did not give a whole one (a refused request, an
    /// error blamed on the request, or a client that left is neither).
    pub(crate) fn failed(self) -> bool {
        matches!(self, Outcome::AllFailed | Outcome::StreamFailedAfterContent)
    }
}

pub(crate) fn summarize(entries: &[Trace]) -> Summary {
    let n = entries.len();
    if n == 0 {
        return Summary {
            requests: 0,
            served_pct: 0.0,
            failed_pct: 0.0,
            broken_streams: 0,
            failover_pct: 0.0,
            avg_attempts: 0.0,
        };
    }
    let served = entries.iter().filter(|t| t.outcome.answered()).count();
    let failed = entries.iter().filter(|t| t.outcome.failed()).count();
    let broken_streams = entries
        .iter()
        .filter(|t| t.outcome == Outcome::StreamFailedAfterContent)
        .count();
    let failed_over = entries
        .iter()
        // Served after a failure: a raced-out racer, or a fusion's second panel answer,
        // is an extra attempt but no failover.
        .filter(|t| t.outcome.answered() && t.attempts.iter().any(|a| a.kind.is_some()))
        .count();
    let attempts: usize = entries.iter().map(|t| t.attempts.len()).sum();
    let pct = |k: usize| 100.0 * k as f64 / n as f64;
    Summary {
        requests: n,
        served_pct: pct(served),
        failed_pct: pct(failed),
        broken_streams,
        failover_pct: pct(failed_over),
        avg_attempts: attempts as f64 / n as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::classify::FailureKind;
    use crate::state::trace::test_attempt as attempt;

    #[test]
    fn summary_figures() {
        let mut served = Trace::new("1", "fcm", false);
        served.served_model = Some("a/b".into());
        served.outcome = Outcome::Served;
        served.attempts = vec![
            attempt("a/c", Some(500), Some(FailureKind::ProviderServerError)),
            attempt("a/b", Some(200), None),
        ];
        let mut failed = Trace::new("2", "fcm", false);
        failed.outcome = Outcome::AllFailed;
        failed.attempts = vec![attempt(
            "a/c",
            Some(500),
            Some(FailureKind::ProviderServerError),
        )];
        let s = summarize(&[served.clone(), failed.clone()]);
        assert_eq!(
            (s.requests, s.served_pct, s.failover_pct, s.avg_attempts),
            (2, 50.0, 50.0, 1.5)
        );
        assert_eq!((s.failed_pct, s.broken_streams), (50.0, 0));
        // A stream that broke after content and was not finished: failed, not served,
        // though a model began to serve it.
        let mut broken = Trace::new("4", "fcm", true);
        broken.served_model = Some("a/b".into());
        broken.outcome = Outcome::StreamFailedAfterContent;
        broken.attempts = vec![attempt("a/b", Some(200), None)];
        let mut continued = broken.clone();
        continued.outcome = Outcome::Continued;
        let s = summarize(&[served, failed, broken, continued]);
        assert_eq!(
            (s.served_pct, s.failed_pct, s.broken_streams),
            (50.0, 50.0, 1)
        );
        // A race's loser is an attempt, not a failover.
        let mut raced = Trace::new("3", "fcm:quick", false);
        raced.served_model = Some("a/b".into());
        raced.outcome = Outcome::Served;
        raced.attempts = vec![attempt("a/b", Some(200), None), attempt("a/c", None, None)];
        raced.attempts[1].raced_out = true;
        let s = summarize(&[raced]);
        assert_eq!((s.failover_pct, s.avg_attempts), (0.0, 2.0));
    }
}
