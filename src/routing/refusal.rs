//! When no model serves: the HTTP status, `Retry-After` and message the client gets. A
//! failure blamed on the request answers with its 4xx, a request larger than every window
//! with 400, a request every model answered with a call the client cannot run with 422,
//! everything else with 503 and the earliest moment a model comes back; a pinned
//! model's failure with the status that fits its kind.

use std::collections::HashMap;

use crate::answers::classify::{Blame, FailureKind};
use crate::answers::failure::Failure;
use crate::state::breaker::BreakerRow;
use crate::state::ledger::Blocked;
use crate::state::trace::{Outcome, SkipReason, Trace};

use super::router::Router;

/// The status when every model answered with a call the client cannot run (a tool it did not
/// offer, arguments that do not fit): well-formed, unprocessable as asked, and not a status
/// clients retry (Codex retries 429 and 5xx, with backoff, without end).
const UNRUNNABLE_CALLS: u16 = 422;

/// One failed attempt, as error bodies list it.
#[derive(Debug, Clone)]
pub(crate) struct FailedAttempt {
    pub model: String,
    pub status: Option<u16>,
    pub kind: FailureKind,
    pub blame: Blame,
    /// One line, safe to show.
    pub detail: String,
}

/// A request that could not be served.
pub(crate) struct Refused {
    pub trace: Trace,
    pub status: u16,
    pub retry_after_secs: Option<u64>,
    pub message: String,
    /// Every failed attempt, in order.
    pub details: Vec<FailedAttempt>,
}

impl Refused {
    /// A pinned model without a key: 401, naming the variable to set.
    pub(super) fn missing_key(mut trace: Trace, key: &str, how: &str) -> Refused {
        trace.outcome = Outcome::AllFailed;
        Refused {
            trace,
            status: 401,
            retry_after_secs: None,
            message: format!("no key for {key}: {how}"),
            details: Vec::new(),
        }
    }

    /// A pinned model none of whose keys may be sent a request now: 429 with when it
    /// frees up, and nothing sent (it would have been refused).
    pub(super) fn blocked(mut trace: Trace, key: &str, b: &Blocked) -> Refused {
        trace.outcome = Outcome::AllFailed;
        let now = crate::time::now_ms();
        let why = b.why.says();
        Refused {
            trace,
            status: 429,
            retry_after_secs: Some(b.until_ms.saturating_sub(now).div_ceil(1000).max(1)),
            message: format!(
                "{key} was not sent the request: {why}; it frees up at {} (`fcm usage` shows what is left)",
                crate::time::rfc3339(b.until_ms)
            ),
            details: Vec::new(),
        }
    }

    /// A pinned model that failed: the status that fits its failure kind.
    pub(super) fn pinned(mut trace: Trace, f: &Failure, details: Vec<FailedAttempt>) -> Refused {
        use FailureKind::*;
        trace.outcome = if f.verdict.blame == Blame::Client {
            Outcome::ClientError
        } else {
            Outcome::AllFailed
        };
        let (status, retry) = match f.kind() {
            RateLimit | QuotaExhausted => {
                let now = crate::time::now_ms();
                let wait = f
                    .verdict
                    .quota_pause
                    .map(|p| p.as_secs().max(1))
                    .or_else(|| {
                        let e = f.verdict.exhausted()?;
                        Some(e.until_ms.saturating_sub(now).div_ceil(1000).max(1))
                    });
                (429, wait)
            }
            AuthError => (401, None),
            InvalidRequest => (
                f.status.filter(|s| (400..500).contains(s)).unwrap_or(400),
                None,
            ),
            Timeout | StreamStall => (504, None),
            // The same request gets the same call again: a retry cannot help.
            InvalidToolCall => (UNRUNNABLE_CALLS, None),
            ModelOverloaded => (503, Some(5)),
            _ => (502, None),
        };
        let model = trace
            .attempts
            .last()
            .map(|a| a.model.clone())
            .unwrap_or_default();
        let message = format!("{model} failed: {} ({})", f.kind(), f.detail);
        Refused {
            trace,
            status,
            retry_after_secs: retry,
            message,
            details,
        }
    }

    /// No candidate served: the request's own 4xx when every failure was its fault, 400
    /// when it fits no window, else 503 with the earliest moment a model comes back.
    pub(super) fn all(
        router: &Router,
        mut trace: Trace,
        details: Vec<FailedAttempt>,
        needed: u64,
    ) -> Refused {
        let client_blamed = !details.is_empty() && details.iter().all(|a| a.blame == Blame::Client);
        if client_blamed {
            trace.outcome = Outcome::ClientError;
            let status = details
                .iter()
                .find_map(|a| a.status.filter(|s| (400..500).contains(s)))
                .unwrap_or(400);
            let message = format!(
                "every model refused the request; first reason: {}",
                details[0].detail
            );
            return Refused {
                trace,
                status,
                retry_after_secs: None,
                message,
                details,
            };
        }
        if details.is_empty()
            && !trace.skipped.is_empty()
            && trace
                .skipped
                .iter()
                .all(|s| s.reason == SkipReason::ContextTooSmall)
        {
            trace.outcome = Outcome::ClientError;
            let largest = router.routable().map(|c| c.context).max().unwrap_or(0);
            let message = format!(
                "the request needs about {needed} tokens (characters / 4, plus max_tokens up to 4096); the largest routable context window is {largest}"
            );
            return Refused {
                trace,
                status: 400,
                retry_after_secs: None,
                message,
                details,
            };
        }
        trace.outcome = Outcome::AllFailed;
        if !details.is_empty()
            && details
                .iter()
                .all(|a| a.kind == FailureKind::InvalidToolCall)
        {
            let message = format!(
                "every model answered with a tool call the client cannot run, so the same request \
                 would get the same answer again; first: {} (offer the tool, or ask without it)",
                details[0].detail
            );
            return Refused {
                trace,
                status: UNRUNNABLE_CALLS,
                retry_after_secs: None,
                message,
                details,
            };
        }
        let now = crate::time::now_ms();
        let retry = earliest_return_ms(router, now)
            .map(|t| t.saturating_sub(now).div_ceil(1000).max(1))
            .unwrap_or(1);
        let message = if details.is_empty() && router.routable().next().is_none() {
            "no model can be routed to: no provider key is set (`fcm models` lists the variables)"
                .to_string()
        } else if details.is_empty() {
            let budget = trace
                .skipped
                .iter()
                .filter(|s| s.reason == SkipReason::QuotaBudget)
                .count();
            let spent = match budget {
                0 => String::new(),
                n => format!(" ({n} of them have spent a known budget: `fcm usage` shows it)"),
            };
            format!(
                "all {} candidate models are paused, out of budget or their circuits are open{spent}",
                trace.skipped.len()
            )
        } else {
            let chain: Vec<String> = details
                .iter()
                .map(|a| match a.status {
                    Some(s) if !(200..300).contains(&s) => format!("{}: {s} {}", a.model, a.kind),
                    _ => format!("{}: {}", a.model, a.kind),
                })
                .collect();
            format!("all attempts failed ({})", chain.join("; "))
        };
        Refused {
            trace,
            status: 503,
            retry_after_secs: Some(retry),
            message,
            details,
        }
    }
}

/// The earliest moment any routable model can be tried again (ms since epoch).
fn earliest_return_ms(router: &Router, now: u64) -> Option<u64> {
    let rows = router.breakers.rows(now);
    let by_model: HashMap<&str, &BreakerRow> = rows.iter().map(|r| (r.model.as_str(), r)).collect();
    // One ledger lock for all of them.
    let budgets = router
        .ledger
        .assess(router.routable().map(|c| &c.metered), 0, now);
    router
        .routable()
        .zip(budgets)
        .map(|(c, budget)| {
            let breaker = match by_model.get(c.key()) {
                Some(r) => now + r.cooldown_ms_left.max(r.quota_pause_ms_left),
                None => now,
            };
            breaker.max(budget.err().map_or(now, |b| b.until_ms))
        })
        .min()
}
