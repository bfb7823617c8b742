//! The seam between fcm and a provider: one HTTP exchange, as a trait. [`Upstream`] is the
//! real one (HTTP/1.1 over pooled connections); tests put a scripted one in its place, so the
//! failover loop, races and fusion are tested in-process, without sockets, the way ureq
//! tests its own flow through a test transport.
//!
//! An exchange sends a request and hands back the response head with the body unread; it
//! neither judges the answer (`answers`) nor decides what to try next (`routing`).
//!
//! [`Upstream`]: super::upstream::Upstream

use std::io::{self, Read};
use std::time::Duration;

/// Bodies are read in chunks of this size: small enough to pass SSE frames on promptly,
/// and to keep the buffer each open stream's reader holds small (SSE frames are far
/// smaller; a burst is passed on in more chunks).
pub const READ_CHUNK: usize = 4 * 1024;

/// One exchange with a provider, and the client it runs on.
pub trait Exchange: Send + Sync {
    /// Sends a POST and returns once the response head has arrived.
    fn send(
        &self,
        out: Outgoing<'_>,
        t: ExchangeTimeouts,
    ) -> Result<Incoming, (TransportFailure, String)>;

    /// A client with connections of its own (a racer's), sharing what may be shared (the
    /// name cache), so that shutting it down touches nobody else's calls.
    fn sibling(&self) -> Box<dyn Exchange>;

    /// Closes every connection of this client, idle or in use: a call blocked on one in
    /// another thread returns at once with an error (a race's losers). Only ever called on
    /// a [`sibling`](Exchange::sibling).
    fn shutdown(&self);
}

/// What to send.
pub struct Outgoing<'a> {
    pub url: &'a str,
    pub api_key: Option<&'a str>,
    pub headers: &'a [(String, String)],
    pub body: Vec<u8>,
    pub stream: bool,
}

/// Deadlines for one exchange.
#[derive(Debug, Clone, Copy)]
pub struct ExchangeTimeouts {
    /// Connection and TLS setup.
    pub connect: Duration,
    /// The whole exchange, headers and body (non-stream answers).
    pub per_call: Option<Duration>,
    /// Longest silence on the socket (streams; a backstop for the reader thread).
    pub per_read: Option<Duration>,
    /// The response head must arrive within this (streams: the first-token deadline).
    pub head: Option<Duration>,
}

/// A provider's response head with its body still unread.
pub struct Incoming {
    pub status: u16,
    pub content_type: Option<String>,
    /// `Retry-After`, as sent.
    pub retry_after: Option<String>,
    /// The rate-limit reset headers that were sent (`x-ratelimit-reset-requests`, ...), as
    /// sent: a wait when there is no `Retry-After`.
    pub resets: Vec<String>,
    /// The rate-limit windows its `x-ratelimit-*` headers report (any status).
    pub rate: Vec<super::quota::Window>,
    pub body: Box<dyn Read + Send>,
}

impl Incoming {
    pub fn is_event_stream(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|c| c.contains("text/event-stream"))
    }
}

/// The reset headers [`Incoming::resets`] holds, in the order they are read.
pub const RESET_HEADERS: [&str; 4] = [
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "ratelimit-reset",
    "x-ratelimit-reset",
];

/// Transport failures, as seen by the HTTP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    Timeout,
    DnsFailure,
    Connection,
}

/// Maps a body read error to a transport failure.
pub fn io_failure(e: &io::Error) -> (TransportFailure, String) {
    let kind = match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => TransportFailure::Timeout,
        _ if e.to_string().to_ascii_lowercase().contains("timeout") => TransportFailure::Timeout,
        _ => TransportFailure::Connection,
    };
    (kind, e.to_string())
}

/// Reads at most `limit` bytes; `Ok((bytes, truncated))`.
pub fn read_limited(r: &mut dyn Read, limit: usize) -> io::Result<(Vec<u8>, bool)> {
    // Most answers fit in a few KiB: start there rather than growing from nothing.
    let mut buf = Vec::with_capacity(limit.min(8 * 1024));
    r.take(limit as u64 + 1).read_to_end(&mut buf)?;
    let truncated = buf.len() > limit;
    buf.truncate(limit);
    Ok((buf, truncated))
}
