//! Provider state that the next turn of a conversation needs, kept across the round trip
//! whatever the client keeps. Gemini puts `extra_content.google.thought_signature` on each
//! tool call and refuses the next turn without it; OpenRouter asks for a reasoning model's
//! `reasoning_details` back on the assistant message that made the calls. Claude Code and
//! Codex never see either (their protocols have no place for them), and a chat client may
//! keep only a call's `id`, `type` and `function`.
//!
//! fcm notes that state as answers go out ([`Carried`], from the chat chunks or message),
//! keyed by the call id the client was given (the translators hand out the provider's own
//! call ids), and puts it back on the request that continues the conversation
//! ([`CarryStore::restore`]), only when it goes to the provider that made it: another
//! provider may refuse a field it does not know. Bounded: the newest [`CAPACITY`] calls
//! and [`MAX_BYTES`] of their values, each for as long as its conversation is kept (the
//! affinity idle time after it was last used). The store is saved as `carry.json`
//! ([`CarryFile`]) by the flusher and loaded at start, so a restart between two turns
//! loses nothing; what to send when a signature is lost all the same is `placeholder`'s.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::answers::toolcall::Piece;
use crate::state::carry_file::{CarryFile, KeptCall};

/// Calls remembered at most: a long agent session makes a few hundred.
pub(crate) const CAPACITY: usize = 4096;
/// Bytes of kept values at most (their JSON), oldest dropped first: a Gemini signature is
/// a few KiB, so thousands fit, while a reasoning model's long `reasoning_details` (kept
/// with each of its message's calls) cannot grow the file without end.
pub(crate) const MAX_BYTES: usize = 16 << 20;
/// How long a call's state is kept after it was last given or restored when nothing else
/// is said: the affinity idle time's default (30 minutes).
pub(crate) const KEEP_MS: u64 = 30 * 60_000;

/// The provider state of one answer, gathered chunk by chunk (or from a whole message).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Carried {
    /// Each call's id and its `extra_content` (when it had any).
    calls: Vec<(String, Option<Value>)>,
    /// The stream index of each call, to find the id of a chunk that names only its index.
    by_index: Vec<(u64, usize)>,
    /// The message's `reasoning_details`, merged from their deltas.
    reasoning: Vec<Value>,
}

impl Carried {
    /// Notes what one chat stream chunk carries.
    pub(crate) fn observe(&mut self, chunk: &Value) {
        if let Some(delta) = chunk.pointer("/choices/0/delta") {
            self.take_in(delta, true);
        }
    }

    /// The state of a whole answer's message.
    pub(crate) fn of_answer(answer: &Value) -> Carried {
        let mut c = Carried::default();
        if let Some(message) = answer.pointer("/choices/0/message") {
            c.take_in(message, false);
        }
        c
    }

    /// Nothing a later turn needs.
    pub(crate) fn is_empty(&self) -> bool {
        self.reasoning.is_empty() && self.calls.iter().all(|(_, extra)| extra.is_none())
    }

    fn take_in(&mut self, msg: &Value, delta: bool) {
        if let Some(Value::Array(details)) = msg.get("reasoning_details") {
            for d in details {
                merge_detail(&mut self.reasoning, d, delta);
            }
        }
        let Some(Value::Array(calls)) = msg.get("tool_calls") else {
            return;
        };
        for (n, call) in calls.iter().enumerate() {
            let piece = Piece::of(call);
            let index = piece.index.unwrap_or(n as u64);
            let id = piece.id;
            let slot = match id {
                Some(id) => match self.calls.iter().position(|(known, _)| known == id) {
                    Some(i) => i,
                    None => {
                        self.calls.push((id.to_string(), None));
                        let i = self.calls.len() - 1;
                        self.by_index.retain(|(x, _)| *x != index);
                        self.by_index.push((index, i));
                        i
                    }
                },
                None => match self.by_index.iter().rev().find(|(x, _)| *x == index) {
                    Some((_, i)) => *i,
                    None => continue,
                },
            };
            if let Some(extra) = call.get("extra_content").filter(|v| !v.is_null()) {
                self.calls[slot].1 = Some(extra.clone());
            }
        }
    }
}

/// Adds one `reasoning_details` item: a delta joins the item with its `index` (its text,
/// summary and data pieces appended), a whole message's items are taken as they are.
fn merge_detail(all: &mut Vec<Value>, d: &Value, delta: bool) {
    let Some(obj) = d.as_object() else { return };
    let index = obj.get("index").and_then(Value::as_u64);
    let existing = match (delta, index) {
        (true, Some(i)) => all
            .iter_mut()
            .find(|e| e.get("index").and_then(Value::as_u64) == Some(i)),
        _ => None,
    };
    let Some(Value::Object(e)) = existing else {
        all.push(d.clone());
        return;
    };
    for (k, v) in obj {
        match (e.get_mut(k), v) {
            (Some(Value::String(old)), Value::String(piece))
                if matches!(k.as_str(), "text" | "summary" | "data") =>
            {
                old.push_str(piece)
            }
            (_, Value::Null) => {}
            _ => {
                e.insert(k.clone(), v.clone());
            }
        }
    }
}

/// What is kept for one call.
#[derive(Debug, Clone)]
struct Entry {
    provider: String,
    extra: Option<Value>,
    reasoning: Option<Value>,
    used_ms: u64,
    /// The JSON size of `extra` and `reasoning`, for [`MAX_BYTES`].
    bytes: usize,
}

impl Entry {
    fn new(
        provider: String,
        extra: Option<Value>,
        reasoning: Option<Value>,
        used_ms: u64,
    ) -> Entry {
        let size = |v: &Option<Value>| v.as_ref().map_or(0, |v| v.to_string().len());
        let bytes = size(&extra) + size(&reasoning);
        Entry {
            provider,
            extra,
            reasoning,
            used_ms,
            bytes,
        }
    }
}

/// The calls' state of every conversation served, bounded and shared by all requests.
#[derive(Debug)]
pub(crate) struct CarryStore {
    any: AtomicBool,
    /// Changed since it was last saved.
    dirty: AtomicBool,
    /// A call unused this long is forgotten (ms).
    keep_ms: u64,
    inner: Mutex<Inner>,
}

impl Default for CarryStore {
    fn default() -> CarryStore {
        CarryStore::new(CarryFile::default(), KEEP_MS, 0)
    }
}

#[derive(Debug, Default)]
struct Inner {
    calls: HashMap<String, Entry>,
    /// Call ids, oldest first, for the bounds (an id may stay after its call expired).
    order: VecDeque<String>,
    /// The sum of the kept calls' `bytes`.
    bytes: usize,
}

impl Inner {
    fn insert(&mut self, id: &str, entry: Entry) {
        self.bytes += entry.bytes;
        match self.calls.insert(id.to_string(), entry) {
            Some(old) => self.bytes -= old.bytes,
            None => self.order.push_back(id.to_string()),
        }
    }

    /// Drops the oldest calls past [`CAPACITY`] or [`MAX_BYTES`].
    fn bound(&mut self) {
        while self.order.len() > CAPACITY || self.bytes > MAX_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(e) = self.calls.remove(&old) {
                self.bytes -= e.bytes;
            }
        }
    }

    /// Forgets calls unused for `keep_ms`.
    fn expire(&mut self, now_ms: u64, keep_ms: u64) {
        let before = self.calls.len();
        self.calls
            .retain(|_, e| now_ms.saturating_sub(e.used_ms) < keep_ms);
        if self.calls.len() != before {
            let calls = &self.calls;
            self.order.retain(|id| calls.contains_key(id));
            self.bytes = calls.values().map(|e| e.bytes).sum();
        }
    }
}

impl CarryStore {
    /// The store from its file, without the calls unused for `keep_ms` (the conversation's
    /// idle time) at `now_ms`.
    pub(crate) fn new(file: CarryFile, keep_ms: u64, now_ms: u64) -> CarryStore {
        let mut inner = Inner::default();
        for c in file.calls {
            if now_ms.saturating_sub(c.used_ms) < keep_ms {
                inner.insert(
                    &c.id,
                    Entry::new(c.provider, c.extra, c.reasoning, c.used_ms),
                );
            }
        }
        inner.bound();
        CarryStore {
            any: AtomicBool::new(!inner.calls.is_empty()),
            dirty: AtomicBool::new(false),
            keep_ms,
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps what `provider`'s answer carried, under the ids the client was given: `given`
    /// pairs each id handed out with the provider's (a call not in it kept its own id, as
    /// chat clients get it).
    pub(crate) fn keep(
        &self,
        provider: &str,
        carried: &Carried,
        given: &[(String, String)],
        now_ms: u64,
    ) {
        if carried.is_empty() {
            return;
        }
        let reasoning =
            (!carried.reasoning.is_empty()).then(|| Value::Array(carried.reasoning.clone()));
        let mut inner = self.lock();
        for (upstream, extra) in &carried.calls {
            if extra.is_none() && reasoning.is_none() {
                continue;
            }
            let mut ids: Vec<&str> = given
                .iter()
                .filter(|(_, up)| up == upstream)
                .map(|(client, _)| client.as_str())
                .collect();
            if ids.is_empty() {
                ids.push(upstream);
            }
            for id in ids {
                let entry = Entry::new(
                    provider.to_string(),
                    extra.clone(),
                    reasoning.clone(),
                    now_ms,
                );
                inner.insert(id, entry);
            }
        }
        inner.bound();
        self.any.store(!inner.calls.is_empty(), Ordering::Relaxed);
        self.dirty.store(true, Ordering::Release);
    }

    /// A copy to save when something changed since the last one.
    pub(crate) fn take_dirty(&self) -> Option<CarryFile> {
        self.dirty
            .swap(false, Ordering::AcqRel)
            .then(|| self.file())
    }

    /// A save failed: try again next time.
    pub(crate) fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// The store as its file holds it, oldest first.
    pub(crate) fn file(&self) -> CarryFile {
        let inner = self.lock();
        let calls = inner
            .order
            .iter()
            .filter_map(|id| {
                let e = inner.calls.get(id)?;
                Some(KeptCall {
                    id: id.clone(),
                    provider: e.provider.clone(),
                    extra: e.extra.clone(),
                    reasoning: e.reasoning.clone(),
                    used_ms: e.used_ms,
                })
            })
            .collect();
        CarryFile { version: 1, calls }
    }

    /// `body` with the kept state put back on the assistant messages' calls that
    /// `provider` made, or `None` when there is nothing to put back (the usual case, and
    /// no lock taken while nothing was ever kept).
    pub(crate) fn restore(&self, body: &Value, provider: &str, now_ms: u64) -> Option<Value> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let messages = body.get("messages")?.as_array()?;
        let mut inner = self.lock();
        inner.expire(now_ms, self.keep_ms);
        let mut patches: Vec<(usize, usize, Entry)> = Vec::new();
        for (m, msg) in messages.iter().enumerate() {
            if msg.get("role").and_then(Value::as_str) != Some("assistant") {
                continue;
            }
            let calls = msg.get("tool_calls").and_then(Value::as_array);
            for (c, call) in calls.into_iter().flatten().enumerate() {
                let Some(id) = call.get("id").and_then(Value::as_str) else {
                    continue;
                };
                if let Some(e) = inner.calls.get_mut(id).filter(|e| e.provider == provider) {
                    if e.used_ms != now_ms {
                        e.used_ms = now_ms;
                        self.dirty.store(true, Ordering::Release);
                    }
                    let adds_extra = e.extra.is_some() && absent(call.get("extra_content"));
                    let adds_reasoning =
                        e.reasoning.is_some() && absent(msg.get("reasoning_details"));
                    if adds_extra || adds_reasoning {
                        patches.push((m, c, e.clone()));
                    }
                }
            }
        }
        drop(inner);
        if patches.is_empty() {
            return None;
        }
        let mut body = body.clone();
        let messages = body.get_mut("messages")?.as_array_mut()?;
        for (m, c, e) in patches {
            let Some(msg) = messages[m].as_object_mut() else {
                continue;
            };
            if let Some(r) = e.reasoning {
                merge_into(msg, "reasoning_details", r);
            }
            let call = msg
                .get_mut("tool_calls")
                .and_then(|c| c.as_array_mut())
                .and_then(|calls| calls.get_mut(c))
                .and_then(Value::as_object_mut);
            if let (Some(call), Some(extra)) = (call, e.extra) {
                merge_into(call, "extra_content", extra);
            }
        }
        Some(body)
    }
}

fn absent(v: Option<&Value>) -> bool {
    v.is_none_or(Value::is_null)
}

/// Sets `key` on `obj` unless the client kept it.
fn merge_into(obj: &mut Map<String, Value>, key: &str, value: Value) {
    if absent(obj.get(key)) {
        obj.insert(key.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signature(s: &str) -> Value {
        json!({"google": {"thought_signature": s}})
    }

    #[test]
    fn a_streamed_signature_comes_back_on_the_next_turn_to_its_provider_only() {
        let mut c = Carried::default();
        c.observe(&json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1",
            "extra_content": signature("SIG1"), "function": {"name": "read", "arguments": "{\"pa"}}]}}]}));
        c.observe(&json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "th\":1}"}}]}}]}));
        let store = CarryStore::default();
        store.keep("gemini", &c, &[], 0);
        // The client kept only id, type and function.
        let next = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]});
        let restored = store.restore(&next, "gemini", 1000).expect("put back");
        assert_eq!(
            restored["messages"][1]["tool_calls"][0]["extra_content"],
            signature("SIG1")
        );
        assert_eq!(store.restore(&next, "groq", 1000), None, "another provider");
        assert_eq!(
            store.restore(&next, "gemini", KEEP_MS + 1000),
            None,
            "expired"
        );
    }

    #[test]
    fn reasoning_details_deltas_merge_and_return_on_the_message() {
        let mut c = Carried::default();
        for piece in ["The", " user", " asks"] {
            c.observe(&json!({"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.text", "text": piece, "format": "unknown", "index": 0}]}}]}));
        }
        c.observe(&json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": ""}}]}}]}));
        let store = CarryStore::default();
        store.keep("openrouter", &c, &[], 0);
        let next = json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "call_a", "function": {"name": "weather", "arguments": "{}"}}]}]});
        let restored = store.restore(&next, "openrouter", 1).unwrap();
        assert_eq!(
            restored["messages"][0]["reasoning_details"],
            json!([{"type": "reasoning.text", "text": "The user asks", "format": "unknown", "index": 0}])
        );
        assert!(restored["messages"][0]["tool_calls"][0]
            .get("extra_content")
            .is_none());
    }

    #[test]
    fn what_the_client_kept_wins_and_plain_answers_keep_nothing() {
        let mut c = Carried::of_answer(&json!({"choices": [{"message": {"tool_calls": [
            {"id": "c1", "extra_content": signature("A"), "function": {"name": "f", "arguments": "{}"}},
            {"id": "c2", "function": {"name": "g", "arguments": "{}"}}]}}]}));
        let store = CarryStore::default();
        store.keep("gemini", &c, &[], 0);
        let next = json!({"messages": [{"role": "assistant", "tool_calls": [
            {"id": "c1", "extra_content": signature("CLIENT"), "function": {"name": "f", "arguments": "{}"}},
            {"id": "c2", "function": {"name": "g", "arguments": "{}"}}]}]});
        assert_eq!(
            store.restore(&next, "gemini", 1),
            None,
            "c1 kept by the client, c2 had none"
        );
        c = Carried::of_answer(&json!({"choices": [{"message": {"content": "hi"}}]}));
        assert!(c.is_empty());
        let empty = CarryStore::default();
        empty.keep("gemini", &c, &[], 0);
        assert!(!empty.any.load(Ordering::Relaxed));
    }

    #[test]
    fn a_translated_call_is_kept_under_the_id_the_client_was_given() {
        let c = Carried::of_answer(&json!({"choices": [{"message": {"tool_calls": [
            {"id": "call_1", "extra_content": signature("S"), "function": {"name": "f", "arguments": "{}"}}]}}]}));
        let store = CarryStore::default();
        store.keep("gemini", &c, &[("toolu_abc".into(), "call_1".into())], 0);
        let next = |id: &str| json!({"messages": [{"role": "assistant", "tool_calls": [{"id": id, "function": {"name": "f", "arguments": "{}"}}]}]});
        assert!(store.restore(&next("toolu_abc"), "gemini", 1).is_some());
        assert_eq!(
            store.restore(&next("call_1"), "gemini", 1),
            None,
            "the provider's id was never given out"
        );
    }

    #[test]
    fn the_store_is_bounded() {
        let store = CarryStore::default();
        for i in 0..CAPACITY + 10 {
            let c = Carried::of_answer(&json!({"choices": [{"message": {"tool_calls": [
                {"id": format!("c{i}"), "extra_content": signature("S"), "function": {"name": "f", "arguments": "{}"}}]}}]}));
            store.keep("gemini", &c, &[], 0);
        }
        let inner = store.inner.lock().unwrap();
        assert_eq!(inner.calls.len(), CAPACITY);
        assert!(!inner.calls.contains_key("c0") && inner.calls.contains_key("c10"));
    }

    fn one_call(id: &str, sig: &str) -> Carried {
        Carried::of_answer(&json!({"choices": [{"message": {"tool_calls": [
            {"id": id, "extra_content": signature(sig), "function": {"name": "f", "arguments": "{}"}}]}}]}))
    }

    fn turn_with(id: &str) -> Value {
        json!({"messages": [{"role": "assistant", "tool_calls": [{"id": id, "function": {"name": "f", "arguments": "{}"}}]}]})
    }

    #[test]
    fn the_file_round_trip_keeps_what_is_not_expired() {
        let store = CarryStore::new(CarryFile::default(), 60_000, 0);
        assert!(store.take_dirty().is_none(), "nothing kept yet");
        store.keep("gemini", &one_call("old", "A"), &[], 1_000);
        store.keep("gemini", &one_call("new", "B"), &[], 50_000);
        let file = store.take_dirty().expect("changed");
        assert!(store.take_dirty().is_none(), "saved once");
        assert_eq!(file.calls.len(), 2);
        assert_eq!(file.calls[0].id, "old", "oldest first");
        let text = serde_json::to_string(&file).unwrap();
        let back: CarryFile = serde_json::from_str(&text).unwrap();
        // At 70 s, "old" (used at 1 s) is past the minute it is kept; "new" is not.
        let again = CarryStore::new(back, 60_000, 70_000);
        assert_eq!(again.restore(&turn_with("old"), "gemini", 70_000), None);
        let restored = again.restore(&turn_with("new"), "gemini", 70_000).unwrap();
        assert_eq!(
            restored["messages"][0]["tool_calls"][0]["extra_content"],
            signature("B")
        );
        assert!(again.take_dirty().is_some(), "its use moved its expiry");
        assert!(
            again
                .restore(&turn_with("new"), "gemini", 125_000)
                .is_some(),
            "kept a minute from its last use"
        );
    }

    #[test]
    fn the_store_is_bounded_in_bytes_oldest_first() {
        let big = "x".repeat(MAX_BYTES / 4);
        let store = CarryStore::default();
        for n in 0..6 {
            store.keep("gemini", &one_call(&format!("c{n}"), &big), &[], 0);
        }
        let file = store.file();
        let ids: Vec<&str> = file.calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c3", "c4", "c5"], "four would pass the bound");
        let inner = store.lock();
        assert!(inner.bytes <= MAX_BYTES);
        assert_eq!(
            inner.bytes,
            inner.calls.values().map(|e| e.bytes).sum::<usize>()
        );
    }

    #[test]
    fn a_loaded_file_keeps_its_bounds() {
        let calls = (0..CAPACITY + 5)
            .map(|n| KeptCall {
                id: format!("c{n}"),
                provider: "gemini".into(),
                extra: Some(signature("S")),
                reasoning: None,
                used_ms: 10,
            })
            .collect();
        let store = CarryStore::new(CarryFile { version: 1, calls }, KEEP_MS, 20);
        let inner = store.lock();
        assert_eq!(inner.calls.len(), CAPACITY);
        assert!(!inner.calls.contains_key("c4") && inner.calls.contains_key("c5"));
    }
}
