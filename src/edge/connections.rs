//! The connection slots of `fcm serve`: how many connections are open, which of them may be
//! shed when the server is full (those without a request in progress, oldest first), and
//! the reader that holds a request to its deadline. A slow or silent client can hold a slot
//! only until a real request needs it.
//!
//! A connection goes on standby and off it around every request, so those two steps are
//! one atomic operation each on the slot's own word; the shared list of slots is locked only
//! when a connection opens or closes, and when a full server looks for one to shed.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A slot's word: busy (a request in progress), shed, or on standby since a moment (its
/// nanoseconds since the server's start, plus one).
const BUSY: u64 = 0;
const SHED: u64 = u64::MAX;

/// The server's connections: how many are open, and every open one's slot, so that a full
/// server can shed the one longest on standby (waiting for a request head, or draining
/// after a refusal) rather than turn a new connection away.
pub struct Connections {
    open: AtomicUsize,
    started: Instant,
    slots: Mutex<Vec<Option<Arc<Shared>>>>,
}

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            open: AtomicUsize::new(0),
            started: Instant::now(),
            slots: Mutex::new(Vec::new()),
        }
    }
}

/// What the server knows of one connection: a handle to shut it down, and its word.
struct Shared {
    handle: TcpStream,
    state: AtomicU64,
}

impl Connections {
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Takes one of `limit` slots for a new connection. When all are taken, the connection
    /// longest on standby is shut down and its slot handed over (its thread ends at once);
    /// false when every slot has a request in progress.
    fn take_slot(&self, limit: usize) -> bool {
        if self.open.fetch_add(1, Ordering::AcqRel) < limit {
            return true;
        }
        if self.shed_oldest() {
            return true;
        }
        self.open.fetch_sub(1, Ordering::AcqRel);
        false
    }

    /// Sheds the connection longest on standby; false when none is.
    fn shed_oldest(&self) -> bool {
        let slots = self.slots();
        loop {
            let oldest = slots
                .iter()
                .flatten()
                .map(|s| (s.state.load(Ordering::Acquire), s))
                .filter(|(state, _)| *state != BUSY && *state != SHED)
                .min_by_key(|(state, _)| *state);
            let Some((since, slot)) = oldest else {
                return false;
            };
            // It may have left standby meanwhile: then look again.
            if slot
                .state
                .compare_exchange(since, SHED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let _ = slot.handle.shutdown(Shutdown::Both);
                return true;
            }
        }
    }

    fn register(&self, shared: Arc<Shared>) -> usize {
        let mut slots = self.slots();
        match slots.iter().position(Option::is_none) {
            Some(i) => {
                slots[i] = Some(shared);
                i
            }
            None => {
                slots.push(Some(shared));
                slots.len() - 1
            }
        }
    }

    fn release(&self, index: usize) {
        if let Some(slot) = self.slots().get_mut(index) {
            *slot = None;
        }
        self.open.fetch_sub(1, Ordering::AcqRel);
    }

    /// Now, as a standby word (never [`BUSY`] nor [`SHED`]).
    fn now(&self) -> u64 {
        let nanos = self.started.elapsed().as_nanos();
        u64::try_from(nanos).unwrap_or(SHED - 1).clamp(1, SHED - 1)
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Option<Arc<Shared>>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection's place among the server's [`Connections`] from accept to close (released when
/// dropped, panics included). It starts on standby: a connection that has sent nothing is
/// the first to be shed.
pub(crate) struct Slot {
    connections: Arc<Connections>,
    shared: Arc<Shared>,
    index: usize,
}

impl Slot {
    /// A slot for a new connection (`handle` shuts it down when it is shed) among `limit`,
    /// or `None` when every slot has a request in progress.
    pub(crate) fn take(
        connections: &Arc<Connections>,
        limit: usize,
        handle: TcpStream,
    ) -> Option<Slot> {
        if !connections.take_slot(limit) {
            return None;
        }
        let shared = Arc::new(Shared {
            handle,
            state: AtomicU64::new(connections.now()),
        });
        let index = connections.register(shared.clone());
        Some(Slot {
            connections: connections.clone(),
            shared,
            index,
        })
    }

    /// The connection holds no request in progress: it may be shed.
    pub(crate) fn stand_by(&mut self) {
        let now = self.connections.now();
        // Already on standby, or shed: left as it is.
        let _ = self
            .shared
            .state
            .compare_exchange(BUSY, now, Ordering::AcqRel, Ordering::Acquire);
    }

    /// A request is in progress: the connection keeps its slot. False when it was shed
    /// meanwhile (its socket is shut down; whatever it read is not to be acted on).
    pub(crate) fn leave_standby(&mut self) -> bool {
        self.shared
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                (state != SHED).then_some(BUSY)
            })
            .is_ok()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.release(self.index);
    }
}

/// The reading side of a client connection. Between requests a read waits up to the idle
/// timeout; once a request has begun, each read waits only for what is left of the
/// request's deadline, so a client trickling bytes cannot stretch a request past it.
pub(crate) struct ClientReader {
    stream: TcpStream,
    pub(crate) deadline: Option<Instant>,
    idle: Duration,
    /// The socket's read timeout as last set: between requests it is always the idle
    /// timeout, which is then not set again (a system call per request saved).
    applied: Option<Duration>,
}

impl ClientReader {
    pub(crate) fn new(stream: TcpStream, idle: Duration) -> ClientReader {
        ClientReader {
            stream,
            deadline: None,
            idle,
            applied: None,
        }
    }
}

impl Read for ClientReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let wait = match self.deadline {
            None => self.idle,
            Some(deadline) => deadline.saturating_duration_since(Instant::now()),
        };
        if wait.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        if self.applied != Some(wait) {
            self.applied = None;
            self.stream.set_read_timeout(Some(wait))?;
            self.applied = Some(wait);
        }
        self.stream.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A connected socket pair: the server's end (the slot's handle) and the client's.
    fn pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (server, client)
    }

    fn closed(mut client: &TcpStream) -> bool {
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        matches!(client.read(&mut [0u8; 1]), Ok(0) | Err(_))
    }

    #[test]
    fn a_full_server_sheds_the_connection_longest_on_standby_and_never_a_busy_one() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::default());
        let (a_end, a_client) = pair(&listener);
        let (b_end, _b_client) = pair(&listener);
        let mut a = Slot::take(&connections, 2, a_end).unwrap();
        let mut b = Slot::take(&connections, 2, b_end).unwrap();
        assert_eq!(connections.open(), 2);

        // Both wait for a request head; `a` has waited longest and makes room for `c`.
        let (c_end, c_client) = pair(&listener);
        let mut c = Slot::take(&connections, 2, c_end).unwrap();
        assert!(closed(&a_client), "the shed connection is shut down");
        assert!(
            !a.leave_standby(),
            "a shed connection acts on nothing it read"
        );
        assert!(b.leave_standby() && c.leave_standby());

        // Every slot has a request in progress: no room.
        let (d_end, _) = pair(&listener);
        assert!(Slot::take(&connections, 2, d_end).is_none());
        drop(a);
        assert_eq!(connections.open(), 2);
        let (d_end, _) = pair(&listener);
        assert!(Slot::take(&connections, 2, d_end).is_none());

        // Back on standby after its answer, `c` may be shed again; `b` may not.
        c.stand_by();
        let (d_end, _) = pair(&listener);
        let d = Slot::take(&connections, 2, d_end);
        assert!(d.is_some());
        assert!(closed(&c_client));
        assert!(!c.leave_standby());
        drop((b, c, d));
        assert_eq!(connections.open(), 0);
    }

    #[test]
    fn standing_by_twice_keeps_the_first_moment() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::default());
        let (old_end, old_client) = pair(&listener);
        let (new_end, new_client) = pair(&listener);
        let mut old = Slot::take(&connections, 2, old_end).unwrap();
        let _new = Slot::take(&connections, 2, new_end).unwrap();
        old.stand_by();
        let (end, _) = pair(&listener);
        let _third = Slot::take(&connections, 2, end).unwrap();
        assert!(closed(&old_client));
        new_client.set_nonblocking(true).unwrap();
        assert!(
            matches!((&new_client).read(&mut [0u8; 1]), Err(e) if e.kind() == io::ErrorKind::WouldBlock),
            "the newer connection is left alone"
        );
    }
}
