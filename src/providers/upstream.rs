//! The real [`Exchange`]: fcm's own HTTP/1.1 client ([`client`], framed by [`http1`] with
//! `httparse`) over ureq's connectors, with connection pools shared across requests and
//! threads, its timeouts, and transport errors mapped to [`TransportFailure`]s. Its
//! connections are [`tcp::TcpLink`]s (TLS over them for `https`): ureq's TCP transport with
//! fewer system calls per request.

mod client;
#[cfg(test)]
mod conformance;
mod http1;
mod idle;
mod tcp;

pub(crate) use client::stale_retries;

use std::sync::Arc;
use std::time::Instant;

use ureq::unversioned::transport::{
    ConnectProxyConnector, ConnectionDetails, Connector, RustlsConnector, Transport,
};

use super::exchange::{
    Exchange, ExchangeTimeouts, Incoming, Outgoing, TransportFailure, RESET_HEADERS,
};
use client::{Client, Clock, Failure, Target};

/// The HTTP client, with connection pools reused across requests and threads.
///
/// Idle connections are kept in [`SHARDS`] lists, each thread using one of them: one list
/// under one lock made that lock the most contended in the proxy under 64 busy connections
/// (half its futex calls, by `perf`, when ureq's pool was one list); a thread's connections
/// go back to the list they came from, so each holds an eighth of them.
#[derive(Clone)]
pub struct Upstream {
    client: Arc<Client>,
    resolver: crate::providers::resolve::CachedResolver,
}

/// One TLS connector for all the shards: it builds its rustls configuration (the parsed
/// root certificates) on first use, once rather than once per shard.
#[derive(Debug, Clone)]
struct SharedTls(std::sync::Arc<RustlsConnector>);

impl<In: Transport> Connector<In> for SharedTls {
    type Out = <RustlsConnector as Connector<In>>::Out;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        self.0.connect(details, chained)
    }
}

/// How many lists of idle connections an [`Upstream`] spreads its threads over.
const SHARDS: usize = 8;

/// Idle connections kept at most, over all the lists.
const IDLE_MAX: usize = 512;

/// This thread's list, the same for all its calls: threads take the lists in turn.
fn shard() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

const USER_AGENT: &str = concat!("fcm/", env!("CARGO_PKG_VERSION"));

impl Default for Upstream {
    fn default() -> Self {
        Upstream::new()
    }
}

/// The connectors' configuration: a proxy from the environment (`HTTPS_PROXY`, `ALL_PROXY`,
/// `NO_PROXY`, ...) unless `direct`.
fn config(direct: bool) -> ureq::config::Config {
    let builder = ureq::Agent::config_builder()
        .no_delay(true)
        // ureq's 128 KiB per connection costs 16 MiB at 64 parallel probes and 64 MiB at
        // 256 open streams; chat answers arrive in small frames, and larger bodies are
        // simply read in more passes. The output buffer only carries a request out (the
        // TCP link gathers it into one write), so 4 KiB does; with the stream reader's
        // 4 KiB chunks it saved 1.5 MB of the 39 MB that 256 open streams held.
        .input_buffer_size(8 * 1024)
        .output_buffer_size(4 * 1024);
    if direct {
        builder.proxy(None).build()
    } else {
        builder.build()
    }
}

impl Upstream {
    pub fn new() -> Upstream {
        Upstream::with_resolver(crate::providers::resolve::CachedResolver::default(), SHARDS)
    }

    /// `shards` lists of idle connections: [`SHARDS`] for the shared client, one for a
    /// sibling (a race's client keeps its warm connection for whichever thread runs the
    /// next race).
    fn with_resolver(
        resolver: crate::providers::resolve::CachedResolver,
        shards: usize,
    ) -> Upstream {
        // ureq's default chain (a CONNECT proxy when one is configured, TCP, rustls) with
        // fcm's TCP link in place of ureq's.
        let tls = SharedTls(std::sync::Arc::new(RustlsConnector::default()));
        let chain =
            ().chain(ConnectProxyConnector::default())
                .chain(tcp::TcpLinkConnector)
                .chain(tls);
        let connect: client::Connect = Arc::new(move |details| {
            chain
                .connect(details, None)?
                .map(Transport::boxed)
                .ok_or(ureq::Error::ConnectionFailed)
        });
        let client = Client::new(
            config(false),
            config(true),
            resolver.clone(),
            connect,
            shards,
            IDLE_MAX,
        );
        Upstream {
            client: Arc::new(client),
            resolver,
        }
    }
}

impl Exchange for Upstream {
    /// A client with a connection pool of its own that shares this one's name cache.
    fn sibling(&self) -> Box<dyn Exchange> {
        Box::new(Upstream::with_resolver(self.resolver.clone(), 1))
    }

    fn shutdown(&self) {
        self.client.shutdown();
    }

    fn send(
        &self,
        out: Outgoing<'_>,
        t: ExchangeTimeouts,
    ) -> Result<Incoming, (TransportFailure, String)> {
        let started = Instant::now();
        let target = Target::of(out.url).map_err(|e| transport_failure(&e))?;
        let auth = out.api_key.map(|key| format!("Bearer {key}"));
        let own_agent = out
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"));
        let fixed = [
            ("Content-Type", JSON),
            ("Accept", if out.stream { EVENT_STREAM } else { JSON }),
        ];
        let headers = fixed
            .into_iter()
            .chain((!own_agent).then_some(("User-Agent", USER_AGENT)))
            .chain(out.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .chain(auth.as_deref().map(|a| ("Authorization", a)));
        let clock = Clock::new(started, &t);
        let mut wanted = WantedHeaders::default();
        let (status, body) = REQUEST.with_borrow_mut(|request| {
            request.clear();
            http1::post(request, target.path(), target.host(), headers, &out.body)
                .map_err(|e| (TransportFailure::Connection, e.0))?;
            let sent = self
                .client
                .exchange(shard(), &target, request, clock, |name, value| {
                    wanted.see(name, value)
                })
                .map_err(|f| match f {
                    Failure::Transport(e) => transport_failure(&e),
                    Failure::Wire(e) => (TransportFailure::Connection, e.0),
                    Failure::NotConnected(e) => match transport_failure(&e) {
                        (TransportFailure::DnsFailure, msg) => (TransportFailure::DnsFailure, msg),
                        (_, msg) => (TransportFailure::NotConnected, msg),
                    },
                });
            // A large request's buffer is not kept for the thread's next one.
            if request.capacity() > KEPT_REQUEST_BUFFER {
                *request = Vec::new();
            }
            sent
        })?;
        let rate = crate::providers::quota::read_headers(
            wanted.rate.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            crate::time::now_ms(),
        );
        Ok(Incoming {
            status,
            content_type: wanted.content_type,
            retry_after: wanted.retry_after,
            resets: wanted.resets.into_iter().flatten().collect(),
            rate,
            body: Box::new(body),
        })
    }
}

thread_local! {
    /// The thread's buffer for a request's bytes, reused from one request to the next (a
    /// fresh one each time was an allocation past the allocator's per-thread cache).
    static REQUEST: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A request buffer larger than this is freed after its request.
const KEPT_REQUEST_BUFFER: usize = 64 * 1024;

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// The response headers an [`Incoming`] carries, each its first value that is visible
/// ASCII, picked out as the head is parsed.
#[derive(Default)]
struct WantedHeaders {
    content_type: Option<String>,
    retry_after: Option<String>,
    /// In the order of [`RESET_HEADERS`].
    resets: [Option<String>; RESET_HEADERS.len()],
    /// Every rate-limit header (name lower-cased), for [`crate::providers::quota`].
    rate: Vec<(String, String)>,
}

impl WantedHeaders {
    fn see(&mut self, name: &str, value: &[u8]) {
        let Some(value) = text(value) else {
            return;
        };
        let slot = if name.eq_ignore_ascii_case("content-type") {
            &mut self.content_type
        } else if name.eq_ignore_ascii_case("retry-after") {
            &mut self.retry_after
        } else if contains_ignoring_case(name, "ratelimit") {
            let name = name.to_ascii_lowercase();
            if let Some(i) = RESET_HEADERS.iter().position(|h| *h == name) {
                if self.resets[i].is_none() {
                    self.resets[i] = Some(value.to_string());
                }
            }
            self.rate.push((name, value.to_string()));
            return;
        } else {
            return;
        };
        slot.get_or_insert_with(|| value.to_string());
    }
}

fn contains_ignoring_case(name: &str, part: &str) -> bool {
    name.as_bytes()
        .windows(part.len())
        .any(|w| w.eq_ignore_ascii_case(part.as_bytes()))
}

/// A header's value as text, when it is visible ASCII (tabs and spaces allowed).
fn text(value: &[u8]) -> Option<&str> {
    value
        .iter()
        .all(|b| *b == b'\t' || (0x20..0x7f).contains(b))
        .then(|| std::str::from_utf8(value).ok())
        .flatten()
}

/// Maps a client error to a transport failure and a message that carries no secrets.
pub fn transport_failure(e: &ureq::Error) -> (TransportFailure, String) {
    let kind = match e {
        ureq::Error::Timeout(_) => TransportFailure::Timeout,
        ureq::Error::HostNotFound | ureq::Error::BadUri(_) => TransportFailure::DnsFailure,
        ureq::Error::Io(io) => return super::exchange::io_failure(io),
        _ => TransportFailure::Connection,
    };
    (kind, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A provider on loopback that answers the requests it reads with `answers` in turn, on
    /// whichever connection they arrive, closing a connection after an answer that says
    /// `Connection: close` (or after `linger` when it has no answer left); it counts the
    /// connections it accepted and stops when its answers are spent.
    fn scripted(answers: Vec<&'static [u8]>, linger: Duration) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().unwrap()
        );
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            let mut answers = answers.into_iter().peekable();
            while answers.peek().is_some() || count.load(Ordering::SeqCst) == 0 {
                let Ok((mut conn, _)) = listener.accept() else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                loop {
                    if !read_request(&mut conn) {
                        break;
                    }
                    let Some(answer) = answers.next() else {
                        std::thread::sleep(linger);
                        return;
                    };
                    conn.write_all(answer).unwrap();
                    if String::from_utf8_lossy(answer).contains("Connection: close") {
                        break;
                    }
                }
            }
        });
        (url, accepted)
    }

    /// Reads one request (head and `Content-Length` body): false when the client closed.
    fn read_request(conn: &mut std::net::TcpStream) -> bool {
        let mut got = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(n)) = req.parse(&got) {
                let len = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .map_or(0, |h| {
                        std::str::from_utf8(h.value).unwrap().parse().unwrap()
                    });
                let mut body = vec![0; len];
                conn.read_exact(&mut body).unwrap();
                assert_eq!(got.len(), n, "nothing past the head was read");
                return true;
            }
            match conn.read(&mut byte) {
                Ok(1) => got.push(byte[0]),
                _ => return false,
            }
        }
    }

    fn post(url: &str) -> Outgoing<'_> {
        Outgoing {
            url,
            api_key: Some("test-key"),
            headers: &[],
            body: b"{}".to_vec(),
            stream: false,
        }
    }

    fn timeouts(head: Option<Duration>) -> ExchangeTimeouts {
        ExchangeTimeouts {
            connect: Duration::from_secs(5),
            per_call: Some(Duration::from_secs(10)),
            per_read: Some(Duration::from_secs(10)),
            head,
        }
    }

    #[test]
    fn a_connection_is_reused_until_the_provider_says_close() {
        let (url, accepted) = scripted(
            vec![
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n",
                b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 4\r\n\r\nslow",
            ],
            Duration::ZERO,
        );
        let upstream = Upstream::new();
        for (status, text, retry) in [
            (200, "{}", None),
            (200, "{}", None),
            (429, "slow", Some("7")),
        ] {
            let mut got = upstream.send(post(&url), timeouts(None)).unwrap();
            let mut body = String::new();
            got.body.read_to_string(&mut body).unwrap();
            assert_eq!((got.status, body.as_str()), (status, text));
            assert_eq!(got.retry_after.as_deref(), retry);
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "the first two answers came on one connection, the third on a new one"
        );
    }

    #[test]
    fn an_answer_whose_head_does_not_come_is_a_timeout() {
        let (url, _) = scripted(vec![], Duration::from_secs(2));
        let started = std::time::Instant::now();
        let failure = Upstream::new()
            .send(post(&url), timeouts(Some(Duration::from_millis(200))))
            .err()
            .unwrap();
        assert_eq!(failure.0, TransportFailure::Timeout, "{}", failure.1);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_body_cut_before_its_length_is_an_error_not_an_answer() {
        let (url, _) = scripted(
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{\"a\""],
            Duration::ZERO,
        );
        let mut got = Upstream::new().send(post(&url), timeouts(None)).unwrap();
        let err = got.body.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn the_wanted_headers_are_found_in_one_pass_first_value_first() {
        let mut wanted = WantedHeaders::default();
        for (k, v) in [
            ("x-ratelimit-reset-tokens", &b"7s"[..]),
            ("Content-Type", b"application/json"),
            ("retry-after", b"3"),
            ("Retry-After", b"9"),
            ("x-other", b"1"),
            ("X-RateLimit-Reset-Requests", b"2s"),
            ("ratelimit-reset", b"bad\x7f"),
            ("ratelimit-reset", b"\xff"),
        ] {
            wanted.see(k, v);
        }
        assert_eq!(wanted.content_type.as_deref(), Some("application/json"));
        assert_eq!(wanted.retry_after.as_deref(), Some("3"));
        let resets: Vec<String> = wanted.resets.into_iter().flatten().collect();
        assert_eq!(
            resets,
            ["2s", "7s"],
            "in RESET_HEADERS order; not visible ASCII left out"
        );
        let names: Vec<&str> = wanted.rate.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["x-ratelimit-reset-tokens", "x-ratelimit-reset-requests"]
        );
    }
}
