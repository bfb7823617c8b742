//! `fcm bench`: probe models in parallel, measure them, judge them, rank them.
//!
//! Probing goes through the same [`attempt`](crate::answers::call) as the router, so a model the
//! bench calls broken is broken for the router for the same reason. Statistics, verdicts and
//! ranking are pure functions over ping results; I/O is the probe loop and the output.
//!
//! With `--tools` a second question offers one tool and asks for a call: the answer is
//! checked as the router checks real traffic (`invalid_tool_call` for a call that cannot
//! run), and a model whose calls pass is the router's first choice for requests with tools.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::answers::call::{attempt, Answer};
use crate::answers::classify::FailureKind;
use crate::answers::failure::Failure;
use crate::answers::gate::{AnswerStats, ContentValidation};
use crate::answers::limits::Limits;
use crate::answers::toolcall::Offered;
use crate::providers::catalog::ApiKey;
use crate::providers::exchange::Exchange;
use crate::providers::quota::Window;
use crate::providers::target::Target;
use crate::state::ledger::{Blocked, Grant, Ledger, Metered, Tokens};

/// A real question with a few-word answer: cheap, and a model that cannot answer it is broken.
pub const PING_QUESTION: &str = "What is 17 + 25? Reply with the number only.";
pub const PING_MAX_TOKENS: u32 = 32;
/// Largest non-stream answer a ping accepts.
const PING_MAX_BODY: usize = 8 * 1024 * 1024;
/// A rate limit asking to wait at most this long is waited out between pings.
const MAX_PING_WAIT: Duration = Duration::from_secs(5);
/// A known budget that frees within this is waited for between pings (a per-minute
/// limit); a longer one (a daily limit) ends the model's pings.
const MAX_BUDGET_WAIT: Duration = Duration::from_secs(61);
/// Median time to first token at or under which a fully successful model is `Perfect`.
pub const PERFECT_TTFT_MS: u64 = 1000;
/// Median time to first token from which a fully successful model is `Slow`.
pub const SLOW_TTFT_MS: u64 = 2000;

/// The tool ping's question: only the offered tool can answer it, so a model that can call
/// tools calls it rather than answering in words.
pub const TOOL_PING_QUESTION: &str =
    "What is the weather in Paris right now? Call the get_weather tool to find out.";
/// The one tool a tool ping offers, with one required argument (`city`): enough to tell a
/// well-formed call from a broken one, small enough to cost a free quota nearly nothing.
pub const TOOL_PING_TOOL: &str = "get_weather";
/// Room for the call (about 15 tokens) and a short preamble or reasoning before it.
pub const TOOL_PING_MAX_TOKENS: u32 = 256;

/// What a ping asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// [`PING_QUESTION`]: does the model answer, and how fast.
    Sum,
    /// [`TOOL_PING_QUESTION`] with [`TOOL_PING_TOOL`] offered: does it call the tool.
    ToolCall,
}

impl Question {
    /// The chat request this question sends (the model is filled in per target).
    pub fn body(self) -> Value {
        let mut body = json!({
            "model": "",
            "messages": [{"role": "user", "content": PING_QUESTION}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": PING_MAX_TOKENS,
            "temperature": 0
        });
        if self == Question::ToolCall {
            body["messages"][0]["content"] = json!(TOOL_PING_QUESTION);
            body["max_tokens"] = json!(TOOL_PING_MAX_TOKENS);
            body["tools"] = json!([{"type": "function", "function": {
                "name": TOOL_PING_TOOL,
                "description": "The current weather in a city.",
                "parameters": {"type": "object",
                    "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"}},
                    "required": ["city"]}}}]);
        }
        body
    }

    /// The tools a call in the answer is checked against, as the router checks a client's.
    fn offered(self) -> Option<Arc<Offered>> {
        Offered::of(&self.body()).map(Arc::new)
    }
}

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

/// One ping's result.
#[derive(Debug, Clone)]
pub enum Ping {
    Ok {
        ttft_ms: u64,
        total_ms: u64,
        tokens: u64,
        /// Tool calls in the answer that passed the check (only a tool ping offers a tool).
        tool_calls: u32,
    },
    Failed {
        kind: FailureKind,
        status: Option<u16>,
        detail: String,
        pause: Option<Duration>,
    },
}

/// A ping's estimated prompt tokens, charged against token budgets.
pub fn ping_tokens(question: Question) -> u64 {
    crate::tokens::prompt(&question.body())
}

/// One streaming ping of `question`, sent through the ledger: a key from it, or nothing
/// sent when no key of the model may be (`Err`, with until when). `probe` leaves the last
/// tenth of a daily budget alone (bench pings and background probes; `fcm check` is the
/// user's own request). What the answer reported is left, what it cost, a 429 or a
/// rejected key go into the ledger. `key` sends with that one of the provider's keys
/// rather than the ledger's choice.
#[allow(clippy::too_many_arguments)]
pub fn metered_ping(
    upstream: &dyn Exchange,
    target: &Target,
    metered: &Metered,
    ledger: &Ledger,
    question: Question,
    timeout: Duration,
    probe: bool,
    key: Option<usize>,
) -> Result<(Ping, Grant), Blocked> {
    let prompt = ping_tokens(question);
    let now = crate::time::now_ms();
    let grant = match key {
        Some(k) => ledger.reserve_key(metered, k, prompt, now)?,
        None => ledger.reserve(metered, prompt, now, probe)?,
    };
    let (ping, rate, stats) = ping_asking(
        upstream,
        target,
        grant.api_key(&target.keys),
        question,
        timeout,
    );
    let now = crate::time::now_ms();
    ledger.answered(metered, &grant, &rate, now);
    if let Some(stats) = stats {
        ledger.tokens(metered, &grant, Tokens::of(&stats, prompt), now);
    }
    if let Ping::Failed { kind, pause, .. } = &ping {
        if kind.is_quota() {
            ledger.rate_limited(metered, &grant, pause.unwrap_or_default(), now);
        }
        if *kind == FailureKind::AuthError {
            ledger.rejected(metered, &grant, now);
        }
    }
    Ok((ping, grant))
}

/// Runs one streaming ping of `question` with `key` through the shared attempt and drains
/// it. A tool ping's calls are checked against its tool (`Limits::tools`), exactly as the
/// router checks a client's: a broken or invented call fails the ping as
/// `invalid_tool_call`. Also gives the rate-limit windows the answer reported and, when
/// content came, what it carried.
fn ping_asking(
    upstream: &dyn Exchange,
    target: &Target,
    key: Option<&ApiKey>,
    question: Question,
    timeout: Duration,
) -> (Ping, Vec<Window>, Option<AnswerStats>) {
    let limits = Limits {
        body_read: timeout,
        first_token: timeout,
        stream_stall: timeout,
        deadline: Instant::now() + timeout,
        validation: ContentValidation::Strict,
        max_body: PING_MAX_BODY,
        keep_chunks: false,
        tools: question.offered(),
    };
    let failed = |f: Failure| Ping::Failed {
        kind: f.kind(),
        status: f.status,
        pause: f.verdict.quota_pause,
        detail: f.detail,
    };
    match attempt(upstream, target, key, &question.body(), true, &limits) {
        Ok(Answer::Full {
            stats,
            elapsed,
            rate,
            ..
        }) => {
            let ms = elapsed.as_millis() as u64;
            let ping = Ping::Ok {
                ttft_ms: ms,
                total_ms: ms,
                tokens: stats.output_tokens(),
                tool_calls: stats.tool_calls as u32,
            };
            (ping, rate, Some(stats))
        }
        Ok(Answer::Stream(mut s)) => {
            let ttft_ms = s.ttft.as_millis() as u64;
            let rate = std::mem::take(&mut s.rate);
            match s.drain(limits.deadline) {
                Ok((stats, total)) => {
                    let ping = Ping::Ok {
                        ttft_ms,
                        total_ms: total.as_millis() as u64,
                        tokens: stats.output_tokens(),
                        tool_calls: stats.tool_calls as u32,
                    };
                    (ping, rate, Some(stats))
                }
                Err(f) => (failed(f), rate, None),
            }
        }
        Err(mut f) => {
            let rate = std::mem::take(&mut f.rate).into_vec();
            (failed(f), rate, None)
        }
    }
}

/// Asks one model each of `questions` in a row through the ledger, honouring rate limits
/// and giving up early on failures that another ping cannot change (a bad key, an
/// unresolvable URL). A per-minute budget that runs out is waited for (at most a minute
/// each time); a daily one that runs out ends the model's pings. Results come in the
/// order they were sent.
pub fn probe(
    upstream: &dyn Exchange,
    target: &Target,
    metered: &Metered,
    ledger: &Ledger,
    questions: &[Question],
    timeout: Duration,
) -> Vec<(Question, Ping)> {
    let mut results = Vec::new();
    let mut timeouts_in_a_row = 0;
    for (i, question) in questions.iter().enumerate() {
        let p = loop {
            match metered_ping(
                upstream, target, metered, ledger, *question, timeout, true, None,
            ) {
                Ok((p, _)) => break Some(p),
                Err(b) => {
                    let wait = b.until_ms.saturating_sub(crate::time::now_ms());
                    if wait > MAX_BUDGET_WAIT.as_millis() as u64 {
                        break None;
                    }
                    std::thread::sleep(Duration::from_millis(wait.max(10)));
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
                pause: Some(wait), ..
            } => {
                // Wait out a short rate limit; a long one ends this model's pings.
                if *wait <= MAX_PING_WAIT && !last {
                    std::thread::sleep(*wait);
                    false
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
