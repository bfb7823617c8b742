//! A committed stream forwarded to its client: each event the upstream stream hands out is
//! shaped for the client's protocol (`protocol::StreamShape`, from the chunks the gate
//! already parsed) and written through a [`ClientSink`]. A stream that ends is ended for
//! the client; one that breaks after content is left open ([`Pumped::Broke`]), so that
//! another model's continuation can follow in the same answer, or the client can be told
//! in its own protocol that the answer broke off ([`Relay::fail`]): never a clean finish.
//! A continuation's first events are held until its seam with what the client has is
//! decided (`joining`): the client reads each word once.

use serde_json::Value;

use crate::answers::classify::FailureKind;
use crate::answers::failure::Failure;
use crate::answers::stream::{OpenStream, StreamEnd, StreamItem};
use crate::edge::joining::{Joining, Step};
use crate::protocol::{self, StreamShape};
use crate::routing::carry::Carried;

/// The client's side of a stream: the HTTP edge frames and writes the bytes.
pub(crate) trait ClientSink {
    /// Sends body bytes (the first call also sends the response head). False once the
    /// client is gone.
    fn send(&mut self, bytes: &[u8]) -> bool;
    /// Sends the last body bytes and ends the response.
    fn end(&mut self, bytes: &[u8]);
    /// Whether the client has closed its side (looked at while the provider is quiet).
    fn gone(&mut self) -> bool {
        false
    }
}

/// While the provider sends nothing, how often the client is looked at: a client that went
/// away frees its upstream connection and its slot within this, not at the stall timeout.
const CLIENT_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// What the client has been given of the answer so far.
#[derive(Debug, Default)]
pub(crate) struct Given {
    /// The answer's text (not its reasoning): a continuation starts where it stops.
    pub(crate) text: String,
    /// A tool call had begun: a break inside one cannot be continued by another model.
    pub(crate) call_begun: bool,
}

/// How forwarding one upstream stream came out.
pub(crate) enum Pumped {
    /// The client's stream was ended (the answer finished, or a tool call failed its check
    /// at the end), or the client left.
    Done(StreamEnd),
    /// The upstream broke after content; the client's stream is still open.
    Broke(Failure),
}

/// One client stream, fed by one upstream stream or, after a break, by the next model's
/// continuation of it.
pub(crate) struct Relay<'c> {
    client: &'c mut dyn ClientSink,
    shape: StreamShape,
    given: Given,
    /// Provider state the answer's calls carry, for the conversation's next turn.
    carried: Carried,
    /// A continuation's seam not decided yet.
    joining: Option<Joining>,
    /// Characters of continuations' repeats of what the client had, left out.
    left_out: usize,
    started: bool,
    gone: bool,
}

impl<'c> Relay<'c> {
    pub(crate) fn new(client: &'c mut dyn ClientSink, shape: StreamShape) -> Relay<'c> {
        Relay {
            client,
            shape,
            given: Given::default(),
            carried: Carried::default(),
            joining: None,
            left_out: 0,
            started: false,
            gone: false,
        }
    }

    /// The next stream (or whole answer) continues this one: its first text is compared
    /// with what the client has, and joined (see `joining`).
    pub(crate) fn join_next(&mut self) {
        self.joining = Joining::after(&self.given.text);
    }

    /// Characters of continuations' repeats left out since the last call.
    pub(crate) fn take_left_out(&mut self) -> usize {
        std::mem::take(&mut self.left_out)
    }

    pub(crate) fn given(&self) -> &Given {
        &self.given
    }

    /// The provider state of the last answer forwarded, with the ids its calls were given.
    pub(crate) fn take_carried(&mut self) -> (Carried, protocol::CallIds) {
        (std::mem::take(&mut self.carried), self.shape.call_ids())
    }

    /// Forwards `stream` until it ends, breaks or the client leaves.
    pub(crate) fn pump(&mut self, stream: &mut OpenStream) -> Pumped {
        // What a later turn needs is the state of the answer that made its calls: the last.
        self.carried = Carried::default();
        let secrets = stream.secrets().clone();
        let held = std::mem::take(&mut stream.held);
        let chunks = stream.take_chunks();
        let Some((held, chunks)) =
            joined(&mut self.joining, &mut self.left_out, held, chunks, false)
        else {
            return Pumped::Broke(misfit(stream));
        };
        self.observe(&chunks);
        let shape = &mut self.shape.redacted(secrets);
        let mut first = if self.started {
            Vec::new()
        } else {
            shape.start()
        };
        self.started = true;
        first.extend(shape.shape(held, chunks));
        if !first.is_empty() && !self.client.send(&first) {
            self.gone = true;
            return Pumped::Done(StreamEnd::ClientGone);
        }
        loop {
            let Some(item) = stream.next_item_or_quiet(CLIENT_CHECK) else {
                if self.client.gone() {
                    self.gone = true;
                    return Pumped::Done(StreamEnd::ClientGone);
                }
                continue;
            };
            let chunks = stream.take_chunks();
            if let StreamItem::Failed(f, tail) = item {
                // Broken while its seam was open: what it held was never the client's.
                if self.joining.take().is_none() {
                    observe(&mut self.given, &mut self.carried, &chunks);
                    let out = shape.shape(tail, chunks);
                    if !out.is_empty() && !self.client.send(&out) {
                        self.gone = true;
                    }
                }
                return Pumped::Broke(f);
            }
            let end = matches!(item, StreamItem::End);
            let bytes = match item {
                StreamItem::Data(bytes) => bytes,
                _ => Vec::new(),
            };
            let seamed = joined(&mut self.joining, &mut self.left_out, bytes, chunks, end);
            let Some((bytes, chunks)) = seamed else {
                return Pumped::Broke(misfit(stream));
            };
            observe(&mut self.given, &mut self.carried, &chunks);
            let mut out = shape.shape(bytes, chunks);
            if !end {
                if !out.is_empty() && !self.client.send(&out) {
                    self.gone = true;
                    return Pumped::Done(StreamEnd::ClientGone);
                }
                continue;
            }
            out.extend(shape.finish(None));
            self.client.end(&out);
            if let Some(f) = stream.tool_failure() {
                return Pumped::Done(StreamEnd::Failed(f));
            }
            return Pumped::Done(StreamEnd::Complete {
                completion_tokens: stream.stats().completion_tokens,
            });
        }
    }

    /// An answer that came whole (its provider ignored `stream: true`): its chunks go out,
    /// and the client's stream ends. False, with nothing sent, for a continuation that does
    /// not fit what the client has.
    pub(crate) fn whole(
        &mut self,
        v: &Value,
        secrets: std::sync::Arc<crate::secrets::Secrets>,
    ) -> bool {
        let chunks = protocol::chunks_from_completion(v);
        let seamed = joined(
            &mut self.joining,
            &mut self.left_out,
            Vec::new(),
            chunks,
            true,
        );
        let Some((_, chunks)) = seamed else {
            return false;
        };
        self.carried = Carried::of_answer(v);
        let shape = &mut self.shape.redacted(secrets);
        let mut bytes = shape.shape(protocol::chat_events(&chunks), chunks);
        bytes.extend(shape.finish(None));
        self.client.end(&bytes);
        true
    }

    /// An SSE comment for the client while the next model is sought: every SSE reader
    /// skips it, and no client or proxy between takes the quiet stream for a dead one.
    pub(crate) fn keep_alive(&mut self) {
        if !self.gone && !self.client.send(b": keep-alive\n\n") {
            self.gone = true;
        }
    }

    /// The client still reads the answer.
    pub(crate) fn client_here(&self) -> bool {
        !self.gone
    }

    /// Ends the client's stream after a break, as its protocol says a failed answer ends
    /// (an `error` frame or event, `response.failed`), with `detail` (secrets removed).
    pub(crate) fn fail(&mut self, detail: &str, secrets: std::sync::Arc<crate::secrets::Secrets>) {
        let shape = &mut self.shape.redacted(secrets);
        let bytes = shape.finish(Some(detail));
        self.client.end(&bytes);
    }

    fn observe(&mut self, chunks: &[Value]) {
        observe(&mut self.given, &mut self.carried, chunks);
    }
}

/// `bytes` and their `chunks` as they go to the client: as they came, unless a
/// continuation's seam is open (`joining`); then the chunks it lets go, as chat events, or
/// `None` when the continuation does not fit. `end`: the stream ended.
fn joined(
    joining: &mut Option<Joining>,
    left_out: &mut usize,
    bytes: Vec<u8>,
    chunks: Vec<Value>,
    end: bool,
) -> Option<(Vec<u8>, Vec<Value>)> {
    let Some(j) = joining else {
        return Some((bytes, chunks));
    };
    let done = memchr::memmem::find(&bytes, b"data: [DONE]").is_some();
    let chunks = match j.take(chunks, end || done) {
        Step::Holding(chunks) => chunks,
        Step::Joined {
            chunks,
            left_out: n,
        } => {
            *left_out += n;
            *joining = None;
            chunks
        }
        Step::Misfit => {
            *joining = None;
            return None;
        }
    };
    let mut bytes = Vec::new();
    protocol::chat_frames(&chunks, &mut bytes);
    if done {
        bytes.extend_from_slice(b"data: [DONE]\n\n");
    }
    Some((bytes, chunks))
}

/// The failure of a continuation that started the answer over and departed from it.
fn misfit(stream: &OpenStream) -> Failure {
    stream.failure_of(
        FailureKind::ContinuationMisfit,
        "asked to finish an answer, it started it over and departed from it",
    )
}

/// Notes what `chunks` give the client: text, the start of a call, provider state.
fn observe(given: &mut Given, carried: &mut Carried, chunks: &[Value]) {
    for chunk in chunks {
        carried.observe(chunk);
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            continue;
        };
        if let Some(Value::String(text)) = delta.get("content") {
            given.text.push_str(text);
        }
        if delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|calls| !calls.is_empty())
        {
            given.call_begun = true;
        }
    }
}
