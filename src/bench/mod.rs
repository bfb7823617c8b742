//! `fcm bench`: probe models in parallel, measure them, judge them, rank them.
//!
//! Each ping is a [`routing::ping`](crate::routing::ping): the same call, gate and
//! recording as a request's attempt, so a model the bench calls broken is broken for the
//! router for the same reason. Statistics, verdicts and ranking are pure functions over
//! ping results (`report`); I/O is the probe loop here and the output in `commands/bench`.
//!
//! With `--tools` a second question offers one tool and asks for a call: the answer is
//! checked as the router checks real traffic (`invalid_tool_call` for a call that cannot
//! run), and a model whose calls pass is the router's first choice for requests with tools.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::answers::classify::FailureKind;
use crate::providers::exchange::Exchange;
use crate::routing::ping::{ping, Ping, Question, Spend};
use crate::routing::{Candidate, Recorder};

/// A rate limit asking to wait at most this long is waited out between pings.
const MAX_PING_WAIT: Duration = Duration::from_secs(5);
/// A known budget that frees within this is waited for between pings (a per-minute
/// limit); a longer one (a daily limit) ends the model's pings.
const MAX_BUDGET_WAIT: Duration = Duration::from_secs(61);

/// What one model is asked, in order: `pings` sums, each followed by a tool ping with
/// `tools`, so a rate limit that ends a model's pings early cuts both questions alike.
pub fn questions(pings: u32, tools: bool) -> Vec<Question> {
    let mut asked = Vec::new();
    for _ in 0..pings {
        asked.push(Question::Sum);
        if tools {
            asked.push(Question::ToolCall);
        }
    }
    asked
}

/// How often a wait between pings looks at the stop flag: a Ctrl-C is taken within this.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Sleeps `d`, or less once `stop` is set; false when it was.
fn wait(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(STOP_CHECK));
    }
}

/// Asks one model each of `questions` in a row through the ledger, honouring rate limits
/// and giving up early on failures that another ping cannot change (a bad key, an
/// unresolvable URL). A per-minute budget that runs out is waited for (at most a minute
/// each time); a daily one that runs out ends the model's pings. Results come in the
/// order they were sent. Once `stop` is set no ping is sent and no wait goes on: the
/// caller drops what an interrupted model showed.
pub fn probe(
    record: Recorder<'_>,
    exchange: &dyn Exchange,
    c: &Candidate,
    questions: &[Question],
    timeout: Duration,
    stop: &AtomicBool,
) -> Vec<(Question, Ping)> {
    let mut results = Vec::new();
    let mut timeouts_in_a_row = 0;
    for (i, question) in questions.iter().enumerate() {
        let p = loop {
            if stop.load(Ordering::SeqCst) {
                break None;
            }
            match ping(record, exchange, c, *question, timeout, Spend::Probe, false) {
                Ok((p, _)) => break Some(p),
                Err(b) => {
                    let left = b.until_ms.saturating_sub(crate::time::now_ms());
                    if left > MAX_BUDGET_WAIT.as_millis() as u64 {
                        break None;
                    }
                    wait(Duration::from_millis(left.max(10)), stop);
                }
            }
        };
        let Some(p) = p else { break };
        let last = i + 1 == questions.len();
        let stop = match &p {
            Ping::Failed {
                kind: FailureKind::AuthError | FailureKind::ProviderUrlUnresolvable,
                ..
            } => true,
            Ping::Failed {
                pause: Some(pause), ..
            } => {
                // Wait out a short rate limit; a long one ends this model's pings.
                if *pause <= MAX_PING_WAIT && !last {
                    !wait(*pause, stop)
                } else {
                    true
                }
            }
            Ping::Failed {
                kind: FailureKind::Timeout,
                ..
            } => {
                timeouts_in_a_row += 1;
                timeouts_in_a_row >= 2
            }
            _ => {
                timeouts_in_a_row = 0;
                false
            }
        };
        results.push((*question, p));
        if stop {
            break;
        }
    }
    results
}

mod report;

pub use report::*;
