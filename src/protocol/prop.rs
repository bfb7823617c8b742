//! Property tests of the request and answer translators (Anthropic Messages and OpenAI
//! Responses ⇄ chat): any JSON at all is answered without a panic, and a well-formed
//! conversation keeps its text, its tool calls and the pairing of each call with its result.
//! `PROPTEST_CASES` raises the case count (`scripts/fuzz.sh`).

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::{anthropic, responses};

/// Any JSON value, a few levels deep, with the keys the translators look for mixed in.
fn any_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("type".to_string()),
        Just("role".to_string()),
        Just("content".to_string()),
        Just("text".to_string()),
        Just("messages".to_string()),
        Just("input".to_string()),
        Just("tool_calls".to_string()),
        Just("function".to_string()),
        Just("arguments".to_string()),
        Just("choices".to_string()),
        Just("message".to_string()),
        "[a-z_]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("text".to_string()),
            Just("tool_use".to_string()),
            Just("tool_result".to_string()),
            Just("image".to_string()),
            Just("function_call".to_string()),
            Just("function_call_output".to_string()),
            Just("message".to_string()),
            Just("assistant".to_string()),
            Just("user".to_string()),
            Just("<think>".to_string()),
            ".{0,12}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Words: text that no translator treats specially.
fn words() -> impl Strategy<Value = String> {
    "[a-z]{1,8}( [a-z]{1,8}){0,3}"
}

/// A small tool input object.
fn tool_input() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(
        "[a-z]{1,6}",
        prop_oneof![
            words().prop_map(Value::String),
            any::<i32>().prop_map(|n| json!(n))
        ],
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// One turn pair of a tool-using conversation: what the user says, what the assistant
/// says and calls, and the results of those calls (sent in the next user turn).
#[derive(Debug, Clone)]
struct Turn {
    user: Vec<String>,
    assistant: Vec<String>,
    calls: Vec<(String, Value)>,
    results_fail: Vec<bool>,
    thinking: Option<String>,
}

fn turns() -> impl Strategy<Value = Vec<Turn>> {
    let turn = (
        prop::collection::vec(words(), 1..3),
        prop::collection::vec(words(), 0..3),
        prop::collection::vec(("[A-Z][a-z]{2,8}", tool_input()), 0..3),
        prop::collection::vec(any::<bool>(), 3),
        // Upper case, unlike every other text, so it can be looked for.
        proptest::option::of(words().prop_map(|w| format!("THINK {w}"))),
    )
        .prop_map(|(user, assistant, calls, results_fail, thinking)| Turn {
            user,
            assistant,
            calls,
            results_fail,
            thinking,
        });
    prop::collection::vec(turn, 1..5)
}

/// The text of a chat message's content, string or parts.
fn chat_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Checks that `texts` occur in `haystack` in order.
fn in_order(haystack: &str, texts: &[String]) -> Result<(), TestCaseError> {
    let mut at = 0;
    for t in texts {
        match haystack[at..].find(t.as_str()) {
            Some(i) => at += i + t.len(),
            None => {
                return Err(TestCaseError::fail(format!(
                    "{t:?} missing or out of order"
                )))
            }
        }
    }
    Ok(())
}

/// What a chat request must hold for `turns`: every text in order, each call in an
/// assistant turn with its arguments, each result in a `tool` message after its call.
fn check_chat(
    chat: &Value,
    system: &str,
    turns: &[Turn],
    call_id: impl Fn(usize, usize) -> String,
) -> Result<(), TestCaseError> {
    let messages = chat["messages"].as_array().expect("messages array");
    if !system.is_empty() {
        prop_assert_eq!(&messages[0], &json!({"role": "system", "content": system}));
    }
    let all: String = messages
        .iter()
        .map(chat_text)
        .collect::<Vec<_>>()
        .join("\n");
    let texts: Vec<String> = turns
        .iter()
        .flat_map(|t| t.user.iter().chain(t.assistant.iter()).cloned())
        .collect();
    in_order(&all, &texts)?;
    for (ti, t) in turns.iter().enumerate() {
        for (ci, (name, input)) in t.calls.iter().enumerate() {
            let id = call_id(ti, ci);
            let at = messages
                .iter()
                .position(|m| {
                    m["role"] == "assistant"
                        && m["tool_calls"].as_array().is_some_and(|calls| {
                            calls.iter().any(|c| {
                                c["id"] == id.as_str()
                                    && c["function"]["name"] == name.as_str()
                                    && serde_json::from_str::<Value>(
                                        c["function"]["arguments"].as_str().unwrap_or(""),
                                    )
                                    .ok()
                                    .as_ref()
                                        == Some(input)
                            })
                        })
                })
                .ok_or_else(|| TestCaseError::fail(format!("call {id} lost")))?;
            let result = messages
                .iter()
                .position(|m| m["role"] == "tool" && m["tool_call_id"] == id.as_str())
                .ok_or_else(|| TestCaseError::fail(format!("result of {id} lost")))?;
            prop_assert!(result > at, "the result of {} comes before its call", id);
        }
    }
    Ok(())
}

fn anthropic_request(system: &str, turns: &[Turn], stream: bool) -> Value {
    let mut messages = Vec::new();
    let mut pending: Vec<Value> = Vec::new();
    for (ti, t) in turns.iter().enumerate() {
        let mut user: Vec<Value> = std::mem::take(&mut pending);
        user.extend(t.user.iter().map(|u| json!({"type": "text", "text": u})));
        if ti == 0 {
            user.push(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}));
        }
        messages.push(json!({"role": "user", "content": user}));
        let mut blocks = Vec::new();
        if let Some(th) = &t.thinking {
            blocks.push(json!({"type": "thinking", "thinking": th, "signature": "sig"}));
        }
        blocks.extend(
            t.assistant
                .iter()
                .map(|a| json!({"type": "text", "text": a})),
        );
        for (ci, (name, input)) in t.calls.iter().enumerate() {
            let id = format!("toolu_{ti}_{ci}");
            blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            pending.push(json!({"type": "tool_result", "tool_use_id": id, "is_error": t.results_fail[ci],
                                "content": [{"type": "text", "text": format!("result {ti} {ci}")}]}));
        }
        messages.push(json!({"role": "assistant", "content": blocks}));
    }
    if !pending.is_empty() {
        messages.push(json!({"role": "user", "content": pending}));
    }
    json!({"model": "fcm", "system": [{"type": "text", "text": system}], "messages": messages,
           "max_tokens": 1024, "stream": stream,
           "tools": [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]})
}

fn responses_request(system: &str, turns: &[Turn], stream: bool) -> Value {
    let mut input = Vec::new();
    for (ti, t) in turns.iter().enumerate() {
        let parts: Vec<Value> = t
            .user
            .iter()
            .map(|u| json!({"type": "input_text", "text": u}))
            .collect();
        input.push(json!({"type": "message", "role": "user", "content": parts}));
        if t.thinking.is_some() {
            input.push(
                json!({"type": "reasoning", "id": format!("rs_{ti}"), "encrypted_content": "x"}),
            );
        }
        if !t.assistant.is_empty() {
            let parts: Vec<Value> = t
                .assistant
                .iter()
                .map(|a| json!({"type": "output_text", "text": a}))
                .collect();
            input.push(json!({"type": "message", "role": "assistant", "content": parts}));
        }
        for (ci, (name, args)) in t.calls.iter().enumerate() {
            let id = format!("call_{ti}_{ci}");
            input.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()}));
        }
        for ci in 0..t.calls.len() {
            input.push(json!({"type": "function_call_output", "call_id": format!("call_{ti}_{ci}"), "output": format!("result {ti} {ci}")}));
        }
    }
    json!({"model": "fcm", "instructions": system, "input": input, "stream": stream, "max_output_tokens": 512,
           "tools": [{"type": "function", "name": "exec", "parameters": {"type": "object"}}]})
}

/// A chat completion with text, optional reasoning and tool calls.
fn chat_answer() -> impl Strategy<Value = (Value, String, Option<String>, Vec<(String, Value)>)> {
    (
        words(),
        proptest::option::of(words()),
        prop::collection::vec(("[A-Z][a-z]{2,8}", tool_input()), 0..3),
    )
        .prop_map(|(text, reasoning, calls)| {
            let mut message = json!({"role": "assistant", "content": text});
            if let Some(r) = &reasoning {
                message["reasoning_content"] = json!(r);
            }
            if !calls.is_empty() {
                message["tool_calls"] = Value::Array(
                    calls
                        .iter()
                        .enumerate()
                        .map(|(i, (n, a))| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": n, "arguments": a.to_string()}}))
                        .collect(),
                );
            }
            let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
            let chat = json!({"id": "x", "object": "chat.completion", "model": "m",
                              "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                              "usage": {"prompt_tokens": 10, "completion_tokens": 5}});
            (chat, text, reasoning, calls)
        })
}

proptest! {
    #[test]
    fn prop_any_json_is_translated_or_refused(v in any_json()) {
        let _ = anthropic::to_chat(v.clone());
        let _ = responses::to_chat(v.clone());
        let _ = anthropic::from_chat(&v, "m");
        let _ = responses::from_chat(&v, "m");
        let _ = anthropic::count_tokens(&v);
        // A request that is an object with a messages array always translates.
        let messages = json!({"messages": [v.clone()]});
        prop_assert!(anthropic::to_chat(messages).is_ok());
        let input = json!({"input": [v]});
        prop_assert!(responses::to_chat(input).is_ok());
    }

    #[test]
    fn prop_anthropic_requests_keep_text_calls_and_pairs(system in words(), turns in turns(), stream in any::<bool>()) {
        let chat = anthropic::to_chat(anthropic_request(&system, &turns, stream)).unwrap();
        check_chat(&chat, &system, &turns, |t, c| format!("toolu_{t}_{c}"))?;
        prop_assert_eq!(chat["stream"].as_bool(), Some(stream));
        prop_assert_eq!(chat["stream_options"]["include_usage"].as_bool(), stream.then_some(true));
        prop_assert_eq!(&chat["tools"][0]["function"]["name"], "Read");
        let messages = chat["messages"].as_array().unwrap();
        // The image of the first user turn is still there, as an image part.
        prop_assert!(messages.iter().any(|m| m["content"].as_array().is_some_and(|p| p.iter().any(|p| p["image_url"]["url"] == "data:image/png;base64,AAAA"))));
        // Failed results are marked, thinking blocks are not sent upstream.
        for (ti, t) in turns.iter().enumerate() {
            for ci in 0..t.calls.len() {
                let m = messages.iter().find(|m| m["tool_call_id"] == format!("toolu_{ti}_{ci}").as_str()).unwrap();
                let want = format!("{}result {ti} {ci}", if t.results_fail[ci] { "Error: " } else { "" });
                prop_assert_eq!(m["content"].as_str(), Some(want.as_str()));
            }
        }
        let sent: String = messages.iter().map(chat_text).collect();
        prop_assert!(!sent.contains("THINK"), "a thinking block was sent upstream");
    }

    #[test]
    fn prop_responses_requests_keep_text_calls_and_pairs(system in words(), turns in turns(), stream in any::<bool>()) {
        let chat = responses::to_chat(responses_request(&system, &turns, stream)).unwrap();
        check_chat(&chat, &system, &turns, |t, c| format!("call_{t}_{c}"))?;
        prop_assert_eq!(chat["max_tokens"].as_u64(), Some(512));
        // Consecutive calls are one assistant turn, with the assistant's text if any.
        for (ti, t) in turns.iter().enumerate().filter(|(_, t)| t.calls.len() > 1) {
            let ids: Vec<String> = (0..t.calls.len()).map(|c| format!("call_{ti}_{c}")).collect();
            let turn = chat["messages"].as_array().unwrap().iter().find(|m| m["tool_calls"][0]["id"] == ids[0].as_str()).unwrap();
            let got: Vec<&str> = turn["tool_calls"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
            prop_assert_eq!(got, ids.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    #[test]
    fn prop_answers_keep_text_reasoning_and_calls((chat, text, reasoning, calls) in chat_answer()) {
        let a = anthropic::from_chat(&chat, "m");
        let blocks = a["content"].as_array().unwrap();
        let texts: Vec<&str> = blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect();
        prop_assert_eq!(texts, vec![text.as_str()]);
        let thinking: Vec<&str> = blocks.iter().filter(|b| b["type"] == "thinking").filter_map(|b| b["thinking"].as_str()).collect();
        prop_assert_eq!(thinking, reasoning.iter().map(String::as_str).collect::<Vec<_>>());
        let uses: Vec<(&str, &Value)> = blocks.iter().filter(|b| b["type"] == "tool_use").map(|b| (b["name"].as_str().unwrap(), &b["input"])).collect();
        prop_assert_eq!(uses, calls.iter().map(|(n, i)| (n.as_str(), i)).collect::<Vec<_>>());
        prop_assert_eq!(a["stop_reason"].as_str(), Some(if calls.is_empty() { "end_turn" } else { "tool_use" }));

        let r = responses::from_chat(&chat, "m");
        let output = r["output"].as_array().unwrap();
        let said: Vec<&str> = output.iter().filter(|i| i["type"] == "message").flat_map(|i| i["content"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str())).collect();
        prop_assert_eq!(said, vec![text.as_str()]);
        let fcalls: Vec<(&str, Value)> = output.iter().filter(|i| i["type"] == "function_call")
            .map(|i| (i["name"].as_str().unwrap(), serde_json::from_str(i["arguments"].as_str().unwrap()).unwrap())).collect();
        prop_assert_eq!(fcalls, calls.iter().map(|(n, i)| (n.as_str(), i.clone())).collect::<Vec<_>>());
        prop_assert_eq!(output.iter().any(|i| i["type"] == "reasoning"), reasoning.is_some());
    }
}
