//! History trimming: when a conversation no longer fits any model that can take it, the
//! middle of it goes so that a smaller window can answer. Kept: the system prompt, the first
//! user turn, the latest user turn with everything after it (its media, tool calls and
//! their results). Dropped: whole turns in between, oldest first, until the rest fits. A
//! turn is a user message and every assistant and tool message up to the next user
//! message, so a tool call and its results always stay or go together. Pure: chat messages
//! in, fewer chat messages out.

use serde_json::Value;

use crate::tokens::{estimate, text_chars};

/// The share of the window the trimmed prompt may fill; the rest is room for the answer.
pub const FILL: f64 = 0.8;

/// What trimming did.
#[derive(Debug, Clone, PartialEq)]
pub struct Trimmed {
    pub messages: Vec<Value>,
    /// Messages dropped.
    pub dropped: usize,
    /// The kept messages' estimated tokens (characters / 4).
    pub tokens: u64,
}

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// Trims `messages` so their estimate (characters / 4) is at most `budget` tokens. `None`
/// when nothing can be dropped or even the kept turns are larger than `budget`.
pub fn trim(messages: &[Value], budget: u64) -> Option<Trimmed> {
    let tokens =
        |ms: &mut dyn Iterator<Item = &Value>| -> u64 { ms.map(|m| estimate(text_chars(m))).sum() };
    // Leading system (and developer) messages, then turns each starting at a user message.
    let head = messages
        .iter()
        .take_while(|m| matches!(role(m), "system" | "developer"))
        .count();
    let mut turns: Vec<&[Value]> = Vec::new();
    let mut start = head;
    for i in head + 1..=messages.len() {
        if i == messages.len() || role(&messages[i]) == "user" {
            if start < i {
                turns.push(&messages[start..i]);
            }
            start = i;
        }
    }
    // The first user turn's first message stays; what follows it in that turn (the
    // model's answer and its tools) is a droppable block of its own. The last turn stays.
    if turns.len() < 2 {
        return None;
    }
    let first = turns[0];
    let last = turns[turns.len() - 1];
    let mut blocks: Vec<&[Value]> = Vec::new();
    if first.len() > 1 {
        blocks.push(&first[1..]);
    }
    blocks.extend(turns[1..turns.len() - 1].iter().copied());
    let fixed = tokens(
        &mut messages[..head]
            .iter()
            .chain(std::iter::once(&first[0]))
            .chain(last.iter()),
    );
    let block_tokens: Vec<u64> = blocks.iter().map(|b| tokens(&mut b.iter())).collect();
    let mut total = fixed + block_tokens.iter().sum::<u64>();
    let mut keep_from = 0;
    while total > budget && keep_from < blocks.len() {
        total -= block_tokens[keep_from];
        keep_from += 1;
    }
    if total > budget || keep_from == 0 {
        return None;
    }
    let dropped: usize = blocks[..keep_from].iter().map(|b| b.len()).sum();
    let mut kept: Vec<Value> = messages[..head].to_vec();
    kept.push(first[0].clone());
    for b in &blocks[keep_from..] {
        kept.extend(b.iter().cloned());
    }
    kept.extend(last.iter().cloned());
    Some(Trimmed {
        messages: kept,
        dropped,
        tokens: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn call(id: &str) -> Value {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "Bash", "arguments": "{}"}}]})
    }

    fn result(id: &str, size: usize) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": "x".repeat(size)})
    }

    /// A session: system, first turn, `n` middle turns of one tool round trip each, the
    /// last turn with its own tool call and result.
    fn session(n: usize, size: usize) -> Vec<Value> {
        let mut m = vec![
            json!({"role": "system", "content": "You are a coding agent."}),
            user("Fix the build."),
        ];
        for t in 0..n {
            m.push(user(&format!("step {t}")));
            m.push(call(&format!("c{t}")));
            m.push(result(&format!("c{t}"), size));
            m.push(json!({"role": "assistant", "content": format!("done {t}")}));
        }
        m.push(user("Now run the tests."));
        m.push(call("last"));
        m.push(result("last", 40));
        m
    }

    #[test]
    fn the_middle_goes_oldest_first_and_the_ends_stay() {
        let m = session(10, 4000); // each middle turn about 1,000 tokens
        let t = trim(&m, 3500).unwrap();
        assert_eq!(
            t.dropped,
            7 * 4,
            "seven of ten middle turns (1,000 tokens each)"
        );
        assert!(t.tokens <= 3500);
        let roles: Vec<&str> = t.messages.iter().map(role).collect();
        assert_eq!(roles[..2], ["system", "user"]);
        assert_eq!(t.messages[1]["content"], "Fix the build.");
        assert_eq!(
            t.messages[2]["content"], "step 7",
            "the newest middle turns stay"
        );
        assert_eq!(t.messages.last().unwrap()["tool_call_id"], "last");
        // Every tool result answers a call that is kept.
        for (i, msg) in t.messages.iter().enumerate() {
            if role(msg) == "tool" {
                let id = msg["tool_call_id"].as_str().unwrap();
                assert!(
                    t.messages[..i]
                        .iter()
                        .any(|p| p["tool_calls"][0]["id"] == id),
                    "orphan {id}"
                );
            }
        }
    }

    #[test]
    fn nothing_to_drop_or_too_big_either_way() {
        let m = session(0, 10);
        assert!(trim(&m, 1).is_none(), "only the ends: nothing to drop");
        let m = session(3, 40);
        assert!(
            trim(&m, 1_000_000).is_none(),
            "it fits already: nothing dropped"
        );
        let mut big_last = session(3, 40);
        big_last.push(result("last", 100_000));
        assert!(
            trim(&big_last, 1000).is_none(),
            "the last turn alone is over the budget"
        );
    }

    #[test]
    fn the_first_turns_answer_is_droppable_but_not_its_question() {
        let mut m = vec![
            user("first"),
            call("a"),
            result("a", 8000),
            user("second"),
            json!({"role": "assistant", "content": "ok"}),
            user("last"),
        ];
        m.insert(0, json!({"role": "system", "content": "sys"}));
        let t = trim(&m, 1000).unwrap();
        let contents: Vec<String> = t
            .messages
            .iter()
            .map(|m| m["content"].to_string())
            .collect();
        assert_eq!(
            contents,
            ["\"sys\"", "\"first\"", "\"second\"", "\"ok\"", "\"last\""]
        );
        assert_eq!(t.dropped, 2);
    }
}
