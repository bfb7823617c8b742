//! The connection slots of `fcm serve`: how many connections are open, which of them may be
//! shed when the server is full (those without a request in progress, oldest first), and
//! the reader that holds a request to its deadline. A slow or silent client can hold a slot
//! only until a real request needs it.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The server's connections: how many are open, and which of them hold their slot without a
/// request in progress (waiting for a request head, or draining after a refusal), oldest
/// first. A full server sheds those rather than turn a new connection away.
#[derive(Default)]
pub struct Connections {
    open: AtomicUsize,
    standby: Mutex<Standby>,
}

#[derive(Default)]
struct Standby {
    next: u64,
    /// By when each went on standby (and a number, for ties): a handle to shut it down.
    waiting: BTreeMap<(Instant, u64), Arc<TcpStream>>,
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
        let oldest = self.standby().waiting.pop_first();
        match oldest {
            Some((_, stream)) => {
                let _ = stream.shutdown(Shutdown::Both);
                true
            }
            None => {
                self.open.fetch_sub(1, Ordering::AcqRel);
                false
            }
        }
    }

    fn enter_standby(&self, stream: &Arc<TcpStream>) -> (Instant, u64) {
        let mut standby = self.standby();
        standby.next += 1;
        let key = (Instant::now(), standby.next);
        standby.waiting.insert(key, stream.clone());
        key
    }

    /// False when the connection is no longer on standby: it was shed.
    fn leave_standby(&self, key: &(Instant, u64)) -> bool {
        self.standby().waiting.remove(key).is_some()
    }

    fn standby(&self) -> std::sync::MutexGuard<'_, Standby> {
        self.standby.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection's place among the server's [`Connections`] from accept to close (released when
/// dropped, panics included). It starts on standby: a connection that has sent nothing is
/// the first to be shed.
pub(crate) struct Slot {
    connections: Arc<Connections>,
    handle: Arc<TcpStream>,
    standby: Option<(Instant, u64)>,
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
        let mut slot = Slot {
            connections: connections.clone(),
            handle: Arc::new(handle),
            standby: None,
        };
        slot.stand_by();
        Some(slot)
    }

    /// The connection holds no request in progress: it may be shed.
    pub(crate) fn stand_by(&mut self) {
        if self.standby.is_none() {
            self.standby = Some(self.connections.enter_standby(&self.handle));
        }
    }

    /// A request is in progress: the connection keeps its slot. False when it was shed
    /// meanwhile (its socket is shut down; whatever it read is not to be acted on).
    pub(crate) fn leave_standby(&mut self) -> bool {
        self.standby
            .take()
            .is_none_or(|key| self.connections.leave_standby(&key))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(key) = self.standby.take() {
            self.connections.leave_standby(&key);
        }
        self.connections.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The reading side of a client connection. Between requests a read waits up to the idle
/// timeout; once a request has begun, each read waits only for what is left of the
/// request's deadline, so a client trickling bytes cannot stretch a request past it.
pub(crate) struct ClientReader {
    pub(crate) stream: TcpStream,
    pub(crate) deadline: Option<Instant>,
    pub(crate) idle: Duration,
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
        self.stream.set_read_timeout(Some(wait))?;
        self.stream.read(buf)
    }
}
