//! Chat completions answers, passed through with three repairs: a leading `<think>` block in
//! the content moves into `reasoning_content` (`router.reasoning.splitThinkTags`, on by
//! default); a `content` array of text and thinking parts (Magistral) becomes text and
//! `reasoning_content`; and tool calls get ids a client can use: unique, never empty or null, and an
//! `index` on every streamed call (providers repeat `call_1` for parallel calls, send `""` or
//! `null` on continuations, or leave `index` out). When the request offered tools, a
//! streamed call is held until the turn ends and sent only if it passes the check
//! (`toolcall`); a call that fails is dropped and the turn ends as a plain answer
//! (`finish_reason: stop`, as for `tool_calls` with no calls at all). Bytes that need none of
//! this pass through as they came, so a plain text stream costs nothing extra.

use serde_json::{json, Value};

use std::sync::Arc;

use super::content::{call_value, ContentSplit};
use super::wire::new_id;
use crate::answers::path::Lookup;
use crate::answers::toolcall::{Offered, Piece};

/// A chat stream's repairs, fed the bytes the hold buffer released and their parsed chunks.
#[derive(Debug)]
pub(crate) struct ChatStream {
    /// Think tags (with `splitThinkTags`) and tool-call markup (with tools) in the content.
    content: ContentSplit,
    calls: StreamCalls,
    /// The request's tools: calls are held until the turn ends and checked.
    offered: Option<Arc<Offered>>,
    /// A finish reason was sent: a repeated finish chunk (some hosts send it twice) goes
    /// out without it, so the turn ends once.
    finished: bool,
    /// Tool-call chunks held until the turn ends (with `offered`).
    held: Vec<Value>,
    /// The turn's calls were judged; positions of the calls that failed.
    judged: Option<Vec<usize>>,
    /// The last bytes ended inside an event: one too long for the SSE parser, which the
    /// hold buffer passes on in pieces as they come, with no parsed chunk for it.
    mid_event: bool,
}

impl ChatStream {
    pub(crate) fn new(split_think_tags: bool, offered: Option<Arc<Offered>>) -> ChatStream {
        ChatStream {
            content: ContentSplit::new(split_think_tags, offered.is_some()),
            calls: StreamCalls::default(),
            finished: false,
            offered,
            held: Vec::new(),
            judged: None,
            mid_event: false,
        }
    }

    /// The ids given to the provider's calls, each with the provider's own (taken).
    pub(crate) fn call_ids(&mut self) -> super::wire::CallIds {
        let pairs = self
            .calls
            .calls
            .iter()
            .filter_map(|(_, given, ours)| Some((ours.clone(), given.clone()?)))
            .collect();
        super::wire::CallIds(pairs)
    }

    /// The bytes to send for released `bytes` (whose chat chunks are `chunks`).
    pub(crate) fn shape(&mut self, mut bytes: Vec<u8>, chunks: Vec<Value>) -> Vec<u8> {
        let mut rest_of_event = Vec::new();
        if self.mid_event {
            // The rest of an event too long to parse goes as it came; what follows it is
            // whole events, which `chunks` are.
            match crate::answers::sse::block_end(&bytes) {
                Some(end) => {
                    rest_of_event = bytes.drain(..end).collect();
                    self.mid_event = false;
                }
                None => return bytes,
            }
        }
        if !bytes.is_empty() {
            self.mid_event = !crate::answers::sse::ends_a_block(&bytes);
        }
        let mut out = self.shape_events(bytes, chunks);
        if !rest_of_event.is_empty() {
            rest_of_event.append(&mut out);
            out = rest_of_event;
        }
        out
    }

    /// [`ChatStream::shape`] for bytes that begin at an event.
    fn shape_events(&mut self, bytes: Vec<u8>, chunks: Vec<Value>) -> Vec<u8> {
        let settled = self.content.passes(&bytes);
        let repeats_finish = self.finished && chunks.iter().any(|c| finish_reason(c).is_some());
        if settled && self.held.is_empty() && !repeats_finish && !chunks.iter().any(needs_repair) {
            self.finished |= chunks.iter().any(|c| finish_reason(c).is_some());
            return bytes;
        }
        if chunks.is_empty() && self.held.is_empty() && !contains(&bytes, b"data: [DONE]") {
            // Nothing parsed to rebuild from (a comment, an event that is not JSON, or the
            // start of an event over the parser's cap): the bytes go as they came.
            return bytes;
        }
        let mut out = Vec::with_capacity(bytes.len() + 64);
        for mut chunk in chunks {
            self.repair(&mut chunk);
            super::wire::usage_cached_openai_way(&mut chunk);
            let finishes = finish_reason(&chunk).is_some();
            if self.offered.is_some() && self.judged.is_none() && has_tool_calls(&chunk) {
                if finishes {
                    // Calls and the finish in one chunk: judge them together.
                    self.held.push(chunk);
                    self.release_calls(&mut out);
                    continue;
                }
                self.held.push(chunk);
                continue;
            }
            if finishes {
                self.release_calls(&mut out);
                self.fix_finish(&mut chunk);
                if self.finished {
                    chunk["choices"][0]["finish_reason"] = Value::Null;
                }
                self.finished = true;
            }
            push_event(&chunk, &mut out);
        }
        if contains(&bytes, b"data: [DONE]") {
            self.release_calls(&mut out);
            self.flush(&mut out);
            out.extend_from_slice(b"data: [DONE]\n\n");
        }
        out
    }

    /// The turn's calls are whole: held chunks go out without the calls that fail.
    fn release_calls(&mut self, out: &mut Vec<u8>) {
        let Some(offered) = &self.offered else { return };
        if self.judged.is_some() {
            return;
        }
        let bad: Vec<usize> = (0..self.calls.calls.len())
            .filter(|&i| {
                let (name, args) = &self.calls.assembled[i];
                offered.check(name, args).is_err()
            })
            .collect();
        self.judged = Some(bad.clone());
        for mut chunk in std::mem::take(&mut self.held) {
            if let Some(Value::Array(calls)) = chunk.at_mut("/choices/0/delta/tool_calls") {
                calls.retain(|c| {
                    let i = Piece::of(c).index.unwrap_or(0) as usize;
                    !bad.contains(&i)
                });
                if calls.is_empty() {
                    if let Some(delta) = chunk.at_mut("/choices/0/delta") {
                        if let Some(obj) = delta.as_object_mut() {
                            obj.remove("tool_calls");
                        }
                    }
                }
            }
            self.fix_finish(&mut chunk);
            let empty = chunk
                .at("/choices/0/delta")
                .and_then(Value::as_object)
                .is_some_and(|d| d.is_empty())
                && finish_reason(&chunk).is_none();
            if !empty {
                push_event(&chunk, out);
            }
        }
    }

    /// `finish_reason: tool_calls` with no call left to run is a plain stop; a `stop` after
    /// calls taken out of text is `tool_calls`.
    fn fix_finish(&self, chunk: &mut Value) {
        let passed = self.calls.calls.len() - self.judged.as_ref().map_or(0, Vec::len);
        match finish_reason(chunk) {
            Some("tool_calls") if passed == 0 => {
                chunk["choices"][0]["finish_reason"] = json!("stop");
            }
            Some("stop") if passed > 0 && self.content.made() > 0 => {
                chunk["choices"][0]["finish_reason"] = json!("tool_calls");
            }
            _ => {}
        }
    }

    /// The stream ended: calls and text still held back (a cut tag, a block never closed)
    /// go out.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.release_calls(&mut out);
        self.flush(&mut out);
        out
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        let held = self.content.finish();
        if held.text.is_empty() && held.reasoning.is_empty() {
            return;
        }
        let mut delta = json!({});
        if !held.text.is_empty() {
            delta["content"] = json!(held.text);
        }
        if !held.reasoning.is_empty() {
            delta["reasoning_content"] = json!(held.reasoning);
        }
        let chunk = json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": Value::Null}]});
        push_event(&chunk, out);
    }

    fn repair(&mut self, chunk: &mut Value) {
        let Some(delta) = chunk.at_mut("/choices/0/delta") else {
            return;
        };
        flatten_content(delta);
        let content = match delta.get("content") {
            Some(Value::String(c)) if !self.content.passes(c.as_bytes()) => Some(c.clone()),
            _ => None,
        };
        if let Some(content) = content {
            let parts = self.content.feed(&content);
            delta["content"] = json!(parts.text);
            append_reasoning(delta, &parts.reasoning);
            for call in parts.calls {
                push_call(delta, call);
            }
        }
        if let Some(Value::Array(calls)) = delta.get_mut("tool_calls") {
            for call in calls {
                self.calls.stream(call);
            }
        }
    }
}

/// A complete chat answer with the same repairs: the provider's bytes when none applies.
/// `parsed` is the body as the gate parsed it.
pub(crate) fn answer(
    body: Vec<u8>,
    mut parsed: Value,
    split_think_tags: bool,
    tools: Option<&Offered>,
) -> Vec<u8> {
    let repaired = normalize(&mut parsed, split_think_tags, tools);
    if !(super::wire::usage_cached_openai_way(&mut parsed) || repaired) {
        return body;
    }
    serde_json::to_vec(&parsed).unwrap_or(body)
}

/// Repairs a complete chat answer in place: content arrays flattened, a leading `<think>`
/// block moved into `reasoning_content` (with `split_think_tags`), tool-call markup in the
/// text made calls and calls that fail the check dropped (with `tools`), call ids made
/// unique, and the finish reason made to match the calls that are left. Returns whether
/// anything changed.
pub(crate) fn normalize(v: &mut Value, split_think_tags: bool, tools: Option<&Offered>) -> bool {
    let Some(msg) = v.at_mut("/choices/0/message") else {
        return false;
    };
    let mut changed = flatten_content(msg);
    let mut made = false;
    // Text is taken apart only for think tags or tool-call markup; otherwise left as it is.
    let content = msg
        .get("content")
        .filter(|_| split_think_tags || tools.is_some());
    if let Some(Value::String(content)) = content {
        let mut text = content.clone();
        let mut reasoning = String::new();
        if split_think_tags {
            let parts = crate::answers::reasoning::split_think(&text);
            (text, reasoning) = (parts.text, parts.reasoning);
        }
        let mut calls = Vec::new();
        if tools.is_some() {
            let split = crate::answers::textcalls::split_text_calls(&text);
            (text, calls) = (split.text, split.calls);
        }
        if !reasoning.is_empty() || !calls.is_empty() {
            msg["content"] = json!(text);
            changed = true;
        }
        append_reasoning(msg, &reasoning);
        made = !calls.is_empty();
        for call in calls {
            push_call(msg, call_value(call));
        }
    }
    let has_calls = match msg.get_mut("tool_calls") {
        Some(Value::Array(calls)) if !calls.is_empty() => {
            if let Some(tools) = tools {
                // The gate failed answers with broken calls; what is left here are calls
                // taken out of text, and trivial slips to repair (empty arguments: `{}`).
                let before = calls.len();
                calls.retain_mut(|c| {
                    let piece = Piece::of(c);
                    match tools.check(piece.name(), piece.arguments()) {
                        Ok(checked) => {
                            if Some(checked.as_str()) != piece.arguments {
                                c["function"]["arguments"] = json!(checked);
                                changed = true;
                            }
                            true
                        }
                        Err(_) => false,
                    }
                });
                changed |= calls.len() != before;
            }
            changed |= StreamCalls::whole(calls);
            !calls.is_empty()
        }
        _ => false,
    };
    let finish = v.at("/choices/0/finish_reason").and_then(Value::as_str);
    if !has_calls && finish == Some("tool_calls") {
        v["choices"][0]["finish_reason"] = json!("stop");
        changed = true;
    } else if has_calls && made && finish == Some("stop") {
        v["choices"][0]["finish_reason"] = json!("tool_calls");
        changed = true;
    }
    changed
}

/// Tool-call ids and indexes toward a chat client, for the calls of one answer.
#[derive(Debug, Default)]
struct StreamCalls {
    /// Calls in the order they started (their position is the index the client sees):
    /// the provider's index and id for each, and the id fcm gave it.
    calls: Vec<(Option<u64>, Option<String>, String)>,
    /// Each call's name and arguments so far, by position.
    assembled: Vec<(String, String)>,
    /// The call the last delta touched.
    last: Option<usize>,
}

impl StreamCalls {
    /// One streamed tool-call delta. A new call (a new index, a different non-empty id at a
    /// used index, or, without an index, a delta with a name or id) gets a fresh id and the
    /// next index; a continuation gets its call's id and index.
    fn stream(&mut self, call: &mut Value) {
        if !call.is_object() {
            return;
        }
        let piece = Piece::of(call);
        let given = piece.id.map(str::to_string);
        let continues = match piece.index {
            Some(i) => self.calls.iter().rposition(|(at, known, _)| {
                *at == Some(i) && !(given.is_some() && known.is_some() && *known != given)
            }),
            None if given.is_some() || piece.name.is_some() => None,
            None => self.last,
        };
        let fresh = continues.is_none();
        let position = continues.unwrap_or_else(|| {
            self.calls.push((piece.index, given, new_id("call_")));
            self.assembled.push((String::new(), String::new()));
            self.calls.len() - 1
        });
        let (name, args) = &mut self.assembled[position];
        if name.is_empty() {
            name.push_str(piece.name());
        }
        args.push_str(piece.arguments());
        self.last = Some(position);
        let Some(obj) = call.as_object_mut() else {
            return;
        };
        if fresh && !obj.contains_key("type") {
            obj.insert("type".into(), json!("function"));
        }
        obj.insert("id".into(), json!(self.calls[position].2));
        obj.insert("index".into(), json!(position));
    }

    /// The calls of a complete answer: ids made unique and non-empty where they are not.
    /// Returns whether an id changed.
    fn whole(calls: &mut [Value]) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut changed = false;
        for call in calls.iter_mut() {
            let id = call.get("id").and_then(Value::as_str).unwrap_or("");
            if id.is_empty() || !seen.insert(id.to_string()) {
                call["id"] = json!(new_id("call_"));
                changed = true;
            }
        }
        changed
    }
}

/// Whether a chunk carries tool calls, a content array or a `tool_calls` finish: those are
/// always rewritten.
fn needs_repair(chunk: &Value) -> bool {
    if finish_reason(chunk) == Some("tool_calls")
        || chunk.at("/usage/prompt_cache_hit_tokens").is_some()
    {
        return true;
    }
    let Some(delta) = chunk.at("/choices/0/delta") else {
        return false;
    };
    has_tool_calls(chunk) || delta.get("content").is_some_and(Value::is_array)
}

fn has_tool_calls(chunk: &Value) -> bool {
    chunk
        .at("/choices/0/delta/tool_calls")
        .is_some_and(|c| c.as_array().is_some_and(|a| !a.is_empty()))
}

fn finish_reason(chunk: &Value) -> Option<&str> {
    chunk.at("/choices/0/finish_reason").and_then(Value::as_str)
}

/// A `content` array (text and thinking parts) as text `content` plus `reasoning_content`.
/// Returns whether there was an array to flatten.
fn flatten_content(msg: &mut Value) -> bool {
    if !msg.get("content").is_some_and(Value::is_array) {
        return false;
    }
    let parts = crate::answers::reasoning::parts(msg);
    msg["content"] = json!(parts.text);
    append_reasoning(msg, &parts.reasoning);
    true
}

/// Adds reasoning to a message's or delta's `reasoning_content`.
fn append_reasoning(msg: &mut Value, reasoning: &str) {
    if reasoning.is_empty() {
        return;
    }
    let mut all = msg
        .get("reasoning_content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    all.push_str(reasoning);
    msg["reasoning_content"] = json!(all);
}

/// Appends a call to a message's or delta's `tool_calls`.
fn push_call(msg: &mut Value, call: Value) {
    let Some(obj) = msg.as_object_mut() else {
        return;
    };
    if let Some(list) = obj
        .entry("tool_calls")
        .or_insert_with(|| json!([]))
        .as_array_mut()
    {
        list.push(call);
    }
}

fn push_event(chunk: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    out.extend(serde_json::to_vec(chunk).expect("JSON values serialise"));
    out.extend_from_slice(b"\n\n");
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testing::chunks_of;

    fn events(bytes: &[u8]) -> Vec<Value> {
        chunks_of(bytes)
    }

    fn frame(delta: Value) -> String {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta}]})
        )
    }

    #[test]
    fn plain_text_passes_through_untouched() {
        let mut s = ChatStream::new(true, None);
        let bytes = frame(json!({"content": "Hello"})).into_bytes();
        assert_eq!(s.shape(bytes.clone(), chunks_of(&bytes)), bytes);
        let more = format!("{}data: [DONE]\n\n", frame(json!({"content": " <think>x"})));
        assert_eq!(
            s.shape(more.clone().into_bytes(), chunks_of(more.as_bytes())),
            more.into_bytes(),
            "a tag after the answer started is text"
        );
    }

    #[test]
    fn a_leading_think_block_becomes_reasoning_content() {
        let mut s = ChatStream::new(true, None);
        let mut out = Vec::new();
        for piece in ["<thi", "nk>plan", "</think>\n\nDone."] {
            let bytes = frame(json!({"content": piece})).into_bytes();
            out.extend(s.shape(bytes.clone(), chunks_of(&bytes)));
        }
        let done = b"data: [DONE]\n\n".to_vec();
        out.extend(s.shape(done, Vec::new()));
        let got = events(&out);
        let text: String = got
            .iter()
            .filter_map(|c| {
                c.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
            })
            .collect();
        let reasoning: String = got
            .iter()
            .filter_map(|c| {
                c.pointer("/choices/0/delta/reasoning_content")
                    .and_then(Value::as_str)
            })
            .collect();
        assert_eq!((text.as_str(), reasoning.as_str()), ("Done.", "plan"));
        assert!(String::from_utf8(out)
            .unwrap()
            .ends_with("data: [DONE]\n\n"));
        let mut off = ChatStream::new(false, None);
        let bytes = frame(json!({"content": "<think>x"})).into_bytes();
        assert_eq!(off.shape(bytes.clone(), chunks_of(&bytes)), bytes);
    }

    #[test]
    fn tool_call_ids_are_unique_and_indexed() {
        let mut s = ChatStream::new(true, None);
        let deltas = [
            // Parallel calls repeating one id, then continuations with "" and null ids.
            json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "a", "arguments": "{"}}]}),
            json!({"tool_calls": [{"index": 1, "id": "call_1", "function": {"name": "b", "arguments": "{"}}]}),
            json!({"tool_calls": [{"index": 0, "id": "", "function": {"arguments": "}"}}]}),
            json!({"tool_calls": [{"index": 1, "id": null, "function": {"name": null, "arguments": "}"}}]}),
            // No index at all (Mistral): two whole calls in one delta.
            json!({"tool_calls": [{"id": "x", "function": {"name": "c", "arguments": "{}"}}, {"id": "y", "function": {"name": "d", "arguments": "{}"}}]}),
        ];
        let mut calls = Vec::new();
        for d in deltas {
            let bytes = frame(d).into_bytes();
            for c in events(&s.shape(bytes.clone(), chunks_of(&bytes))) {
                for call in c["choices"][0]["delta"]["tool_calls"].as_array().unwrap() {
                    calls.push((
                        call["index"].as_u64().unwrap(),
                        call["id"].as_str().unwrap().to_string(),
                    ));
                }
            }
        }
        let ids: Vec<&str> = calls.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(ids[0], ids[2], "a continuation keeps its call's id");
        assert_eq!(ids[1], ids[3]);
        assert_ne!(ids[0], ids[1], "parallel calls get their own ids");
        let indexes: Vec<u64> = calls.iter().map(|(i, _)| *i).collect();
        assert_eq!(indexes, [0, 1, 0, 1, 2, 3]);
        assert!(ids.iter().all(|id| id.starts_with("call_") && id.len() > 5));
        let unique: std::collections::HashSet<&&str> = ids.iter().collect();
        assert_eq!(unique.len(), 4);
    }

    #[test]
    fn a_repeated_finish_chunk_ends_the_turn_once() {
        let mut s = ChatStream::new(true, None);
        let finish = format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"completion_tokens": 2}})
        );
        let first = s.shape(finish.clone().into_bytes(), chunks_of(finish.as_bytes()));
        assert_eq!(
            first,
            finish.clone().into_bytes(),
            "the first finish passes as it came"
        );
        let again = events(&s.shape(finish.clone().into_bytes(), chunks_of(finish.as_bytes())));
        assert_eq!(again[0]["choices"][0]["finish_reason"], Value::Null);
        assert_eq!(
            again[0]["usage"]["completion_tokens"], 2,
            "its usage is kept"
        );
    }

    #[test]
    fn complete_answers_get_the_same_repairs() {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": "<think>hm</think>Yes",
            "tool_calls": [{"id": "", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                           {"id": "", "type": "function", "function": {"name": "b", "arguments": "{}"}}]}}]});
        let out: Value = serde_json::from_slice(&answer(
            body.to_string().into_bytes(),
            body.clone(),
            true,
            None,
        ))
        .unwrap();
        let msg = &out["choices"][0]["message"];
        assert_eq!(
            (msg["content"].as_str(), msg["reasoning_content"].as_str()),
            (Some("Yes"), Some("hm"))
        );
        let (a, b) = (
            msg["tool_calls"][0]["id"].as_str().unwrap(),
            msg["tool_calls"][1]["id"].as_str().unwrap(),
        );
        assert!(!a.is_empty() && a != b);
        let plain = json!({"choices": [{"message": {"content": "hi"}}]})
            .to_string()
            .into_bytes();
        assert_eq!(
            answer(
                plain.clone(),
                serde_json::from_slice(&plain).unwrap(),
                true,
                None
            ),
            plain,
            "nothing to repair: the same bytes"
        );
    }
}
