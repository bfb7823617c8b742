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
use crate::answers::toolcall::ToolCalls;
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
            "max_tokens": PING_MAX_TOKENS,
            "temperature": 0
        });
        if let Some(map) = body.as_object_mut() {
            crate::answers::call::set_stream(map, true);
        }
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

/// The number a sum ping's answer must state.
pub const PING_SUM: u64 = 42;
/// The city a tool ping's call must name.
pub const TOOL_PING_CITY: &str = "Paris";

/// What a ping's answer said: its text with reasoning set aside (reasoning fields and
/// `<think>` blocks alike), whether it reasoned, its tool calls, and why it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said {
    pub text: String,
    pub reasoned: bool,
    /// `(name, arguments)` of each call.
    pub calls: Vec<(String, String)>,
    /// The finish reason (`stop`, `length`, `tool_calls`), when one came.
    pub finish: Option<String>,
}

impl Said {
    /// Adds a chat delta (a stream chunk's) or message (a whole answer's), with the
    /// choice's finish reason.
    fn add(&mut self, choice: &Value, raw_text: &mut String, calls: &mut ToolCalls) {
        let part = choice.get("delta").or_else(|| choice.get("message"));
        if let Some(part) = part {
            let p = crate::answers::reasoning::parts(part);
            raw_text.push_str(&p.text);
            self.reasoned |= !p.reasoning.trim().is_empty();
            for call in part
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                calls.add(call);
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
    }

    /// What chat chunks or a whole chat answer said.
    fn of(answers: &[Value]) -> Said {
        let mut said = Said::default();
        let (mut raw, mut calls) = (String::new(), ToolCalls::default());
        for a in answers {
            if let Some(choice) = a.pointer("/choices/0") {
                said.add(choice, &mut raw, &mut calls);
            }
        }
        let mut tags = crate::answers::reasoning::ThinkTags::default();
        let (mut head, tail) = (tags.feed(&raw), tags.finish());
        head.text.push_str(&tail.text);
        said.reasoned |= !(head.reasoning + &tail.reasoning).trim().is_empty();
        said.text = head.text;
        said.calls = calls
            .take()
            .into_iter()
            .map(|c| (c.name, c.arguments))
            .collect();
        said
    }
}

/// What a ping's answer came to, against its question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// It states the sum, or calls the tool for the city asked.
    Right,
    /// It works, but the answer could not be checked: reasoning cut at `max_tokens` before
    /// any answer, or a tool ping answered in words rather than with a call.
    Unverified,
    /// It answered something else.
    Wrong,
    /// It is the provider talking (a paid plan, credits, a quota, sign up), not the model.
    Notice,
}

impl Question {
    /// Judges what an answer said against this question. `notices`: the provider's own
    /// notice phrases, beside the default ones.
    pub fn judge(self, said: &Said, notices: &[String]) -> Judged {
        let right = match self {
            Question::Sum => states_number(&said.text, PING_SUM),
            Question::ToolCall => said.calls.iter().any(|(name, args)| {
                name == TOOL_PING_TOOL
                    && serde_json::from_str::<Value>(args)
                        .ok()
                        .and_then(|a| a.get("city").and_then(Value::as_str).map(str::to_lowercase))
                        .is_some_and(|city| city.contains(&TOOL_PING_CITY.to_lowercase()))
            }),
        };
        if right {
            Judged::Right
        } else if said.calls.is_empty() && crate::answers::notice::is_notice(&said.text, notices) {
            Judged::Notice
        } else if self == Question::ToolCall && said.calls.is_empty() {
            // Answered in words: it works, it just did not prove it calls tools.
            Judged::Unverified
        } else if said.text.trim().is_empty()
            && said.calls.is_empty()
            && said.reasoned
            && said.finish.as_deref() == Some("length")
        {
            Judged::Unverified
        } else {
            Judged::Wrong
        }
    }
}

/// A ping's text on one short line, as a report quotes it.
fn short(text: &str) -> String {
    crate::answers::failure::one_line(text)
}

/// Whether `text` states `n` as a number of its own ("42", "42.", "The answer is 42!"),
/// not as part of another ("142", "4.2").
fn states_number(text: &str, n: u64) -> bool {
    let want = n.to_string();
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .map(|w| w.trim_end_matches(['.', ',']))
        .any(|w| w == want)
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
        /// What the answer came to against the question.
        judged: Judged,
        /// Its text, cut to one short line (what a wrong answer or a notice said).
        said: String,
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
            detail: f.detail.into(),
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
        // The answer is read as chat chunks, to be judged against the question.
        keep_chunks: true,
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
            parsed,
            body,
            ..
        }) => {
            record.answered(c, &sent.grant, &rate);
            record.success(c, elapsed);
            record.spent(c, &sent.grant, &stats, prompt_tokens);
            let ms = elapsed.as_millis() as u64;
            let whole = parsed.unwrap_or_else(|| serde_json::from_slice(&body).unwrap_or_default());
            let said = Said::of(&[whole]);
            Ping::Ok {
                ttft_ms: ms,
                total_ms: ms,
                tokens: stats.output_tokens(),
                tool_calls: stats.tool_calls as u32,
                judged: question.judge(&said, &c.notices),
                said: short(&c.target.redact(&said.text)),
            }
        }
        Ok(Answer::Stream(mut s)) => {
            record.answered(c, &sent.grant, &std::mem::take(&mut s.rate));
            let ttft = s.ttft;
            let (end, chunks) = s.read_to_end(limits.deadline);
            let total = s.elapsed();
            record.stream_end(c, &sent, &end, ttft, s.stats());
            match end {
                StreamEnd::Failed(f) => Ping::failed(f),
                _ => {
                    let said = Said::of(&chunks);
                    Ping::Ok {
                        ttft_ms: ttft.as_millis() as u64,
                        total_ms: total.as_millis() as u64,
                        tokens: s.stats().output_tokens(),
                        tool_calls: s.stats().tool_calls as u32,
                        judged: question.judge(&said, &c.notices),
                        said: short(&c.target.redact(&said.text)),
                    }
                }
            }
        }
        Err(mut f) => {
            record.failed(c, &sent.grant, &f, sent.prompt_tokens);
            record.failure(c, &mut f, trial, &sent.grant, sent.prompt_tokens);
            Ping::failed(f)
        }
    };
    Ok((ping, sent.grant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_judged_against_the_question() {
        let text = |t: &str| Said {
            text: t.to_string(),
            ..Said::default()
        };
        let none: Vec<String> = Vec::new();
        let cases = [
            (text("42"), Judged::Right),
            (text("42."), Judged::Right),
            (text("The answer is 42!"), Judged::Right),
            (text("17 + 25 = 42"), Judged::Right),
            (text("The answer is 41."), Judged::Wrong),
            (text("142"), Judged::Wrong),
            (
                text("This model now requires a paid plan. Add credits to continue."),
                Judged::Notice,
            ),
            (
                Said {
                    reasoned: true,
                    finish: Some("length".into()),
                    ..Said::default()
                },
                Judged::Unverified,
            ),
            (
                Said {
                    reasoned: true,
                    finish: Some("stop".into()),
                    ..Said::default()
                },
                Judged::Wrong,
            ),
        ];
        for (said, want) in cases {
            assert_eq!(Question::Sum.judge(&said, &none), want, "{said:?}");
        }
        let call = |args: &str| Said {
            calls: vec![(TOOL_PING_TOOL.to_string(), args.to_string())],
            ..Said::default()
        };
        assert_eq!(
            Question::ToolCall.judge(&call(r#"{"city":"Paris, France"}"#), &none),
            Judged::Right
        );
        assert_eq!(
            Question::ToolCall.judge(&call(r#"{"city":"London"}"#), &none),
            Judged::Wrong
        );
        assert_eq!(
            Question::ToolCall.judge(&text("I would call get_weather for Paris."), &none),
            Judged::Unverified,
            "words, not a call: no proof, no failure"
        );
    }

    #[test]
    fn what_an_answer_said_with_reasoning_set_aside() {
        let chunks = [
            json!({"choices": [{"index": 0, "delta": {"reasoning_content": "Adding."}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "<think>17+25</thi"}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "nk>4"}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "2"}, "finish_reason": "stop"}]}),
        ];
        let said = Said::of(&chunks);
        assert_eq!(said.text, "42");
        assert!(said.reasoned);
        assert_eq!(said.finish.as_deref(), Some("stop"));
        let whole = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            "finish_reason": "tool_calls"}]});
        let said = Said::of(&[whole]);
        assert_eq!(
            said.calls,
            [("get_weather".to_string(), r#"{"city":"Paris"}"#.to_string())]
        );
    }

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
