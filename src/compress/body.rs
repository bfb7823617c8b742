//! A chat request's tool results compressed, and what that saved. Each `role: "tool"`
//! message is paired with the assistant's call it answers (by `tool_call_id`), which tells
//! what produced it; nothing else in the request is read or changed.
//!
//! The request is rebuilt only when a result changed; one without tool results, or whose
//! results are clean already, costs a walk over its messages.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::memo::{Changed, Memo};
use super::mode::Mode;
use super::result::{tool_result, Call};

/// A request's tool results, compressed.
#[derive(Debug, Default)]
pub struct Compressed {
    /// The request with its changed tool results; `None` when none changed.
    pub body: Option<Value>,
    /// Tool results the request holds.
    pub tool_results: usize,
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

/// `body`'s tool results compressed in `mode`, through `memo` when there is one (results
/// seen on earlier turns are not compressed again).
pub fn chat_body(body: &Value, mode: Mode, memo: Option<&Memo>) -> Compressed {
    let mut out = Compressed::default();
    if mode == Mode::Off {
        return out;
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return out;
    };
    let mut calls: HashMap<&str, Call<'_>> = HashMap::new();
    let mut replaced: Vec<(usize, Value)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                for c in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let (Some(id), Some(name)) = (
                        c.get("id").and_then(Value::as_str),
                        c.pointer("/function/name").and_then(Value::as_str),
                    ) else {
                        continue;
                    };
                    let arguments = c
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("{}");
                    calls.insert(id, Call { name, arguments });
                }
            }
            Some("tool") => {
                out.tool_results += 1;
                let call = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .and_then(|id| calls.get(id).copied());
                if let Some(content) = m
                    .get("content")
                    .and_then(|c| content(c, call, mode, memo, &mut out))
                {
                    replaced.push((i, content));
                }
            }
            _ => {}
        }
    }
    if !replaced.is_empty() {
        out.body = Some(rebuilt(body, replaced));
    }
    out
}

/// A tool message's content compressed (a string, or a list of text parts); `None` when
/// nothing changed. Counts the changed characters into `out`.
fn content(
    content: &Value,
    call: Option<Call<'_>>,
    mode: Mode,
    memo: Option<&Memo>,
    out: &mut Compressed,
) -> Option<Value> {
    let mut one = |text: &str| -> Option<String> {
        let compress = |t: &str| Changed::of(t, |t| tool_result(t, call, mode));
        let changed = match memo {
            Some(memo) => memo.get_or(text, call, mode, compress),
            None => compress(text),
        }?;
        out.chars_before += changed.chars_before;
        out.chars_after += changed.chars_after;
        Some(changed.text)
    };
    match content {
        Value::String(s) => one(s).map(Value::String),
        Value::Array(parts) => {
            let mut changed = false;
            let new: Vec<Value> = parts
                .iter()
                .map(
                    |p| match p.get("text").and_then(Value::as_str).and_then(&mut one) {
                        Some(text) => {
                            changed = true;
                            let mut p = p.clone();
                            p["text"] = Value::String(text);
                            p
                        }
                        None => p.clone(),
                    },
                )
                .collect();
            changed.then_some(Value::Array(new))
        }
        _ => None,
    }
}

/// `body` with the contents of the messages at the indices of `replaced` (in order)
/// replaced.
fn rebuilt(body: &Value, replaced: Vec<(usize, Value)>) -> Value {
    let Some(obj) = body.as_object() else {
        return body.clone();
    };
    let mut out = Map::with_capacity(obj.len());
    let mut replaced = replaced.into_iter().peekable();
    for (k, v) in obj {
        if k != "messages" {
            out.insert(k.clone(), v.clone());
            continue;
        }
        let messages = v.as_array().map_or(&[][..], Vec::as_slice);
        let mut list = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            match replaced.next_if(|(at, _)| *at == i) {
                Some((_, content)) => {
                    let mut new = Map::new();
                    for (mk, mv) in m.as_object().into_iter().flatten() {
                        let value = if mk == "content" {
                            content.clone()
                        } else {
                            mv.clone()
                        };
                        new.insert(mk.clone(), value);
                    }
                    list.push(Value::Object(new));
                }
                None => list.push(m.clone()),
            }
        }
        out.insert(k.clone(), Value::Array(list));
    }
    Value::Object(out)
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

    #[test]
    fn only_shell_results_change() {
        let body = request(&noisy());
        let c = chat_body(&body, Mode::Lossless, None);
        assert_eq!(c.tool_results, 2);
        let new = c.body.as_ref().unwrap();
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
        let again = chat_body(&body, Mode::Lossless, None).body.unwrap();
        assert_eq!(again.to_string(), new.to_string());
        let memo = Memo::new(1 << 20);
        for _ in 0..2 {
            let c = chat_body(&body, Mode::Lossless, Some(&memo));
            assert_eq!(c.body.as_ref().unwrap().to_string(), new.to_string());
            assert_eq!(
                c.saved_tokens(),
                chat_body(&body, Mode::Lossless, None).saved_tokens()
            );
        }
    }

    #[test]
    fn text_parts_and_off() {
        let mut body = request(&noisy());
        body["messages"][3]["content"] = json!([{"type": "text", "text": noisy()}]);
        let c = chat_body(&body, Mode::Lossless, None);
        let part = &c.body.unwrap()["messages"][3]["content"][0];
        assert_eq!(part["type"], "text");
        assert!(part["text"].as_str().unwrap().starts_with("ok\nwarning"));
        let off = chat_body(&body, Mode::Off, None);
        assert!(off.body.is_none() && off.tool_results == 0);
        let clean = chat_body(
            &request("all clean here, nothing to take out"),
            Mode::Aggressive,
            None,
        );
        assert!(clean.body.is_none());
        assert_eq!((clean.tool_results, clean.saved_tokens()), (2, 0));
    }
}
