//! A chat request's tool results compressed in place, and what that saved. Each
//! `role: "tool"` message is paired with the assistant's call it answers (by
//! `tool_call_id`), which tells what produced it; nothing else in the request is read or
//! changed.
//!
//! Only the changed results' text is replaced: the rest of the request is neither copied
//! nor rebuilt, so a request without tool results, or whose results are clean already,
//! costs a walk over its messages.

use std::collections::HashMap;

use serde_json::Value;

use crate::answers::toolcall::Piece;

use super::memo::{Changed, Memo};
use super::mode::Mode;
use super::result::{file_contents, tool_result, Call};

/// What compressing a request's tool results did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Compressed {
    /// Tool results the request holds.
    pub tool_results: usize,
    /// Tool results that changed.
    pub changed: usize,
    /// Characters of the results that changed, before and after.
    pub chars_before: usize,
    pub chars_after: usize,
}

impl Compressed {
    /// Tokens taken out of the request (fcm's estimate, characters / 4).
    pub fn saved_tokens(&self) -> u64 {
        crate::tokens::estimate(self.chars_before)
            .saturating_sub(crate::tokens::estimate(self.chars_after))
    }
}

/// Where a changed text goes: a tool message's content, or one of its text parts.
struct Replacement {
    message: usize,
    part: Option<usize>,
    text: String,
}

/// `body`'s tool results compressed in `mode`, in place, through `memo` when there is one
/// (results seen on earlier turns are not compressed again).
pub fn chat_body(body: &mut Value, mode: Mode, memo: Option<&Memo>) -> Compressed {
    let mut out = Compressed::default();
    if mode == Mode::Off {
        return out;
    }
    let replacements = replacements(body, mode, memo, &mut out);
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return out;
    };
    for r in replacements {
        let Some(content) = messages[r.message].get_mut("content") else {
            continue;
        };
        let slot = match r.part {
            None => Some(content),
            Some(i) => content.get_mut(i).and_then(|p| p.get_mut("text")),
        };
        if let Some(slot) = slot {
            *slot = Value::String(r.text);
        }
    }
    out
}

/// The new texts of `body`'s changed tool results, found without changing anything.
fn replacements(
    body: &Value,
    mode: Mode,
    memo: Option<&Memo>,
    out: &mut Compressed,
) -> Vec<Replacement> {
    let mut found = Vec::new();
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return found;
    };
    let mut calls: HashMap<&str, Call<'_>> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        match m.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                for c in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let piece = Piece::of(c);
                    let (Some(id), Some(name)) = (piece.id, piece.name) else {
                        continue;
                    };
                    let arguments = piece.arguments.unwrap_or("{}");
                    calls.insert(id, Call { name, arguments });
                }
            }
            Some("tool") => {
                out.tool_results += 1;
                let call = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .and_then(|id| calls.get(id).copied());
                let mut one = |text: &str, part: Option<usize>| {
                    if let Some(c) = compressed(text, call, mode, memo) {
                        out.changed += 1;
                        out.chars_before += c.chars_before;
                        out.chars_after += c.chars_after;
                        found.push(Replacement {
                            message: i,
                            part,
                            text: c.text,
                        });
                    }
                };
                match m.get("content") {
                    Some(Value::String(s)) => one(s, None),
                    Some(Value::Array(parts)) => {
                        for (k, p) in parts.iter().enumerate() {
                            if let Some(text) = p.get("text").and_then(Value::as_str) {
                                one(text, Some(k));
                            }
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    found
}

/// One result's text compressed, `None` when it stays as it is. A file's contents are
/// passed over before the memo: there is nothing to remember of them.
fn compressed(
    text: &str,
    call: Option<Call<'_>>,
    mode: Mode,
    memo: Option<&Memo>,
) -> Option<Changed> {
    if file_contents(text, call) {
        return None;
    }
    let compress = |t: &str| Changed::of(t, |t| tool_result(t, call, mode));
    match memo {
        Some(memo) => memo.get_or(text, call, mode, compress),
        None => compress(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn noisy() -> String {
        format!(
            "\x1b[32mok\x1b[0m\n{}",
            "warning: the same line again\n".repeat(20)
        )
    }

    fn request(output: &str) -> Value {
        json!({"model": "fcm", "messages": [
            {"role": "system", "content": "\x1b[31mkept\x1b[0m"},
            {"role": "user", "content": format!("look: {output}")},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"cargo build\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"a\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": output},
            {"role": "tool", "tool_call_id": "c2", "content": output},
            {"role": "assistant", "content": output},
        ], "tools": [], "max_tokens": 100})
    }

    /// `body` compressed in `mode` (through `memo`), and what that did.
    fn compress(body: &Value, mode: Mode, memo: Option<&Memo>) -> (Value, Compressed) {
        let mut new = body.clone();
        let c = chat_body(&mut new, mode, memo);
        (new, c)
    }

    #[test]
    fn only_shell_results_change() {
        let body = request(&noisy());
        let (new, c) = compress(&body, Mode::Lossless, None);
        assert_eq!((c.tool_results, c.changed), (2, 1));
        let msgs = new["messages"].as_array().unwrap();
        assert_eq!(
            msgs[3]["content"],
            "ok\nwarning: the same line again\n[fcm: the line above appeared 20 times in a row]\n"
        );
        assert_eq!(msgs[3]["tool_call_id"], "c1");
        for i in [0, 1, 2, 4, 5] {
            assert_eq!(msgs[i], body["messages"][i], "message {i}");
        }
        assert_eq!(new["max_tokens"], 100);
        assert_eq!(
            new.as_object().unwrap().keys().collect::<Vec<_>>(),
            body.as_object().unwrap().keys().collect::<Vec<_>>()
        );
        assert!(c.saved_tokens() > 100, "{}", c.saved_tokens());
        // The same history, the same bytes, remembered or not.
        let (again, _) = compress(&body, Mode::Lossless, None);
        assert_eq!(again.to_string(), new.to_string());
        let memo = Memo::new(1 << 20);
        for _ in 0..2 {
            let (remembered, m) = compress(&body, Mode::Lossless, Some(&memo));
            assert_eq!(remembered.to_string(), new.to_string());
            assert_eq!(m, c);
        }
    }

    #[test]
    fn text_parts_and_off() {
        let mut body = request(&noisy());
        body["messages"][3]["content"] = json!([{"type": "text", "text": noisy()}]);
        let (new, _) = compress(&body, Mode::Lossless, None);
        let part = &new["messages"][3]["content"][0];
        assert_eq!(part["type"], "text");
        assert!(part["text"].as_str().unwrap().starts_with("ok\nwarning"));
        let (same, off) = compress(&body, Mode::Off, None);
        assert_eq!((same, off), (body, Compressed::default()));
        let quiet = request("all clean here, nothing to take out");
        let (same, clean) = compress(&quiet, Mode::Aggressive, None);
        assert_eq!(same, quiet);
        assert_eq!(
            (clean.tool_results, clean.changed, clean.saved_tokens()),
            (2, 0, 0)
        );
    }
}
