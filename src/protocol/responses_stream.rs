//! Chat stream → OpenAI Responses event stream (Codex): `response.created`, the output
//! items as they complete (`output_item.done`): reasoning as a `reasoning` item with summary
//! text, before the message item, then the function calls, and `response.completed` with
//! usage.

use std::sync::Arc;

use serde_json::{json, Value};

use super::content::{runnable, ContentParts, ContentSplit};
use super::freeform::ClientTools;
use super::responses::{message_item, reasoning_item, response, usage};
use super::shape::StreamTranslator;
use super::wire::{chat_cached, chat_delta, new_id, sse_event, CallIds};
use crate::answers::toolcall::Offered;
use crate::answers::toolcall::ToolCalls;

/// Chat stream → Responses events. Text streams as it comes; function calls are assembled
/// and sent whole at the end (only whole calls can be trusted to run).
pub struct Translator {
    /// The ids given to the provider's calls.
    ids: CallIds,
    model: String,
    id: String,
    seq: u64,
    /// The open message item: (output index, item id, text so far).
    message: Option<(usize, String, String)>,
    /// The open reasoning item: (output index, item id, summary text so far).
    reasoning: Option<(usize, String, String)>,
    /// Takes a leading `<think>` block (and, with tools, tool-call markup) out of the text.
    content: ContentSplit,
    calls: ToolCalls,
    /// The request's tools: only calls that pass the check are handed over.
    tools: Option<Arc<Offered>>,
    /// How the client runs each call: a custom tool's call goes back as one.
    client: Arc<ClientTools>,
    done_items: Vec<Value>,
    incomplete: bool,
    input_tokens: u64,
    /// Of the prompt, what the provider's cache served.
    cached_tokens: u64,
    output_tokens: u64,
    finished: bool,
}

impl Translator {
    pub fn new(model: &str, tools: Option<Arc<Offered>>, client: Arc<ClientTools>) -> Translator {
        Translator {
            client,
            content: ContentSplit::new(true, tools.is_some()),
            tools,
            ids: CallIds::default(),
            model: model.to_string(),
            id: new_id("resp_"),
            seq: 0,
            message: None,
            reasoning: None,
            calls: ToolCalls::default(),
            done_items: Vec::new(),
            incomplete: false,
            input_tokens: 0,
            cached_tokens: 0,
            output_tokens: 0,
            finished: false,
        }
    }

    fn emit(&mut self, name: &str, mut data: Value, out: &mut Vec<u8>) {
        data["type"] = json!(name);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        out.extend(sse_event(name, &data));
    }

    fn close_message(&mut self, out: &mut Vec<u8>) {
        let Some((index, id, text)) = self.message.take() else {
            return;
        };
        self.emit(
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
            out,
        );
        self.emit(
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0,
            "part": {"type": "output_text", "text": text, "annotations": []}}),
            out,
        );
        // A message cut at the length limit is incomplete, as OpenAI marks it.
        let status = if self.incomplete {
            "incomplete"
        } else {
            "completed"
        };
        let done = message_item(&id, &text, status);
        self.emit(
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
            out,
        );
        self.done_items.push(done);
    }

    fn close_reasoning(&mut self, out: &mut Vec<u8>) {
        let Some((index, id, text)) = self.reasoning.take() else {
            return;
        };
        let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
        let mut done = at.clone();
        done["text"] = json!(text);
        self.emit("response.reasoning_summary_text.done", done, out);
        let mut part = at;
        part["part"] = json!({"type": "summary_text", "text": text});
        self.emit("response.reasoning_summary_part.done", part, out);
        let item = reasoning_item(&id, &text);
        self.emit(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
            out,
        );
        self.done_items.push(item);
    }

    /// Streams reasoning into the open reasoning item (after closing a message item).
    fn emit_reasoning(&mut self, piece: &str, out: &mut Vec<u8>) {
        if piece.is_empty() {
            return;
        }
        self.close_message(out);
        if self.reasoning.is_none() {
            let index = self.done_items.len();
            let id = new_id("rs_");
            self.emit(
                "response.output_item.added",
                json!({"output_index": index, "item": {"type": "reasoning", "id": id, "summary": []}}),
                out,
            );
            self.emit(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": index, "summary_index": 0,
                "part": {"type": "summary_text", "text": ""}}),
                out,
            );
            self.reasoning = Some((index, id, String::new()));
        }
        if let Some((index, id, all)) = &mut self.reasoning {
            all.push_str(piece);
            let data =
                json!({"item_id": id, "output_index": *index, "summary_index": 0, "delta": piece});
            self.emit("response.reasoning_summary_text.delta", data, out);
        }
    }

    /// Streams answer text into the open message item (after closing a reasoning item).
    fn emit_text(&mut self, text: &str, out: &mut Vec<u8>) {
        if text.is_empty() {
            return;
        }
        self.close_reasoning(out);
        if self.message.is_none() {
            let index = self.done_items.len();
            let id = new_id("msg_");
            self.emit("response.output_item.added", json!({"output_index": index,
                "item": {"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []}}), out);
            self.emit(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
                out,
            );
            self.message = Some((index, id, String::new()));
        }
        if let Some((index, id, all)) = &mut self.message {
            all.push_str(text);
            let data =
                json!({"item_id": id, "output_index": *index, "content_index": 0, "delta": text});
            self.emit("response.output_text.delta", data, out);
        }
    }

    fn emit_parts(&mut self, parts: &ContentParts, out: &mut Vec<u8>) {
        self.emit_reasoning(&parts.reasoning, out);
        self.emit_text(&parts.text, out);
        for call in &parts.calls {
            self.calls.add(call);
        }
    }

    fn translate_chunk(&mut self, chunk: &Value, out: &mut Vec<u8>) {
        let delta = chat_delta(chunk);
        if let Some((input, output)) = delta.usage {
            self.input_tokens = input;
            self.output_tokens = output;
            self.cached_tokens = chat_cached(chunk);
        }
        if let Some(reasoning) = delta.reasoning.as_deref() {
            self.emit_reasoning(reasoning, out);
        }
        if let Some(text) = delta.text.as_deref() {
            let parts = self.content.feed(text);
            self.emit_parts(&parts, out);
        }
        for call in &delta.tool_calls {
            self.calls.add(call);
        }
        if delta.finish.as_deref() == Some("length") {
            self.incomplete = true;
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
        let mut out = Vec::new();
        let r = response(&self.id, &self.model, "in_progress", vec![], Value::Null);
        self.emit("response.created", json!({"response": r}), &mut out);
        self.emit("response.in_progress", json!({"response": r}), &mut out);
        out
    }

    fn finish(&mut self, error: Option<&str>) -> Vec<u8> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        self.finished = true;
        let held = self.content.finish();
        self.emit_parts(&held, &mut out);
        let usage = usage(self.input_tokens, self.output_tokens, self.cached_tokens);
        if let Some(message) = error {
            // The answer broke off: the item it broke in is never done (a client keeps a
            // done item as a finished one, and a retry would repeat it); the failed response
            // lists it as incomplete. Never a half-received call.
            let mut output = self.done_items.clone();
            if let Some((_, id, text)) = self.reasoning.take() {
                let mut item = reasoning_item(&id, &text);
                item["status"] = json!("incomplete");
                output.push(item);
            }
            if let Some((_, id, text)) = self.message.take() {
                output.push(message_item(&id, &text, "incomplete"));
            }
            let mut r = response(&self.id, &self.model, "failed", output, usage);
            r["error"] = json!({"code": "server_error", "message": format!("the model's answer broke off: {message}")});
            self.emit("response.failed", json!({"response": r}), &mut out);
            return out;
        }
        self.close_reasoning(&mut out);
        self.close_message(&mut out);
        let (calls, _) = runnable(self.calls.take(), self.tools.as_deref());
        for call in calls {
            let index = self.done_items.len();
            let (id, call_id) = (new_id("fc_"), self.ids.mint("call_", &call.id));
            let done = self.client.item(&id, &call_id, &call.name, &call.arguments);
            let (delta_event, done_event, field) = if done["type"] == "custom_tool_call" {
                let e = "response.custom_tool_call_input";
                (format!("{e}.delta"), format!("{e}.done"), "input")
            } else {
                let e = "response.function_call_arguments";
                (format!("{e}.delta"), format!("{e}.done"), "arguments")
            };
            let text = done[field].as_str().unwrap_or("").to_string();
            let mut added = done.clone();
            added[field] = json!("");
            added["status"] = json!("in_progress");
            self.emit(
                "response.output_item.added",
                json!({"output_index": index, "item": added}),
                &mut out,
            );
            if !text.is_empty() {
                self.emit(
                    &delta_event,
                    json!({"item_id": id, "output_index": index, "delta": text}),
                    &mut out,
                );
            }
            self.emit(
                &done_event,
                json!({"item_id": id, "output_index": index, field: text}),
                &mut out,
            );
            self.emit(
                "response.output_item.done",
                json!({"output_index": index, "item": done}),
                &mut out,
            );
            self.done_items.push(done);
        }
        let (status, event) = if self.incomplete {
            ("incomplete", "response.incomplete")
        } else {
            ("completed", "response.completed")
        };
        let mut r = response(
            &self.id,
            &self.model,
            status,
            self.done_items.clone(),
            usage,
        );
        if self.incomplete {
            r["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
        self.emit(event, json!({"response": r}), &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testing::chunks_of;

    fn translate(chat_stream: &str, size: usize) -> Vec<(String, Value)> {
        crate::protocol::testing::translate(
            &mut Translator::new("gpt-x", None, Default::default()),
            chat_stream,
            size,
        )
    }

    fn frame(delta: Value) -> String {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta}]})
        )
    }

    /// A custom tool's call streams as one: added, input delta, input done, item done.
    #[test]
    fn custom_calls_stream_as_custom_tool_calls() {
        let request = json!({"input": "x", "tools": [{"type": "custom", "name": "apply_patch"}]});
        let client = Arc::new(ClientTools::of(&request));
        let stream = [
            frame(json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "apply_patch", "arguments": "{\"input\":"}}]})),
            frame(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"*** Begin Patch\\n\"}"}}]})),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        for size in [1, 7, 100] {
            let mut t = Translator::new("gpt-x", None, client.clone());
            let ev = crate::protocol::testing::translate(&mut t, &stream, size);
            let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(
                names,
                [
                    "response.created",
                    "response.in_progress",
                    "response.output_item.added",
                    "response.custom_tool_call_input.delta",
                    "response.custom_tool_call_input.done",
                    "response.output_item.done",
                    "response.completed"
                ]
            );
            assert_eq!(ev[2].1["item"]["type"], "custom_tool_call");
            assert_eq!(ev[2].1["item"]["input"], "");
            assert_eq!(ev[3].1["delta"], "*** Begin Patch\n");
            assert_eq!(ev[4].1["input"], "*** Begin Patch\n");
            let done = &ev[5].1["item"];
            assert_eq!(
                (
                    done["type"].as_str(),
                    done["input"].as_str(),
                    done["status"].as_str()
                ),
                (
                    Some("custom_tool_call"),
                    Some("*** Begin Patch\n"),
                    Some("completed")
                )
            );
            assert_eq!(ev[6].1["response"]["output"][0], *done);
        }
    }

    #[test]
    fn stream_events_for_text_and_calls() {
        let stream = [
            frame(json!({"role": "assistant", "content": "Hi "})),
            frame(json!({"content": "there"})),
            frame(json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "exec_command", "arguments": "{\"cmd\":"}}]})),
            frame(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ls\"}"}}]})),
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n".to_string(),
        ]
        .concat();
        for size in [1, 5, 100] {
            let ev = translate(&stream, size);
            let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(
                names,
                [
                    "response.created",
                    "response.in_progress",
                    "response.output_item.added",
                    "response.content_part.added",
                    "response.output_text.delta",
                    "response.output_text.delta",
                    "response.output_text.done",
                    "response.content_part.done",
                    "response.output_item.done",
                    "response.output_item.added",
                    "response.function_call_arguments.delta",
                    "response.function_call_arguments.done",
                    "response.output_item.done",
                    "response.completed"
                ],
                "size {size}"
            );
            let seqs: Vec<u64> = ev
                .iter()
                .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
                .collect();
            assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
            assert_eq!(ev[8].1["item"]["content"][0]["text"], "Hi there");
            assert_eq!(
                ev[12].1["item"],
                json!({"type": "function_call", "id": ev[12].1["item"]["id"], "call_id": ev[12].1["item"]["call_id"], "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "status": "completed"})
            );
            let done = &ev.last().unwrap().1["response"];
            assert_eq!(
                (
                    done["status"].as_str(),
                    done["output"].as_array().unwrap().len()
                ),
                (Some("completed"), 2)
            );
            assert_eq!(done["usage"]["output_tokens"], 6);
        }
    }

    #[test]
    fn a_broken_stream_fails_and_drops_unfinished_calls() {
        let mut t = Translator::new("m", None, Default::default());
        let mut bytes = t.start();
        bytes.extend(t.feed(&chunks_of(frame(json!({"content": "Let me"})).as_bytes())));
        bytes.extend(t.feed(&chunks_of(frame(json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "exec_command", "arguments": "{\"cm"}}]})).as_bytes())));
        bytes.extend(t.finish(Some("stream_stall")));
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.contains("event: response.failed") && !text.contains("response.completed"),
            "{text}"
        );
        assert!(
            !text.contains("function_call"),
            "no half-received call: {text}"
        );
        assert!(
            !text.contains("response.output_item.done") && !text.contains("\"completed\""),
            "the message it broke in is not done: {text}"
        );
        let failed: Value =
            serde_json::from_str(text.rsplit("data: ").next().unwrap().trim()).unwrap();
        assert_eq!(
            failed["response"]["output"][0]["status"], "incomplete",
            "{failed}"
        );
        assert_eq!(
            failed["response"]["output"][0]["content"][0]["text"],
            "Let me"
        );
    }

    #[test]
    fn length_finish_is_incomplete() {
        let mut t = Translator::new("m", None, Default::default());
        let mut bytes = t.start();
        bytes.extend(t.feed(&chunks_of(format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "length"}]})).as_bytes())));
        bytes.extend(t.finish(None));
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.contains("event: response.incomplete") && text.contains("max_output_tokens"),
            "{text}"
        );
        assert!(
            !text.contains("\"completed\""),
            "the cut message is incomplete too: {text}"
        );
    }
}

/// Property tests: for generated chat streams, fed in any groups of chunks, the Responses
/// events are well formed (`response.created` first, numbered in order, output items added
/// one at a time and each done, `response.completed` last, or `response.incomplete` after a
/// `length` finish, or `response.failed` when the stream broke) and the output carries the
/// stream's text, reasoning and calls. Any chunks never panic.
#[cfg(test)]
mod properties {
    use super::*;
    use crate::answers::gate::arbitrary::{
        answer_stream, any_chunks, client_events, offered, reads, split, Part,
    };
    use proptest::prelude::*;

    /// The client's events for `chunks` fed in the groups `cuts` makes, ended with `error`.
    fn translate(
        chunks: &[Value],
        cuts: &[prop::sample::Index],
        error: Option<&str>,
        tools: Option<Arc<Offered>>,
    ) -> Result<Vec<(String, Value)>, TestCaseError> {
        let mut t = Translator::new("gpt-x", tools, Default::default());
        let mut bytes = t.start();
        for group in split(chunks, cuts) {
            bytes.extend(t.feed(group));
        }
        bytes.extend(t.finish(error));
        prop_assert!(t.finish(None).is_empty(), "a stream ends once");
        client_events(&bytes)
    }

    /// Checks the event order and numbering and the items' life; returns the final
    /// response object.
    fn well_formed(events: &[(String, Value)]) -> Result<Value, TestCaseError> {
        let names: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
        prop_assert_eq!(&names[..2], &["response.created", "response.in_progress"]);
        for (n, (_, data)) in events.iter().enumerate() {
            prop_assert_eq!(data["sequence_number"].as_u64(), Some(n as u64));
        }
        let mut open = None;
        let mut items = 0;
        for (name, data) in &events[2..events.len() - 1] {
            let index = data["output_index"].as_u64();
            match name.as_str() {
                "response.output_item.added" => {
                    prop_assert_eq!(open, None, "one item at a time");
                    prop_assert_eq!(index, Some(items));
                    open = index;
                    items += 1;
                }
                "response.output_item.done" => {
                    prop_assert!(open.is_some() && index == open);
                    open = None;
                }
                other => {
                    prop_assert!(other.starts_with("response."), "{}", other);
                    prop_assert!(
                        open.is_some() && index == open,
                        "{} outside its item",
                        other
                    );
                }
            }
        }
        let response = events[events.len() - 1].1["response"].clone();
        let output = response["output"].as_array().map_or(0, Vec::len);
        prop_assert_eq!(output as u64, items);
        if let Some(index) = open {
            // Only a break leaves an item open, never done: the failed response lists it
            // as incomplete.
            prop_assert_eq!(
                &response["status"],
                "failed",
                "every item is done before the end"
            );
            prop_assert_eq!(&response["output"][index as usize]["status"], "incomplete");
        }
        Ok(response)
    }

    /// The texts of the output items of `kind`, joined.
    fn output_text(response: &Value, kind: &str, pointer: &str) -> String {
        response["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item["type"] == kind)
            .filter_map(|item| item.pointer(pointer).and_then(Value::as_str))
            .collect()
    }

    proptest! {
        #[test]
        fn events_are_well_formed_and_carry_the_stream(stream in answer_stream(), cuts in reads()) {
            let events = translate(&stream.chunks(), &cuts, None, None)?;
            let response = well_formed(&events)?;
            let incomplete = stream.parts.iter().any(|p| matches!(p, Part::Finish("length")));
            let (last, status) = if incomplete {
                ("response.incomplete", "incomplete")
            } else {
                ("response.completed", "completed")
            };
            prop_assert_eq!(events.last().map(|e| e.0.as_str()), Some(last));
            prop_assert_eq!(response["status"].as_str(), Some(status));
            let deltas: String = events
                .iter()
                .filter(|(name, _)| name == "response.output_text.delta")
                .filter_map(|(_, d)| d["delta"].as_str())
                .collect();
            prop_assert_eq!(&deltas, &stream.content());
            prop_assert_eq!(output_text(&response, "message", "/content/0/text"), stream.content());
            let reasoning = output_text(&response, "reasoning", "/summary/0/text");
            prop_assert_eq!(reasoning, stream.reasoning());
            let calls: Vec<(String, String)> = response["output"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|item| item["type"] == "function_call")
                .map(|item| {
                    let field = |k: &str| item[k].as_str().unwrap_or_default().to_string();
                    (field("name"), field("arguments"))
                })
                .collect();
            prop_assert_eq!(&calls, &stream.calls());
        }

        #[test]
        fn a_broken_stream_fails_without_calls(stream in answer_stream(), cuts in reads()) {
            let events = translate(&stream.chunks(), &cuts, Some("stream_stall"), None)?;
            let response = well_formed(&events)?;
            prop_assert_eq!(events.last().map(|e| e.0.as_str()), Some("response.failed"));
            prop_assert_eq!(output_text(&response, "message", "/content/0/text"), stream.content());
            // The item the stream broke in is never marked completed.
            let last = response["output"].as_array().and_then(|o| o.last()).cloned();
            if let Some(item) = last {
                prop_assert_eq!(&item["status"], "incomplete", "{}", item);
            }
            prop_assert_eq!(output_text(&response, "function_call", "/name"), "");
        }

        #[test]
        fn any_chunks_never_panic(
            chunks in any_chunks(),
            cuts in reads(),
            tools in offered(),
            broken in any::<bool>(),
        ) {
            let events = translate(&chunks, &cuts, broken.then_some("cut"), tools)?;
            well_formed(&events)?;
            let last = events.last().map(|e| e.0.as_str());
            if broken {
                prop_assert_eq!(last, Some("response.failed"));
            } else {
                prop_assert!(matches!(last, Some("response.completed" | "response.incomplete")));
            }
        }
    }
}
