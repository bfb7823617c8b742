//! Fusion: a panel of models answers one request and a judge model writes the answer. This
//! file is the pure part: what the panel is sent, what of each answer the judge sees, and
//! the judge's request. Pure: chat bodies in, chat bodies out; the router sends them.

use serde_json::{json, Map, Value};

/// Most characters of one panel answer the judge is shown; a longer one is cut (a panel
/// answer should not crowd the conversation out of the judge's window).
pub const MAX_ANSWER_CHARS: usize = 24_000;

/// What the judge is asked, after the conversation and before the panel's answers.
const BRIEF: &str = "Several assistants have answered the last user message above, \
independently. Their answers follow. Write the one best answer to that message: keep what \
is correct and useful in any of them, fix what is wrong, leave out what does not help. \
Answer the user directly, as if you were the only assistant, without mentioning the other \
answers or this instruction.";

/// Whether the request offers tools: such a request is not fused (a merged answer cannot
/// carry a tool call the agent will run).
pub fn offers_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

/// The panel's request: the client's, answered whole rather than streamed.
pub fn panel_body(body: &Value) -> Value {
    let mut b = body.clone();
    if let Some(obj) = b.as_object_mut() {
        obj.insert("stream".into(), Value::Bool(false));
        obj.remove("stream_options");
    }
    b
}

/// The answer text of a chat completion (reasoning, in a field or a leading think block,
/// left out); `None` when it has none.
pub fn answer_text(completion: &Value) -> Option<String> {
    let msg = completion.pointer("/choices/0/message")?;
    let text = crate::answers::reasoning::parts(msg).text;
    let text = crate::answers::reasoning::split_think(&text).text;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The judge's request: the client's conversation, then one user message with the brief and
/// the panel's answers (each cut to [`MAX_ANSWER_CHARS`]). Streams when the client's does.
pub fn judge_body(body: &Value, answers: &[impl AsRef<str>]) -> Value {
    let mut listing = String::from(BRIEF);
    for (n, a) in answers.iter().map(AsRef::as_ref).enumerate() {
        let cut: String = a.chars().take(MAX_ANSWER_CHARS).collect();
        let more = if cut.len() < a.len() {
            "\n[…cut]"
        } else {
            ""
        };
        listing.push_str(&format!(
            "\n\n<answer {}>\n{cut}{more}\n</answer {}>",
            n + 1,
            n + 1
        ));
    }
    let mut b = match body.as_object() {
        Some(obj) => obj.clone(),
        None => Map::new(),
    };
    let brief = json!({"role": "user", "content": listing});
    match b.get_mut("messages").and_then(Value::as_array_mut) {
        Some(messages) => messages.push(brief),
        None => {
            b.insert("messages".into(), Value::Array(vec![brief]));
        }
    }
    // Sampling as many choices of a merge would only repeat the panel's work.
    b.remove("n");
    Value::Object(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_and_panel_body() {
        assert!(offers_tools(
            &json!({"tools": [{"type": "function", "function": {"name": "f"}}]})
        ));
        assert!(!offers_tools(&json!({"tools": []})) && !offers_tools(&json!({})));
        let b = panel_body(
            &json!({"model": "fcm:f", "stream": true, "stream_options": {"include_usage": true}, "messages": []}),
        );
        assert_eq!(
            b,
            json!({"model": "fcm:f", "stream": false, "messages": []})
        );
    }

    #[test]
    fn answer_text_leaves_reasoning_out() {
        let c = json!({"choices": [{"message": {"role": "assistant", "content": "<think>hmm</think>\nUse a HashMap.", "reasoning_content": "more"}}]});
        assert_eq!(answer_text(&c).as_deref(), Some("Use a HashMap."));
        let parts = json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]});
        assert_eq!(answer_text(&parts).as_deref(), Some("ab"));
        let empty =
            json!({"choices": [{"message": {"content": "  ", "reasoning": "only thoughts"}}]});
        assert_eq!(answer_text(&empty), None);
        assert_eq!(answer_text(&json!({"choices": []})), None);
    }

    #[test]
    fn judge_sees_the_conversation_then_the_answers() {
        let body = json!({"model": "fcm:f", "stream": true, "n": 2, "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "how do I reverse a Vec?"}
        ]});
        let long = "x".repeat(MAX_ANSWER_CHARS + 10);
        let j = judge_body(&body, &["v.reverse()".into(), long]);
        let msgs = j["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[..2], body["messages"].as_array().unwrap()[..]);
        let last = msgs[2]["content"].as_str().unwrap();
        assert!(last.starts_with(BRIEF));
        assert!(last.contains("<answer 1>\nv.reverse()\n</answer 1>"));
        assert!(last.contains("[…cut]\n</answer 2>"));
        assert!(last.len() < MAX_ANSWER_CHARS + BRIEF.len() + 200);
        assert_eq!(j["stream"], true, "the judge streams when the client does");
        assert!(j.get("n").is_none());
    }
}
