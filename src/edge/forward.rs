//! A committed stream forwarded to its client: each event the upstream stream hands out is
//! shaped for the client's protocol (`protocol::StreamShape`, from the chunks the gate
//! already parsed) and written through a [`ClientSink`]; the client's stream ends cleanly
//! however the upstream's ends, and the end is handed back to be recorded.

use crate::answers::stream::{OpenStream, StreamEnd, StreamItem};
use crate::protocol::StreamShape;

/// The client's side of a stream: the HTTP edge frames and writes the bytes.
pub(crate) trait ClientSink {
    /// Sends body bytes (the first call also sends the response head). False once the
    /// client is gone.
    fn send(&mut self, bytes: &[u8]) -> bool;
    /// Sends the last body bytes and ends the response.
    fn end(&mut self, bytes: &[u8]);
}

/// Forwards `stream` to `client` in `shape` until it ends, breaks or the client leaves.
pub(crate) fn forward(
    stream: &mut OpenStream,
    client: &mut dyn ClientSink,
    mut shape: StreamShape,
) -> StreamEnd {
    let shape = &mut shape.redacted(stream.secrets().clone());
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
