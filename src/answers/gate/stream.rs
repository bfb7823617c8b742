//! The stream side of the gate: follows a chat SSE stream as it arrives and says when it
//! becomes useful (text, reasoning, or tool calls that pass the check) or fails.

use crate::answers::classify::FailureKind;
use crate::answers::sse::{SseEvent, SseParser};
use crate::answers::toolcall::{Offered, ToolCalls};
use serde_json::Value;

use super::{
    completion_tokens, error_message, prompt_tokens, useful_chars, AnswerStats, ContentValidation,
    GateReject,
};

/// What feeding a chunk to a [`StreamTracker`] revealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamSignal {
    /// Nothing decisive yet (or nothing new after the first useful content).
    Pending,
    /// The first useful content just arrived: the answer can be committed.
    FirstUseful,
    /// The stream carries an error (or is an HTML page): the attempt failed.
    Failed(GateReject),
}

/// An event that ended the stream without its blank line is still whole: `[DONE]`, or a
/// JSON frame.
fn is_whole(ev: &SseEvent) -> bool {
    let data = ev.data.trim();
    data == "[DONE]" || serde_json::from_str::<serde::de::IgnoredAny>(data).is_ok()
}

/// What one [`StreamTracker::feed`] learnt of the chunk it was given. Offsets are into that
/// chunk, so a caller never cuts by a position from an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fed {
    pub signal: StreamSignal,
    /// Just past the chunk's last complete event or comment block, if it ended one.
    pub cut: Option<usize>,
    /// With [`StreamSignal::Failed`]: the bytes before the failing event's block (whole
    /// events that can still be forwarded); 0 when it began in an earlier chunk.
    pub good_prefix: usize,
}

impl Fed {
    fn signal(signal: StreamSignal) -> Fed {
        Fed {
            signal,
            cut: None,
            good_prefix: 0,
        }
    }
}

/// Follows an SSE chat stream as bytes arrive and says when it becomes useful or fails.
#[derive(Debug)]
pub struct StreamTracker {
    mode: ContentValidation,
    parser: SseParser,
    events: Vec<SseEvent>,
    /// Where in the chunk being fed each of `events` began.
    starts: Vec<usize>,
    bytes_seen: usize,
    useful: bool,
    done: bool,
    failed: Option<GateReject>,
    /// A frame with a non-empty `choices` array was seen.
    saw_choice: bool,
    /// Whether the first non-blank byte has been looked at (for an HTML page).
    checked_start: bool,
    stats: AnswerStats,
    /// Parsed chat chunks not yet taken, kept when a translator will read them (so a
    /// stream is parsed once, for the gate and the client's protocol alike).
    chunks: Option<Vec<Kept>>,
    /// Chunks are kept as their text while this is set (see [`Kept`]).
    compact: bool,
    /// The request's tools, when its calls are checked (strict mode).
    offered: Option<std::sync::Arc<Offered>>,
    /// Tool calls so far, checked when the turn ends.
    calls: ToolCalls,
    /// The calls were judged (at the first finish_reason, `[DONE]` or the end).
    judged: bool,
    /// A call failed the check after other content had committed the stream: the turn ends
    /// without it, and the attempt still counts as failed.
    tool_failure: Option<GateReject>,
    /// See [`ended_mid_event`](Self::ended_mid_event).
    cut_short: bool,
    /// A choice said why it finished (`finish_reason`).
    finished: bool,
    /// A delta carried a tool call.
    saw_call: bool,
}

/// A chunk kept for [`StreamTracker::take_chunks`]: parsed, or, while a stream is held
/// before it commits, as its text. A parsed chunk takes about five times the memory of its
/// text (maps that keep their order), and a held stream keeps every chunk until it commits:
/// with 256 streams held at once that was 6 MB. The text is parsed again when taken, once.
#[derive(Debug)]
enum Kept {
    Parsed(Value),
    Text(Box<str>),
}

impl StreamTracker {
    pub fn new(mode: ContentValidation) -> Self {
        StreamTracker {
            chunks: None,
            compact: false,
            offered: None,
            calls: ToolCalls::default(),
            judged: false,
            tool_failure: None,
            cut_short: false,
            finished: false,
            saw_call: false,
            mode,
            parser: SseParser::new(),
            events: Vec::new(),
            starts: Vec::new(),
            bytes_seen: 0,
            useful: false,
            done: false,
            failed: None,
            saw_choice: false,
            checked_start: false,
            stats: AnswerStats::default(),
        }
    }

    #[cfg(test)]
    pub fn bytes_seen(&self) -> usize {
        self.bytes_seen
    }

    /// Whether a choice said why it finished, or the stream said `[DONE]`.
    pub fn is_finished(&self) -> bool {
        self.finished || self.done
    }

    /// Whether a delta carried a tool call.
    pub fn saw_call(&self) -> bool {
        self.saw_call
    }

    pub fn is_useful(&self) -> bool {
        self.useful
    }

    /// `data: [DONE]` was seen.
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Bytes the parser keeps of an unfinished line and event.
    #[cfg(test)]
    pub fn buffered(&self) -> usize {
        self.parser.buffered()
    }

    /// Why a stream that ended without useful content failed: `empty_choices` when no frame
    /// ever carried a choice, `empty_stream` otherwise.
    pub fn empty_reject(&self) -> GateReject {
        if self.saw_choice || self.bytes_seen == 0 {
            GateReject::new(FailureKind::EmptyStream, "stream ended without content")
        } else {
            GateReject::new(
                FailureKind::EmptyChoices,
                "stream ended without any choices",
            )
        }
    }

    /// The event now arriving is longer than [`MAX_EVENT`](crate::answers::sse::MAX_EVENT): it is
    /// not kept, so it is passed on as it comes and never judged.
    pub fn is_oversized(&self) -> bool {
        self.parser.is_oversized()
    }

    #[cfg(test)]
    pub fn failure(&self) -> Option<&GateReject> {
        self.failed.as_ref()
    }

    pub fn stats(&self) -> &AnswerStats {
        &self.stats
    }

    /// Checks tool calls against the request's tools (strict mode only): a call counts as
    /// content once the turn ends and it passes; one that fails fails the stream before
    /// commit, and is [`tool_failure`](Self::tool_failure) after.
    pub fn check_tools(&mut self, offered: std::sync::Arc<Offered>) {
        if self.mode == ContentValidation::Strict {
            self.offered = Some(offered);
        }
    }

    /// A tool call that failed the check after the stream had committed.
    pub fn tool_failure(&self) -> Option<&GateReject> {
        self.tool_failure.as_ref()
    }

    /// Keeps every parsed chat chunk (JSON object of a non-error event) for
    /// [`take_chunks`](Self::take_chunks).
    pub fn keep_chunks(&mut self) {
        self.chunks.get_or_insert_with(Vec::new);
    }

    /// The chunks parsed since the last call, in stream order. Chunks of the event that
    /// failed the stream, and of events after it, are never kept.
    pub fn take_chunks(&mut self) -> Vec<Value> {
        let Some(kept) = self.chunks.as_mut() else {
            return Vec::new();
        };
        std::mem::take(kept)
            .into_iter()
            .filter_map(|k| match k {
                Kept::Parsed(v) => Some(v),
                // It parsed when it was kept.
                Kept::Text(text) => serde_json::from_str(&text).ok(),
            })
            .collect()
    }

    /// Whether chunks kept from now on are kept as their text (while the stream is held:
    /// see [`Kept`]) or parsed.
    pub fn keep_as_text(&mut self, compact: bool) {
        self.compact = compact;
    }

    /// Feeds raw bytes, split anywhere.
    pub fn feed(&mut self, chunk: &[u8]) -> Fed {
        self.bytes_seen += chunk.len();
        if !self.checked_start {
            if let Some(&b) = chunk.iter().find(|b| !b.is_ascii_whitespace()) {
                self.checked_start = true;
                if b == b'<' {
                    return Fed::signal(self.fail(GateReject::new(
                        FailureKind::HtmlMaintenance,
                        "an HTML page instead of an event stream",
                    )));
                }
            }
        }
        self.starts.clear();
        // Every chunk is parsed, in every mode: the cut points come from these bytes.
        let cut = self
            .parser
            .feed_with_starts(chunk, &mut self.events, &mut self.starts);
        let events = std::mem::take(&mut self.events);
        let mut fed = Fed {
            signal: StreamSignal::Pending,
            cut,
            good_prefix: 0,
        };
        let starts = std::mem::take(&mut self.starts);
        for (ev, &start) in events.iter().zip(&starts) {
            match self.on_event(ev) {
                StreamSignal::Pending => {}
                s @ StreamSignal::Failed(_) => {
                    fed.signal = s;
                    fed.good_prefix = start;
                    break;
                }
                s => fed.signal = s,
            }
        }
        self.events = events;
        self.events.clear();
        self.starts = starts;
        // Off: the first bytes commit, whatever they say.
        if self.mode == ContentValidation::Off
            && !self.useful
            && self.checked_start
            && fed.signal == StreamSignal::Pending
        {
            self.useful = true;
            fed.signal = StreamSignal::FirstUseful;
        }
        fed
    }

    /// The stream ended: flushes a last unterminated event and reports the outcome.
    pub fn finish(&mut self) -> StreamSignal {
        let partial = self.parser.has_partial();
        let mut events = Vec::new();
        self.parser.finish(&mut events);
        // Bytes were pending and they did not make a whole event (one too long to be kept
        // makes none): the stream was cut off.
        self.cut_short = partial && !events.iter().any(is_whole);
        let mut signal = StreamSignal::Pending;
        for ev in &events {
            if let s @ (StreamSignal::FirstUseful | StreamSignal::Failed(_)) = self.on_event(ev) {
                signal = s;
            }
        }
        if signal == StreamSignal::Pending && self.failed.is_none() {
            signal = self.judge_calls();
        }
        signal
    }

    /// After [`finish`](Self::finish): the stream ended inside an event (a line or an event
    /// without its end that is not a whole `[DONE]` or JSON frame).
    pub fn ended_mid_event(&self) -> bool {
        self.cut_short
    }

    /// After [`finish`](Self::finish): a text answer whose provider never said it was over
    /// (no `finish_reason`, no `[DONE]`), so the stream was cut rather than finished.
    /// Either one is the provider's word that it is done (some send only one of them); a
    /// bare end of the connection is what a dropped one looks like. An answer with tool
    /// calls is judged by its calls instead: a call's arguments are whole JSON or the call
    /// fails its check, so a call is its own end (Gemini sends a whole call in one chunk).
    /// Not judged with validation off.
    pub fn ended_unfinished(&self) -> bool {
        self.mode != ContentValidation::Off && !self.done && !self.finished && !self.saw_call
    }

    fn fail(&mut self, reject: GateReject) -> StreamSignal {
        self.failed.get_or_insert(reject.clone());
        StreamSignal::Failed(reject)
    }

    fn on_event(&mut self, ev: &SseEvent) -> StreamSignal {
        if self.failed.is_some() {
            return StreamSignal::Pending;
        }
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return self.judge_calls();
        }
        let parsed: Option<Value> = serde_json::from_str(data).ok();
        if ev.event.as_deref() == Some("error") {
            let msg = parsed
                .as_ref()
                .and_then(error_message)
                .unwrap_or_else(|| data.to_string());
            return self.fail(GateReject::new(FailureKind::ErrorPayload, msg));
        }
        let Some(v) = parsed else {
            // A garbled frame is not fatal by itself; a stream of only garbage ends empty.
            return StreamSignal::Pending;
        };
        if let Some(msg) = error_message(&v) {
            return self.fail(GateReject::new(FailureKind::ErrorPayload, msg));
        }
        if let Some(t) = completion_tokens(&v) {
            self.stats.completion_tokens = Some(t);
        }
        if let Some(t) = prompt_tokens(&v) {
            self.stats.prompt_tokens = Some(t);
        }
        if let Some(t) = super::cached_tokens(&v) {
            self.stats.cached_tokens = Some(t);
        }
        let mut chars = 0;
        let mut any_choice = false;
        let mut finished = false;
        let checked = self.offered.is_some();
        for choice in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            any_choice = true;
            self.saw_choice = true;
            finished |= choice.get("finish_reason").is_some_and(|f| !f.is_null());
            self.finished |= finished;
            for key in ["delta", "message"] {
                let Some(msg) = choice.get(key) else { continue };
                if let Some(c) = useful_chars(msg, !checked) {
                    chars += c;
                }
                self.saw_call |= msg
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty());
                if checked && !self.judged {
                    for call in msg
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        self.calls.add(call);
                    }
                }
            }
        }
        self.stats.content_chars += chars;
        let now_useful = match self.mode {
            ContentValidation::Strict => chars > 0,
            ContentValidation::Basic => any_choice,
            ContentValidation::Off => true,
        };
        let signal = if now_useful && !self.useful {
            self.useful = true;
            if finished {
                // Text and calls in one chunk: the calls are judged now, the text commits.
                let _ = self.judge_calls();
            }
            StreamSignal::FirstUseful
        } else if finished {
            self.judge_calls()
        } else {
            StreamSignal::Pending
        };
        // A finish whose calls fail the check fails the stream: like its bytes, its chunk
        // is not handed on.
        if let (Some(kept), false) = (&mut self.chunks, matches!(signal, StreamSignal::Failed(_))) {
            kept.push(match self.compact {
                true => Kept::Text(data.into()),
                false => Kept::Parsed(v),
            });
        }
        signal
    }

    /// The turn's tool calls are whole: each must name an offered tool with arguments it
    /// can take. Before commit a failing call fails the stream (it fails over unseen); after,
    /// it is kept as [`tool_failure`](Self::tool_failure). Passing calls are the content.
    fn judge_calls(&mut self) -> StreamSignal {
        let Some(offered) = self.offered.clone() else {
            return StreamSignal::Pending;
        };
        if self.judged {
            return StreamSignal::Pending;
        }
        self.judged = true;
        let calls = self.calls.take();
        if calls.is_empty() {
            return StreamSignal::Pending;
        }
        for call in &calls {
            self.stats.content_chars += call.name.len() + call.arguments.len();
            if let Err(why) = offered.check(&call.name, &call.arguments) {
                let reject = GateReject::new(FailureKind::InvalidToolCall, why);
                if self.useful {
                    self.tool_failure.get_or_insert(reject);
                    return StreamSignal::Pending;
                }
                return self.fail(reject);
            }
        }
        self.stats.tool_calls = calls.len();
        if self.useful {
            return StreamSignal::Pending;
        }
        self.useful = true;
        StreamSignal::FirstUseful
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::gate::check_payload;
    use ContentValidation::*;
    use FailureKind::*;

    /// Feeds the input in chunks of every size and collects (signal, chunk index) pairs.
    fn run(
        input: &str,
        mode: ContentValidation,
        chunk: usize,
    ) -> (Vec<StreamSignal>, StreamTracker) {
        let mut t = StreamTracker::new(mode);
        let mut signals = Vec::new();
        for c in input.as_bytes().chunks(chunk) {
            match t.feed(c).signal {
                StreamSignal::Pending => {}
                s => signals.push(s),
            }
        }
        match t.finish() {
            StreamSignal::Pending => {}
            s => signals.push(s),
        }
        (signals, t)
    }

    const OK: &str = r#"{"choices":[{"message":{"role":"assistant","content":"4"}}],"usage":{"completion_tokens":1}}"#;
    const ROLE: &str = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    const TEXT: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"héllo\"}}]}\n\n";
    const USAGE: &str = "data: {\"choices\":[],\"usage\":{\"completion_tokens\":7}}\n\n";
    const DONE: &str = "data: [DONE]\n\n";

    #[test]
    fn stream_useful_after_role_delta_at_any_split() {
        let input = format!(": keep-alive\n\n{ROLE}{TEXT}{USAGE}{DONE}");
        for chunk in 1..=input.len() {
            let (signals, t) = run(&input, Strict, chunk);
            assert_eq!(signals, vec![StreamSignal::FirstUseful], "chunk {chunk}");
            assert!(t.is_done() && t.is_useful());
            assert_eq!(t.stats().output_tokens(), 7);
            assert_eq!(t.bytes_seen(), input.len());
        }
    }

    #[test]
    fn role_only_stream_is_never_useful() {
        let (signals, t) = run(&format!("{ROLE}{ROLE}{DONE}"), Strict, 5);
        assert!(signals.is_empty());
        assert!(!t.is_useful() && t.is_done());
        let (signals, _) = run(&format!("{ROLE}{DONE}"), Basic, 5);
        assert_eq!(signals, vec![StreamSignal::FirstUseful]);
    }

    #[test]
    fn empty_stream_kinds() {
        let (_, t) = run(&format!("{ROLE}{DONE}"), Strict, 8);
        assert_eq!(t.empty_reject().kind, EmptyStream);
        let (_, t) = run("data: {\"choices\":[]}\n\ndata: [DONE]\n\n", Strict, 8);
        assert_eq!(t.empty_reject().kind, EmptyChoices);
        assert_eq!(StreamTracker::new(Strict).empty_reject().kind, EmptyStream);
    }

    #[test]
    fn error_frames_fail_the_stream() {
        let err = "data: {\"error\":{\"message\":\"provider exploded\"}}\n\n";
        for chunk in [1, 3, 64] {
            let (signals, t) = run(&format!("{ROLE}{err}{DONE}"), Strict, chunk);
            assert_eq!(
                signals,
                vec![StreamSignal::Failed(GateReject::new(
                    ErrorPayload,
                    "provider exploded"
                ))]
            );
            assert!(!t.is_useful());
        }
        let (signals, _) = run("event: error\ndata: {\"type\":\"error\"}\n\n", Strict, 7);
        assert!(matches!(&signals[0], StreamSignal::Failed(r) if r.kind == ErrorPayload));
    }

    #[test]
    fn error_after_content_is_recorded() {
        let err = "data: {\"error\":{\"message\":\"cut off\"}}\n\n";
        let (signals, t) = run(&format!("{TEXT}{err}"), Strict, 9);
        assert_eq!(signals[0], StreamSignal::FirstUseful);
        assert!(matches!(&signals[1], StreamSignal::Failed(r) if r.kind == ErrorPayload));
        assert_eq!(t.failure().unwrap().detail, "cut off");
        let mut t = StreamTracker::new(Strict);
        let fed = t.feed(format!("{TEXT}: ping\n\n{TEXT}{err}").as_bytes());
        assert!(matches!(fed.signal, StreamSignal::Failed(_)));
        assert_eq!(
            fed.good_prefix,
            2 * TEXT.len() + 8,
            "the content before the error can be forwarded"
        );
    }

    #[test]
    fn html_instead_of_stream() {
        let (signals, _) = run("\n<!DOCTYPE html><html>down</html>", Strict, 4);
        assert!(matches!(&signals[0], StreamSignal::Failed(r) if r.kind == HtmlMaintenance));
    }

    #[test]
    fn tool_calls_and_reasoning_are_useful() {
        let tool = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"ls\",\"arguments\":\"\"}}]}}]}\n\n";
        let reasoning = "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n";
        for input in [tool, reasoning] {
            assert_eq!(run(input, Strict, 2).0, vec![StreamSignal::FirstUseful]);
        }
    }

    #[test]
    fn calls_that_pass_the_check_are_counted() {
        let offered = Offered::of(
            &serde_json::json!({"tools": [{"type": "function", "function": {
            "name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]}),
        )
        .unwrap();
        let call = r#"{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}"#;
        let counted = |body: &str, offered: Option<&Offered>| {
            check_payload(body.as_bytes(), Strict, offered).map(|(s, _)| s.tool_calls)
        };
        assert_eq!(counted(call, Some(&offered)), Ok(1));
        assert_eq!(counted(OK, Some(&offered)), Ok(0), "text is no call");
        assert_eq!(
            counted(call, None),
            Ok(0),
            "nothing offered, nothing checked"
        );
        let delta = |d: Value, finish: Option<&str>| {
            let frame = serde_json::json!({"choices": [{"delta": d, "finish_reason": finish}]});
            format!("data: {frame}\n\n")
        };
        let part = |name: Option<&str>, args: &str| serde_json::json!({"tool_calls": [{"index": 0, "function": {"name": name, "arguments": args}}]});
        let stream_call = delta(part(Some("get_weather"), r#"{"city":"#), None)
            + &delta(part(None, r#""Paris"}"#), Some("tool_calls"));
        let offered = std::sync::Arc::new(offered);
        for (input, want) in [(stream_call, 1), (format!("{TEXT}{DONE}"), 0)] {
            let mut t = StreamTracker::new(Strict);
            t.check_tools(offered.clone());
            t.feed(input.as_bytes());
            t.finish();
            assert!(t.is_useful(), "{input}");
            assert_eq!(t.stats().tool_calls, want, "{input}");
        }
    }

    #[test]
    fn the_chunk_of_a_finish_whose_calls_fail_is_not_kept() {
        // Its bytes are not forwarded, so a translator must not see it either.
        let offered = Offered::of(
            &serde_json::json!({"tools": [{"type": "function", "function": {
            "name": "Bash", "parameters": {"type": "object", "required": ["command"]}}}]}),
        )
        .unwrap();
        let call = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,",
            "\"function\":{\"name\":\"Bash\",\"arguments\":\"\"}}]}}]}\n\n"
        );
        let finish = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
        let mut t = StreamTracker::new(Strict);
        t.check_tools(std::sync::Arc::new(offered));
        t.keep_chunks();
        let fed = t.feed(format!("{ROLE}{call}{finish}").as_bytes());
        assert!(matches!(&fed.signal, StreamSignal::Failed(r) if r.kind == InvalidToolCall));
        assert_eq!(fed.good_prefix, ROLE.len() + call.len());
        assert_eq!(t.take_chunks().len(), 2, "the role and call chunks only");
    }

    #[test]
    fn off_mode_accepts_first_bytes() {
        let (signals, _) = run(&format!("{ROLE}{DONE}"), Off, 3);
        assert_eq!(signals, vec![StreamSignal::FirstUseful]);
    }

    #[test]
    fn estimate_without_usage() {
        let (_, t) = run(&format!("{TEXT}{TEXT}{DONE}"), Strict, 11);
        assert_eq!(t.stats().completion_tokens, None);
        assert_eq!(t.stats().output_tokens(), 3); // 10 chars / 4, rounded up
    }
}
