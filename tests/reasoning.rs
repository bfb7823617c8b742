//! A model's reasoning reaches each client in its own channel, whatever shape the provider
//! sent it in: Claude Code gets `thinking` blocks, Codex a `reasoning` item, chat clients
//! `reasoning_content`; a leading `<think>` block never shows up as answer text. And tool
//! calls reach chat clients with ids they can use.

mod support;

use serde_json::{json, Value};
use support::*;

const REASONING: &str = fcm::fake_provider::Thinker::REASONING;
const ANSWER: &str = "Hello from thinks.";
const THINKERS: [&str; 5] = [
    "thinks_reasoning_content",
    "thinks_reasoning",
    "thinks_reasoning_details",
    "thinks_tags",
    "thinks_content_array",
];

/// `(event, data)` pairs of an SSE body; chat chunks come with an empty event name.
fn events(body: &str) -> Vec<(String, Value)> {
    let mut parser = fcm::answers::sse::SseParser::new();
    let mut evs = Vec::new();
    parser.feed(body.as_bytes(), &mut evs);
    parser.finish(&mut evs);
    evs.into_iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| {
            (
                e.event.unwrap_or_default(),
                serde_json::from_str(&e.data).unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn joined(values: impl Iterator<Item = Option<String>>) -> String {
    values.flatten().collect()
}

/// A chat message or delta's reasoning: `reasoning_content`, else a provider's `reasoning`.
fn chat_reasoning(m: &Value) -> Option<String> {
    m.get("reasoning_content")
        .or_else(|| m.get("reasoning"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn serve_one(model: &str) -> (FakeProvider, World, Server) {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &[model]);
    let s = w.serve(&[]);
    (fake, w, s)
}

#[test]
fn chat_clients_get_reasoning_apart_from_the_text() {
    for thinker in THINKERS {
        let (_fake, _w, s) = serve_one(thinker);
        let r = s.chat("fcm", true);
        assert_eq!(r.status, 200, "{thinker}: {r:?}");
        let deltas: Vec<Value> = events(&r.body)
            .into_iter()
            .map(|(_, c)| c["choices"][0]["delta"].clone())
            .collect();
        let text = joined(
            deltas
                .iter()
                .map(|d| d["content"].as_str().map(str::to_string)),
        );
        let reasoning = joined(deltas.iter().map(chat_reasoning));
        assert_eq!(
            (text.as_str(), reasoning.as_str()),
            (ANSWER, REASONING),
            "{thinker}, stream"
        );

        let m = s.chat("fcm", false).json()["choices"][0]["message"].clone();
        assert_eq!(
            (m["content"].as_str(), chat_reasoning(&m).as_deref()),
            (Some(ANSWER), Some(REASONING)),
            "{thinker}, non-stream: {m}"
        );
    }
}

#[test]
fn think_tags_stay_in_the_content_when_splitting_is_off() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["thinks_tags"]);
    w.write_config(&json!({"router": {"reasoning": {"splitThinkTags": false}}}));
    let s = w.serve(&[]);
    let m = s.chat("fcm", false).json()["choices"][0]["message"].clone();
    assert_eq!(
        m["content"],
        format!("<think>{REASONING}</think>\n\n{ANSWER}")
    );
    assert!(m.get("reasoning_content").is_none());
}

fn messages_body(stream: bool) -> String {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream,
           "messages": [{"role": "user", "content": "hi"}]})
    .to_string()
}

#[test]
fn claude_code_gets_thinking_blocks_before_the_text() {
    for thinker in THINKERS {
        let (_fake, _w, s) = serve_one(thinker);
        let ev = events(&s.post("/v1/messages", &messages_body(true)).body);
        let starts: Vec<(u64, String)> = ev
            .iter()
            .filter(|(n, _)| n == "content_block_start")
            .map(|(_, d)| {
                (
                    d["index"].as_u64().unwrap(),
                    d["content_block"]["type"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            starts,
            [(0, "thinking".to_string()), (1, "text".to_string())],
            "{thinker}"
        );
        let delta = |kind: &str, field: &str| {
            joined(
                ev.iter()
                    .filter(|(n, d)| n == "content_block_delta" && d["delta"]["type"] == kind)
                    .map(|(_, d)| d["delta"][field].as_str().map(str::to_string)),
            )
        };
        assert_eq!(delta("thinking_delta", "thinking"), REASONING, "{thinker}");
        assert_eq!(delta("text_delta", "text"), ANSWER, "{thinker}");
        assert!(
            delta("signature_delta", "signature").starts_with("fcm-thinking-"),
            "{thinker}: the thinking block is signed"
        );

        let m = s.post("/v1/messages", &messages_body(false)).json();
        assert_eq!(m["content"][0]["type"], "thinking", "{thinker}: {m}");
        assert_eq!(m["content"][0]["thinking"], REASONING, "{thinker}");
        assert_eq!(
            m["content"][1],
            json!({"type": "text", "text": ANSWER}),
            "{thinker}"
        );
    }
}

#[test]
fn thinking_blocks_in_claude_code_history_are_not_sent_upstream() {
    let (fake, _w, s) = serve_one("ok");
    let body = json!({"model": "claude-x", "max_tokens": 100, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "secret plan", "signature": "fcm-thinking-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Hello."}]},
        {"role": "user", "content": "again"}]});
    assert_eq!(s.post("/v1/messages", &body.to_string()).status, 200);
    let sent = fake.requests()[0].json();
    assert_eq!(
        sent["messages"][1],
        json!({"role": "assistant", "content": "Hello."})
    );
    assert!(!sent.to_string().contains("secret plan"));
}

fn responses_body(stream: bool) -> String {
    json!({"model": "gpt-5-codex", "stream": stream, "input": "hi"}).to_string()
}

#[test]
fn codex_gets_a_reasoning_item_before_the_message() {
    for thinker in THINKERS {
        let (_fake, _w, s) = serve_one(thinker);
        let ev = events(&s.post("/v1/responses", &responses_body(true)).body);
        let done: Vec<Value> = ev
            .iter()
            .filter(|(n, _)| n == "response.output_item.done")
            .map(|(_, d)| d["item"].clone())
            .collect();
        let kinds: Vec<&str> = done.iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["reasoning", "message"], "{thinker}");
        assert_eq!(done[0]["summary"][0]["text"], REASONING, "{thinker}");
        assert_eq!(done[1]["content"][0]["text"], ANSWER, "{thinker}");
        let streamed = joined(
            ev.iter()
                .filter(|(n, _)| n == "response.reasoning_summary_text.delta")
                .map(|(_, d)| d["delta"].as_str().map(str::to_string)),
        );
        assert_eq!(streamed, REASONING, "{thinker}");
        let completed = &ev.last().unwrap().1["response"]["output"];
        assert_eq!(completed[0]["type"], "reasoning", "{thinker}");

        let r = s.post("/v1/responses", &responses_body(false)).json();
        assert_eq!(r["output"][0]["type"], "reasoning", "{thinker}: {r}");
        assert_eq!(r["output"][0]["summary"][0]["text"], REASONING);
        assert_eq!(r["output"][1]["content"][0]["text"], ANSWER);
    }
}

#[test]
fn chat_tool_calls_get_unique_ids_on_every_chunk() {
    let (_fake, _w, s) = serve_one("repeated_call_ids");
    let body = |stream: bool| {
        json!({"model": "fcm", "stream": stream, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}]})
        .to_string()
    };
    let ev = events(&s.post("/v1/chat/completions", &body(true)).body);
    let calls: Vec<(u64, String)> = ev
        .iter()
        .flat_map(|(_, c)| {
            c["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|call| {
            (
                call["index"].as_u64().unwrap(),
                call["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0].1, calls[2].1, "a continuation keeps its call's id");
    assert_eq!(calls[1].1, calls[3].1);
    assert_ne!(
        calls[0].1, calls[1].1,
        "parallel calls no longer share call_1"
    );
    assert!(calls
        .iter()
        .all(|(_, id)| id.starts_with("call_") && id != "call_1"));

    let m = s.post("/v1/chat/completions", &body(false)).json()["choices"][0]["message"].clone();
    let ids: Vec<&str> = m["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "{m}");
}

#[test]
fn plain_chat_streams_pass_through_byte_for_byte() {
    let (fake, _w, s) = serve_one("ok");
    let through = s.chat("fcm", true).body;
    let direct = ureq::post(format!("{}/chat/completions", fake.base_url()))
        .header("content-type", "application/json")
        .send(
            json!({"model": "ok", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
                .to_string(),
        )
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    // The fake numbers its answers: the first went through fcm, the second came direct.
    assert_eq!(
        through.replace("chatcmpl-fake-0", "chatcmpl-fake-1"),
        direct,
        "nothing to repair: the provider's bytes"
    );
}
