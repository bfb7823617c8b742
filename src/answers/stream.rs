//! An upstream stream's life: hold its bytes until the gate sees useful content (nothing
//! of a failed attempt reaches a client), commit, then hand out whole events one by one
//! (with the chunks the gate already parsed) until it ends, breaks or stalls, and say how
//! it ended ([`StreamEnd`]). Once the answer has said it is done (a `finish_reason` or
//! `[DONE]`), a connection that breaks or falls silent ends it as finished: it is whole.
//!
//! The upstream side is a reader thread (reused, see `readers`) feeding a channel, so stall
//! and first-token timeouts are plain `recv_timeout`s. Who reads the events is not this
//! module's business: the HTTP edge forwards them to a client in its protocol, the bench
//! drains them.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::answers::classify::{FailureKind, Verdict};
use crate::answers::failure::{failure, Failure};
use crate::answers::gate::AnswerStats;
use crate::answers::hold::{HoldBuffer, HoldStep};
use crate::answers::limits::Limits;
use crate::providers::exchange::{Incoming, READ_CHUNK};
use crate::providers::target::Target;

/// Characters of text a stream shows before it commits: enough for a provider's notice
/// written as the answer ("This model now requires a paid plan ...") to say so, a few
/// tokens' wait. A tool call, reasoning past it or a finished answer commits at once.
const NOTICE_PEEK: usize = 80;
/// While it peeks, a pause this long in the text commits what there is.
const PEEK_WAIT: Duration = Duration::from_millis(1_000);

/// How long a stream that said it was done (a finish reason) may stay open and silent
/// before fcm ends it whole: the usage chunk and `[DONE]` that follow a finish come at
/// once, so the client is not kept waiting the stall timeout for a connection that
/// neither ends nor speaks.
const AFTER_FINISH: Duration = Duration::from_millis(2_000);

/// One item of a committed stream.
pub(crate) enum StreamItem {
    Data(Vec<u8>),
    /// The stream ended normally.
    End,
    /// The stream broke after commit (error frame, stall, read error, nothing useful);
    /// the bytes are whole events that came before the failure, still to be sent.
    Failed(Failure, Vec<u8>),
}

/// What the reader thread hands over.
enum Chunk {
    Data(Vec<u8>),
    End,
    Error(std::io::Error),
}

/// A stream the gate committed: its held bytes go to the client first.
pub struct OpenStream {
    pub status: u16,
    /// Bytes received while holding, to be sent before anything else.
    pub held: Vec<u8>,
    /// Time from the start of the attempt to the first useful content.
    pub ttft: Duration,
    /// Committed by the hold limit rather than by content.
    pub passthrough: bool,
    /// The rate-limit windows the response head reported.
    pub rate: Vec<crate::providers::quota::Window>,
    hold: HoldBuffer,
    chunks: Receiver<Chunk>,
    started: Instant,
    stall: Duration,
    /// When a whole event last arrived (or the stream opened): the stall timer counts from
    /// it, so bytes that never complete an event do not keep a stream alive.
    last_event: Instant,
    /// [`HoldBuffer::events`] at `last_event`.
    events: u64,
    ended: bool,
    target: Target,
}

/// Starts a reader thread for the body and holds its chunks until the gate commits.
pub(crate) fn open(
    incoming: Incoming,
    target: &Target,
    limits: &Limits,
    started: Instant,
) -> Result<OpenStream, Failure> {
    let (tx, rx) = mpsc::sync_channel::<Chunk>(16);
    let mut body = incoming.body;
    crate::answers::readers::run(move || {
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            let msg = match body.read(&mut buf) {
                Ok(0) => Chunk::End,
                Ok(n) => Chunk::Data(buf[..n].to_vec()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => Chunk::Error(e),
            };
            let last = !matches!(msg, Chunk::Data(_));
            // A closed receiver means the consumer gave up: dropping `body` closes the socket.
            if tx.send(msg).is_err() || last {
                return;
            }
        }
    })
    .map_err(|e| {
        failure(
            Verdict::of(FailureKind::NetworkError, None),
            None,
            format!("cannot start reader: {e}"),
            started,
        )
    })?;
    let mut hold = HoldBuffer::new(limits.validation);
    if limits.keep_chunks {
        hold.keep_chunks();
    }
    if let Some(tools) = &limits.tools {
        hold.check_tools(tools.clone());
    }
    let mut open = OpenStream {
        status: incoming.status,
        held: Vec::new(),
        ttft: Duration::ZERO,
        passthrough: false,
        rate: Vec::new(),
        hold,
        chunks: rx,
        started,
        stall: limits.stream_stall,
        last_event: Instant::now(),
        events: 0,
        ended: false,
        target: target.clone(),
    };
    if limits.validation == crate::answers::gate::ContentValidation::Strict {
        open.hold.peek(NOTICE_PEEK);
    }
    let first_token_deadline = (started + limits.first_token).min(limits.deadline);
    // When the text last grew: while it peeks, a pause in the text (keep-alive comments
    // and bytes that finish no event do not count) commits what there is.
    let (mut last_text, mut text) = (Instant::now(), 0);
    loop {
        let mut wait = first_token_deadline.saturating_duration_since(Instant::now());
        if open.hold.is_peeking() {
            // Content came: a pause in it commits what there is rather than failing.
            wait = PEEK_WAIT.saturating_sub(last_text.elapsed());
        }
        let step = match open.chunks.recv_timeout(wait) {
            Ok(Chunk::Data(bytes)) => {
                let step = open.hold.on_bytes(&bytes);
                if open.hold.events() != open.events {
                    open.events = open.hold.events();
                    open.last_event = Instant::now();
                }
                let now_text = open.hold.tracker().stats().content_chars;
                if now_text != text {
                    (last_text, text) = (Instant::now(), now_text);
                }
                step
            }
            Ok(Chunk::End) | Err(RecvTimeoutError::Disconnected) => {
                open.ended = true;
                open.hold.on_end()
            }
            // The answer said it was done: what happens to the connection after it does
            // not undo it.
            Ok(Chunk::Error(_)) if open.hold.tracker().is_finished() => {
                open.ended = true;
                open.hold.on_end()
            }
            Ok(Chunk::Error(e)) => return Err(target.io_error(&e, started)),
            Err(RecvTimeoutError::Timeout) if open.hold.is_peeking() => open.hold.commit_now(),
            Err(RecvTimeoutError::Timeout) => {
                let detail = format!("no content within {} ms", started.elapsed().as_millis());
                return Err(failure(
                    Verdict::of(FailureKind::Timeout, None),
                    Some(open.status),
                    detail,
                    started,
                ));
            }
        };
        match step {
            HoldStep::Hold => {}
            HoldStep::Commit { bytes, passthrough } => {
                open.held = bytes;
                open.passthrough = passthrough;
                open.ttft = started.elapsed();
                return Ok(open);
            }
            HoldStep::Fail { reject, .. } => return Err(target.gate_failure(reject, started)),
            HoldStep::Forward(_) | HoldStep::End => {
                unreachable!("a holding buffer neither forwards nor ends")
            }
        }
    }
}

impl OpenStream {
    pub fn stats(&self) -> &AnswerStats {
        self.hold.tracker().stats()
    }

    /// A tool call that failed the check after the stream had committed: the client's turn
    /// ends without it, and the attempt counts as failed.
    pub(crate) fn tool_failure(&self) -> Option<Failure> {
        let reject = self.hold.tracker().tool_failure()?.clone();
        Some(self.target.gate_failure(reject, self.started))
    }

    /// The stream judged unusable by what it said rather than by the gate (a continuation
    /// that does not fit what the client has): a failure of this attempt all the same.
    pub(crate) fn failure_of(&self, kind: FailureKind, detail: &str) -> Failure {
        let verdict = Verdict::of(kind, None);
        failure(verdict, Some(self.status), detail.to_string(), self.started)
    }

    /// The secrets the stream's events must not carry to a client.
    pub(crate) fn secrets(&self) -> &std::sync::Arc<crate::secrets::Secrets> {
        &self.target.secrets
    }

    /// The parsed chat chunks of the bytes released so far and not yet taken (kept only
    /// when the attempt's limits asked for them).
    pub(crate) fn take_chunks(&mut self) -> Vec<Value> {
        self.hold.take_chunks()
    }

    /// Waits for the next chunk, at most the stall timeout.
    pub(crate) fn next_item(&mut self) -> StreamItem {
        self.next_item_within(self.silence_allowed())
    }

    /// How long the stream may go without a whole event: the stall timeout, and no more
    /// than [`AFTER_FINISH`] once the answer said it was done.
    fn silence_allowed(&self) -> Duration {
        if self.hold.tracker().is_finished() {
            self.stall.min(AFTER_FINISH)
        } else {
            self.stall
        }
    }

    /// Like [`next_item`](Self::next_item), but `None` when nothing arrived within `max`
    /// while the stall timer still runs: the caller may look at its client meanwhile.
    pub(crate) fn next_item_or_quiet(&mut self, max: Duration) -> Option<StreamItem> {
        let left = self
            .silence_allowed()
            .saturating_sub(self.last_event.elapsed());
        if max < left && !self.ended {
            match self.chunks.recv_timeout(max) {
                Err(RecvTimeoutError::Timeout) => return None,
                Ok(chunk) => return Some(self.on_chunk(chunk)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Some(self.on_chunk(Chunk::End));
                }
            }
        }
        Some(self.next_item())
    }

    /// Like [`next_item`](Self::next_item), waiting at most `max` (and at most the stall timeout).
    fn next_item_within(&mut self, max: Duration) -> StreamItem {
        if self.ended {
            return self.step(HoldStep::End);
        }
        // Once committed only silence ends a stream: the request's budget covers the
        // search for an answer, not the length of a healthy one. Silence is no whole event
        // for the stall timeout: bytes that never finish one do not count.
        let allowed = self.silence_allowed();
        let left = allowed.saturating_sub(self.last_event.elapsed());
        if left.is_zero() {
            return self.stalled(allowed);
        }
        let wait = left.min(max);
        match self.chunks.recv_timeout(wait) {
            Ok(chunk) => self.on_chunk(chunk),
            Err(RecvTimeoutError::Disconnected) => self.on_chunk(Chunk::End),
            Err(RecvTimeoutError::Timeout) => self.stalled(wait),
        }
    }

    /// The connection ended, failed or went silent after the answer said it was done (a
    /// `finish_reason` or `[DONE]`): the answer is whole all the same, and ends here.
    fn cut_after_finish(&mut self) -> Option<StreamItem> {
        if !self.hold.tracker().is_finished() {
            return None;
        }
        self.ended = true;
        let step = self.hold.on_end();
        Some(self.step(step))
    }

    /// What one chunk from the reader makes of the stream.
    fn on_chunk(&mut self, chunk: Chunk) -> StreamItem {
        match chunk {
            Chunk::Data(bytes) => {
                let step = self.hold.on_bytes(&bytes);
                if self.hold.events() != self.events {
                    self.events = self.hold.events();
                    self.last_event = Instant::now();
                }
                self.step(step)
            }
            Chunk::End => {
                self.ended = true;
                let step = self.hold.on_end();
                self.step(step)
            }
            Chunk::Error(e) => self.cut_after_finish().unwrap_or_else(|| {
                StreamItem::Failed(self.target.io_error(&e, self.started), Vec::new())
            }),
        }
    }

    /// No whole event for `waited`: the end of an answer that said it was done, else a
    /// failure.
    fn stalled(&mut self, waited: Duration) -> StreamItem {
        self.cut_after_finish()
            .unwrap_or_else(|| StreamItem::Failed(self.stall_failure(waited), Vec::new()))
    }

    /// No whole event for `waited`: a stall after useful content, else a timeout.
    fn stall_failure(&self, waited: Duration) -> Failure {
        let kind = if self.hold.tracker().is_useful() {
            FailureKind::StreamStall
        } else {
            FailureKind::Timeout
        };
        let detail = format!("no whole event for {} ms", waited.as_millis());
        failure(
            Verdict::of(kind, None),
            Some(self.status),
            detail,
            self.started,
        )
    }

    fn step(&mut self, step: HoldStep) -> StreamItem {
        match step {
            HoldStep::Forward(bytes) | HoldStep::Commit { bytes, .. } => StreamItem::Data(bytes),
            HoldStep::Hold => StreamItem::Data(Vec::new()),
            HoldStep::End => StreamItem::End,
            HoldStep::Fail { reject, tail } => {
                StreamItem::Failed(self.target.gate_failure(reject, self.started), tail)
            }
        }
    }

    /// Reads the rest of the stream (pings read it whole rather than forward it), giving
    /// up at `deadline`, with the chat chunks it carried when the attempt's limits kept
    /// them. A tool call dropped after commit fails it, as it fails a served stream.
    pub(crate) fn read_to_end(&mut self, deadline: Instant) -> (StreamEnd, Vec<Value>) {
        let mut chunks = self.take_chunks();
        loop {
            if Instant::now() >= deadline {
                let f = failure(
                    Verdict::of(FailureKind::Timeout, None),
                    Some(self.status),
                    "answer not finished in time".into(),
                    self.started,
                );
                return (StreamEnd::Failed(f), chunks);
            }
            let item = self.next_item_within(deadline.saturating_duration_since(Instant::now()));
            chunks.extend(self.take_chunks());
            match item {
                StreamItem::Data(_) => {}
                StreamItem::End => {
                    let end = match self.tool_failure() {
                        Some(f) => StreamEnd::Failed(f),
                        None => StreamEnd::Complete {
                            completion_tokens: self.stats().completion_tokens,
                        },
                    };
                    return (end, chunks);
                }
                StreamItem::Failed(f, _) => return (StreamEnd::Failed(f), chunks),
            }
        }
    }

    /// How long since the attempt began.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// How a committed stream ended.
pub(crate) enum StreamEnd {
    Complete { completion_tokens: Option<u64> },
    Failed(Failure),
    ClientGone,
}
