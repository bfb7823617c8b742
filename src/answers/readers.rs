//! Threads that read upstream stream bodies, kept for reuse.
//!
//! Every stream has a thread reading its upstream body into a channel (so the stream can
//! wait with a timeout). Starting and ending a thread per stream costs more than the rest of
//! the stream's work on the proxy (stack mappings, and the TLB shootdowns their unmapping
//! makes every core do); so a finished reader parks for [`IDLE`] and the next stream's
//! read loop runs on it.

use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::Mutex;
use std::time::Duration;

/// How long a parked reader waits for another stream before it exits.
const IDLE: Duration = Duration::from_secs(30);
/// Stack of a reader thread: the read loop needs little.
const STACK: usize = 64 * 1024;

type Job = Box<dyn FnOnce() + Send>;

/// Parked readers, each with the channel that hands it its next job.
static PARKED: Mutex<Vec<(u64, SyncSender<Job>)>> = Mutex::new(Vec::new());

/// Runs `job` on a parked reader, or on a new one when none is parked.
pub(crate) fn run(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let mut job: Job = Box::new(job);
    loop {
        let parked = PARKED.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let Some((_, tx)) = parked else { break };
        match tx.send(job) {
            Ok(()) => return Ok(()),
            // That reader exited meanwhile: try the next one.
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    start(job)
}

fn start(first: Job) -> std::io::Result<()> {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::thread::Builder::new()
        .name("fcm-upstream-read".into())
        .stack_size(STACK)
        .spawn(move || {
            let (tx, rx) = mpsc::sync_channel::<Job>(1);
            let mut job = first;
            loop {
                job();
                PARKED
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((id, tx.clone()));
                job = match rx.recv_timeout(IDLE) {
                    Ok(next) => next,
                    Err(RecvTimeoutError::Timeout) => {
                        let mut parked = PARKED.lock().unwrap_or_else(|e| e.into_inner());
                        match parked.iter().position(|(p, _)| *p == id) {
                            Some(i) => {
                                parked.swap_remove(i);
                                return;
                            }
                            // Taken just now: its job is on the way.
                            None => {
                                drop(parked);
                                match rx.recv() {
                                    Ok(next) => next,
                                    Err(_) => return,
                                }
                            }
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                };
            }
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_and_readers_are_reused() {
        let (done_tx, done_rx) = mpsc::channel();
        for i in 0..4 {
            let done = done_tx.clone();
            run(move || {
                let _ = done.send((i, std::thread::current().id()));
            })
            .unwrap();
            // One at a time: each job finds the previous reader parked.
            let (n, _) = done_rx.recv_timeout(Duration::from_secs(5)).unwrap();
            assert_eq!(n, i);
            for _ in 0..100 {
                if !PARKED.lock().unwrap().is_empty() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        // Several at once each get a thread.
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let gate_rx = std::sync::Arc::new(Mutex::new(gate_rx));
        for i in 0..3 {
            let (done, gate) = (done_tx.clone(), gate_rx.clone());
            run(move || {
                let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(5));
                let _ = done.send((10 + i, std::thread::current().id()));
            })
            .unwrap();
        }
        for _ in 0..3 {
            gate_tx.send(()).unwrap();
        }
        let mut got: Vec<i32> = (0..3)
            .map(|_| done_rx.recv_timeout(Duration::from_secs(5)).unwrap().0)
            .collect();
        got.sort_unstable();
        assert_eq!(got, [10, 11, 12]);
    }
}
