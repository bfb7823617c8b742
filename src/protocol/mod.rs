//! Client protocols at the edge. The router speaks OpenAI chat completions; these adapters
//! turn an Anthropic Messages or OpenAI Responses request into a chat request, and a chat
//! answer (JSON or stream) back into the client's own shapes, errors included. Pure: values
//! and bytes in, values and bytes out, so the gate, classifier and breakers never see other
//! protocols.
//!
//! The files: `dispatch` (which protocol does what: the one table), `errors` (bad requests
//! and error answers), `chat` (chat answers repaired where needed), `anthropic` and
//! `responses` (requests and whole answers), `anthropic_stream` and `responses_stream`
//! (stream translators), `shape` (a committed stream's shape, `redacted`: without secrets),
//! `content` (reasoning and text calls taken apart, runnable calls), `freeform` (Codex's
//! custom tools as functions and their calls back) and `wire` (chat wire
//! pieces the others share). This file only declares and re-exports them.

pub(crate) mod anthropic;
mod anthropic_stream;
pub(crate) mod chat;
#[cfg(test)]
mod prop;
mod redacted;
pub(crate) mod responses;
mod responses_stream;

pub(crate) mod code_mode;
mod content;
mod dispatch;
mod errors;
pub(crate) mod freeform;
pub(crate) mod one_string;
mod shape;
mod wire;

pub(crate) use dispatch::{Protocol, RequestTools};
pub(crate) use errors::{BadRequest, ErrorReport};
pub(crate) use shape::StreamShape;
pub(crate) use wire::{chat_events, chat_frames, chunks_from_completion, CallIds};

/// Test support: raw chat SSE bytes (split anywhere) as the parsed chunks a translator reads.
#[cfg(test)]
pub(crate) mod testing {
    use serde_json::Value;

    use crate::answers::sse::{SseEvent, SseParser};

    #[derive(Default)]
    pub(crate) struct ChatChunks {
        parser: SseParser,
        events: Vec<SseEvent>,
    }

    impl ChatChunks {
        /// The JSON chunks completed by these bytes (`[DONE]` and garbage are skipped).
        pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Value> {
            self.parser.feed(bytes, &mut self.events);
            self.events
                .drain(..)
                .filter(|e| e.data.trim() != "[DONE]")
                .filter_map(|e| serde_json::from_str(&e.data).ok())
                .collect()
        }
    }

    /// The chunks of whole events.
    pub(crate) fn chunks_of(bytes: &[u8]) -> Vec<Value> {
        ChatChunks::default().feed(bytes)
    }

    /// Runs a chat stream through a translator in pieces of `size` bytes, as a stream
    /// arrives, and returns the client's events as (event name, data).
    pub(crate) fn translate(
        t: &mut dyn super::shape::StreamTranslator,
        chat_stream: &str,
        size: usize,
    ) -> Vec<(String, Value)> {
        let mut bytes = t.start();
        let mut chunks = ChatChunks::default();
        for c in chat_stream.as_bytes().chunks(size) {
            bytes.extend(t.feed(&chunks.feed(c)));
        }
        bytes.extend(t.finish(None));
        let mut events = Vec::new();
        SseParser::new().feed(&bytes, &mut events);
        events
            .into_iter()
            .map(|e| {
                (
                    e.event.unwrap_or_default(),
                    serde_json::from_str(&e.data).unwrap(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn every_envelope_lists_the_failed_attempts() {
        let attempts = json!([{"model": "p/a", "status": 500, "kind": "provider_server_error", "detail": "boom"}]);
        let report = ErrorReport {
            code: Some("all_failed"),
            attempts: Some(attempts.clone()),
            ..ErrorReport::new(503, "no model could answer")
        };
        for proto in [Protocol::Chat, Protocol::Anthropic, Protocol::Responses] {
            let body = proto.error(&report);
            assert_eq!(body["error"]["attempts"], attempts, "{proto:?}");
            assert_eq!(
                body["error"]["message"], "no model could answer",
                "{proto:?}"
            );
        }
        let anthropic = Protocol::Anthropic.error(&report);
        assert_eq!(
            (
                anthropic["type"].as_str(),
                anthropic["error"]["type"].as_str()
            ),
            (Some("error"), Some("overloaded_error"))
        );
        assert_eq!(Protocol::Chat.error(&report)["error"]["code"], "all_failed");
        let plain = Protocol::Anthropic.error(&ErrorReport::new(400, "bad"));
        assert!(plain["error"].get("attempts").is_none());
    }

    #[test]
    fn completion_becomes_a_stream() {
        let body = br#"{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"completion_tokens":3}}"#;
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let stream = chat_events(&chunks_from_completion(&v));
        let mut events = Vec::new();
        crate::answers::sse::SseParser::new().feed(&stream, &mut events);
        assert_eq!(events.len(), 4);
        let first: Value = serde_json::from_str(&events[0].data).unwrap();
        assert_eq!(first["choices"][0]["delta"]["content"], "hi");
        assert_eq!(first["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
        assert!(events[1].data.contains("tool_calls"));
        assert!(events[2].data.contains("completion_tokens"));
        assert_eq!(events[3].data, "[DONE]");
    }
}
