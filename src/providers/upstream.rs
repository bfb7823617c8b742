//! The real [`Exchange`]: ureq with connection pools shared across requests and threads,
//! its timeouts, and transport errors mapped to [`TransportFailure`]s. Its connections are
//! [`tcp::TcpLink`]s (TLS over them for `https`): ureq's TCP transport with fewer system calls
//! per request.

mod tcp;

use ureq::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use ureq::http::{HeaderMap, HeaderValue};
use ureq::unversioned::transport::{
    ConnectProxyConnector, ConnectionDetails, Connector, RustlsConnector, Transport,
};

use super::exchange::{
    io_failure, Exchange, ExchangeTimeouts, Incoming, Outgoing, TransportFailure, RESET_HEADERS,
};

/// The HTTP client, with connection pools reused across requests and threads.
///
/// The pools are [`SHARDS`] ureq agents, each thread using one of them: a ureq pool is one
/// lock over a list that every return of a connection scans whole (comparing each idle
/// connection's scheme and host). With one pool, 64 busy connections made that lock the
/// most contended in the proxy (half its futex calls, by `perf`) and the scans 4% of its
/// CPU; a thread's connections go back to the pool they came from, so each pool holds an
/// eighth of them.
#[derive(Clone)]
pub struct Upstream {
    agents: std::sync::Arc<[ureq::Agent]>,
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

/// How many connection pools an [`Upstream`] spreads its threads over.
const SHARDS: usize = 8;

/// This thread's pool, the same for all its calls: threads take the shards in turn.
fn shard() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

impl Default for Upstream {
    fn default() -> Self {
        Upstream::new()
    }
}

impl Upstream {
    pub fn new() -> Upstream {
        Upstream::with_resolver(crate::providers::resolve::CachedResolver::default(), SHARDS)
    }

    /// `shards` pools: [`SHARDS`] for the shared client, one for a sibling (a race's client
    /// keeps its warm connection for whichever thread runs the next race).
    fn with_resolver(
        resolver: crate::providers::resolve::CachedResolver,
        shards: usize,
    ) -> Upstream {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .no_delay(true)
            // 512 idle connections, 256 to one host, over all shards.
            .max_idle_connections(512 / shards)
            .max_idle_connections_per_host(256 / shards)
            .max_redirects(0)
            // ureq's 128 KiB per connection costs 16 MiB at 64 parallel probes and 64 MiB at
            // 256 open streams; chat answers arrive in small frames, and larger bodies are
            // simply read in more passes. The output buffer only carries a request out (the
            // TCP link gathers it into one write), so 4 KiB does; with the stream reader's
            // 4 KiB chunks it saved 1.5 MB of the 39 MB that 256 open streams held.
            .input_buffer_size(8 * 1024)
            .output_buffer_size(4 * 1024)
            .user_agent(concat!("fcm/", env!("CARGO_PKG_VERSION")))
            .build();
        // ureq's default chain (a CONNECT proxy when one is configured, TCP, rustls) with
        // fcm's TCP link in place of ureq's.
        let tls = SharedTls(std::sync::Arc::new(RustlsConnector::default()));
        let agents = (0..shards)
            .map(|_| {
                let connector =
                    ().chain(ConnectProxyConnector::default())
                        .chain(tcp::TcpLinkConnector)
                        .chain(tls.clone());
                ureq::Agent::with_parts(config.clone(), connector, resolver.clone())
            })
            .collect();
        Upstream { agents, resolver }
    }
}

impl Exchange for Upstream {
    /// A client with a connection pool of its own that shares this one's name cache.
    fn sibling(&self) -> Box<dyn Exchange> {
        Box::new(Upstream::with_resolver(self.resolver.clone(), 1))
    }

    fn shutdown(&self) {
        for agent in self.agents.iter() {
            agent.clone().shutdown();
        }
    }

    fn send(
        &self,
        out: Outgoing<'_>,
        t: ExchangeTimeouts,
    ) -> Result<Incoming, (TransportFailure, String)> {
        let loopback = is_loopback(out.url);
        // Names and values known in advance are used as they are, not parsed and copied.
        let mut req = self.agents[shard() % self.agents.len()]
            .post(out.url)
            .header(CONTENT_TYPE, JSON)
            .header(ACCEPT, if out.stream { EVENT_STREAM } else { JSON });
        for (k, v) in out.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(key) = out.api_key {
            req = req.header(AUTHORIZATION, format!("Bearer {key}"));
        }
        let mut cfg = req
            .config()
            .timeout_connect(Some(t.connect))
            .timeout_per_call(t.per_call)
            .timeout_per_read(t.per_read)
            .timeout_recv_response(t.head);
        if loopback {
            cfg = cfg.proxy(None);
        }
        let response = cfg
            .build()
            .send(&out.body[..])
            .map_err(|e| transport_failure(&e))?;
        let heads = WantedHeaders::of(response.headers());
        let content_type = text(heads.content_type);
        let retry_after = text(heads.retry_after);
        let resets = heads.resets.into_iter().filter_map(text).collect();
        // Header names arrive lower-cased; only the rate-limit ones are read further.
        let rate = crate::providers::quota::read_headers(
            response
                .headers()
                .iter()
                .filter(|(k, _)| k.as_str().contains("ratelimit"))
                .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))),
            crate::time::now_ms(),
        );
        let status = response.status().as_u16();
        let reader = response.into_body().into_reader();
        // A whole answer is read with a small buffer that grows, and every read through
        // ureq's body reader costs about as much as a small answer's parse; buffered, a small
        // answer is one read. A stream's reads are larger than the buffer and bypass it.
        let body: Box<dyn std::io::Read + Send> = if out.stream {
            Box::new(reader)
        } else {
            Box::new(std::io::BufReader::with_capacity(SMALL_ANSWER, reader))
        };
        Ok(Incoming {
            status,
            content_type,
            retry_after,
            resets,
            rate,
            body,
        })
    }
}

/// A whole answer this size or smaller is read from ureq in one call (small enough for the
/// allocator's per-thread cache).
const SMALL_ANSWER: usize = 1024;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// The response headers an [`Incoming`] carries, each its first value, found in one pass
/// over the headers (a lookup per name hashed each name again).
#[derive(Default)]
struct WantedHeaders<'h> {
    content_type: Option<&'h HeaderValue>,
    retry_after: Option<&'h HeaderValue>,
    /// In the order of [`RESET_HEADERS`].
    resets: [Option<&'h HeaderValue>; RESET_HEADERS.len()],
}

impl<'h> WantedHeaders<'h> {
    fn of(headers: &'h HeaderMap) -> WantedHeaders<'h> {
        let mut wanted = WantedHeaders::default();
        for (name, value) in headers {
            let slot = match name.as_str() {
                "content-type" => &mut wanted.content_type,
                "retry-after" => &mut wanted.retry_after,
                other => match RESET_HEADERS.iter().position(|h| *h == other) {
                    Some(i) => &mut wanted.resets[i],
                    None => continue,
                },
            };
            slot.get_or_insert(value);
        }
        wanted
    }
}

/// A header's value as text, when it is visible ASCII.
fn text(value: Option<&HeaderValue>) -> Option<String> {
    value.and_then(|v| v.to_str().ok()).map(str::to_string)
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")
}

/// Maps a client error to a transport failure and a message that carries no secrets.
pub fn transport_failure(e: &ureq::Error) -> (TransportFailure, String) {
    let kind = match e {
        ureq::Error::Timeout(_) => TransportFailure::Timeout,
        ureq::Error::HostNotFound | ureq::Error::BadUri(_) => TransportFailure::DnsFailure,
        ureq::Error::Io(io) => return io_failure(io),
        _ => TransportFailure::Connection,
    };
    (kind, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wanted_headers_are_found_in_one_pass_first_value_first() {
        let mut headers = HeaderMap::new();
        for (k, v) in [
            ("x-ratelimit-reset-tokens", "7s"),
            ("Content-Type", "application/json"),
            ("retry-after", "3"),
            ("retry-after", "9"),
            ("x-other", "1"),
            ("x-ratelimit-reset-requests", "2s"),
            ("ratelimit-reset", "bad\u{7f}"),
        ] {
            headers.append(
                ureq::http::HeaderName::try_from(k).unwrap(),
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("x")),
            );
        }
        headers.insert("ratelimit-reset", HeaderValue::from_bytes(b"\xff").unwrap());
        let wanted = WantedHeaders::of(&headers);
        assert_eq!(
            text(wanted.content_type).as_deref(),
            Some("application/json")
        );
        assert_eq!(text(wanted.retry_after).as_deref(), Some("3"));
        let resets: Vec<String> = wanted.resets.into_iter().filter_map(text).collect();
        assert_eq!(
            resets,
            ["2s", "7s"],
            "in RESET_HEADERS order; not visible ASCII left out"
        );
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback("http://127.0.0.1:5/v1/chat/completions"));
        assert!(is_loopback("http://localhost:8080/x"));
        assert!(is_loopback("http://[::1]:9/x"));
        assert!(!is_loopback("https://api.groq.com/openai/v1"));
        assert!(!is_loopback("https://127.example.com@evil.test/"));
    }
}
