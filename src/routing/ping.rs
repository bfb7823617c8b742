//! A ping: one small real question sent to one model, its whole answer read, and its
//! outcome recorded through the same [`Recorder`] as a request's attempt. The bench asks
//! each model a few, `fcm check` one, and the router's background probes one per model
//! whose cooldown has ended.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::answers::call::{call, Answer};
use crate::answers::classify::FailureKind;
use crate::answers::failure::Failure;
use crate::answers::gate::ContentValidation;
use crate::answers::limits::Limits;
use crate::answers::stream::StreamEnd;
use crate::answers::toolcall::Offered;
use crate::providers::exchange::Exchange;
use crate::state::ledger::{Blocked, Grant};

use super::attempt::{Recorder, Sent};
use super::candidates::Candidate;

/// A real question with a few-word answer: cheap, and a model that cannot answer it is broken.
pub const PING_QUESTION: &str = "What is 17 + 25? Reply with the number only.";
pub const PING_MAX_TOKENS: u32 = 32;
/// Largest non-stream answer a ping accepts.
const PING_MAX_BODY: usize = 8 * 1024 * 1024;

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

    /// The question's estimated prompt tokens, charged against token budgets.
    pub fn tokens(self) -> u64 {
        crate::tokens::prompt(&self.body())
    }
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

impl Ping {
    fn failed(f: Failure) -> Ping {
        Ping::Failed {
            kind: f.kind(),
            status: f.status,
            pause: f.verdict.quota_pause,
            detail: f.detail,
        }
    }
}

/// Which budget a ping may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// A probe (bench pings, background probes): never the last tenth of a daily budget.
    Probe,
    /// The user's own request (`fcm check`): the ledger's choice of key.
    User,
    /// The user's own request with this one of the provider's keys.
    Key(usize),
}

/// Sends `question` to `c` through `exchange` and reads the whole answer: a key and one
/// request of budget from the ledger (or nothing sent, `Err`, with until when), the answer
/// judged by the same gate as a request's (a tool ping's calls checked against its tool:
/// a broken or invented call is `invalid_tool_call`), and its outcome recorded through
/// `record`. `trial`: the ping holds the model's HALF_OPEN trial slot (a probe's).
pub fn ping(
    record: Recorder<'_>,
    exchange: &dyn Exchange,
    c: &Candidate,
    question: Question,
    timeout: Duration,
    spend: Spend,
    trial: bool,
) -> Result<(Ping, Grant), Blocked> {
    let prompt_tokens = question.tokens();
    let now = crate::time::now_ms();
    let granted = match spend {
        Spend::Key(k) => record.ledger.reserve_key(&c.metered, k, prompt_tokens, now),
        Spend::Probe => record.ledger.reserve(&c.metered, prompt_tokens, now, true),
        Spend::User => record.ledger.reserve(&c.metered, prompt_tokens, now, false),
    };
    let grant = match granted {
        Ok(g) => g,
        Err(b) => {
            record.let_go(c, trial);
            return Err(b);
        }
    };
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
    let api_key = grant.api_key(&c.target.keys);
    let result = call(
        exchange,
        &c.target,
        api_key,
        &question.body(),
        true,
        &limits,
    );
    let sent = Sent {
        grant,
        trial,
        prompt_tokens,
    };
    let ping = match result {
        Ok(Answer::Full {
            stats,
            elapsed,
            rate,
            ..
        }) => {
            record.answered(c, &sent.grant, &rate);
            record.success(c, elapsed);
            record.spent(c, &sent.grant, &stats, prompt_tokens);
            let ms = elapsed.as_millis() as u64;
            Ping::Ok {
                ttft_ms: ms,
                total_ms: ms,
                tokens: stats.output_tokens(),
                tool_calls: stats.tool_calls as u32,
            }
        }
        Ok(Answer::Stream(mut s)) => {
            record.answered(c, &sent.grant, &std::mem::take(&mut s.rate));
            let ttft = s.ttft;
            let (end, stats, total) = match s.drain(limits.deadline) {
                Ok((stats, total)) => {
                    let end = StreamEnd::Complete {
                        completion_tokens: stats.completion_tokens,
                    };
                    (end, stats, total)
                }
                // What it carried is gone with it: the prompt was spent all the same.
                Err(f) => (StreamEnd::Failed(f), Default::default(), Duration::ZERO),
            };
            record.stream_end(c, &sent, &end, ttft, &stats);
            match end {
                StreamEnd::Failed(f) => Ping::failed(f),
                _ => Ping::Ok {
                    ttft_ms: ttft.as_millis() as u64,
                    total_ms: total.as_millis() as u64,
                    tokens: stats.output_tokens(),
                    tool_calls: stats.tool_calls as u32,
                },
            }
        }
        Err(mut f) => {
            record.answered(c, &sent.grant, &f.rate);
            record.failure(c, &mut f, trial, &sent.grant);
            Ping::failed(f)
        }
    };
    Ok((ping, sent.grant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_ping_offers_one_tool_with_a_required_city() {
        let body = Question::ToolCall.body();
        assert_eq!(body["tools"][0]["function"]["name"], TOOL_PING_TOOL);
        assert_eq!(
            body["tools"][0]["function"]["parameters"]["required"],
            json!(["city"])
        );
        assert!(Question::Sum.body().get("tools").is_none() && Question::Sum.offered().is_none());
        assert!(Question::ToolCall
            .offered()
            .unwrap()
            .check(TOOL_PING_TOOL, r#"{"city":"Paris"}"#)
            .is_ok());
    }
}
