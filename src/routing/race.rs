//! A `race` set: the first `width` candidates get the request at once, each on a client of
//! its own; the first answer that passes the gate (a stream: the first to reach useful
//! content) is served, and the others are cancelled at once (their clients shut down,
//! which closes their connections mid-call) and recorded as `raced_out`, not as failures.
//! A racer that fails before a winner is known is a failure like any other.
//!
//! A client of its own costs a new connection (TCP and TLS handshakes), which would eat
//! into what a race gains, so racers' clients are kept per provider between races: the
//! winner's comes back when its answer is delivered, a failed racer's at once; a shut
//! client (a loser's) is never reused.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::answers::call::Answer;
use crate::answers::failure::Failure;
use crate::providers::exchange::Exchange;

use super::attempt::{Job, Missed, Sent, Turn, Won};
use super::router::Router;

/// How a race ended.
pub(super) enum RaceEnd {
    /// The winner; a stream's client goes back to [`RaceClients`] once delivered.
    Won(Box<Won>),
    /// No racer served. `stop`: one failed in a way no other model would fix (the
    /// request's own fault), so the request ends here.
    Lost { stop: bool },
}

/// One racer: its candidate, what it is sent with, and its client.
struct Racer {
    candidate: usize,
    sent: Sent,
    upstream: Box<dyn Exchange>,
}

/// What became of one racer.
enum Fate {
    /// Still running when the race was won: shut down.
    Cancelled,
    /// Failed, or never finished because nobody won yet: its client may be reused.
    Finished,
    Won,
}

/// How one racer finished.
struct Finish {
    racer: usize,
    result: Result<Answer, Failure>,
    /// It finished after another had won (an answer too late, or its cancellation).
    after_win: bool,
    /// Its client was shut down by the winner (never to be reused).
    cancelled: bool,
}

/// Stack of a racer's thread: the same exchange runs on a connection thread's 256 KiB.
const RACER_STACK: usize = 256 * 1024;

/// Runs `f(0)`..`f(n - 1)` at once and returns their results in that order: `f(0)` on this
/// thread (a thread fewer to start and end), the others on threads of their own with
/// [`RACER_STACK`]; when no thread can be had, that one runs here, before the first.
/// Racers and a fusion panel go out this way.
pub(super) fn side_by_side<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    if n == 0 {
        return Vec::new();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let others: Vec<Result<std::thread::ScopedJoinHandle<'_, R>, R>> = (1..n)
            .map(|k| {
                std::thread::Builder::new()
                    .stack_size(RACER_STACK)
                    .spawn_scoped(scope, move || f(k))
                    .map_err(|_| f(k))
            })
            .collect();
        let mut out = vec![f(0)];
        out.extend(others.into_iter().map(|o| match o {
            Ok(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            Err(done) => done,
        }));
        out
    })
}

/// Runs `send` for every racer at once: the first on this thread, the others on threads of
/// their own. The first racer whose `send` answers (an answer through the gate) wins and
/// shuts the others' clients down at once. Returns how each finished, first finished first.
fn run(racers: &[Racer], send: impl Fn(&Racer) -> Result<Answer, Failure> + Sync) -> Vec<Finish> {
    const NOBODY: usize = usize::MAX;
    let winner = AtomicUsize::new(NOBODY);
    let cancelled: Vec<AtomicBool> = racers.iter().map(|_| AtomicBool::new(false)).collect();
    let done: Vec<AtomicBool> = racers.iter().map(|_| AtomicBool::new(false)).collect();
    let finished: Mutex<Vec<Finish>> = Mutex::new(Vec::with_capacity(racers.len()));
    let race = |n: usize| {
        let result = send(&racers[n]);
        done[n].store(true, Ordering::SeqCst);
        let won = result.is_ok()
            && winner
                .compare_exchange(NOBODY, n, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
        let after_win = !won && winner.load(Ordering::SeqCst) != NOBODY;
        // Listed before the others are cancelled, so the winner comes before them.
        finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Finish {
                racer: n,
                result,
                after_win,
                cancelled: false,
            });
        if won {
            // The others stop now: their connections close mid-call.
            for (m, other) in racers.iter().enumerate() {
                // One already done keeps its client (idle now) for the next race.
                if m != n && !done[m].load(Ordering::SeqCst) {
                    cancelled[m].store(true, Ordering::SeqCst);
                    other.upstream.shutdown();
                }
            }
        }
    };
    side_by_side(racers.len(), race);
    let mut out = finished.into_inner().unwrap_or_else(|e| e.into_inner());
    for f in &mut out {
        f.cancelled = cancelled[f.racer].load(Ordering::SeqCst);
    }
    out
}

/// Races the first `width` candidates of `queue` that may be tried now (taking them off
/// the queue). When none could be sent or every racer failed, the caller goes on
/// through the rest of the queue one by one.
pub(super) fn race<'r>(
    router: &'r Router,
    queue: &mut VecDeque<usize>,
    width: usize,
    job: &Job<'_>,
    turn: &mut Turn<'r>,
) -> RaceEnd {
    let mut racers = Vec::new();
    while racers.len() < width {
        let Some(i) = queue.pop_front() else { break };
        if router.pool.get(i).context < turn.needed && router.trim_history {
            // It may yet take the request trimmed: the one-by-one loop decides.
            queue.push_front(i);
            break;
        }
        let Some(trial) = router.admit(i, turn) else {
            continue;
        };
        if let Ok(grant) = router.reserve(i, job.prompt_tokens, trial, turn) {
            racers.push(Racer {
                candidate: i,
                sent: Sent {
                    grant,
                    trial,
                    prompt_tokens: job.prompt_tokens,
                },
                upstream: router.race_clients.take(
                    &router.pool.get(i).target.provider_id,
                    router.upstream.as_ref(),
                ),
            });
        }
    }
    if racers.is_empty() {
        return RaceEnd::Lost { stop: false };
    }
    turn.trace.notes.push(format!("race:{}", racers.len()));
    let finishes = run(&racers, |r| {
        router.send(r.upstream.as_ref(), r.candidate, &r.sent.grant, job, false)
    });
    let mut winner: Option<Won> = None;
    let mut stop = false;
    let mut fates: Vec<Fate> = racers.iter().map(|_| Fate::Finished).collect();
    for finish in finishes {
        let r = &racers[finish.racer];
        if finish.cancelled {
            fates[finish.racer] = Fate::Cancelled;
        }
        if finish.after_win {
            // Answered or interrupted after the race was won: cancelled either way.
            router.raced_out(r.candidate, &r.sent, finish.result, &mut turn.trace);
            continue;
        }
        match router.settle(r.candidate, r.sent.clone(), finish.result, turn) {
            Ok((answer, sent)) => {
                fates[finish.racer] = Fate::Won;
                winner = Some(Won::new(answer, sent, r.candidate));
            }
            Err(Missed::Failed(f)) => stop |= !f.verdict.failover,
            Err(Missed::Blocked(_)) => {}
        }
    }
    let mut won_client = None;
    for (r, fate) in racers.into_iter().zip(fates) {
        let provider = &router.pool.get(r.candidate).target.provider_id;
        match fate {
            Fate::Cancelled => {}
            Fate::Finished => router.race_clients.give(provider, r.upstream),
            Fate::Won => won_client = Some(r.upstream),
        }
    }
    match (winner, won_client) {
        (Some(mut w), Some(client)) => {
            if matches!(w.answer, Answer::Full { .. }) {
                // The answer is read whole: its connection is idle already.
                let provider = &router.pool.get(w.candidate).target.provider_id;
                router.race_clients.give(provider, client);
            } else {
                w.client = Some(client);
            }
            RaceEnd::Won(Box::new(w))
        }
        _ => RaceEnd::Lost { stop },
    }
}
