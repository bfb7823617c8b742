//! The request log: one line per finished request on stderr (unless `--quiet`), gathered
//! and written in batches by a thread of its own. Under load, a write per request was 3% of
//! the server's CPU (a system call, and a queue of connection threads at stderr's lock);
//! batched, a line reaches stderr within [`GATHER`] of its request's end, and every line
//! is written before the server returns from [`flush`].

use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

/// How long the writer waits after a line arrives, so that the lines of a burst of requests
/// leave in one write.
const GATHER: Duration = Duration::from_millis(10);

struct Log {
    pending: Mutex<Vec<u8>>,
    arrived: Condvar,
    /// Held while a batch is written, so that batches reach stderr in order.
    writing: Mutex<()>,
    /// Whether the writer thread runs; without it lines are written at once.
    writer: bool,
}

static LOG: OnceLock<Log> = OnceLock::new();

fn log() -> &'static Log {
    LOG.get_or_init(|| {
        let writer = std::thread::Builder::new()
            .name("fcm-log".into())
            .stack_size(64 * 1024)
            .spawn(write_batches)
            .is_ok();
        Log {
            pending: Mutex::new(Vec::with_capacity(16 * 1024)),
            arrived: Condvar::new(),
            writing: Mutex::new(()),
            writer,
        }
    })
}

impl Log {
    fn pending(&self) -> MutexGuard<'_, Vec<u8>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Queues `line` (with its newline) for stderr.
pub(super) fn line(line: &str) {
    let log = log();
    if !log.writer {
        let _ = std::io::stderr().write_all(line.as_bytes());
        return;
    }
    let mut pending = log.pending();
    let first = pending.is_empty();
    pending.extend_from_slice(line.as_bytes());
    drop(pending);
    if first {
        log.arrived.notify_one();
    }
}

/// Writes every queued line now.
pub(super) fn flush() {
    if let Some(log) = LOG.get() {
        let _writing = log.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let batch = std::mem::take(&mut *log.pending());
        let _ = std::io::stderr().write_all(&batch);
    }
}

/// The writer thread: waits for a line, gathers what follows for [`GATHER`], writes it all.
fn write_batches() {
    let log = log();
    let mut batch = Vec::with_capacity(16 * 1024);
    loop {
        let mut pending = log.pending();
        while pending.is_empty() {
            pending = log
                .arrived
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(pending);
        std::thread::sleep(GATHER);
        let _writing = log.writing.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut batch, &mut *log.pending());
        let _ = std::io::stderr().write_all(&batch);
        batch.clear();
    }
}
