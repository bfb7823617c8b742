//! A stream's whole life, in one place: hold the upstream's bytes until the gate sees
//! useful content (nothing of a failed attempt reaches the client), commit, forward the
//! rest as whole events (translated for the client's protocol from the chunks the gate
//! already parsed), end the client's stream cleanly however the upstream ends, and record
//! that end, after commit too, through the router's one outcome recorder ([`Settle`]).
//!
//! The client side is a [`ClientSink`] (the HTTP edge frames the bytes); the upstream side
//! is a reader thread (reused, see `readers`) feeding a channel, so stall and first-token
//! timeouts are plain `recv_timeout`s.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::answers::classify::{FailureKind, Verdict};
use crate::answers::failure::{failure, Failure};
use crate::answers::gate::AnswerStats;
use crate::answers::hold::{HoldBuffer, HoldStep};
use crate::protocol::StreamShape;
use crate::providers::target::{Limits, Target};
use crate::providers::upstream::{Incoming, READ_CHUNK};
use crate::state::trace::Trace;

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
        ended: false,
        target: target.clone(),
    };
    let first_token_deadline = (started + limits.first_token).min(limits.deadline);
    loop {
        let wait = first_token_deadline.saturating_duration_since(Instant::now());
        let step = match open.chunks.recv_timeout(wait) {
            Ok(Chunk::Data(bytes)) => open.hold.on_bytes(&bytes),
            Ok(Chunk::End) | Err(RecvTimeoutError::Disconnected) => {
                open.ended = true;
                open.hold.on_end()
            }
            Ok(Chunk::Error(e)) => return Err(target.io_error(&e, started)),
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
    fn tool_failure(&self) -> Option<Failure> {
        let reject = self.hold.tracker().tool_failure()?.clone();
        Some(self.target.gate_failure(reject, self.started))
    }

    /// The parsed chat chunks of the bytes released so far and not yet taken (kept only
    /// when the attempt's limits asked for them).
    pub(crate) fn take_chunks(&mut self) -> Vec<Value> {
        self.hold.take_chunks()
    }

    /// Waits for the next chunk, at most the stall timeout.
    pub(crate) fn next_item(&mut self) -> StreamItem {
        self.next_item_within(self.stall)
    }

    /// Like [`next_item`](Self::next_item), waiting at most `max` (and at most the stall timeout).
    fn next_item_within(&mut self, max: Duration) -> StreamItem {
        if self.ended {
            return self.step(HoldStep::End);
        }
        // Once committed only silence ends a stream: the request's budget covers the
        // search for an answer, not the length of a healthy one.
        let wait = self.stall.min(max);
        match self.chunks.recv_timeout(wait) {
            Ok(Chunk::Data(bytes)) => {
                let step = self.hold.on_bytes(&bytes);
                self.step(step)
            }
            Ok(Chunk::End) | Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                let step = self.hold.on_end();
                self.step(step)
            }
            Ok(Chunk::Error(e)) => {
                StreamItem::Failed(self.target.io_error(&e, self.started), Vec::new())
            }
            Err(RecvTimeoutError::Timeout) => {
                let kind = if self.hold.tracker().is_useful() {
                    FailureKind::StreamStall
                } else {
                    FailureKind::Timeout
                };
                let detail = format!("no data for {} ms", wait.as_millis());
                let f = failure(
                    Verdict::of(kind, None),
                    Some(self.status),
                    detail,
                    self.started,
                );
                StreamItem::Failed(f, Vec::new())
            }
        }
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

    /// Reads the rest of the stream (the bench and check do not forward it), giving up at
    /// `deadline`. A tool call dropped after commit fails it, as it fails a served stream.
    pub fn drain(mut self, deadline: Instant) -> Result<(AnswerStats, Duration), Failure> {
        loop {
            if Instant::now() >= deadline {
                let f = failure(
                    Verdict::of(FailureKind::Timeout, None),
                    Some(self.status),
                    "answer not finished in time".into(),
                    self.started,
                );
                return Err(f);
            }
            match self.next_item_within(deadline.saturating_duration_since(Instant::now())) {
                StreamItem::Data(_) => {}
                StreamItem::End => match self.tool_failure() {
                    Some(f) => return Err(f),
                    None => return Ok((self.stats().clone(), self.started.elapsed())),
                },
                StreamItem::Failed(f, _) => return Err(f),
            }
        }
    }
}

/// How a committed stream ended.
pub(crate) enum StreamEnd {
    Complete { completion_tokens: Option<u64> },
    Failed(Failure),
    ClientGone,
}

/// Records how a committed stream ended (breaker, live ranking, trace): given by the
/// router with the stream, so the attempt that committed is the one that is judged.
pub(crate) trait Settle {
    /// `stats`: what the stream carried (usage, characters), for what it cost.
    fn settle(
        self: Box<Self>,
        end: &StreamEnd,
        ttft: Duration,
        stats: &AnswerStats,
        trace: &mut Trace,
    );
}

/// The client's side of a stream: the HTTP edge frames and writes the bytes.
pub(crate) trait ClientSink {
    /// Sends body bytes (the first call also sends the response head). False once the
    /// client is gone.
    fn send(&mut self, bytes: &[u8]) -> bool;
    /// Sends the last body bytes and ends the response.
    fn end(&mut self, bytes: &[u8]);
}

/// A committed stream with the recorder that judges its end.
pub(crate) struct Committed<'r> {
    pub stream: OpenStream,
    pub settle: Box<dyn Settle + 'r>,
}

impl Committed<'_> {
    /// Forwards the stream to the client in its protocol's shape, and records how it ended.
    /// Dropping the stream at the end closes the upstream connection.
    pub(crate) fn deliver(
        self,
        client: &mut dyn ClientSink,
        mut shape: StreamShape,
        trace: &mut Trace,
    ) {
        let Committed { mut stream, settle } = self;
        let end = forward(&mut stream, client, &mut shape);
        settle.settle(&end, stream.ttft, stream.stats(), trace);
    }
}

fn forward(
    stream: &mut OpenStream,
    client: &mut dyn ClientSink,
    shape: &mut StreamShape,
) -> StreamEnd {
    let shape = &mut shape.redacted(stream.target.secrets.clone());
    let held = std::mem::take(&mut stream.held);
    let mut first = shape.start();
    first.extend(shape.shape(held, stream.take_chunks()));
    if !client.send(&first) {
        return StreamEnd::ClientGone;
    }
    loop {
        match stream.next_item() {
            StreamItem::Data(bytes) => {
                let out = shape.shape(bytes, stream.take_chunks());
                if !out.is_empty() && !client.send(&out) {
                    return StreamEnd::ClientGone;
                }
            }
            StreamItem::End => {
                client.end(&shape.finish(None));
                if let Some(f) = stream.tool_failure() {
                    return StreamEnd::Failed(f);
                }
                return StreamEnd::Complete {
                    completion_tokens: stream.stats().completion_tokens,
                };
            }
            StreamItem::Failed(f, tail) => {
                // Content already reached the client: end its stream cleanly.
                let mut last = shape.shape(tail, stream.take_chunks());
                last.extend(shape.finish(Some(&f.detail)));
                client.end(&last);
                return StreamEnd::Failed(f);
            }
        }
    }
}
