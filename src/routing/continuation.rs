//! The request that asks another model to finish an answer whose stream broke off: the
//! conversation as the client sent it, the answer so far as the assistant's turn, and a
//! short instruction to go on from its last word. The client sees one answer: the partial
//! text it already has, then the continuation.
//!
//! An instruction rather than a bare assistant prefix: OpenAI-compatible servers differ on
//! a last assistant message (some continue it, some start a new turn, some refuse), while
//! every chat model follows a user turn.

use serde_json::{json, Value};

/// What the continuing model is told, after the partial answer.
pub(crate) const INSTRUCTION: &str = "Your reply above was cut off. Continue it exactly \
where it stops, without repeating any of it and without comment: write only the rest.";

/// The chat request for the rest of an answer that broke off after `given` (its text so
/// far; empty when only reasoning had come, and the request is then asked again as it was).
pub(crate) fn request(original: &Value, given: &str) -> Value {
    let mut body = original.clone();
    if given.is_empty() {
        return body;
    }
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        messages.push(json!({"role": "assistant", "content": given}));
        messages.push(json!({"role": "user", "content": INSTRUCTION}));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partial_answer_and_the_instruction_follow_the_conversation() {
        let original = json!({"model": "fcm", "stream": true, "messages": [
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Plan it."}]});
        let body = request(&original, "Step 1: read the file. Step 2:");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(
            messages[2],
            json!({"role": "assistant", "content": "Step 1: read the file. Step 2:"})
        );
        assert_eq!(messages[3]["role"], "user");
        assert_eq!(body["stream"], true);
        assert_eq!(
            request(&original, ""),
            original,
            "nothing said yet: asked again"
        );
    }
}
