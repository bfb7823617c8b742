//! A `race` set: the first `width` candidates get the request at once, each on a client of
//! its own; the first answer that passes the gate (a stream: the first to reach useful
//! content) is served, and the others are cancelled at once (their clients shut down,
//! which closes their connections mid-call) and recorded as `raced_out`, not as failures.
//! A racer that fails before a winner is known is a failure like any other.

use std::collections::{HashSet, VecDeque};
use std::sync::mpsc;

use crate::attempt::Answer;
use crate::failure::Failure;
use crate::ledger::Grant;
use crate::trace::{AttemptRecord, Trace};
use crate::upstream::Upstream;

use super::failover::{Job, Missed, Won};
use super::refusal::FailedAttempt;
use super::Router;

/// How a race ended.
pub(super) enum RaceEnd {
    Won(Box<Won>),
    /// No racer served. `stop`: one failed in a way no other model would fix (the
    /// request's own fault), so the request ends here.
    Lost {
        stop: bool,
    },
}

/// One racer: its candidate, key, trial slot and client.
struct Racer {
    candidate: usize,
    grant: Grant,
    trial: bool,
    upstream: Upstream,
}

impl Router {
    /// Races the first `width` candidates of `queue` that may be tried now (taking them off
    /// the queue). When none could be sent or every racer failed, the caller goes on
    /// through the rest of the queue one by one.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn race<'s>(
        &'s self,
        queue: &mut VecDeque<usize>,
        width: usize,
        job: &Job<'_>,
        needed: u64,
        blocked: &mut HashSet<&'s str>,
        trace: &mut Trace,
        details: &mut Vec<FailedAttempt>,
    ) -> RaceEnd {
        let mut racers = Vec::new();
        while racers.len() < width {
            let Some(i) = queue.pop_front() else { break };
            if self.pool.get(i).context < needed && self.trim_history {
                // It may yet take the request trimmed: the one-by-one loop decides.
                queue.push_front(i);
                break;
            }
            let Some(trial) = self.admit_now(i, needed, blocked, trace) else {
                continue;
            };
            match self.reserve(i, job) {
                Ok(grant) => racers.push(Racer {
                    candidate: i,
                    grant,
                    trial,
                    upstream: Upstream::new(),
                }),
                Err(b) => {
                    if trial {
                        self.breakers.release_trial(self.pool.get(i).key());
                    }
                    trace.skipped.push(self.pool.get(i).ledger_skip(&b));
                }
            }
        }
        if racers.is_empty() {
            return RaceEnd::Lost { stop: false };
        }
        trace.notes.push(format!("race:{}", racers.len()));
        let (tx, rx) = mpsc::channel::<(usize, Result<Answer, Failure>)>();
        std::thread::scope(|scope| {
            for (n, r) in racers.iter().enumerate() {
                let tx = tx.clone();
                scope.spawn(move || {
                    let result = self.send(&r.upstream, r.candidate, &r.grant, job);
                    let _ = tx.send((n, result));
                });
            }
            drop(tx);
            let mut winner: Option<Won> = None;
            let mut stop = false;
            let mut done = vec![false; racers.len()];
            while let Ok((n, result)) = rx.recv() {
                done[n] = true;
                let r = &racers[n];
                if winner.is_some() {
                    // Answered or interrupted after the race was won: cancelled either way.
                    self.raced_out(r, result, trace);
                    continue;
                }
                let settled = self.settle(
                    r.candidate,
                    r.grant.clone(),
                    result,
                    job,
                    trace,
                    details,
                    r.trial,
                );
                match settled {
                    Ok((answer, grant)) => {
                        winner = Some(Won {
                            answer,
                            grant,
                            candidate: r.candidate,
                            trial: r.trial,
                            prompt_tokens: job.prompt_tokens,
                        });
                        // The others stop now: their connections close mid-call.
                        for (m, other) in racers.iter().enumerate() {
                            if !done[m] {
                                other.upstream.shutdown();
                            }
                        }
                    }
                    Err(Missed::Failed(f)) => {
                        let c = self.pool.get(r.candidate);
                        if f.verdict.blocks_provider && c.metered.key_count() < 2 {
                            blocked.insert(c.target.provider_id.as_str());
                        }
                        stop |= !f.verdict.failover;
                    }
                    Err(Missed::Blocked(_)) => {}
                }
            }
            match winner {
                Some(w) => RaceEnd::Won(Box::new(w)),
                None => RaceEnd::Lost { stop },
            }
        })
    }

    /// A racer cancelled because another won: no failure, no health damage; its key's
    /// request is answered (what it spent stays spent), its trial slot freed.
    fn raced_out(&self, r: &Racer, result: Result<Answer, Failure>, trace: &mut Trace) {
        let c = self.pool.get(r.candidate);
        let (rate, latency) = match &result {
            Ok(Answer::Full { rate, elapsed, .. }) => (rate.clone(), *elapsed),
            Ok(Answer::Stream(s)) => (s.rate.clone(), s.ttft),
            Err(f) => (f.rate.to_vec(), f.elapsed),
        };
        self.ledger
            .answered(&c.metered, &r.grant, &rate, crate::time::now_ms());
        if r.trial {
            self.breakers.release_trial(c.key());
        }
        trace.attempts.push(AttemptRecord {
            model: c.key().to_string(),
            status: None,
            kind: None,
            latency_ms: latency.as_millis() as u64,
            key: r.grant.label.clone(),
            raced_out: true,
        });
    }
}
