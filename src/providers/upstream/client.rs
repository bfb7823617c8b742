//! The HTTP/1.1 client under [`super::Upstream`]: idle connections kept per thread group and
//! reused, new ones opened through ureq's connector chain (a CONNECT proxy when the
//! environment names one, fcm's TCP link, rustls), a request written and its answer's head
//! read with the deadlines fcm asks for, and the body handed on as a reader that puts its
//! connection back once the body has been read to its end.
//!
//! The framing itself is [`super::http1`]'s; what a connection is, ureq's [`Transport`].

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::Resolver;
use ureq::unversioned::transport::{
    time, ConnectionDetails, NextTimeout, ShutdownHandle, Transport,
};
use ureq::Timeout;

use super::http1::{self, Framing, Head, WireError};
use crate::providers::exchange::ExchangeTimeouts;
use crate::providers::resolve::CachedResolver;

/// An idle connection older than this is closed rather than reused (providers close theirs
/// after 5 to 60 s; ureq's own default is 15 s).
const MAX_IDLE_AGE: Duration = Duration::from_secs(15);

/// Opens a connection for a [`ConnectionDetails`] (also how a CONNECT proxy's own
/// connection is opened).
pub(super) type Connect =
    Arc<dyn Fn(&ConnectionDetails) -> Result<Box<dyn Transport>, ureq::Error> + Send + Sync>;

type Register = Arc<dyn Fn(Weak<dyn ShutdownHandle>) -> Result<(), ureq::Error> + Send + Sync>;

/// The connections of one client: idle ones to reuse, and a handle to every open one so
/// that [`Client::shutdown`] can interrupt calls in flight.
pub(super) struct Client {
    /// With the proxy the environment names, if any.
    config: Config,
    /// Loopback providers are called directly, whatever the environment says.
    direct: Config,
    resolver: CachedResolver,
    connect: Connect,
    register: Register,
    /// A handle to every connection opened, to interrupt it at [`Client::shutdown`].
    handles: Arc<Mutex<Vec<Weak<dyn ShutdownHandle>>>>,
    /// Set by [`Client::shutdown`]: no connection is opened or kept after it.
    closed: Arc<AtomicBool>,
    /// Idle connections, one list per group of threads (see [`super::shard`]).
    idle: Box<[Arc<Shard>]>,
}

/// One group of threads' idle connections, most recently used last. A body holds its
/// shard, not the client: every answer's clone and drop of one counter shared by all
/// threads bounced its cache line between the cores.
struct Shard {
    list: Mutex<Vec<Idle>>,
    /// At most this many idle connections.
    max: usize,
    /// The client's [`Client::closed`].
    closed: Arc<AtomicBool>,
}

struct Idle {
    origin: Arc<str>,
    since: Instant,
    link: Box<dyn Transport>,
}

/// Where a URL's requests go: parsed once per thread for as long as the thread calls the
/// same URL (a proxy's calls mostly go to one).
pub(super) struct Target {
    url: String,
    uri: Uri,
    /// `scheme://authority`, and whether it is called without a proxy: which idle
    /// connections serve it.
    origin: Arc<str>,
    direct: bool,
    host: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, ureq::Error> {
        let uri: Uri = url
            .parse()
            .map_err(|_| ureq::Error::BadUri(format!("{url:?} is not a URL")))?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(ureq::Error::BadUri(format!(
                "{url:?} has no scheme or host"
            )));
        };
        if scheme != "http" && scheme != "https" {
            return Err(ureq::Error::BadUri(format!("{url:?} is not http or https")));
        }
        let host = authority
            .as_str()
            .rsplit_once('@')
            .map_or(authority.as_str(), |(_, h)| h)
            .to_string();
        let direct = is_loopback(authority.host());
        let origin = format!("{}{scheme}://{host}", if direct { "direct " } else { "" });
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
        Ok(Target {
            url: url.to_string(),
            origin: origin.into(),
            direct,
            host,
            path: if path.is_empty() { "/".into() } else { path },
            uri,
        })
    }

    /// The request line's target: path and query.
    pub(super) fn path(&self) -> &str {
        &self.path
    }

    /// The `Host` header's value.
    pub(super) fn host(&self) -> &str {
        &self.host
    }

    /// This thread's last target when it is for `url`, else `url` parsed.
    pub(super) fn of(url: &str) -> Result<Arc<Target>, ureq::Error> {
        thread_local! {
            static LAST: std::cell::RefCell<Option<Arc<Target>>> = const { std::cell::RefCell::new(None) };
        }
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            match &*last {
                Some(t) if t.url == url => Ok(t.clone()),
                _ => {
                    let t = Arc::new(Target::parse(url)?);
                    *last = Some(t.clone());
                    Ok(t)
                }
            }
        })
    }
}

fn is_loopback(host: &str) -> bool {
    host.starts_with("127.") || host == "localhost" || host == "[::1]"
}

/// The deadlines of one exchange, as ureq's [`NextTimeout`]s for each wait.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    call_ends: Option<Instant>,
    per_read: Option<Duration>,
    /// Connection and TLS setup may take this long.
    connect: Duration,
    /// The answer's head must arrive within this of the request's sending.
    head: Option<Duration>,
}

impl Clock {
    pub(super) fn new(started: Instant, t: &ExchangeTimeouts) -> Clock {
        Clock {
            call_ends: t.per_call.map(|d| started + d),
            per_read: t.per_read,
            connect: t.connect,
            head: t.head,
        }
    }

    /// The wait allowed now: the call's deadline or `also`'s, whichever is sooner.
    fn next(&self, also: Option<(Instant, Timeout)>) -> NextTimeout {
        let now = Instant::now();
        let mut next = NextTimeout {
            per_read: self.per_read.map(Into::into),
            ..NextTimeout::default()
        };
        let ends = [self.call_ends.map(|e| (e, Timeout::PerCall)), also];
        for (end, reason) in ends.into_iter().flatten() {
            let left = end.saturating_duration_since(now);
            if next.after.is_not_happening() || left < *next.after {
                next.after = left.into();
                next.reason = reason;
            }
        }
        next
    }
}

impl Client {
    pub(super) fn new(
        config: Config,
        direct: Config,
        resolver: CachedResolver,
        connect: Connect,
        shards: usize,
        idle_max: usize,
    ) -> Client {
        let handles: Arc<Mutex<Vec<Weak<dyn ShutdownHandle>>>> = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(&handles);
        let shut = closed.clone();
        let register: Register = Arc::new(move |handle| {
            let Some(handles) = weak.upgrade() else {
                return Ok(());
            };
            let mut open = handles.lock().unwrap_or_else(|e| e.into_inner());
            // Read under the lock that shutdown takes after setting it: a connection is
            // either refused here or in the list it interrupts.
            if shut.load(Ordering::Acquire) {
                return Err(ureq::Error::Io(io::Error::other(
                    "the client was shut down",
                )));
            }
            if open.len() >= 64 && open.len().is_power_of_two() {
                open.retain(|w| w.strong_count() > 0);
            }
            open.push(handle);
            Ok(())
        });
        Client {
            config,
            direct,
            resolver,
            connect,
            register,
            handles,
            closed: closed.clone(),
            idle: (0..shards)
                .map(|_| {
                    Arc::new(Shard {
                        list: Mutex::new(Vec::new()),
                        max: (idle_max / shards).max(1),
                        closed: closed.clone(),
                    })
                })
                .collect(),
        }
    }

    /// Sends `request` (a whole POST, see [`http1::post`]) to `target` and reads the
    /// answer's head; the body is left to the returned reader. A request that fails on a
    /// reused connection before a byte of an answer arrived (the provider closed it while
    /// idle: the request never reached a model) is sent once more on a new connection.
    pub(super) fn exchange(
        &self,
        shard: usize,
        target: &Target,
        request: &[u8],
        clock: Clock,
        mut each: impl FnMut(&str, &[u8]),
    ) -> Result<(u16, Body), Failure> {
        let (mut link, mut reused) = self
            .checkout(shard, target, clock.connect)
            .map_err(Failure::NotConnected)?;
        let head = loop {
            match head_of(&mut *link, request, clock, &mut each) {
                Ok(head) => break head,
                // Not after a shutdown: a cancelled call (a race's loser) stays cancelled.
                Err(Missed::Unanswered(_)) if reused && !self.closed.load(Ordering::Acquire) => {
                    STALE_RETRIES.fetch_add(1, Ordering::Relaxed);
                    link = self
                        .open(target, clock.connect)
                        .map_err(Failure::NotConnected)?;
                    reused = false;
                }
                Err(Missed::Unanswered(f) | Missed::Failed(f)) => return Err(f),
            }
        };
        link.buffers().input_consume(head.len);
        let body = Body {
            link: Some(link),
            framing: head.framing,
            reusable: head.reusable,
            clock,
            back: Some((
                self.idle[shard % self.idle.len()].clone(),
                target.origin.clone(),
            )),
        };
        Ok((head.status, body))
    }

    /// An idle connection to `target`'s origin that is still open (`true`: reused), else a
    /// new one.
    fn checkout(
        &self,
        shard: usize,
        target: &Target,
        connect: Duration,
    ) -> Result<(Box<dyn Transport>, bool), ureq::Error> {
        let list = &self.idle[shard % self.idle.len()].list;
        loop {
            let found = {
                let mut list = list.lock().unwrap_or_else(|e| e.into_inner());
                let at = list.iter().rposition(|i| same(&i.origin, &target.origin));
                at.map(|at| list.remove(at))
            };
            match found {
                Some(mut idle) => {
                    if idle.since.elapsed() < MAX_IDLE_AGE && idle.link.is_open() {
                        return Ok((idle.link, true));
                    }
                }
                None => return Ok((self.open(target, connect)?, false)),
            }
        }
    }

    /// Opens a connection as ureq does: the name looked up unless a proxy will, then the
    /// connector chain.
    fn open(&self, target: &Target, connect: Duration) -> Result<Box<dyn Transport>, ureq::Error> {
        let config = if target.direct {
            &self.direct
        } else {
            &self.config
        };
        let timeout = NextTimeout {
            after: connect.into(),
            reason: Timeout::Connect,
            ..NextTimeout::default()
        };
        let proxied = config
            .proxy()
            .is_some_and(|p| !p.is_no_proxy(&target.uri) && !p.resolve_target());
        let addrs = if proxied {
            self.resolver.empty()
        } else {
            self.resolver.resolve(&target.uri, config, timeout)?
        };
        let details = ConnectionDetails {
            uri: &target.uri,
            addrs,
            config,
            request_level: false,
            resolver: &self.resolver,
            now: time::Instant::now(),
            timeout,
            current_time: Arc::new(time::Instant::now),
            run_connector: self.connect.clone(),
            register_shutdown: self.register.clone(),
        };
        let link = (self.connect)(&details)?;
        if details.needs_tls() && !link.is_tls() {
            return Err(ureq::Error::TlsRequired);
        }
        Ok(link)
    }

    /// Closes every connection, idle or in use, and refuses new ones.
    pub(super) fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        let open = std::mem::take(&mut *self.handles.lock().unwrap_or_else(|e| e.into_inner()));
        for shard in self.idle.iter() {
            let idle = std::mem::take(&mut *shard.list.lock().unwrap_or_else(|e| e.into_inner()));
            drop(idle);
        }
        for handle in open.iter().filter_map(Weak::upgrade) {
            handle.shutdown();
        }
    }
}

impl Shard {
    /// Keeps a connection whose answer was read to its end for the next call.
    fn give_back(&self, origin: Arc<str>, link: Box<dyn Transport>) {
        let mut dropped = Vec::new();
        {
            let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            while list.len() >= self.max
                || list
                    .first()
                    .is_some_and(|i| i.since.elapsed() >= MAX_IDLE_AGE)
            {
                dropped.push(list.remove(0));
            }
            list.push(Idle {
                origin,
                since: Instant::now(),
                link,
            });
        }
        drop(dropped);
    }
}

fn same(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || a == b
}

/// Writes `request` through the link's output buffer (the link holds it until the answer
/// is awaited, so a small request leaves in one write).
fn send(link: &mut dyn Transport, request: &[u8], clock: Clock) -> Result<(), ureq::Error> {
    let mut rest = request;
    while !rest.is_empty() {
        let out = link.buffers().output();
        let n = out.len().min(rest.len());
        out[..n].copy_from_slice(&rest[..n]);
        let mut timeout = clock.next(None);
        if timeout.reason == Timeout::PerCall {
            timeout.reason = Timeout::SendRequest;
        }
        link.transmit_output(n, timeout)?;
        rest = &rest[n..];
    }
    Ok(())
}

/// Interim (1xx) answers taken before the final one, at most, and their bytes: a provider
/// that sends more is refused (their headers are never kept).
const MAX_INTERIM: usize = 8;
const MAX_INTERIM_BYTES: usize = 16 * 1024;

/// Requests sent again on a new connection after a reused one failed before answering.
static STALE_RETRIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many requests were sent again on a new connection because a reused one had been
/// closed by the provider before answering (`fcm_upstream_stale_retries_total`).
pub(crate) fn stale_retries() -> u64 {
    STALE_RETRIES.load(Ordering::Relaxed)
}

/// How one try of an exchange failed.
enum Missed {
    /// Before a byte of an answer arrived: the connection was closed or reset under the
    /// request (no model began to answer it).
    Unanswered(Failure),
    /// Anything else: a timeout, an answer that is not HTTP.
    Failed(Failure),
}

/// Sends `request` on `link` and reads the final answer's head (interim answers skipped,
/// within [`MAX_INTERIM`] and [`MAX_INTERIM_BYTES`]).
fn head_of(
    link: &mut dyn Transport,
    request: &[u8],
    clock: Clock,
    each: &mut impl FnMut(&str, &[u8]),
) -> Result<Head, Missed> {
    if let Err(e) = send(link, request, clock) {
        return Err(if closed_under_us(&e) {
            Missed::Unanswered(e.into())
        } else {
            Missed::Failed(e.into())
        });
    }
    let head_ends = clock
        .head
        .map(|h| (Instant::now() + h, Timeout::RecvResponse));
    let (mut interim, mut interim_bytes) = (0, 0);
    loop {
        let parsed = http1::parse_head(link.buffers().input(), &mut *each)
            .map_err(|e| Missed::Failed(e.into()))?;
        match parsed {
            Some(Head { status, len, .. }) if http1::is_interim(status) => {
                interim += 1;
                interim_bytes += len;
                if interim > MAX_INTERIM || interim_bytes > MAX_INTERIM_BYTES {
                    return Err(Missed::Failed(
                        WireError(format!(
                            "the provider sent more than {MAX_INTERIM} interim (1xx) answers or {} KiB of them",
                            MAX_INTERIM_BYTES / 1024
                        ))
                        .into(),
                    ));
                }
                link.buffers().input_consume(len);
            }
            Some(head) => return Ok(head),
            None => {
                let nothing_yet = interim == 0 && link.buffers().input().is_empty();
                if link.buffers().input_append_buf().is_empty() {
                    return Err(Missed::Failed(
                        WireError(
                            "the provider's response head is larger than the read buffer".into(),
                        )
                        .into(),
                    ));
                }
                match link.await_input(clock.next(head_ends)) {
                    Ok(true) => {}
                    Ok(false) => {
                        let f =
                            WireError("the provider closed the connection before answering".into())
                                .into();
                        return Err(if nothing_yet {
                            Missed::Unanswered(f)
                        } else {
                            Missed::Failed(f)
                        });
                    }
                    Err(e) if nothing_yet && closed_under_us(&e) => {
                        return Err(Missed::Unanswered(e.into()))
                    }
                    Err(e) => return Err(Missed::Failed(e.into())),
                }
            }
        }
    }
}

/// Whether an error says the provider closed or reset the connection (not a timeout).
fn closed_under_us(e: &ureq::Error) -> bool {
    use io::ErrorKind::*;
    matches!(e, ureq::Error::Io(io) if matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof))
}

/// Why an exchange failed: the connection's error, or an answer that is not HTTP.
pub(super) enum Failure {
    Transport(ureq::Error),
    Wire(WireError),
    /// No connection could be made: nothing was sent.
    NotConnected(ureq::Error),
}

impl From<ureq::Error> for Failure {
    fn from(e: ureq::Error) -> Failure {
        Failure::Transport(e)
    }
}

impl From<WireError> for Failure {
    fn from(e: WireError) -> Failure {
        Failure::Wire(e)
    }
}

/// An answer's body as it arrives. Read to its end, its connection goes back to the
/// client for the next call; dropped before, the connection is closed.
pub(super) struct Body {
    link: Option<Box<dyn Transport>>,
    framing: Framing,
    reusable: bool,
    clock: Clock,
    back: Option<(Arc<Shard>, Arc<str>)>,
}

impl Body {
    /// Reads more from the connection: `false` at its close.
    fn fill(&mut self) -> io::Result<bool> {
        let link = self.link.as_mut().expect("a body being read has its link");
        link.await_input(self.clock.next(None))
            .map_err(|e| match e {
                ureq::Error::Io(e) => e,
                ureq::Error::Timeout(_) => io::Error::new(io::ErrorKind::TimedOut, e.to_string()),
                e => io::Error::other(e.to_string()),
            })
    }

    /// The body has ended: its connection goes back when nothing follows it.
    fn end(&mut self) {
        let Some(mut link) = self.link.take() else {
            return;
        };
        if let (true, Some((shard, origin))) = (self.reusable, self.back.take()) {
            if super::idle::nothing_waits(&mut *link) {
                shard.give_back(origin, link);
            }
        }
    }
}

fn cut_short() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the provider closed the connection before the answer's end",
    )
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(link) = self.link.as_mut() else {
                return Ok(0);
            };
            let input = link.buffers().input();
            match &mut self.framing {
                Framing::Length(0) => {
                    self.end();
                    return Ok(0);
                }
                Framing::Length(left) => {
                    if input.is_empty() {
                        if !self.fill()? {
                            self.link = None;
                            return Err(cut_short());
                        }
                        continue;
                    }
                    let n = (*left).min(input.len() as u64).min(buf.len() as u64) as usize;
                    buf[..n].copy_from_slice(&input[..n]);
                    link.buffers().input_consume(n);
                    *left -= n as u64;
                    if *left == 0 {
                        self.end();
                    }
                    return Ok(n);
                }
                Framing::Chunked(chunks) => {
                    let (used, made) = chunks
                        .decode(input, buf)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.0))?;
                    link.buffers().input_consume(used);
                    if *chunks == http1::Chunked::Done {
                        self.end();
                    }
                    if made > 0 || self.link.is_none() {
                        return Ok(made);
                    }
                    if !self.fill()? {
                        self.link = None;
                        return Err(cut_short());
                    }
                }
                Framing::Close => {
                    if input.is_empty() {
                        if !self.fill()? {
                            self.link = None;
                            return Ok(0);
                        }
                        continue;
                    }
                    let n = input.len().min(buf.len());
                    buf[..n].copy_from_slice(&input[..n]);
                    link.buffers().input_consume(n);
                    return Ok(n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_its_origin_host_header_and_path() {
        let t = Target::parse("https://user:pw@api.example.com:8443/v1/chat?x=1").unwrap();
        assert_eq!(&*t.origin, "https://api.example.com:8443");
        assert_eq!(
            (t.host.as_str(), t.path.as_str(), t.direct),
            ("api.example.com:8443", "/v1/chat?x=1", false)
        );
        let t = Target::parse("http://127.0.0.1:9/v1").unwrap();
        assert_eq!((&*t.origin, t.direct), ("direct http://127.0.0.1:9", true));
        let t = Target::parse("http://localhost:9").unwrap();
        assert_eq!((t.path.as_str(), t.direct), ("/", true));
        assert!(Target::parse("http://[::1]:9/x").unwrap().direct);
        assert!(
            !Target::parse("https://api.groq.com/openai/v1")
                .unwrap()
                .direct
        );
        assert!(
            !Target::parse("https://127.example.com@evil.test/")
                .unwrap()
                .direct,
            "the host is what follows the user part"
        );
        for bad in ["ftp://x/y", "/v1/chat", "not a url"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_sooner_deadline_and_its_reason_are_given() {
        let now = Instant::now();
        let timeouts = |per_call, per_read| ExchangeTimeouts {
            connect: Duration::from_secs(1),
            per_call,
            per_read,
            head: None,
        };
        let secs = |s| Some(Duration::from_secs(s));
        let clock = Clock::new(now, &timeouts(secs(60), secs(5)));
        let t = clock.next(None);
        assert_eq!(
            (t.reason, t.per_read),
            (Timeout::PerCall, Some(Duration::from_secs(5).into()))
        );
        assert!(*t.after <= Duration::from_secs(60) && *t.after > Duration::from_secs(59));
        let t = clock.next(Some((now + Duration::from_secs(2), Timeout::RecvResponse)));
        assert_eq!(t.reason, Timeout::RecvResponse);
        let none = Clock::new(now, &timeouts(None, None)).next(None);
        assert!(none.after.is_not_happening());
        let past = Clock::new(now - Duration::from_secs(9), &timeouts(secs(1), None));
        assert!(past.next(None).after.is_zero());
    }
}
