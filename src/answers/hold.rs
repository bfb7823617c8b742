//! The hold buffer: keeps a stream's bytes from the client until it has proved useful.
//!
//! A state machine fed chunks as they arrive. While holding, nothing reaches the client, so
//! an error frame, an HTML page or an empty stream fails over invisibly. The first useful
//! content commits the stream: the held bytes go out at once and later chunks pass straight
//! through as whole events. Past [`HOLD_LIMIT`] bytes with nothing useful it commits anyway
//! (an odd provider must not be buffered forever), and after commit an event longer than
//! [`MAX_EVENT`](crate::answers::sse::MAX_EVENT) goes on as it comes rather than held whole, so a
//! stream never makes the proxy hold much more than that. Every cut is taken from what the
//! parser said of the chunk just fed, in every validation mode. Pure: timeouts and sockets
//! belong to the caller.

use crate::answers::classify::FailureKind;
use crate::answers::gate::{ContentValidation, Fed, GateReject, StreamSignal, StreamTracker};

/// Held bytes beyond which the stream is passed on without proof of content.
pub const HOLD_LIMIT: usize = 256 * 1024;

/// What the caller should do after feeding the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum HoldStep {
    /// Keep waiting; nothing to send.
    Hold,
    /// Commit: send the response head and these bytes (everything held so far).
    Commit { bytes: Vec<u8>, passthrough: bool },
    /// Already committed: send these bytes.
    Forward(Vec<u8>),
    /// The stream ended normally (after commit).
    End,
    /// The attempt failed. Before commit the client saw nothing (`tail` is empty); after
    /// commit the caller sends `tail` (whole events that preceded the failure), ends the
    /// client's stream cleanly and records the failure.
    Fail { reject: GateReject, tail: Vec<u8> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldState {
    Holding,
    Committed,
    Finished,
}

#[derive(Debug)]
pub struct HoldBuffer {
    tracker: StreamTracker,
    /// While holding: everything received. After commit: the start of an event whose end
    /// has not arrived yet (only whole events are passed on), unless that event is longer
    /// than [`MAX_EVENT`](crate::answers::sse::MAX_EVENT): its bytes then go on as they come.
    held: Vec<u8>,
    /// While holding: how much of `held` ends on an event boundary.
    cut: usize,
    limit: usize,
    state: HoldState,
    passthrough: bool,
    /// Characters of content a stream of text must show before it commits (0: the first
    /// useful content commits), so that a provider's notice written as the answer is seen
    /// whole enough to tell; a tool call or a finished answer commits at once.
    peek: usize,
    /// Events (SSE blocks, keep-alive comments included) that arrived whole so far.
    events: u64,
}

impl HoldBuffer {
    pub fn new(validation: ContentValidation) -> Self {
        HoldBuffer::with_limit(validation, HOLD_LIMIT)
    }

    pub fn with_limit(validation: ContentValidation, limit: usize) -> Self {
        HoldBuffer {
            tracker: StreamTracker::new(validation),
            held: Vec::new(),
            cut: 0,
            limit,
            state: HoldState::Holding,
            passthrough: false,
            peek: 0,
            events: 0,
        }
    }

    /// Holds a stream of text until it shows `chars` characters of content (see `peek`).
    pub fn peek(&mut self, chars: usize) {
        self.peek = chars;
    }

    /// Whether what is held is enough to commit: useful, and past the peek (or a call, or
    /// a finished answer).
    fn seen_enough(&self) -> bool {
        let t = &self.tracker;
        t.is_useful()
            && (self.peek == 0
                || t.saw_call()
                || t.is_finished()
                || t.stats().content_chars >= self.peek)
    }

    /// Commits what is held now: a useful stream that stopped sending before its peek was
    /// met (a short answer still being written) goes on as it is.
    pub fn commit_now(&mut self) -> HoldStep {
        self.commit(false)
    }

    /// Useful content came, though not yet enough to commit (see `peek`).
    pub fn is_peeking(&self) -> bool {
        self.state == HoldState::Holding && self.tracker.is_useful()
    }

    pub fn tracker(&self) -> &StreamTracker {
        &self.tracker
    }

    /// Checks the stream's tool calls against the request's tools (see
    /// [`StreamTracker::check_tools`]).
    pub fn check_tools(&mut self, offered: std::sync::Arc<crate::answers::toolcall::Offered>) {
        self.tracker.check_tools(offered);
    }

    /// Keeps the parsed chat chunks for a translator: after each step,
    /// [`take_chunks`](Self::take_chunks) gives the chunks of exactly the bytes that step
    /// released (events are dispatched at the blank line that also marks a cut point).
    pub fn keep_chunks(&mut self) {
        self.tracker.keep_chunks();
    }

    /// See [`keep_chunks`](Self::keep_chunks).
    pub fn take_chunks(&mut self) -> Vec<serde_json::Value> {
        self.tracker.take_chunks()
    }

    /// Committed by the size limit rather than by content.
    #[cfg(test)]
    pub fn is_passthrough(&self) -> bool {
        self.passthrough
    }

    /// Feeds the next chunk of the upstream body.
    pub fn on_bytes(&mut self, chunk: &[u8]) -> HoldStep {
        match self.state {
            HoldState::Finished => HoldStep::Hold,
            HoldState::Committed => {
                self.tracker.keep_as_text(false);
                let fed = self.tracker.feed(chunk);
                self.events += u64::from(fed.cut.is_some());
                if let StreamSignal::Failed(r) = fed.signal {
                    return self.fail_after_commit(r, &chunk[..fed.good_prefix]);
                }
                let mut out = std::mem::take(&mut self.held);
                match fed.cut {
                    Some(end) => {
                        out.extend_from_slice(&chunk[..end]);
                        self.held.extend_from_slice(&chunk[end..]);
                    }
                    None => {
                        self.held = out;
                        self.held.extend_from_slice(chunk);
                        out = Vec::new();
                    }
                }
                self.spill_oversized(&mut out);
                HoldStep::Forward(out)
            }
            HoldState::Holding => {
                let base = self.held.len();
                self.tracker.keep_as_text(true);
                let Fed { signal, cut, .. } = self.tracker.feed(chunk);
                self.events += u64::from(cut.is_some());
                self.held.extend_from_slice(chunk);
                if let Some(end) = cut {
                    self.cut = base + end;
                }
                match signal {
                    StreamSignal::Failed(r) => self.fail(r),
                    _ if self.seen_enough() => self.commit(false),
                    _ if self.held.len() > self.limit => self.commit(true),
                    _ => HoldStep::Hold,
                }
            }
        }
    }

    /// After commit, a failing event ends the stream: whole events before it (`good`, the
    /// bytes of this chunk before its block, after any held from earlier) still go out.
    fn fail_after_commit(&mut self, reject: GateReject, good: &[u8]) -> HoldStep {
        let mut tail = std::mem::take(&mut self.held);
        if good.is_empty() {
            // The failing event began in what was held: none of it is sent.
            tail.clear();
            self.tracker.take_chunks();
        } else {
            tail.extend_from_slice(good);
        }
        self.state = HoldState::Finished;
        HoldStep::Fail { reject, tail }
    }

    /// An event longer than [`MAX_EVENT`](crate::answers::sse::MAX_EVENT) is not held whole: what
    /// arrived of it goes out now.
    fn spill_oversized(&mut self, out: &mut Vec<u8>) {
        if self.tracker.is_oversized() {
            out.append(&mut self.held);
        }
    }

    /// How many times a chunk completed at least one event: what says a stream is alive,
    /// where bytes that never make an event (a provider trickling them) do not.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes held and not yet sent (while holding, everything received).
    #[cfg(test)]
    pub fn held_len(&self) -> usize {
        self.held.len()
    }

    /// The upstream body ended.
    pub fn on_end(&mut self) -> HoldStep {
        if self.state == HoldState::Finished {
            return HoldStep::End;
        }
        let signal = self.tracker.finish();
        if let StreamSignal::Failed(r) = signal {
            return self.fail(r);
        }
        if !self.tracker.is_useful() {
            return self.fail(self.tracker.empty_reject());
        }
        if self.tracker.ended_mid_event() {
            if !self.tracker.is_finished() {
                let reject = GateReject {
                    kind: FailureKind::NetworkError,
                    detail: "stream ended in the middle of an event".into(),
                };
                return self.fail(reject);
            }
            // The answer had said it was done: the event cut after it (a usage chunk, say)
            // is left out, and the answer is whole.
            match self.state {
                HoldState::Holding => self.held.truncate(self.cut),
                _ => self.held.clear(),
            }
        }
        if self.tracker.ended_unfinished() {
            let reject = GateReject {
                kind: FailureKind::NetworkError,
                detail: "stream ended without a finish_reason or [DONE]".into(),
            };
            return self.fail(reject);
        }
        let step = match self.state {
            // Everything arrived while holding: commit all of it; the caller sees the end next.
            HoldState::Holding => HoldStep::Commit {
                bytes: std::mem::take(&mut self.held),
                passthrough: false,
            },
            // A last event without its blank line still goes out, then the end.
            _ if !self.held.is_empty() => HoldStep::Forward(std::mem::take(&mut self.held)),
            _ => HoldStep::End,
        };
        self.state = HoldState::Finished;
        step
    }

    fn commit(&mut self, passthrough: bool) -> HoldStep {
        self.state = HoldState::Committed;
        self.passthrough = passthrough;
        let rest = self.held.split_off(self.cut);
        let mut bytes = std::mem::replace(&mut self.held, rest);
        self.spill_oversized(&mut bytes);
        HoldStep::Commit { bytes, passthrough }
    }

    fn fail(&mut self, r: GateReject) -> HoldStep {
        self.state = HoldState::Finished;
        self.held.clear();
        self.tracker.take_chunks();
        HoldStep::Fail {
            reject: r,
            tail: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::classify::FailureKind;
    use crate::answers::sse::MAX_EVENT;
    use ContentValidation::Strict;

    const ROLE: &str = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    const TEXT: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
    const ERR: &str = "data: {\"error\":{\"message\":\"boom\"}}\n\n";
    const DONE: &str = "data: [DONE]\n\n";

    /// Feeds `input` in chunks of `size`, then the end; returns the steps that were not `Hold`.
    fn steps(buf: &mut HoldBuffer, input: &str, size: usize) -> Vec<HoldStep> {
        let mut out: Vec<HoldStep> = input
            .as_bytes()
            .chunks(size)
            .map(|c| buf.on_bytes(c))
            .filter(|s| *s != HoldStep::Hold)
            .collect();
        out.push(buf.on_end());
        out
    }

    /// The kind of the first failure among the steps.
    fn failure(steps: &[HoldStep]) -> Option<FailureKind> {
        steps.iter().find_map(|s| match s {
            HoldStep::Fail { reject, .. } => Some(reject.kind),
            _ => None,
        })
    }

    /// What a client would receive: the bytes of Commit and Forward steps.
    fn sent(steps: &[HoldStep]) -> String {
        let mut s = Vec::new();
        for step in steps {
            match step {
                HoldStep::Commit { bytes, .. }
                | HoldStep::Forward(bytes)
                | HoldStep::Fail { tail: bytes, .. } => s.extend_from_slice(bytes),
                _ => {}
            }
        }
        String::from_utf8(s).unwrap()
    }

    #[test]
    fn a_peeking_buffer_holds_text_until_enough_but_not_a_call_or_an_end() {
        let text =
            |t: &str| format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n");
        let mut b = HoldBuffer::new(Strict);
        b.peek(20);
        assert_eq!(b.on_bytes(text("This model ").as_bytes()), HoldStep::Hold);
        assert!(b.is_peeking());
        match b.on_bytes(text("now requires a paid plan.").as_bytes()) {
            HoldStep::Commit { bytes, .. } => {
                assert!(String::from_utf8(bytes).unwrap().contains("This model"))
            }
            other => panic!("{other:?}"),
        }
        let call = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"Bash\",\"arguments\":\"{}\"}}]}}]}\n\n";
        let mut b = HoldBuffer::new(Strict);
        b.peek(20);
        assert!(matches!(
            b.on_bytes(call.as_bytes()),
            HoldStep::Commit { .. }
        ));
        let mut b = HoldBuffer::new(Strict);
        b.peek(20);
        assert_eq!(b.on_bytes(text("Done.").as_bytes()), HoldStep::Hold);
        let stop = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
        assert!(
            matches!(b.on_bytes(stop.as_bytes()), HoldStep::Commit { .. }),
            "a short whole answer"
        );
        let mut b = HoldBuffer::new(Strict);
        b.peek(20);
        assert_eq!(b.on_bytes(text("Wait").as_bytes()), HoldStep::Hold);
        assert!(
            matches!(b.commit_now(), HoldStep::Commit { .. }),
            "a pause commits"
        );
    }

    #[test]
    fn off_mode_commit_point_follows_the_bytes_held() {
        // Blank lines first, then one byte: the commit point must come from the parser,
        // which now reads every chunk in every mode.
        let rest = format!("ata: {{\"x\":1}}\n\n{TEXT}{DONE}");
        let mut b = HoldBuffer::new(ContentValidation::Off);
        let mut out = vec![b.on_bytes(b"\n\n\n"), b.on_bytes(b"d")];
        out.push(b.on_bytes(rest.as_bytes()));
        out.push(b.on_end());
        assert_eq!(sent(&out), format!("\n\n\nd{rest}"));
    }

    #[test]
    fn blank_lines_then_one_byte_commit_from_the_bytes_held_in_every_mode() {
        let rest = format!(
            "ata: {{\"choices\":[{{\"delta\":{{\"content\":\"hi\"}}}}]}}\r\n\r\nda{}{DONE}",
            &TEXT[2..]
        );
        for mode in [Strict, ContentValidation::Basic, ContentValidation::Off] {
            for blank in ["\n\n\n\n", "\r\n\r\n", "\r", "\n"] {
                for split in 0..rest.len() {
                    let mut b = HoldBuffer::new(mode);
                    let mut out = vec![b.on_bytes(blank.as_bytes()), b.on_bytes(b"d")];
                    out.push(b.on_bytes(&rest.as_bytes()[..split]));
                    out.push(b.on_bytes(&rest.as_bytes()[split..]));
                    out.push(b.on_end());
                    assert_eq!(
                        sent(&out),
                        format!("{blank}d{rest}"),
                        "{mode:?} {blank:?} {split}"
                    );
                    assert!(
                        !out.iter().any(|s| matches!(s, HoldStep::Fail { .. })),
                        "{out:?}"
                    );
                }
            }
        }
    }

    /// A chat chunk whose content is `len` bytes of `x`.
    fn huge_event(len: usize) -> String {
        format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
            "x".repeat(len)
        )
    }

    /// Feeds `input` in `piece`-byte reads, checking after each that neither the hold
    /// buffer nor its parser keeps more than the cap allows; returns the steps.
    fn feed_bounded(b: &mut HoldBuffer, input: &[u8], piece: usize) -> Vec<HoldStep> {
        let mut out = Vec::new();
        for c in input.chunks(piece) {
            out.push(b.on_bytes(c));
            assert!(
                b.held_len() <= MAX_EVENT.max(b.limit) + piece,
                "{} held",
                b.held_len()
            );
            assert!(
                b.tracker().buffered() <= MAX_EVENT,
                "{} parsed",
                b.tracker().buffered()
            );
        }
        out.push(b.on_end());
        out
    }

    #[test]
    fn an_event_over_the_cap_is_passed_on_as_it_comes() {
        let huge = huge_event(3 * MAX_EVENT);
        let input = format!("{ROLE}{TEXT}{huge}{TEXT}{DONE}");
        let mut b = HoldBuffer::new(Strict);
        b.keep_chunks();
        let piece = 64 * 1024;
        let mut out = Vec::new();
        let mut chunks = Vec::new();
        for c in input.as_bytes().chunks(piece) {
            let step = b.on_bytes(c);
            assert!(b.held_len() <= MAX_EVENT + piece, "{} held", b.held_len());
            assert!(b.tracker().buffered() <= MAX_EVENT);
            chunks.extend(b.take_chunks());
            out.push(step);
        }
        out.push(b.on_end());
        assert_eq!(out.last(), Some(&HoldStep::End));
        assert!(sent(&out) == input, "every byte of the long event went out");
        // Its bytes went out while it arrived, not all at its end.
        let largest = out.iter().map(|s| match s {
            HoldStep::Commit { bytes, .. } | HoldStep::Forward(bytes) => bytes.len(),
            _ => 0,
        });
        assert!(largest.max() <= Some(MAX_EVENT + piece));
        assert_eq!(
            chunks.len(),
            3,
            "role, text and text: the long event is not judged"
        );
    }

    #[test]
    fn a_long_event_while_holding_is_bounded_and_the_stream_still_judged() {
        // Nothing useful first: the hold limit commits it, then it streams past the cap.
        let input = format!("{}{TEXT}{DONE}", huge_event(2 * MAX_EVENT));
        let mut b = HoldBuffer::new(Strict);
        let st = feed_bounded(&mut b, input.as_bytes(), 32 * 1024);
        assert!(b.is_passthrough());
        assert_eq!(sent(&st), input);
        assert_eq!(
            st.last(),
            Some(&HoldStep::End),
            "the text after it is content"
        );
        // An error after a long event still fails the stream: the parser found its end.
        let input = format!("{TEXT}{}{ERR}", huge_event(2 * MAX_EVENT));
        let mut b = HoldBuffer::new(Strict);
        let st = feed_bounded(&mut b, input.as_bytes(), 16 * 1024);
        assert_eq!(failure(&st), Some(FailureKind::ErrorPayload));
        assert_eq!(sent(&st).len(), input.len() - ERR.len());
        // A long last event the stream ends inside is a stream cut short.
        let cut = &input[..TEXT.len() + 2 * MAX_EVENT];
        let mut b = HoldBuffer::new(Strict);
        let st = feed_bounded(&mut b, cut.as_bytes(), 16 * 1024);
        assert_eq!(failure(&st), Some(FailureKind::NetworkError));
    }

    #[test]
    fn parsed_chunks_match_the_bytes_each_step_releases() {
        let err = "data: {\"error\":{\"message\":\"late\"}}\n\n";
        let streams = [
            format!(": ping\n\n{ROLE}{TEXT}{TEXT}{DONE}"),
            format!("{ROLE}{TEXT}{TEXT}{err}{TEXT}"),
            format!("{TEXT}data: {{\"choices\":[{{\"delta\":{{\"content\":\"end\"}},\"finish_reason\":\"stop\"}}]}}"),
        ];
        for input in &streams {
            for size in 1..input.len() {
                let mut b = HoldBuffer::new(Strict);
                b.keep_chunks();
                let mut all = Vec::new();
                let pieces: Vec<&[u8]> = input.as_bytes().chunks(size).collect();
                let mut feed = pieces.iter().map(Some).chain([None]);
                for piece in feed.by_ref() {
                    let step = match piece {
                        Some(p) => b.on_bytes(p),
                        None => b.on_end(),
                    };
                    let released = match &step {
                        HoldStep::Commit { bytes, .. }
                        | HoldStep::Forward(bytes)
                        | HoldStep::Fail { tail: bytes, .. } => bytes.clone(),
                        _ => Vec::new(),
                    };
                    if matches!(step, HoldStep::Hold) {
                        continue;
                    }
                    let taken = b.take_chunks();
                    assert_eq!(
                        taken,
                        crate::protocol::testing::chunks_of(&released)
                            .into_iter()
                            .chain(last_unterminated(&released))
                            .collect::<Vec<_>>(),
                        "size {size}: {input:?}"
                    );
                    all.extend(taken);
                    if matches!(step, HoldStep::Fail { .. } | HoldStep::End) {
                        break;
                    }
                }
                // An error in the chunk that brings the first content fails it unseen.
                assert!(
                    all.len() >= 2 || input.contains("error"),
                    "size {size}: {input:?}"
                );
            }
        }
    }

    /// A final `data:` line without its blank line, as the end of a stream releases it.
    fn last_unterminated(bytes: &[u8]) -> Option<serde_json::Value> {
        let text = std::str::from_utf8(bytes).ok()?;
        let tail = text.rsplit("\n\n").next()?;
        serde_json::from_str(tail.strip_prefix("data: ")?).ok()
    }

    #[test]
    fn holds_until_content_then_sends_everything_in_order() {
        let input = format!(": ping\n\n{ROLE}{TEXT}{TEXT}{DONE}");
        for size in 1..input.len() {
            let mut b = HoldBuffer::new(Strict);
            let st = steps(&mut b, &input, size);
            assert!(
                matches!(
                    st[0],
                    HoldStep::Commit {
                        passthrough: false,
                        ..
                    }
                ),
                "size {size}: {st:?}"
            );
            assert_eq!(st.last(), Some(&HoldStep::End));
            assert_eq!(sent(&st), input, "size {size}");
        }
    }

    #[test]
    fn error_before_content_sends_nothing() {
        let mut b = HoldBuffer::new(Strict);
        let st = steps(&mut b, &format!("{ROLE}{ERR}{DONE}"), 7);
        assert_eq!(sent(&st), "");
        assert!(
            matches!(&st[0], HoldStep::Fail { reject: r, .. } if r.kind == FailureKind::ErrorPayload)
        );
    }

    #[test]
    fn content_and_error_in_the_first_chunk_fail_over_unseen() {
        // Nothing was sent yet, so another model can still answer the whole request.
        let mut b = HoldBuffer::new(Strict);
        let step = b.on_bytes(format!("{TEXT}{ERR}").as_bytes());
        assert!(
            matches!(&step, HoldStep::Fail { tail, .. } if tail.is_empty()),
            "{step:?}"
        );
    }

    #[test]
    fn html_and_empty_streams_fail_unseen() {
        let mut b = HoldBuffer::new(Strict);
        let st = steps(&mut b, "<html>maintenance</html>", 5);
        assert!(
            matches!(&st[0], HoldStep::Fail { reject: r, .. } if r.kind == FailureKind::HtmlMaintenance)
        );
        let mut b = HoldBuffer::new(Strict);
        let st = steps(&mut b, &format!("{ROLE}{DONE}"), 9);
        let reject = GateReject {
            kind: FailureKind::EmptyStream,
            detail: "stream ended without content".into(),
        };
        assert_eq!(
            st,
            vec![HoldStep::Fail {
                reject,
                tail: Vec::new()
            }]
        );
    }

    #[test]
    fn error_after_content_is_a_failure_after_commit() {
        let mut b = HoldBuffer::new(Strict);
        let st = steps(&mut b, &format!("{TEXT}{ERR}"), TEXT.len());
        assert!(matches!(st[0], HoldStep::Commit { .. }));
        // Content and error in one chunk: the content still goes out.
        let mut b = HoldBuffer::new(Strict);
        assert!(matches!(
            b.on_bytes(TEXT.as_bytes()),
            HoldStep::Commit { .. }
        ));
        let step = b.on_bytes(format!("{TEXT}{ERR}").as_bytes());
        assert!(
            matches!(&step, HoldStep::Fail { tail, .. } if tail == TEXT.as_bytes()),
            "{step:?}"
        );
        assert!(
            matches!(&st[1], HoldStep::Fail { reject: r, .. } if r.kind == FailureKind::ErrorPayload)
        );
        assert_eq!(sent(&st), TEXT, "the error frame itself is not forwarded");
    }

    #[test]
    fn only_whole_events_are_forwarded_after_commit() {
        // An error frame split across reads: none of it reaches the client.
        let input = format!("{TEXT}{TEXT}{ERR}");
        for split in TEXT.len() + 1..input.len() {
            let mut b = HoldBuffer::new(Strict);
            let mut st = vec![b.on_bytes(&input.as_bytes()[..TEXT.len()])];
            st.push(b.on_bytes(&input.as_bytes()[TEXT.len()..split]));
            st.push(b.on_bytes(&input.as_bytes()[split..]));
            st.push(b.on_end());
            assert_eq!(
                sent(&st),
                format!("{TEXT}{TEXT}"),
                "split at {split}: {st:?}"
            );
            assert!(st.iter().any(|s| matches!(s, HoldStep::Fail { reject, .. } if reject.kind == FailureKind::ErrorPayload)));
        }
    }

    #[test]
    fn a_stream_cut_mid_event_is_a_failure() {
        let mut b = HoldBuffer::new(Strict);
        let input = format!("{TEXT}data: {{\"choices\":[{{\"delta\":{{\"content\":\"tru");
        let st = steps(&mut b, &input, 16);
        assert_eq!(sent(&st), TEXT, "the partial event is not sent");
        assert!(
            matches!(st.last(), Some(HoldStep::Fail { reject, .. }) if reject.kind == FailureKind::NetworkError),
            "{st:?}"
        );
        // After the answer said it was done, a cut event is left out and the answer is whole.
        let stop = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
        for size in [8, 16, 4096] {
            let mut b = HoldBuffer::new(Strict);
            let st = steps(
                &mut b,
                &format!("{TEXT}{stop}data: {{\"usage\":{{\"pro"),
                size,
            );
            assert_eq!(sent(&st), format!("{TEXT}{stop}"), "size {size}");
            assert_eq!(st.last(), Some(&HoldStep::End), "size {size}: {st:?}");
        }
    }

    #[test]
    fn a_last_event_without_its_blank_line_still_goes_out() {
        let mut b = HoldBuffer::new(Strict);
        let input = format!("{TEXT}data: [DONE]");
        let st = steps(&mut b, &input, TEXT.len());
        assert_eq!(sent(&st), input);
        let mut b = HoldBuffer::new(Strict);
        assert!(matches!(
            b.on_bytes(TEXT.as_bytes()),
            HoldStep::Commit { .. }
        ));
        assert_eq!(b.on_bytes(b"data: [DONE]"), HoldStep::Forward(Vec::new()));
        assert_eq!(b.on_end(), HoldStep::Forward(b"data: [DONE]".to_vec()));
        assert_eq!(b.on_end(), HoldStep::End);
    }

    #[test]
    fn passes_through_past_the_limit() {
        let mut b = HoldBuffer::with_limit(Strict, 4 * ROLE.len());
        let input = ROLE.repeat(10);
        let st = steps(&mut b, &input, ROLE.len());
        assert!(matches!(
            st[0],
            HoldStep::Commit {
                passthrough: true,
                ..
            }
        ));
        assert!(b.is_passthrough());
        // It never became useful: the end is an empty stream, reported after forwarding.
        assert!(
            matches!(st.last(), Some(HoldStep::Fail { reject: r, .. }) if r.kind == FailureKind::EmptyStream)
        );
        assert_eq!(sent(&st), input);
    }

    #[test]
    fn whole_stream_in_one_chunk_commits_then_ends() {
        let mut b = HoldBuffer::new(Strict);
        let input = format!("{ROLE}{TEXT}{DONE}");
        assert!(matches!(
            b.on_bytes(input.as_bytes()),
            HoldStep::Commit { .. }
        ));
        assert_eq!(b.on_end(), HoldStep::End);
        let mut b = HoldBuffer::new(Strict);
        // Content only in an unterminated last frame: committed at the end.
        let st = steps(
            &mut b,
            "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}",
            1000,
        );
        assert!(matches!(st[0], HoldStep::Commit { .. }), "{st:?}");
        assert_eq!(b.on_end(), HoldStep::End);
    }

    #[test]
    fn a_stream_that_ends_without_saying_so_was_cut() {
        // Content, then the connection ends: no finish_reason, no [DONE].
        let mut b = HoldBuffer::new(Strict);
        assert!(matches!(
            b.on_bytes(format!("{ROLE}{TEXT}").as_bytes()),
            HoldStep::Commit { .. }
        ));
        assert!(matches!(
            b.on_end(),
            HoldStep::Fail {
                reject: GateReject {
                    kind: FailureKind::NetworkError,
                    ..
                },
                ..
            }
        ));
        // Either word of the provider's is an end: [DONE] alone, or finish_reason alone.
        for end in [
            DONE.to_string(),
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".to_string(),
        ] {
            let mut b = HoldBuffer::new(Strict);
            assert!(matches!(
                b.on_bytes(format!("{ROLE}{TEXT}{end}").as_bytes()),
                HoldStep::Commit { .. }
            ));
            assert_eq!(b.on_end(), HoldStep::End, "{end}");
        }
        // With validation off nothing is judged.
        let mut b = HoldBuffer::new(ContentValidation::Off);
        b.on_bytes(format!("{ROLE}{TEXT}").as_bytes());
        assert_eq!(b.on_end(), HoldStep::End);
    }
}

#[cfg(test)]
mod properties;
