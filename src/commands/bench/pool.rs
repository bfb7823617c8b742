//! The bench's thread pool, and what a Ctrl-C does to it: no job starts after it, the jobs
//! in flight are cut short (the caller's `cancel` shuts their client down), and what a cut
//! job produced is dropped. Every job that finished before stays, so an interrupted bench
//! still has what it measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::{Context, Result};
use rayon::prelude::*;

/// How often the waiting thread looks for an interruption: a Ctrl-C cuts the jobs within
/// this.
const INTERRUPT_CHECK: Duration = Duration::from_millis(50);

/// What came of the jobs.
pub(super) struct Done<R> {
    /// Each finished job's result, in no particular order.
    pub(super) results: Vec<R>,
    /// The positions in `items` of the jobs that did not finish (interrupted).
    pub(super) unfinished: Vec<usize>,
}

/// Runs `job` on every item, `threads` at a time. `job` gets the stop flag, set once
/// `interrupted()` holds (checked every [`INTERRUPT_CHECK`] while the jobs run): then
/// `cancel` is called once, no further job starts, and the result of any job running at
/// that moment is dropped. `tick` is called at each of those checks too (a display that
/// moves on while the jobs run).
pub(super) fn run_all<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    job: impl Fn(&T, &AtomicBool) -> R + Sync,
    interrupted: impl Fn() -> bool,
    cancel: impl FnOnce(),
    tick: impl Fn(),
) -> Result<Done<R>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.min(items.len()).max(1))
        .thread_name(|i| format!("fcm-probe-{i}"))
        .stack_size(256 * 1024)
        .build()
        .context("cannot start the probe threads")?;
    let stop = AtomicBool::new(false);
    let (finished, all_done) = mpsc::channel::<()>();
    let outcomes: Vec<Option<R>> = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let out = pool.install(|| {
                items
                    .par_iter()
                    .with_max_len(1)
                    .map(|item| {
                        if stop.load(Ordering::SeqCst) {
                            return None;
                        }
                        let r = job(item, &stop);
                        // Cut short by the stop, it proves nothing.
                        (!stop.load(Ordering::SeqCst)).then_some(r)
                    })
                    .collect()
            });
            let _ = finished.send(());
            out
        });
        let mut cancel = Some(cancel);
        loop {
            match all_done.recv_timeout(INTERRUPT_CHECK) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    tick();
                    if cancel.is_some() && interrupted() {
                        stop.store(true, Ordering::SeqCst);
                        if let Some(cancel) = cancel.take() {
                            cancel();
                        }
                    }
                }
            }
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    let mut done = Done {
        results: Vec::new(),
        unfinished: Vec::new(),
    };
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Some(r) => done.results.push(r),
            None => done.unfinished.push(i),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn every_job_runs_when_nothing_interrupts() {
        let items: Vec<u32> = (0..20).collect();
        let done = run_all(
            &items,
            4,
            |n, _| n * 2,
            || false,
            || panic!("no cancel"),
            || {},
        )
        .unwrap();
        let mut results = done.results;
        results.sort_unstable();
        assert_eq!(results, (0..20).map(|n| n * 2).collect::<Vec<_>>());
        assert!(done.unfinished.is_empty());
    }

    #[test]
    fn an_interruption_keeps_the_finished_jobs_and_cuts_the_rest() {
        // One thread, so the jobs run in order: two quick ones, then one that blocks until
        // it is cut, then one that never starts.
        let items = ["quick", "quick", "blocks", "never"];
        let started = AtomicUsize::new(0);
        let cancelled = AtomicBool::new(false);
        let done = run_all(
            &items,
            1,
            |item, stop| {
                started.fetch_add(1, Ordering::SeqCst);
                if *item == "blocks" {
                    // Stands in for a ping in flight: it ends when its client is shut down.
                    while !cancelled.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                    assert!(
                        stop.load(Ordering::SeqCst),
                        "the stop flag is set before cancel"
                    );
                }
                item.to_string()
            },
            // Interrupted once the blocking job has started.
            || started.load(Ordering::SeqCst) == 3,
            || cancelled.store(true, Ordering::SeqCst),
            || {},
        )
        .unwrap();
        assert_eq!(done.results, ["quick", "quick"]);
        assert_eq!(done.unfinished, [2, 3]);
        assert_eq!(
            started.load(Ordering::SeqCst),
            3,
            "no job starts after the stop"
        );
    }
}
