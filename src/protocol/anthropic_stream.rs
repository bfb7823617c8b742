//! Chat stream → Anthropic Messages event stream (Claude Code). Every event has an `event:`
//! line (Claude Code shows nothing without them); reasoning streams as `thinking` blocks
//! (`thinking_delta`), text as `text` blocks, tool calls go out as whole `tool_use` blocks.

use std::sync::Arc;

use serde_json::{json, Value};

use super::anthropic::{stop_reason, thinking_signature, usage};
use super::content::{runnable, ContentParts, ContentSplit};
use super::shape::StreamTranslator;
use super::wire::{chat_cached, chat_delta, new_id, sse_event, CallIds};
use crate::answers::toolcall::Offered;
use crate::answers::toolcall::ToolCalls;

/// The kind of content block that is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Thinking,
    Text,
}

/// Chat stream → Messages events. Text streams as it comes; tool calls are assembled and
/// sent as whole `tool_use` blocks at the end (only whole calls can be trusted to run).
pub struct Translator {
    /// The ids given to the provider's calls.
    ids: CallIds,
    model: String,
    id: String,
    next_index: usize,
    /// The open thinking or text block and its index.
    open: Option<(Block, usize)>,
    /// Takes a leading `<think>` block (and, with tools, tool-call markup) out of the text.
    content: ContentSplit,
    calls: ToolCalls,
    /// The request's tools: only calls that pass the check are handed over.
    tools: Option<Arc<Offered>>,
    finish: Option<String>,
    input_tokens: u64,
    /// Of the prompt, what the provider's cache served.
    cached_tokens: u64,
    output_tokens: u64,
    finished: bool,
}

impl Translator {
    pub fn new(model: &str, tools: Option<Arc<Offered>>) -> Translator {
        Translator {
            content: ContentSplit::new(true, tools.is_some()),
            tools,
            ids: CallIds::default(),
            model: model.to_string(),
            id: new_id("msg_"),
            next_index: 0,
            open: None,
            calls: ToolCalls::default(),
            finish: None,
            input_tokens: 0,
            cached_tokens: 0,
            output_tokens: 0,
            finished: false,
        }
    }

    /// Closes the open block; a thinking block gets its signature first.
    fn close_block(&mut self, out: &mut Vec<u8>) {
        if let Some((kind, index)) = self.open.take() {
            if kind == Block::Thinking {
                out.extend(sse_event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": thinking_signature()}})));
            }
            out.extend(sse_event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }

    /// Sends a piece of reasoning or text, in a block of its kind.
    fn emit(&mut self, kind: Block, piece: &str, out: &mut Vec<u8>) {
        if piece.is_empty() {
            return;
        }
        let index = match self.open {
            Some((open, i)) if open == kind => i,
            _ => {
                self.close_block(out);
                let block = match kind {
                    Block::Thinking => json!({"type": "thinking", "thinking": ""}),
                    Block::Text => json!({"type": "text", "text": ""}),
                };
                let i = self.open_block(block, out);
                self.open = Some((kind, i));
                i
            }
        };
        let delta = match kind {
            Block::Thinking => json!({"type": "thinking_delta", "thinking": piece}),
            Block::Text => json!({"type": "text_delta", "text": piece}),
        };
        out.extend(sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }

    fn emit_parts(&mut self, parts: &ContentParts, out: &mut Vec<u8>) {
        self.emit(Block::Thinking, &parts.reasoning, out);
        self.emit(Block::Text, &parts.text, out);
        for call in &parts.calls {
            self.calls.add(call);
        }
    }

    fn open_block(&mut self, block: Value, out: &mut Vec<u8>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        out.extend(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        index
    }

    fn translate_chunk(&mut self, chunk: &Value, out: &mut Vec<u8>) {
        let delta = chat_delta(chunk);
        if let Some((input, output)) = delta.usage {
            self.input_tokens = input;
            self.output_tokens = output;
            self.cached_tokens = chat_cached(chunk);
        }
        if let Some(reasoning) = &delta.reasoning {
            self.emit(Block::Thinking, reasoning, out);
        }
        if let Some(text) = &delta.text {
            let parts = self.content.feed(text);
            self.emit_parts(&parts, out);
        }
        for call in &delta.tool_calls {
            self.calls.add(call);
        }
        if let Some(f) = delta.finish {
            self.finish = Some(f);
        }
    }
}

impl StreamTranslator for Translator {
    fn call_ids(&mut self) -> CallIds {
        std::mem::take(&mut self.ids)
    }

    fn on_chunk(&mut self, chunk: &Value, out: &mut Vec<u8>) {
        self.translate_chunk(chunk, out);
    }

    fn start(&mut self) -> Vec<u8> {
        sse_event(
            "message_start",
            &json!({"type": "message_start", "message": {
            "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
            "stop_reason": Value::Null, "stop_sequence": Value::Null, "usage": {"input_tokens": 0, "output_tokens": 0}}}),
        )
    }

    fn finish(&mut self, error: Option<&str>) -> Vec<u8> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        self.finished = true;
        let held = self.content.finish();
        self.emit_parts(&held, &mut out);
        self.close_block(&mut out);
        if let Some(message) = error {
            // The answer broke off: say so, and never hand over a half-received tool call.
            let text = format!("the model's answer broke off: {message}");
            out.extend(sse_event(
                "error",
                &json!({"type": "error", "error": {"type": "api_error", "message": text}}),
            ));
            return out;
        }
        let (calls, _) = runnable(self.calls.take(), self.tools.as_deref());
        for call in &calls {
            let id = self.ids.mint("toolu_", &call.id);
            let index = self.open_block(
                json!({"type": "tool_use", "id": id, "name": call.name, "input": {}}),
                &mut out,
            );
            if !call.arguments.is_empty() {
                out.extend(sse_event("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": call.arguments}})));
            }
            out.extend(sse_event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        // `tool_calls` with no call to run (none sent, or all dropped) is a plain end.
        let reason = match (calls.is_empty(), self.finish.as_deref()) {
            (false, _) => "tool_use",
            (true, Some("tool_calls" | "function_call")) => "end_turn",
            (true, finish) => stop_reason(finish),
        };
        out.extend(sse_event(
            "message_delta",
            &json!({"type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": Value::Null},
            "usage": usage(self.input_tokens, self.output_tokens, self.cached_tokens)}),
        ));
        out.extend(sse_event("message_stop", &json!({"type": "message_stop"})));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testing::chunks_of;

    fn translate(chat_stream: &str, size: usize) -> Vec<(String, Value)> {
        crate::protocol::testing::translate(
            &mut Translator::new("claude-x", None),
            chat_stream,
            size,
        )
    }

    fn frame(delta: Value, finish: Option<&str>) -> String {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    }

    #[test]
    fn text_stream_events_in_any_chunking() {
        let stream = [
            frame(json!({"role": "assistant", "content": ""}), None),
            frame(json!({"content": "Hel"}), None),
            frame(json!({"content": "lo"}), None),
            frame(json!({}), Some("stop")),
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n".to_string(),
        ]
        .concat();
        for size in [1, 7, 64, stream.len()] {
            let ev = translate(&stream, size);
            let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(
                names,
                [
                    "message_start",
                    "content_block_start",
                    "content_block_delta",
                    "content_block_delta",
                    "content_block_stop",
                    "message_delta",
                    "message_stop"
                ],
                "size {size}"
            );
            assert_eq!(
                ev[2].1["delta"],
                json!({"type": "text_delta", "text": "Hel"})
            );
            assert_eq!(ev[5].1["delta"]["stop_reason"], "end_turn");
            assert_eq!(ev[5].1["usage"]["output_tokens"], 2);
            assert_eq!(ev[0].1["message"]["model"], "claude-x");
        }
    }

    #[test]
    fn tool_call_stream_becomes_tool_use_blocks() {
        let stream = [
            frame(json!({"content": "Let me run it."}), None),
            frame(json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": ""}}]}), None),
            frame(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\":"}}]}), None),
            frame(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ls\"}"}}]}), None),
            frame(json!({"tool_calls": [{"index": 1, "id": "call_2", "function": {"name": "Read", "arguments": "{}"}}]}), None),
            frame(json!({}), Some("tool_calls")),
        ]
        .concat();
        let ev = translate(&stream, 13);
        let starts: Vec<&Value> = ev
            .iter()
            .filter(|(n, _)| n == "content_block_start")
            .map(|(_, d)| d)
            .collect();
        assert_eq!(starts.len(), 3);
        assert_eq!(starts[1]["content_block"]["name"], "Bash");
        assert!(starts[1]["content_block"]["id"]
            .as_str()
            .unwrap()
            .starts_with("toolu_"));
        assert_ne!(
            starts[1]["content_block"]["id"], starts[2]["content_block"]["id"],
            "unique ids"
        );
        assert_eq!(
            (starts[1]["index"].as_u64(), starts[2]["index"].as_u64()),
            (Some(1), Some(2))
        );
        let json_parts: String = ev
            .iter()
            .filter(|(_, d)| d["delta"]["type"] == "input_json_delta" && d["index"] == 1)
            .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(json_parts, "{\"command\":\"ls\"}");
        let stops = ev.iter().filter(|(n, _)| n == "content_block_stop").count();
        assert_eq!(stops, 3);
        let delta = ev.iter().find(|(n, _)| n == "message_delta").unwrap();
        assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
        assert_eq!(ev.last().unwrap().0, "message_stop");
    }

    #[test]
    fn interleaved_and_repeated_ids_become_whole_tool_use_blocks() {
        let stream = [
            frame(json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "Bash", "arguments": "{\"command\":"}}]}), None),
            frame(json!({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "Read", "arguments": "{\"path\":"}}]}), None),
            frame(json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"arguments": "\"ls\"}"}}]}), None),
            frame(json!({"tool_calls": [{"index": 1, "id": "c2", "function": {"arguments": "\"a\"}"}}]}), Some("tool_calls")),
        ]
        .concat();
        let ev = translate(&stream, 9);
        let starts: Vec<&Value> = ev
            .iter()
            .filter(|(n, _)| n == "content_block_start")
            .map(|(_, d)| d)
            .collect();
        let names: Vec<&str> = starts
            .iter()
            .map(|s| s["content_block"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Bash", "Read"]);
        let args: Vec<&str> = ev
            .iter()
            .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
            .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
            .collect();
        assert_eq!(args, ["{\"command\":\"ls\"}", "{\"path\":\"a\"}"]);
    }

    #[test]
    fn a_broken_stream_ends_with_an_error_event_and_no_half_call() {
        let mut t = Translator::new("m", None);
        let mut bytes = t.start();
        bytes.extend(t.feed(&chunks_of(
            frame(json!({"content": "Running"}), None).as_bytes(),
        )));
        bytes.extend(t.feed(&chunks_of(frame(json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "Bash", "arguments": "{\"comm"}}]}), None).as_bytes())));
        bytes.extend(t.finish(Some("stream_stall")));
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.contains("event: error") && !text.contains("message_stop"),
            "{text}"
        );
        assert!(!text.contains("tool_use"), "{text}");
    }
}

/// Property tests: for generated chat streams, fed in any groups of chunks, the Messages
/// events are well formed (`message_start` first; blocks opened one at a time with rising
/// indexes, each stopped; `message_stop` last, or an `error` event when the stream broke)
/// and carry the stream's text, reasoning, calls and usage. Any chunks never panic.
#[cfg(test)]
mod properties {
    use super::*;
    use crate::answers::gate::arbitrary::{
        answer_stream, any_chunks, client_events, offered, reads, split, ChatStream, Part,
    };
    use proptest::prelude::*;

    /// The client's events for `chunks` fed in the groups `cuts` makes, ended with `error`.
    fn translate(
        chunks: &[Value],
        cuts: &[prop::sample::Index],
        error: Option<&str>,
        tools: Option<Arc<Offered>>,
    ) -> Result<Vec<(String, Value)>, TestCaseError> {
        let mut t = Translator::new("claude-x", tools);
        let mut bytes = t.start();
        for group in split(chunks, cuts) {
            bytes.extend(t.feed(group));
        }
        bytes.extend(t.finish(error));
        prop_assert!(t.finish(None).is_empty(), "a stream ends once");
        client_events(&bytes)
    }

    /// Checks the block structure; returns the blocks as (start event, deltas).
    fn blocks(events: &[(String, Value)]) -> Result<Vec<(Value, Vec<Value>)>, TestCaseError> {
        prop_assert_eq!(events.first().map(|e| e.0.as_str()), Some("message_start"));
        let mut blocks: Vec<(Value, Vec<Value>)> = Vec::new();
        let mut open = None;
        for (name, data) in &events[1..] {
            let index = data["index"].as_u64();
            match name.as_str() {
                "content_block_start" => {
                    prop_assert_eq!(open, None, "one block at a time");
                    prop_assert_eq!(index, Some(blocks.len() as u64));
                    open = index;
                    blocks.push((data["content_block"].clone(), Vec::new()));
                }
                "content_block_delta" => {
                    prop_assert!(open.is_some() && index == open);
                    if let Some(block) = blocks.last_mut() {
                        block.1.push(data["delta"].clone());
                    }
                }
                "content_block_stop" => {
                    prop_assert!(open.is_some() && index == open);
                    open = None;
                }
                "message_delta" | "message_stop" | "error" => {
                    prop_assert_eq!(open, None, "every block is stopped first")
                }
                other => prop_assert!(false, "unexpected event {}", other),
            }
        }
        Ok(blocks)
    }

    /// The concatenated `field` of the deltas of type `kind`.
    fn joined(blocks: &[(Value, Vec<Value>)], kind: &str, field: &str) -> String {
        blocks
            .iter()
            .flat_map(|(_, deltas)| deltas)
            .filter(|d| d["type"] == kind)
            .filter_map(|d| d[field].as_str())
            .collect()
    }

    fn last_usage(stream: &ChatStream) -> u64 {
        stream
            .parts
            .iter()
            .rev()
            .find_map(|p| match p {
                Part::Usage(_, c) => Some(*c),
                _ => None,
            })
            .unwrap_or(0)
    }

    proptest! {
        #[test]
        fn events_are_well_formed_and_carry_the_stream(stream in answer_stream(), cuts in reads()) {
            let events = translate(&stream.chunks(), &cuts, None, None)?;
            let blocks = blocks(&events)?;
            let names: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
            prop_assert_eq!(&names[names.len() - 2..], &["message_delta", "message_stop"]);
            prop_assert_eq!(joined(&blocks, "text_delta", "text"), stream.content());
            prop_assert_eq!(joined(&blocks, "thinking_delta", "thinking"), stream.reasoning());
            let calls: Vec<(String, String)> = blocks
                .iter()
                .filter(|(start, _)| start["type"] == "tool_use")
                .map(|(start, deltas)| {
                    let args = deltas.iter().filter_map(|d| d["partial_json"].as_str()).collect();
                    (start["name"].as_str().unwrap_or_default().to_string(), args)
                })
                .collect();
            prop_assert_eq!(&calls, &stream.calls());
            let last_finish = stream.parts.iter().rev().find_map(|p| match p {
                Part::Finish(f) => Some(*f),
                _ => None,
            });
            let reason = match (calls.is_empty(), last_finish) {
                (false, _) => "tool_use",
                (true, Some("length")) => "max_tokens",
                _ => "end_turn",
            };
            let delta = &events[events.len() - 2].1;
            prop_assert_eq!(delta["delta"]["stop_reason"].as_str(), Some(reason));
            prop_assert_eq!(delta["usage"]["output_tokens"].as_u64(), Some(last_usage(&stream)));
        }

        #[test]
        fn a_broken_stream_ends_with_an_error_and_no_calls(
            stream in answer_stream(),
            cuts in reads(),
        ) {
            let events = translate(&stream.chunks(), &cuts, Some("stream_stall"), None)?;
            let blocks = blocks(&events)?;
            prop_assert_eq!(events.last().map(|e| e.0.as_str()), Some("error"));
            prop_assert!(blocks.iter().all(|(start, _)| start["type"] != "tool_use"));
            prop_assert_eq!(joined(&blocks, "text_delta", "text"), stream.content());
        }

        #[test]
        fn any_chunks_never_panic(
            chunks in any_chunks(),
            cuts in reads(),
            tools in offered(),
            broken in any::<bool>(),
        ) {
            let events = translate(&chunks, &cuts, broken.then_some("cut"), tools)?;
            blocks(&events)?;
            let last = if broken { "error" } else { "message_stop" };
            prop_assert_eq!(events.last().map(|e| e.0.as_str()), Some(last));
        }
    }
}
