//! Saving a running server's state: breakers, history, conversations, the provider state
//! they carry and the usage ledger reach the disk
//! debounced (at most one write per file every 2 s, within 3 s of the last change even
//! when traffic stops, and once more at shutdown).
//!
//! Where a running server listens (`serve.json`) is [`serve_info`](super::serve_info)'s.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::state::affinity::Affinity;
use crate::state::breaker::Breakers;
use crate::state::carry_file::CarryFile;
use crate::state::files;
use crate::state::ledger::Ledger;
use crate::state::trace::History;

/// Minimum time between two writes of one state file.
pub const MIN_WRITE_GAP: Duration = Duration::from_secs(2);
/// How often the flusher looks for changes.
const TICK: Duration = Duration::from_millis(250);

/// Writes made so far, reported by `/health` (lets tests check the debounce).
#[derive(Debug, Default)]
pub struct WriteCounts {
    pub breakers: AtomicU64,
    pub history: AtomicU64,
    pub usage: AtomicU64,
    pub affinity: AtomicU64,
    pub carry: AtomicU64,
}

/// Where a server's state files are.
#[derive(Debug, Clone)]
pub struct StatePaths {
    pub breakers: PathBuf,
    pub history: PathBuf,
    pub usage: PathBuf,
    pub affinity: PathBuf,
    pub carry: PathBuf,
}

/// Writes one snapshot; on failure warns and calls `retry` so the change is saved later.
fn save<T: Serialize>(
    snapshot: Option<T>,
    path: &Path,
    count: &AtomicU64,
    retry: impl FnOnce(),
) -> bool {
    let Some(value) = snapshot else { return true };
    match files::write_json_atomic(path, &value) {
        Ok(()) => {
            count.fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(e) => {
            retry();
            eprintln!("fcm serve: warning: {}", with_causes(&e));
            false
        }
    }
}

/// An error and its causes joined by ": ", the way commands print errors, so the warning
/// says why the file could not be written and not only which one.
pub(crate) fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Writes dirty state now, and merges the usage ledger with `usage.json` (what this server
/// spent goes in, what a bench or check spent meanwhile comes back). Returns false when a
/// write failed (the state stays dirty).
pub fn flush(app: &impl StateSource, paths: &StatePaths) -> bool {
    let (breakers, history, counts) = (app.breakers(), app.history(), app.writes());
    let usage = match app.ledger().sync(&paths.usage, crate::time::now_ms()) {
        Ok(wrote) => {
            if wrote {
                counts.usage.fetch_add(1, Ordering::Relaxed);
            }
            true
        }
        Err(e) => {
            eprintln!("fcm serve: warning: {}", with_causes(&e));
            false
        }
    };
    let b = save(
        breakers.take_dirty(),
        &paths.breakers,
        &counts.breakers,
        || breakers.mark_dirty(),
    );
    let h = save(
        history.take_dirty(),
        &paths.history,
        &counts.history,
        || history.mark_dirty(),
    );
    let a = match app.affinity() {
        Some(affinity) => save(
            affinity.take_dirty(),
            &paths.affinity,
            &counts.affinity,
            || affinity.mark_dirty(),
        ),
        None => true,
    };
    let c = save(app.carry_to_save(), &paths.carry, &counts.carry, || {
        app.carry_unsaved()
    });
    b && h && a && c && usage
}

/// How often freed heap memory is handed back to the system.
const TRIM_EVERY: Duration = Duration::from_secs(10);

/// Returns memory freed after a burst of requests to the system (glibc keeps it otherwise).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages; it is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What the flusher saves: a running server's breakers and history, and where it counts
/// its writes. The server implements it, so this module needs nothing of the server's.
pub(crate) trait StateSource: Send + Sync + 'static {
    fn breakers(&self) -> &Breakers;
    fn history(&self) -> &History;
    fn ledger(&self) -> &Ledger;
    /// The conversations held (`None`: affinity is off).
    fn affinity(&self) -> Option<&Affinity>;
    /// The provider state conversations carry, when it changed since the last save, its
    /// secrets taken out.
    fn carry_to_save(&self) -> Option<CarryFile>;
    /// That save failed: try again next time.
    fn carry_unsaved(&self);
    fn writes(&self) -> &WriteCounts;
}

/// A background thread that flushes at most every [`MIN_WRITE_GAP`] (and trims the heap).
pub struct Flusher {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Flusher {
    pub fn start(app: Arc<impl StateSource>, paths: StatePaths) -> Flusher {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("fcm-flush".into())
            .spawn(move || {
                let mut last_write: Option<Instant> = None;
                let mut last_trim = Instant::now();
                while !s.load(Ordering::Acquire) {
                    std::thread::sleep(TICK);
                    if last_trim.elapsed() >= TRIM_EVERY {
                        last_trim = Instant::now();
                        release_free_memory();
                    }
                    if last_write.is_some_and(|t| t.elapsed() < MIN_WRITE_GAP) {
                        continue;
                    }
                    let writes = app.writes();
                    let total = || {
                        writes.breakers.load(Ordering::Relaxed)
                            + writes.history.load(Ordering::Relaxed)
                            + writes.usage.load(Ordering::Relaxed)
                            + writes.affinity.load(Ordering::Relaxed)
                            + writes.carry.load(Ordering::Relaxed)
                    };
                    let before = total();
                    flush(&*app, &paths);
                    let after = total();
                    if after != before {
                        last_write = Some(Instant::now());
                    }
                }
            })
            .ok();
        Flusher { stop, handle }
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
