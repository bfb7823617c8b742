//! The TCP link under every provider call (TLS, when there is any, runs over it): ureq's own
//! TCP transport, minus the system calls it spends on each request of a pooled connection.
//! On the proxy's request path they were most of a call's system calls (13 of 16 for one
//! small request, by `strace`):
//! - a request's head and body left in two writes; here they wait and leave together when
//!   the answer is awaited (or once [`HOLD`] bytes are waiting), so a small request is one
//!   write and one TCP segment;
//! - each write and read set the socket's timeout anew, because ureq's timeouts count down
//!   from a deadline and so differ at every call; here a timeout is set again only when the
//!   one in force is more than [`TOLERANCE_DIVISOR`]th off what ureq asks for;
//! - checking that a pooled connection is still open (on its reuse) switched the socket to
//!   non-blocking, read and switched back; here it is one peek that does not wait (Unix;
//!   elsewhere as ureq does it).
//!
//! Its buffers ([`LinkBuffers`]) are ureq's less a churn: making room for a request body
//! shrank ureq's input buffer, which the next read zero-filled back (6 KiB a request).
//!
//! Connecting (each resolved address in turn within the connect budget) and cancelling (the
//! shutdown handle a race's losers are closed through) are ureq's, rewritten here only
//! because its transport's socket is private.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, NextTimeout, ShutdownHandle, Transport,
};
use ureq::{Error, Timeout};

/// Request bytes held back at most before they are written: a request with a body up to
/// this size leaves in one write with its head.
const HOLD: usize = 16 * 1024;
/// A socket timeout within 1/100 of the one ureq asks for is left as it is (30.000 s where
/// 29.998 s is asked, a moment later): a read or write may then end up to 1% early or late.
const TOLERANCE_DIVISOR: u32 = 100;
/// Each address of a name with several gets a share of the connect budget, at least this.
const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);

/// Opens a [`TcpLink`] unless an earlier connector in the chain (a CONNECT proxy) already
/// opened a connection.
#[derive(Debug, Default)]
pub(super) struct TcpLinkConnector;

impl<In: Transport> Connector<In> for TcpLinkConnector {
    type Out = Either<In, TcpLink>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, Error> {
        if chained.is_some() {
            return Ok(chained.map(Either::A));
        }
        let stream = connect(&details.addrs, details.timeout)?;
        let config = details.config;
        if config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let buffers = LinkBuffers::new(config.input_buffer_size(), config.output_buffer_size());
        let link = TcpLink::new(stream, buffers);
        let handle = Arc::downgrade(&link.stream) as Weak<dyn ShutdownHandle>;
        (details.register_shutdown)(handle)?;
        Ok(Some(Either::B(link)))
    }
}

/// Tries each address in turn, the first with half the budget, the next a quarter, ... (the
/// shares add up to the whole), as ureq does: an address family without a route fails at
/// once and the next address is tried.
fn connect(addrs: &[SocketAddr], budget: NextTimeout) -> Result<TcpStream, Error> {
    let started = Instant::now();
    let total = budget.not_zero().map(|t| *t);
    let mut last = None;
    for (i, addr) in addrs.iter().enumerate() {
        let share = total.map(|t| per_address(t, i, addrs.len()));
        let attempt = match share {
            Some(t) => TcpStream::connect_timeout(addr, t),
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                if total.is_some_and(|t| started.elapsed() > t) {
                    return Err(Error::Timeout(budget.reason));
                }
                last = Some(Error::Timeout(Timeout::Connect));
            }
            Err(e) if concerns_only_this_address(&e) => last = Some(Error::Io(e)),
            Err(e) => return Err(Error::Io(e)),
        }
    }
    Err(last.unwrap_or_else(|| Error::Io(io::ErrorKind::ConnectionRefused.into())))
}

/// Address `i` of `n`'s share of `total`: weights 1, 1/2, 1/4, ... scaled to add up to it.
fn per_address(total: Duration, i: usize, n: usize) -> Duration {
    let weights = 2.0 * (1.0 - 0.5_f64.powi(n as i32));
    let share = total.as_secs_f64() * 0.5_f64.powi(i as i32) / weights;
    Duration::from_millis((share * 1000.0) as u64).max(MIN_PER_ADDRESS)
}

/// A refusal, or no route to this address: the next one may work.
fn concerns_only_this_address(e: &io::Error) -> bool {
    // A VPN or firewall on Windows can refuse an address family as WSAEACCES.
    #[cfg(windows)]
    if e.raw_os_error() == Some(10013) {
        return true;
    }
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::NetworkDown
            | io::ErrorKind::AddrNotAvailable
    )
}

/// One TCP connection to a provider.
pub(super) struct TcpLink {
    /// Shared (weakly) with the shutdown handle that cancels a call in progress.
    stream: Arc<TcpStream>,
    buffers: LinkBuffers,
    /// Request bytes not written yet, and why a write of them would time out.
    unsent: Vec<u8>,
    unsent_reason: Timeout,
    /// The socket's timeouts as last set.
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl std::fmt::Debug for TcpLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpLink")
            .field("peer", &self.stream.peer_addr().ok())
            .finish()
    }
}

impl TcpLink {
    fn new(stream: TcpStream, buffers: LinkBuffers) -> TcpLink {
        TcpLink {
            stream: Arc::new(stream),
            buffers,
            unsent: Vec::new(),
            unsent_reason: Timeout::SendRequest,
            read_timeout: None,
            write_timeout: None,
        }
    }

    /// Writes the held request bytes.
    fn send_unsent(&mut self, timeout: NextTimeout) -> Result<(), Error> {
        let timeout = NextTimeout {
            reason: self.unsent_reason,
            ..timeout
        }
        .for_write();
        let wanted = due(timeout)?;
        let stream = &*self.stream;
        adjust(&mut self.write_timeout, wanted, |t| {
            stream.set_write_timeout(t)
        })?;
        let sent = (&*self.stream).write_all(&self.unsent);
        // A pooled connection keeps no large buffer.
        if self.unsent.capacity() > HOLD * 2 {
            self.unsent = Vec::new();
        } else {
            self.unsent.clear();
        }
        sent.map_err(|e| io_error(e, timeout.reason))
    }
}

impl Transport for TcpLink {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        due(timeout.for_write())?;
        self.unsent
            .extend_from_slice(&self.buffers.output()[..amount]);
        self.unsent_reason = timeout.reason;
        if self.unsent.len() >= HOLD {
            self.send_unsent(timeout)?;
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        if !self.unsent.is_empty() {
            self.send_unsent(timeout)?;
        }
        let timeout = timeout.for_read();
        let wanted = due(timeout)?;
        let TcpLink {
            stream,
            buffers,
            read_timeout,
            ..
        } = self;
        adjust(read_timeout, wanted, |t| stream.set_read_timeout(t))?;
        let started = Instant::now();
        let input = buffers.input_append_buf();
        let n = loop {
            match (&**stream).read(input) {
                // A signal ends a read that has a timeout (Linux does not restart it): read
                // again for what is left of the timeout.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    let Some(wanted) = wanted else {
                        return Err(e.into());
                    };
                    let left = wanted.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(Error::Timeout(timeout.reason));
                    }
                    stream.set_read_timeout(Some(left))?;
                    *read_timeout = Some(left);
                }
                result => break result.map_err(|e| io_error(e, timeout.reason))?,
            }
        };
        buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        still_open(&self.stream)
    }
}

/// A link's input and output buffers, allocated on first use and never shrunk: the input
/// holds what was read and not yet consumed, with room to read more (and scratch space for
/// a request body on its way out, which ureq borrows from it).
struct LinkBuffers {
    input: Vec<u8>,
    filled: usize,
    consumed: usize,
    output: Vec<u8>,
    input_size: usize,
    output_size: usize,
    /// Whether the last consume took anything (ureq reads again when it did not).
    progress: bool,
}

/// The scratch space ureq wants for a request body (its own buffers' figure).
const MIN_TMP: usize = 10 * 1024;

impl LinkBuffers {
    fn new(input_size: usize, output_size: usize) -> LinkBuffers {
        LinkBuffers {
            input: Vec::new(),
            filled: 0,
            consumed: 0,
            output: Vec::new(),
            input_size,
            output_size,
            progress: false,
        }
    }

    /// Moves unconsumed input to the front (all of it consumed: nothing to move), and
    /// grows the input to at least `size` bytes.
    fn make_room(&mut self, size: usize) {
        if self.consumed == self.filled {
            (self.consumed, self.filled) = (0, 0);
        } else if self.consumed > 0 && self.filled > self.input.len() / 2 {
            self.input.copy_within(self.consumed..self.filled, 0);
            self.filled -= self.consumed;
            self.consumed = 0;
        }
        if self.input.len() < size {
            self.input.resize(size, 0);
        }
    }
}

impl Buffers for LinkBuffers {
    fn output(&mut self) -> &mut [u8] {
        if self.output.len() < self.output_size {
            self.output.resize(self.output_size, 0);
        }
        &mut self.output
    }

    fn input(&self) -> &[u8] {
        &self.input[self.consumed..self.filled]
    }

    fn input_append_buf(&mut self) -> &mut [u8] {
        self.make_room(self.input_size);
        &mut self.input[self.filled..]
    }

    fn input_appended(&mut self, amount: usize) {
        self.filled += amount;
        assert!(self.filled <= self.input.len());
    }

    fn input_consume(&mut self, amount: usize) {
        self.progress = amount > 0;
        self.consumed += amount;
        assert!(self.consumed <= self.filled);
    }

    fn tmp_and_output(&mut self) -> (&mut [u8], &mut [u8]) {
        let wanted = (self.filled + MIN_TMP).max(self.input_size);
        self.make_room(wanted);
        if self.output.len() < self.output_size {
            self.output.resize(self.output_size, 0);
        }
        (&mut self.input[self.filled..], &mut self.output)
    }

    fn can_use_input(&self) -> bool {
        self.consumed < self.filled && self.progress
    }
}

/// The timeout to apply, or the error when none is left.
fn due(timeout: NextTimeout) -> Result<Option<Duration>, Error> {
    if timeout.after.is_zero() {
        return Err(Error::Timeout(timeout.reason));
    }
    Ok(timeout.not_zero().map(|t| *t))
}

/// Sets a socket timeout through `set` unless the one in force is within tolerance of
/// `wanted` (see [`TOLERANCE_DIVISOR`]).
fn adjust(
    applied: &mut Option<Duration>,
    wanted: Option<Duration>,
    set: impl FnOnce(Option<Duration>) -> io::Result<()>,
) -> io::Result<()> {
    let close_enough = match (*applied, wanted) {
        (Some(a), Some(w)) => a.abs_diff(w) <= w / TOLERANCE_DIVISOR,
        (a, w) => a == w,
    };
    if !close_enough {
        *applied = None;
        set(wanted)?;
        *applied = wanted;
    }
    Ok(())
}

/// A socket timeout is ureq's timeout error, with its reason; any other error is I/O.
fn io_error(e: io::Error, reason: Timeout) -> Error {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Error::Timeout(reason),
        _ => Error::Io(e),
    }
}

/// Whether an idle connection can carry another request: nothing to read yet (bytes nobody
/// asked for, or the peer's close, mean it cannot).
#[cfg(unix)]
fn still_open(stream: &TcpStream) -> bool {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    let peek = socket2::SockRef::from(stream)
        .recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT);
    matches!(peek, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// Whether an idle connection can carry another request (without a non-blocking peek:
/// switched to non-blocking for one read, as ureq does).
#[cfg(not(unix))]
fn still_open(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8];
    let idle =
        matches!((&*stream).read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).is_ok() && idle
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn the_connect_budget_is_shared_out_halving() {
        let ms = |i, n| per_address(Duration::from_secs(10), i, n).as_millis();
        assert_eq!(ms(0, 1), 10_000);
        assert_eq!((ms(0, 2), ms(1, 2)), (6_666, 3_333));
        assert_eq!(per_address(Duration::from_millis(1), 3, 4), MIN_PER_ADDRESS);
    }

    #[test]
    fn a_timeout_is_set_again_only_when_it_is_off_by_more_than_the_tolerance() {
        let mut applied = None;
        let mut sets = Vec::new();
        let secs = |s: f64| Some(Duration::from_secs_f64(s));
        for wanted in [secs(30.0), secs(29.99), secs(30.0), secs(29.0), None, None] {
            adjust(&mut applied, wanted, |t| {
                sets.push(t);
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(sets, [secs(30.0), secs(29.0), None]);
        assert_eq!(applied, None);
        // A failed set leaves nothing assumed.
        let mut applied = secs(5.0);
        let failed = adjust(
            &mut applied,
            secs(1.0),
            |_| Err(io::ErrorKind::Other.into()),
        );
        assert!(failed.is_err());
        assert_eq!(applied, None);
    }

    #[test]
    fn buffers_keep_unconsumed_input_and_make_room_without_shrinking() {
        let mut b = LinkBuffers::new(8, 4);
        assert_eq!(b.output().len(), 4);
        let room = b.input_append_buf();
        assert_eq!(room.len(), 8);
        room[..6].copy_from_slice(b"abcdef");
        b.input_appended(6);
        b.input_consume(4);
        assert_eq!(b.input(), b"ef");
        assert!(b.can_use_input());
        // More than half full: the unconsumed bytes move to the front.
        let room = b.input_append_buf().len();
        assert_eq!((b.input(), room), (&b"ef"[..], 6));
        let (tmp, out) = b.tmp_and_output();
        assert_eq!((tmp.len(), out.len()), (MIN_TMP, 4));
        assert_eq!(b.input(), b"ef");
        b.input_consume(2);
        assert!(!b.can_use_input());
        // Consumed: the buffer starts over, and keeps its size.
        assert_eq!(b.input_append_buf().len(), MIN_TMP + 2);
        b.input_consume(0);
        assert!(!b.can_use_input());
    }

    #[test]
    fn an_idle_connection_is_open_until_the_peer_writes_or_closes() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert!(still_open(&client));
        server.write_all(b"x").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while still_open(&client) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!still_open(&client), "unasked-for bytes");
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        drop(server);
        let deadline = Instant::now() + Duration::from_secs(5);
        while still_open(&client) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!still_open(&client), "closed by the peer");
    }
}
