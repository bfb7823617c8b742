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
    /// No connection could be made (refused, reset or timed out while connecting, TLS
    /// refused): the request never left fcm.
    NotConnected,
}

impl TransportFailure {
    /// Whether the request may have reached the provider (and counts against its budget).
    pub fn reached_provider(self) -> bool {
        !matches!(
            self,
            TransportFailure::DnsFailure | TransportFailure::NotConnected
        )
    }
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

/// A read that failed, with the bytes it had read before (an answer may be whole though
/// its connection broke before the body's end).
pub type CutShort = (io::Error, Vec<u8>);

/// Reads at most `limit` bytes; `Ok((bytes, truncated))`.
pub fn read_limited(r: &mut dyn Read, limit: usize) -> Result<(Vec<u8>, bool), CutShort> {
    // An answer that fits in [`SMALL_BODY`] is read on the stack and kept at its size: an
    // 8 KiB buffer for every answer was glibc's one large allocation a request, and each
    // large allocation sweeps the allocator's fast bins first (3% of the proxy's CPU).
    let cap = limit.saturating_add(1);
    let mut first = [0u8; SMALL_BODY];
    let want = cap.min(SMALL_BODY);
    let (mut filled, mut ended) = (0, false);
    while filled < want {
        match r.read(&mut first[filled..want]) {
            Ok(0) => {
                ended = true;
                break;
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((e, first[..filled].to_vec())),
        }
    }
    let mut buf = if ended || filled == cap {
        first[..filled].to_vec()
    } else {
        // Larger answers: a few KiB more, rather than growing from the first part.
        let mut buf = Vec::with_capacity(limit.min(2 * SMALL_BODY));
        buf.extend_from_slice(&first[..filled]);
        // On an error, what was read so far is in `buf` (`read_to_end` keeps it).
        if let Err(e) = r.take((cap - filled) as u64).read_to_end(&mut buf) {
            buf.truncate(limit);
            return Err((e, buf));
        }
        buf
    };
    let truncated = buf.len() > limit;
    buf.truncate(limit);
    Ok((buf, truncated))
}

/// Answers up to this size are read without a buffer on the heap (see [`read_limited`]).
const SMALL_BODY: usize = 4 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes `step` at a time, then the end (or, `broken`, an error).
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
        broken: bool,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.bytes.is_empty() && self.broken {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn read_limited_keeps_at_most_the_limit_and_says_when_it_cut() {
        let body: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        for len in [
            0,
            1,
            300,
            SMALL_BODY - 1,
            SMALL_BODY,
            SMALL_BODY + 1,
            9_000,
            20_000,
        ] {
            for limit in [0, 10, SMALL_BODY, 8_192, 50_000] {
                for step in [1, 7, 4096, usize::MAX] {
                    let mut r = Trickle {
                        bytes: &body[..len],
                        step,
                        broken: false,
                    };
                    let (got, cut) = read_limited(&mut r, limit).unwrap();
                    let kept = len.min(limit);
                    assert_eq!(got, &body[..kept], "len {len} limit {limit} step {step}");
                    assert_eq!(cut, len > limit, "len {len} limit {limit} step {step}");
                    // A connection that breaks after the bytes: they come with the error.
                    let mut r = Trickle {
                        bytes: &body[..len],
                        step,
                        broken: true,
                    };
                    match read_limited(&mut r, limit) {
                        Err((e, got)) => {
                            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
                            assert_eq!(got, &body[..kept], "len {len} limit {limit} step {step}");
                        }
                        Ok((got, cut)) => assert!(
                            cut && got == body[..limit],
                            "only a read past the limit ends before the break"
                        ),
                    }
                }
            }
        }
    }
}
