//! Writing answers to a client connection: a whole response in one write ([`Reply`] through
//! [`Conn`]), or a stream whose head goes out with its first bytes ([`StreamReply`], the
//! client's side of `forward`). What the bytes say is decided elsewhere; this file frames
//! them and notices a client that is gone.

use std::io::Write;
use std::net::TcpStream;

use serde_json::Value;

use crate::edge::forward::ClientSink;
use crate::edge::http::{self, chunk, LAST_CHUNK};
use crate::protocol::{ErrorReport, Protocol};
use crate::state::trace::{Outcome, Trace};

/// A response to write: status, header lines and body bytes.
pub(super) struct Reply {
    pub(super) status: u16,
    /// `name: value\r\n` lines, as `http::header_line` writes them: built once, in place.
    lines: String,
    pub(super) body: Vec<u8>,
}

impl Reply {
    /// A reply of `content_type`.
    pub(super) fn new(status: u16, content_type: &str, body: Vec<u8>) -> Reply {
        let mut lines = String::with_capacity(256);
        http::header_line(&mut lines, "content-type", content_type);
        Reply {
            status,
            lines,
            body,
        }
    }

    pub(super) fn json(status: u16, v: &Value) -> Reply {
        Reply::new(status, "application/json", v.to_string().into_bytes())
    }

    /// An error of the edge itself in `proto`'s envelope; `kind` is OpenAI's `error.type`
    /// (Anthropic's follows from the status).
    pub(super) fn error(proto: Protocol, status: u16, message: &str, kind: &str) -> Reply {
        let report = ErrorReport {
            kind: Some(kind),
            ..ErrorReport::new(status, message)
        };
        Reply::json(status, &proto.error(&report))
    }

    /// The fast 503 of a server at its limit of requests in flight, recorded nowhere (it
    /// costs the server as little as possible).
    pub(super) fn overloaded(proto: Protocol, id: &str) -> Reply {
        let mut trace = Trace::new(id, "", false);
        trace.outcome = Outcome::Rejected;
        let msg = "fcm is at its limit of requests in flight; retry in a second";
        Reply::error(proto, 503, msg, "overloaded")
            .with_trace(&trace)
            .header("retry-after", "1")
    }

    pub(super) fn with_trace(mut self, trace: &Trace) -> Reply {
        trace.write_headers(&mut self.lines);
        self
    }

    pub(super) fn header(mut self, name: &str, value: &str) -> Reply {
        http::header_line(&mut self.lines, name, value);
        self
    }
}

/// Bytes of a response head besides its header lines (status line, framing).
const HEAD_ROOM: usize = 96;

/// The writing side of a client connection.
pub(super) struct Conn {
    pub(super) stream: TcpStream,
    /// Whether the connection stays open after this response.
    pub(super) keep_alive: bool,
    /// A write failed: the client is gone.
    pub(super) broken: bool,
}

impl Conn {
    /// Whether the client closed (or reset) its side, without waiting: a read of zero bytes
    /// at the end of what it sent. Bytes it sent meanwhile (a next request) are left where
    /// they are.
    pub(super) fn closed_by_peer(&self) -> bool {
        if self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let closed = match self.stream.peek(&mut [0u8; 1]) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        };
        let _ = self.stream.set_nonblocking(false);
        closed
    }

    pub(super) fn new(stream: TcpStream, keep_alive: bool) -> Conn {
        Conn {
            stream,
            keep_alive,
            broken: false,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> bool {
        if !self.broken && self.stream.write_all(bytes).is_err() {
            self.broken = true;
        }
        !self.broken
    }

    /// Writes a complete response in one write (`head_only` for HEAD requests).
    pub(super) fn send(&mut self, reply: Reply, head_only: bool) {
        let body = if head_only { &[][..] } else { &reply.body[..] };
        let mut bytes = Vec::with_capacity(HEAD_ROOM + reply.lines.len() + body.len());
        let length = Some(reply.body.len());
        http::write_head(
            &mut bytes,
            reply.status,
            &reply.lines,
            length,
            self.keep_alive,
        );
        bytes.extend_from_slice(body);
        self.write(&bytes);
    }
}

/// A stream's response on the client connection: the head goes out with the first bytes
/// (one write, so the first event is not held back by delayed ACKs), then one HTTP chunk
/// per send.
pub(super) struct StreamReply<'c> {
    conn: &'c mut Conn,
    head: Option<Vec<u8>>,
}

impl<'c> StreamReply<'c> {
    pub(super) fn new(conn: &'c mut Conn, trace: &Trace) -> StreamReply<'c> {
        let mut lines = String::with_capacity(256);
        http::header_line(&mut lines, "content-type", "text/event-stream");
        http::header_line(&mut lines, "cache-control", "no-cache");
        trace.write_headers(&mut lines);
        let mut head = Vec::with_capacity(HEAD_ROOM + lines.len());
        http::write_head(&mut head, 200, &lines, None, conn.keep_alive);
        StreamReply {
            conn,
            head: Some(head),
        }
    }

    fn framed(&mut self, bytes: &[u8], last: bool) -> Vec<u8> {
        let mut out = self.head.take().unwrap_or_default();
        chunk(bytes, &mut out);
        if last {
            out.extend_from_slice(LAST_CHUNK);
        }
        out
    }
}

impl ClientSink for StreamReply<'_> {
    fn send(&mut self, bytes: &[u8]) -> bool {
        let out = self.framed(bytes, false);
        if !out.is_empty() {
            self.conn.write(&out);
        }
        !self.conn.broken
    }

    fn end(&mut self, bytes: &[u8]) {
        let out = self.framed(bytes, true);
        self.conn.write(&out);
    }

    fn gone(&mut self) -> bool {
        self.conn.broken || self.conn.closed_by_peer()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(reply: &Reply) -> Value {
        serde_json::from_slice(&reply.body).unwrap()
    }

    #[test]
    fn edge_errors_take_the_envelope_they_are_given() {
        let openai = Reply::error(Protocol::Chat, 413, "too big", "invalid_request_error");
        assert_eq!(openai.status, 413);
        assert_eq!(
            body(&openai),
            serde_json::json!({"error": {"message": "too big", "type": "invalid_request_error", "code": null}})
        );
        let anthropic = Reply::error(Protocol::Anthropic, 401, "token", "authentication_error");
        assert_eq!(
            body(&anthropic),
            serde_json::json!({"type": "error", "error": {"type": "authentication_error", "message": "token"}})
        );
    }

    #[test]
    fn an_overloaded_answer_says_when_to_retry_and_carries_the_trace() {
        let reply = Reply::overloaded(Protocol::Anthropic, "req-1");
        assert_eq!(reply.status, 503);
        assert_eq!(body(&reply)["error"]["type"], "overloaded_error");
        let header = |name: &str| {
            reply
                .lines
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        };
        assert_eq!(header("retry-after"), Some("1"));
        assert_eq!(header("x-request-id"), Some("req-1"));
        assert_eq!(header("x-fcm-v2-decision"), Some("none!rejected|skips=0"));
    }
}
