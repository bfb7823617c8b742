//! Token estimates, where nobody counted: characters / 4, the usual rough rate for English
//! and code (checked against real answers' `completion_tokens` in the tests: 0.66-1.12,
//! median 1.05). One rule for the router's window checks, history trimming, token
//! budgets, the bench's pings, Anthropic's `count_tokens` and an answer without usage.
//!
//! It does not tokenize: no model's vocabulary is shipped, and a window check needs a
//! rough size, not an exact one.

use serde_json::Value;

/// Tokens in `chars` characters of text.
pub fn estimate(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Characters of all string values in a JSON value.
pub fn text_chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.iter().map(text_chars).sum(),
        Value::Object(o) => o.values().map(text_chars).sum(),
        _ => 0,
    }
}

/// Tokens of a chat request's prompt alone (its messages and tools): what a provider's
/// token budget is charged before the answer.
pub fn prompt(body: &Value) -> u64 {
    let chars: usize = ["messages", "tools"]
        .iter()
        .filter_map(|k| body.get(*k))
        .map(text_chars)
        .sum();
    estimate(chars)
}

/// The answer room a window check asks for at most. Clients ask for large output budgets by
/// default (OpenCode 32,000, Claude Code 32,000): such a budget must not bar a model whose
/// window holds the prompt and a working answer. Where the whole budget does not fit, it is
/// lowered to the room the model has (see [`lowered`]).
pub const ANSWER_ROOM: u64 = 4_096;

/// The answer budget `body` asks for (`max_tokens`, else `max_completion_tokens`).
pub fn asked(body: &Value) -> Option<u64> {
    body.get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"))
        .and_then(Value::as_u64)
}

/// `prompt` tokens (already estimated for `body`) plus the answer room `body` asks for, up
/// to [`ANSWER_ROOM`]: what a model's context window must hold.
pub fn with_answer(prompt: u64, body: &Value) -> u64 {
    // Saturating: `max_tokens: 18446744073709551615` is larger than every window, not tiny.
    prompt.saturating_add(asked(body).unwrap_or(0).min(ANSWER_ROOM))
}

/// The budget a model with `window` tokens takes for `body` when what it asks does not fit:
/// `Some((asked, room))`, the room being the window less the prompt and a tenth of it (the
/// estimate runs under real counts). `None` when the budget fits or none is asked.
pub fn lowered(window: u64, prompt: u64, body: &Value) -> Option<(u64, u64)> {
    let asked = asked(body)?;
    let room = window
        .saturating_sub(prompt.saturating_add(prompt / 10))
        .max(1);
    (asked > room).then_some((asked, room))
}

/// Tokens a chat request needs in a window: its prompt and the answer it asks room for.
pub fn needed(body: &Value) -> u64 {
    with_answer(prompt(body), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn estimates() {
        assert_eq!(estimate(0), 0);
        assert_eq!(estimate(1), 1);
        assert_eq!(estimate(8), 2);
        assert_eq!(text_chars(&json!({"a": "héllo", "b": [1, "xy"]})), 7);
        let body = json!({"messages": [{"role": "user", "content": "12345678"}], "max_tokens": 10});
        // "user" and the content: 12 characters.
        assert_eq!(prompt(&body), 3);
        assert_eq!(needed(&body), 13);
        // A default budget larger than the room counts as the room's floor.
        assert_eq!(
            with_answer(5, &json!({"max_tokens": u64::MAX})),
            5 + ANSWER_ROOM
        );
        assert_eq!(
            with_answer(5, &json!({"max_completion_tokens": 32_000})),
            5 + ANSWER_ROOM
        );
        assert_eq!(
            lowered(32_768, 10_000, &json!({"max_tokens": 32_000})),
            Some((32_000, 21_768))
        );
        assert_eq!(
            lowered(131_072, 10_000, &json!({"max_tokens": 32_000})),
            None
        );
        assert_eq!(lowered(8_192, 10_000, &json!({})), None);
        assert_eq!(
            lowered(8_192, 10_000, &json!({"max_tokens": 10})),
            Some((10, 1))
        );
    }
}
