//! The content gate: decides whether a provider's 2xx answer really carries an answer.
//!
//! Free providers answer 200 with `choices: []`, an `error` object, an HTML page, or a stream
//! that opens and closes with nothing in it. The gate turns each of those into a failure kind
//! so that it fails over instead of passing for a success. Pure: bytes in, judgement out.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::answers::classify::{looks_like_html, FailureKind};
use crate::answers::path::Lookup;
use crate::answers::toolcall::{Offered, Piece};

/// How much the gate demands of an answer (`router.failover.contentValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContentValidation {
    /// JSON, no `error`, non-empty `choices`, and real content in the first choice.
    #[default]
    Strict,
    /// JSON, no `error`, non-empty `choices`.
    Basic,
    /// Anything a 2xx carries passes.
    Off,
}

/// Why the gate refused an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateReject {
    pub kind: FailureKind,
    /// A short description, e.g. the provider's own error message.
    pub detail: String,
}

impl GateReject {
    pub(super) fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        GateReject {
            kind,
            detail: detail.into(),
        }
    }
}

/// What the gate learned from an accepted answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnswerStats {
    /// `usage.completion_tokens` when the provider reported it.
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens` when the provider reported it.
    pub prompt_tokens: Option<u64>,
    /// Of those, the tokens its prompt cache served (see [`cached_tokens`]).
    pub cached_tokens: Option<u64>,
    /// Characters of text, reasoning and tool arguments: the basis of a token estimate.
    pub content_chars: usize,
    /// Tool calls that passed the check against the request's tools (0 when none were
    /// offered): what tells a proven tool caller from a model that only talks about tools.
    pub tool_calls: usize,
}

impl AnswerStats {
    /// Reported output tokens, else an estimate of one token per four characters.
    pub fn output_tokens(&self) -> u64 {
        self.completion_tokens
            .unwrap_or_else(|| crate::tokens::estimate(self.content_chars))
    }
}

/// The message of an `error` object (OpenAI style) or a vLLM `{"object":"error"}` body.
pub(super) fn error_message(v: &Value) -> Option<String> {
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        let msg = err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string());
        return Some(msg);
    }
    if v.get("object").and_then(Value::as_str) == Some("error") {
        return Some(
            v.get("message")
                .and_then(Value::as_str)
                .unwrap_or("error")
                .to_string(),
        );
    }
    None
}

/// Characters of useful content in a message or delta object (0 when there is none):
/// text and reasoning in any of the shapes `reasoning` knows, and (with `tools`) tool
/// calls, which count even with empty arguments: a call is an answer. A stream whose calls
/// are checked counts them only once they are whole and pass.
pub(super) fn useful_chars(msg: &Value, tools: bool) -> Option<usize> {
    let (text, reasoning) = crate::answers::reasoning::useful_lengths(msg);
    let mut tool = 0;
    let mut has_tool = false;
    if let Some(calls) = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .filter(|_| tools)
    {
        has_tool |= !calls.is_empty();
        for call in calls {
            let piece = Piece::of(call);
            tool += piece.arguments().len() + piece.name().len();
        }
    }
    if let Some(f) = msg.get("function_call").filter(|f| f.is_object()) {
        has_tool = true;
        tool += f
            .get("arguments")
            .and_then(Value::as_str)
            .map_or(0, str::len);
    }
    let total = text + reasoning + tool;
    (total > 0 || has_tool).then_some(total.max(1))
}

pub(super) fn completion_tokens(v: &Value) -> Option<u64> {
    v.at("/usage/completion_tokens").and_then(Value::as_u64)
}

pub(super) fn prompt_tokens(v: &Value) -> Option<u64> {
    v.at("/usage/prompt_tokens").and_then(Value::as_u64)
}

/// Prompt tokens the provider served from its prompt cache: OpenAI's (and Groq's,
/// OpenRouter's, Gemini's) `usage.prompt_tokens_details.cached_tokens`, or DeepSeek's
/// `usage.prompt_cache_hit_tokens`.
pub(crate) fn cached_tokens(v: &Value) -> Option<u64> {
    v.at("/usage/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .or_else(|| {
            v.at("/usage/prompt_cache_hit_tokens")
                .and_then(Value::as_u64)
        })
}

/// Judges a complete non-stream body (without a provider's own notice phrases: the tests'
/// way in); with `offered` (the request's tools, strict mode)
/// every tool call must be one the client can run. A plain answer is judged from its skim
/// and comes back unparsed (`None`, as in `off` mode, which does not read it); any other
/// passing body comes back parsed, so the answer is parsed once on its way out.
#[cfg(test)]
pub fn check_payload(
    body: &[u8],
    mode: ContentValidation,
    offered: Option<&Offered>,
) -> Result<(AnswerStats, Option<Value>), GateReject> {
    check_answer(body, mode, offered, &[])
}

/// [`check_payload`], and in strict mode an answer that is only a provider notice (see
/// `answers::notice`; `notices`: the provider's own phrases) is no answer either.
pub fn check_answer(
    body: &[u8],
    mode: ContentValidation,
    offered: Option<&Offered>,
    notices: &[String],
) -> Result<(AnswerStats, Option<Value>), GateReject> {
    if mode == ContentValidation::Off {
        return Ok((AnswerStats::default(), None));
    }
    if looks_like_html(None, body) {
        return Err(GateReject::new(
            FailureKind::HtmlMaintenance,
            "an HTML page instead of JSON",
        ));
    }
    match Skim::of(body) {
        Some(skim) => {
            let judged = check_skim(&skim, mode)?;
            let notice = skim.content().filter(|_| mode == ContentValidation::Strict);
            match notice.filter(|text| crate::answers::notice::is_notice(text, notices)) {
                Some(text) => Err(notice_reject(text)),
                None => Ok(judged),
            }
        }
        None => {
            let (stats, tree) = check_tree(body, mode, offered)?;
            let message = tree
                .as_ref()
                .filter(|_| mode == ContentValidation::Strict)
                .and_then(|v| v.at("/choices/0/message"));
            match message.and_then(|m| crate::answers::notice::only_a_notice([m], notices)) {
                Some(text) => Err(notice_reject(&text)),
                None => Ok((stats, tree)),
            }
        }
    }
}

/// An answer that was only the provider's notice, quoted.
fn notice_reject(text: &str) -> GateReject {
    GateReject::new(
        FailureKind::ProviderNotice,
        format!("a provider notice: {}", text.trim()),
    )
}

/// Judges a plain answer from its skim (see [`skim`]): the verdicts of [`check_tree`] for
/// an answer without tool calls or errors, and no tree to hand on (`None`).
fn check_skim(
    skim: &Skim<'_>,
    mode: ContentValidation,
) -> Result<(AnswerStats, Option<Value>), GateReject> {
    if !skim.has_choices() {
        return Err(GateReject::new(
            FailureKind::EmptyChoices,
            "no choices in the answer",
        ));
    }
    let mut stats = AnswerStats {
        completion_tokens: skim.completion_tokens(),
        prompt_tokens: skim.prompt_tokens(),
        cached_tokens: skim.cached_tokens(),
        ..AnswerStats::default()
    };
    if mode == ContentValidation::Basic {
        return Ok((stats, None));
    }
    match skim.useful_chars() {
        Some(chars) => {
            stats.content_chars = chars;
            Ok((stats, None))
        }
        None => Err(GateReject::new(
            FailureKind::EmptyContent,
            "first choice has no text, tool calls or reasoning",
        )),
    }
}

/// Judges an answer from its JSON tree, which comes back with the verdict.
fn check_tree(
    body: &[u8],
    mode: ContentValidation,
    offered: Option<&Offered>,
) -> Result<(AnswerStats, Option<Value>), GateReject> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| GateReject::new(FailureKind::InvalidJson, format!("body is not JSON: {e}")))?;
    if let Some(msg) = error_message(&v) {
        return Err(GateReject::new(FailureKind::ErrorPayload, msg));
    }
    let choices = v.get("choices").and_then(Value::as_array);
    let Some(first) = choices.and_then(|c| c.first()) else {
        return Err(GateReject::new(
            FailureKind::EmptyChoices,
            "no choices in the answer",
        ));
    };
    let mut stats = AnswerStats {
        completion_tokens: completion_tokens(&v),
        prompt_tokens: prompt_tokens(&v),
        ..AnswerStats::default()
    };
    if mode == ContentValidation::Basic {
        return Ok((stats, Some(v)));
    }
    let message = first.get("message");
    if let Some(offered) = offered {
        for call in message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let piece = Piece::of(call);
            if let Err(why) = offered.check(piece.name(), piece.arguments()) {
                return Err(GateReject::new(FailureKind::InvalidToolCall, why));
            }
            stats.tool_calls += 1;
        }
    }
    match message.and_then(|m| useful_chars(m, true)) {
        Some(chars) => {
            stats.content_chars = chars;
            Ok((stats, Some(v)))
        }
        None => Err(GateReject::new(
            FailureKind::EmptyContent,
            "first choice has no text, tool calls or reasoning",
        )),
    }
}

pub(crate) mod skim;
mod stream;

use skim::Skim;
pub use stream::{Fed, StreamSignal, StreamTracker};

#[cfg(test)]
pub(crate) mod arbitrary;

#[cfg(test)]
mod tests {
    use super::*;
    use ContentValidation::*;
    use FailureKind::*;

    fn kind(body: &str, mode: ContentValidation) -> Result<(), FailureKind> {
        check_payload(body.as_bytes(), mode, None)
            .map(|_| ())
            .map_err(|r| r.kind)
    }

    const OK: &str = r#"{"choices":[{"message":{"role":"assistant","content":"4"}}],"usage":{"completion_tokens":1}}"#;

    #[test]
    fn payload_table() {
        let cases: &[(&str, ContentValidation, Result<(), FailureKind>)] = &[
            (OK, Strict, Ok(())),
            (r#"{"choices":[]}"#, Strict, Err(EmptyChoices)),
            (r#"{"id":"x"}"#, Strict, Err(EmptyChoices)),
            (r#"{"choices":[]}"#, Basic, Err(EmptyChoices)),
            (
                r#"{"choices":[{"message":{"content":"  "}}]}"#,
                Strict,
                Err(EmptyContent),
            ),
            (
                r#"{"choices":[{"message":{"content":"  "}}]}"#,
                Basic,
                Ok(()),
            ),
            (
                r#"{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}"#,
                Strict,
                Ok(()),
            ),
            (
                r#"{"choices":[{"message":{"content":null,"tool_calls":[]}}]}"#,
                Strict,
                Err(EmptyContent),
            ),
            (
                r#"{"choices":[{"message":{"function_call":{"name":"f","arguments":""}}}]}"#,
                Strict,
                Ok(()),
            ),
            (
                r#"{"choices":[{"message":{"content":"","reasoning_content":"thinking"}}]}"#,
                Strict,
                Ok(()),
            ),
            (
                r#"{"choices":[{"message":{"content":"","reasoning":"thinking"}}]}"#,
                Strict,
                Ok(()),
            ),
            (
                r#"{"error":{"message":"upstream died"}}"#,
                Strict,
                Err(ErrorPayload),
            ),
            (
                r#"{"error":{"message":"upstream died"}}"#,
                Basic,
                Err(ErrorPayload),
            ),
            (
                r#"{"object":"error","message":"vllm says no"}"#,
                Strict,
                Err(ErrorPayload),
            ),
            (r#"{"choices":[{"message":"#, Strict, Err(InvalidJson)),
            (
                "<html><body>maintenance</body></html>",
                Strict,
                Err(HtmlMaintenance),
            ),
            ("garbage", Off, Ok(())),
            (r#"{"choices":[]}"#, Off, Ok(())),
        ];
        for (body, mode, want) in cases {
            assert_eq!(&kind(body, *mode), want, "{body} in {mode:?}");
        }
    }

    #[test]
    fn payload_reports_usage_or_estimate() {
        let (stats, _) = check_payload(OK.as_bytes(), Strict, None).unwrap();
        assert_eq!(stats.output_tokens(), 1);
        let est = check_payload(
            br#"{"choices":[{"message":{"content":"eight ch"}}]}"#,
            Strict,
            None,
        )
        .unwrap()
        .0;
        assert_eq!((est.completion_tokens, est.output_tokens()), (None, 2));
    }
}

/// Property tests of the payload check: it never panics, whatever it is given, and judges
/// the plain shapes (text in the first choice, no choices) the same way whatever else the
/// body holds.
#[cfg(test)]
mod properties {
    use super::*;
    use crate::answers::gate::arbitrary::{json_value, text};
    use proptest::prelude::*;
    use serde_json::json;
    use ContentValidation::*;

    fn tools() -> Offered {
        Offered::of(
            &json!({"tools": [{"type": "function", "function": {"name": "Bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"]}}}]}),
        )
        .unwrap()
    }

    /// Every mode, with and without offered tools.
    fn judge(body: &[u8]) -> Vec<Result<(AnswerStats, Option<Value>), GateReject>> {
        let tools = tools();
        [Strict, Basic, Off]
            .into_iter()
            .flat_map(|mode| [None, Some(&tools)].map(|offered| check_payload(body, mode, offered)))
            .collect()
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_and_json_never_panic(
            bytes in prop::collection::vec(any::<u8>(), 0..256),
            value in json_value(),
        ) {
            for body in [bytes, value.to_string().into_bytes()] {
                let verdicts = judge(&body);
                // Off reads nothing and passes everything.
                prop_assert!(verdicts[4..].iter().all(|v| matches!(v, Ok((_, None)))));
            }
        }

        #[test]
        fn text_in_the_first_choice_passes(
            (before, visible, after) in (text(), prop::char::range('!', '~'), text()),
            extra in json_value(),
            more in prop::collection::vec(json_value(), 0..3),
        ) {
            let content = format!("{before}{visible}{after}");
            let message = json!({"role": "assistant", "content": content});
            let first = json!({"index": 0, "message": message, "finish_reason": "stop"});
            let mut choices = vec![first];
            choices.extend(more);
            let body = json!({"id": "x", "choices": choices, "extra": extra}).to_string();
            for verdict in judge(body.as_bytes()) {
                prop_assert!(verdict.is_ok(), "{:?}", verdict);
            }
        }

        #[test]
        fn no_choices_fails(extra in json_value(), usage in json_value()) {
            let body = json!({"id": "x", "choices": [], "extra": extra, "usage": usage});
            for verdict in &judge(body.to_string().as_bytes())[..4] {
                let kind = verdict.as_ref().map_err(|r| r.kind);
                prop_assert_eq!(kind, Err(FailureKind::EmptyChoices));
            }
        }
    }
}
