//! One attempt at one candidate, owned whole: may it be tried now ([`Router::admit`]), a
//! key and one request of budget ([`Router::reserve`]), the call ([`Router::send`]), and
//! what came of it, recorded in one place ([`Router::settle`], through a [`Recorder`]): the
//! ledger (what the provider says is left, tokens spent, a 429, a rejected key), the
//! breaker, the live window, a shared quota's pause, and the request's trace. A committed
//! stream carries a ticket that records its end through the same recorder.
//!
//! The failover loop, races, fusion panels and judges go through the steps here; background
//! probes, the bench and `fcm check` send their pings through the same [`Recorder`]
//! (`routing/ping`), so a probe's failure is recorded exactly as a request's is.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use crate::answers::call::{call, Answer};
use crate::answers::classify::FailureKind;
use crate::answers::failure::Failure;
use crate::answers::gate::AnswerStats;
use crate::answers::limits::Limits;
use crate::answers::stream::{OpenStream, StreamEnd};
use crate::providers::exchange::Exchange;
use crate::providers::quota::Window;
use crate::state::breaker::{Admission, Breakers};
use crate::state::ledger::{Blocked, Grant, Ledger, Tokens};
use crate::state::metrics::Metrics;
use crate::state::outages::{Outages, Reachable};
use crate::state::trace::{AttemptRecord, Outcome, Trace};
use crate::tokens;

use super::candidates::{BreakerSays, Candidate, Candidates};
use super::conversation::Keeping;
use super::live::LiveEvidence;
use super::refusal::FailedAttempt;
use super::router::Router;

/// What every attempt of one request sends.
pub(crate) struct Job<'a> {
    /// The client's request, or its history trimmed to fit a smaller window.
    pub body: Cow<'a, Value>,
    pub stream: bool,
    pub limits: Limits,
    /// The prompt's estimated tokens, charged against token budgets.
    pub prompt_tokens: u64,
    /// Whether a Gemini model was sent Google's placeholder for a missing thought
    /// signature (see `placeholder`): the history says so when one serves.
    pub placeholder: std::sync::atomic::AtomicBool,
}

/// What one request has done so far, carried from attempt to attempt.
pub(crate) struct Turn<'r> {
    pub trace: Trace,
    /// Every failed attempt, in order: an error answer lists them.
    pub details: Vec<FailedAttempt>,
    /// Providers whose only key was just rejected: the rest of the request avoids them.
    pub blocked: HashSet<&'r str>,
    /// The window a candidate needs: the prompt and the answer's room, raised past a
    /// model whose window overflowed.
    pub needed: u64,
    /// The request's conversation and the model it holds, when affinity applies.
    pub keeping: Option<Keeping>,
    /// Why the held model was passed over before any attempt (`capability`).
    pub affinity_note: Option<String>,
    /// Candidates put at the back of the queue once because a request to them was out
    /// and they had not answered yet.
    pub deferred: Vec<usize>,
}

impl Turn<'_> {
    pub(crate) fn new(trace: Trace, needed: u64) -> Self {
        Turn {
            trace,
            details: Vec::new(),
            blocked: HashSet::new(),
            needed,
            keeping: None,
            affinity_note: None,
            deferred: Vec::new(),
        }
    }
}

/// Why one candidate did not serve.
pub(crate) enum Missed {
    /// It was tried and failed.
    Failed(Failure),
    /// No key of it may be sent a request now (a spent budget, paused or rejected keys):
    /// nothing was sent.
    Blocked(Blocked),
}

/// An answer that passed the gate: the answer and its key, its candidate, whether it held
/// a trial slot, and the prompt it answered (a judge's is not the client's).
pub(crate) struct Won {
    pub answer: Answer,
    pub grant: Grant,
    pub candidate: usize,
    pub trial: bool,
    pub prompt_tokens: u64,
    /// A racer's client of its own, kept again when its stream has been delivered.
    pub client: Option<Box<dyn Exchange>>,
}

/// What a served request hands to the client.
pub(crate) enum Delivery<'r> {
    /// A complete answer that passed the gate (its success is already recorded).
    Full {
        status: u16,
        body: Vec<u8>,
        /// The body as the gate parsed it (`None` when validation is off).
        parsed: Option<Value>,
        stats: AnswerStats,
    },
    /// A committed stream: its end is recorded when it has been delivered.
    Stream(Box<Committed<'r>>),
}

/// A request that was served: the answer and the trace so far.
pub(crate) struct Served<'r> {
    pub delivery: Delivery<'r>,
    pub trace: Trace,
}

/// A committed stream with the ticket that records its end.
pub(crate) struct Committed<'r> {
    pub stream: OpenStream,
    ticket: StreamTicket<'r>,
}

impl Committed<'_> {
    /// Records how the stream ended, once it has been delivered (or drained).
    pub(crate) fn finish(self, end: &StreamEnd, trace: &mut Trace) {
        let Committed { stream, ticket } = self;
        ticket.settle(end, stream.ttft, stream.stats(), trace);
    }
}

/// Where the outcomes of attempts are recorded: the usage ledger always; with a running
/// router also its breakers, live windows and candidates (`health`). The bench and `fcm
/// check` keep no health of their own: their process ends with the run.
#[derive(Clone, Copy)]
pub(crate) struct Recorder<'a> {
    pub ledger: &'a Ledger,
    pub health: Option<Health<'a>>,
}

/// A running router's health records.
#[derive(Clone, Copy)]
pub(crate) struct Health<'a> {
    pub breakers: &'a Breakers,
    pub outages: &'a Outages,
    pub evidence: &'a LiveEvidence,
    /// The `/metrics` counters (tokens spent per model).
    pub metrics: &'a Metrics,
    /// Every candidate: an account-wide quota pauses all of a provider's models.
    pub pool: &'a Candidates,
}

impl Recorder<'_> {
    /// What the answer's head said is left, whatever came of the answer.
    pub(crate) fn answered(&self, c: &Candidate, grant: &Grant, rate: &[Window]) {
        self.ledger
            .answered(&c.metered, grant, rate, crate::time::now_ms());
    }

    /// A failed attempt's end for the ledger: what the answer's head said is left, or,
    /// when the request never reached the provider (no address, no connection), the
    /// request given back to the budget it was counted against.
    pub(crate) fn failed(&self, c: &Candidate, grant: &Grant, f: &Failure, prompt_tokens: u64) {
        if f.reached {
            self.answered(c, grant, &f.rate);
        } else {
            self.ledger
                .unsent(&c.metered, grant, prompt_tokens, crate::time::now_ms());
        }
    }

    /// The tokens an answer cost (whatever its end: what came was spent).
    pub(crate) fn spent(&self, c: &Candidate, grant: &Grant, stats: &AnswerStats, prompt: u64) {
        let tokens = Tokens::of(stats, prompt);
        if let Some(h) = self.health {
            h.metrics.tokens(c.key(), &tokens);
        }
        self.ledger
            .tokens(&c.metered, grant, tokens, crate::time::now_ms());
    }

    /// A model answered: its breaker closes (or stays closed) and the live window learns.
    pub(crate) fn success(&self, c: &Candidate, ttft: Duration) {
        if let Some(h) = self.health {
            h.outages.answered(&c.target.provider_id);
            h.breakers.record_success(c.key(), crate::time::now_ms());
            h.evidence.observe(c.key(), Some(ttft.as_millis() as u64));
        }
    }

    /// A model failed: the ledger (a rate-limited or rejected key), its breaker, its live
    /// window and, for an account-wide quota, every model of its provider. A third 429
    /// within a minute stretches the pause to 15 min (`f`'s verdict says so afterwards).
    /// With several keys a 429 pauses that key in the ledger, not the model.
    pub(crate) fn failure(
        &self,
        c: &Candidate,
        f: &mut Failure,
        trial: bool,
        grant: &Grant,
        prompt_tokens: u64,
    ) {
        let now = crate::time::now_ms();
        if let Some(pause) = f.verdict.quota_pause {
            f.verdict.quota_pause = Some(self.ledger.rate_limited(&c.metered, grant, pause, now));
            if f.rate.is_empty() && f.kind() == FailureKind::RateLimit {
                // A wall it did not describe: remember where it was.
                self.ledger.learn_from_429(&c.metered, grant, now);
            }
        }
        if let Some(e) = f.verdict.exhausted() {
            // Kept by the ledger at its own scope, across restarts: no breaker pause.
            self.ledger.exhausted(&c.metered, grant, e, now);
        }
        if let Some(limit) = f.verdict.over_tpm() {
            self.ledger
                .too_large(&c.metered, grant, u64::from(limit), prompt_tokens);
        }
        if f.kind() == FailureKind::AuthError {
            self.ledger.rejected(&c.metered, grant, now);
        }
        let Some(h) = self.health else { return };
        let provider = &c.target.provider_id;
        match (f.status, f.kind()) {
            (None, FailureKind::NetworkError | FailureKind::ProviderUrlUnresolvable) => {
                h.outages.connection_failed(provider, now);
            }
            (Some(_), _) => h.outages.answered(provider),
            _ => {}
        }
        let verdict = c.breaker_verdict(&f.verdict);
        h.breakers.record_failure(c.key(), &verdict, now, trial);
        if verdict.damages_health {
            h.evidence.observe(c.key(), None);
        }
        if f.kind() == FailureKind::Timeout {
            h.evidence.fell_silent(c.key(), now);
        }
        if let (true, Some(pause)) = (c.shared_quota, verdict.quota_pause) {
            // One account-wide quota: every model of the provider waits.
            let until = now + pause.as_millis() as u64;
            for other in h.pool.of_provider(&c.target.provider_id) {
                h.breakers.pause(other.key(), until);
            }
        }
    }

    /// An attempt that will not be judged (nothing sent, raced out, the client left): its
    /// trial slot goes back.
    pub(crate) fn let_go(&self, c: &Candidate, trial: bool) {
        if let (true, Some(h)) = (trial, self.health) {
            h.breakers.release_trial(c.key());
        }
    }

    /// How a committed stream ended: its tokens, then success, failure, or only the client
    /// gone (the model was delivering: a result for the live window, no breaker change).
    pub(crate) fn stream_end(
        &self,
        c: &Candidate,
        sent: &Sent,
        end: &StreamEnd,
        ttft: Duration,
        stats: &AnswerStats,
    ) {
        self.spent(c, &sent.grant, stats, sent.prompt_tokens);
        match end {
            StreamEnd::Complete { .. } => self.success(c, ttft),
            StreamEnd::Failed(f) => self.failure(
                c,
                &mut f.clone(),
                sent.trial,
                &sent.grant,
                sent.prompt_tokens,
            ),
            StreamEnd::ClientGone => {
                self.let_go(c, sent.trial);
                if let Some(h) = self.health {
                    h.evidence.observe(c.key(), Some(ttft.as_millis() as u64));
                }
            }
        }
    }
}

/// What an attempt was sent with: its key, whether it holds a HALF_OPEN trial slot, and
/// the prompt it carried.
#[derive(Clone)]
pub(crate) struct Sent {
    pub grant: Grant,
    pub trial: bool,
    pub prompt_tokens: u64,
}

impl Router {
    /// Where this router's attempts are recorded.
    pub(super) fn recorder(&self) -> Recorder<'_> {
        Recorder {
            ledger: &self.ledger,
            health: Some(Health {
                breakers: &self.breakers,
                outages: &self.outages,
                evidence: &self.evidence,
                metrics: &self.metrics,
                pool: &self.pool,
            }),
        }
    }

    /// Whether candidate `i` may be tried now ([`Candidate::barred`], with a fresh word from
    /// its breaker), and as its breaker's HALF_OPEN trial; a skip in the trace when not.
    pub(super) fn admit(&self, i: usize, turn: &mut Turn<'_>) -> Option<bool> {
        self.admit_as(i, turn, false)
    }

    /// [`admit`](Self::admit); with `overlook`, the pause its last answer set (an
    /// overload's back-off, a 429's) does not stop it: the conversation it holds asks it
    /// once more.
    pub(super) fn admit_as(&self, i: usize, turn: &mut Turn<'_>, overlook: bool) -> Option<bool> {
        let c = self.pool.get(i);
        let blocked = turn.blocked.contains(c.target.provider_id.as_str());
        // The breaker is asked last: asking may take its trial slot.
        if let Some(skip) = c.barred(turn.needed, blocked, BreakerSays::Tryable) {
            turn.trace.skipped.push(skip);
            return None;
        }
        let now = crate::time::now_ms();
        if let Reachable::Down { until_ms } = self.outages.admit(&c.target.provider_id, now) {
            turn.trace.skipped.push(c.down_skip(until_ms));
            return None;
        }
        let admission = match self.breakers.admit(c.key(), now) {
            // The pause its last answer set: an overload's back-off, or a burst's 429.
            Admission::Paused(p)
                if overlook && matches!(p.why, None | Some(FailureKind::ModelOverloaded)) =>
            {
                Admission::Yes
            }
            a => a,
        };
        let trial = admission == Admission::Trial;
        match c.barred(0, false, BreakerSays::of_admission(admission)) {
            Some(skip) => {
                turn.trace.skipped.push(skip);
                None
            }
            None => Some(trial),
        }
    }

    /// Whether candidate `i` has a request out and has not answered yet: a model gone paid
    /// or silent is then met by that one request, not by every request at once. Such a
    /// model is tried after the others (see `failover`), never left out.
    pub(super) fn untried_busy(&self, i: usize) -> bool {
        self.in_flight[i].load(Ordering::Acquire) > 0
            && !self.evidence.has_answered(self.pool.get(i).key())
    }

    /// A key and one request of budget for candidate `i`; when none may be sent a request
    /// now, its HALF_OPEN trial slot is given back and the trace says why it was skipped.
    /// The held model of a conversation goes with the key that served it (its prompt cache
    /// is kept per key) while that key may be sent a request.
    pub(super) fn reserve(
        &self,
        i: usize,
        prompt_tokens: u64,
        trial: bool,
        turn: &mut Turn<'_>,
    ) -> Result<Grant, Blocked> {
        let c = self.pool.get(i);
        let now = crate::time::now_ms();
        let kept_key = turn.keeping.as_ref().and_then(|k| k.key_for(i));
        let granted = kept_key
            .and_then(|k| {
                self.ledger
                    .reserve_key(&c.metered, k, prompt_tokens, now)
                    .ok()
            })
            .map_or_else(
                || self.ledger.reserve(&c.metered, prompt_tokens, now, false),
                Ok,
            );
        match &granted {
            Ok(grant) => {
                // The request sent carries the compressed tool results.
                let saved = turn.trace.saved_tokens.unwrap_or(0);
                self.ledger.saved(&c.metered, grant, saved, now);
            }
            Err(b) => {
                self.recorder().let_go(c, trial);
                turn.trace.skipped.push(c.ledger_skip(b));
            }
        }
        granted
    }

    /// Sends `job` to candidate `i` with `grant`'s key through `exchange`. The model is given
    /// as long as its own starts say it may take to start (see `silence`); `patient`: the
    /// configured ceiling, for the model a conversation holds (a slow turn there costs less
    /// than moving the conversation).
    pub(super) fn send(
        &self,
        exchange: &dyn Exchange,
        i: usize,
        grant: &Grant,
        job: &Job<'_>,
        patient: bool,
    ) -> Result<Answer, Failure> {
        let c = self.pool.get(i);
        let api_key = grant.api_key(&c.target.keys);
        // What the provider's earlier answers carried goes back to it (see `carry`).
        let mut restored =
            self.carry
                .restore(&job.body, &c.target.provider_id, crate::time::now_ms());
        // A Gemini model is given Google's placeholder for a signature still missing.
        if super::placeholder::checks_signatures(&c.target.wire_model) {
            if let Some(filled) = super::placeholder::fill(restored.as_ref().unwrap_or(&job.body)) {
                restored = Some(filled);
                job.placeholder.store(true, Ordering::Relaxed);
            }
        }
        let mut limits = job.limits.clone();
        if !patient {
            limits.first_token =
                self.evidence
                    .first_token(c.key(), job.prompt_tokens, job.limits.first_token);
        }
        // Out until it is judged (a stream, at its commit).
        self.in_flight[i].fetch_add(1, Ordering::AcqRel);
        let body = restored.as_ref().unwrap_or(&job.body);
        // An answer budget larger than this model's room is lowered to it (see
        // `tokens::ANSWER_ROOM`); the trace says so once the model serves.
        let lowered = tokens::lowered(c.context, job.prompt_tokens, body)
            .map(|(_, room)| with_answer_budget(body, room));
        let judged = call(
            exchange,
            &c.target,
            api_key,
            lowered.as_ref().unwrap_or(body),
            job.stream,
            &limits,
        );
        self.in_flight[i].fetch_sub(1, Ordering::AcqRel);
        judged
    }

    /// Records what one attempt came to (the [`Recorder`], the trace and, for a failure,
    /// the details a refusal lists). A committed stream's success is recorded when it ends.
    pub(super) fn settle<'r>(
        &'r self,
        i: usize,
        sent: Sent,
        result: Result<Answer, Failure>,
        turn: &mut Turn<'r>,
    ) -> Result<(Answer, Sent), Missed> {
        let c = self.pool.get(i);
        let record = self.recorder();
        match result {
            Ok(answer) => {
                let (status, latency, rate) = match &answer {
                    Answer::Full {
                        status,
                        elapsed,
                        rate,
                        ..
                    } => (*status, *elapsed, rate),
                    Answer::Stream(s) => (s.status, s.ttft, &s.rate),
                };
                record.answered(c, &sent.grant, rate);
                if let Answer::Full { stats, .. } = &answer {
                    record.success(c, latency);
                    record.spent(c, &sent.grant, stats, sent.prompt_tokens);
                }
                turn.trace.attempts.push(AttemptRecord {
                    model: c.key().to_string(),
                    status: Some(status),
                    kind: None,
                    latency_ms: latency.as_millis() as u64,
                    key: sent.grant.label.clone(),
                    raced_out: false,
                });
                Ok((answer, sent))
            }
            Err(mut f) => {
                record.failed(c, &sent.grant, &f, sent.prompt_tokens);
                record.failure(c, &mut f, sent.trial, &sent.grant, sent.prompt_tokens);
                turn.trace.attempts.push(AttemptRecord {
                    model: c.key().to_string(),
                    status: f.status,
                    kind: Some(f.kind()),
                    latency_ms: f.elapsed.as_millis() as u64,
                    key: sent.grant.label.clone(),
                    raced_out: false,
                });
                if c.blocks_provider(&f) {
                    turn.blocked.insert(c.target.provider_id.as_str());
                }
                turn.details.push(FailedAttempt {
                    model: c.key().to_string(),
                    status: f.status,
                    kind: f.kind(),
                    blame: f.verdict.blame,
                    detail: f.detail.to_string(),
                });
                Err(Missed::Failed(f))
            }
        }
    }

    /// One attempt through the shared client: reserve, send, settle.
    pub(super) fn try_one<'r>(
        &'r self,
        i: usize,
        job: &Job<'_>,
        trial: bool,
        turn: &mut Turn<'r>,
    ) -> Result<Won, Missed> {
        let grant = self
            .reserve(i, job.prompt_tokens, trial, turn)
            .map_err(Missed::Blocked)?;
        let held = turn.keeping.as_ref().and_then(|k| k.kept).map(|(h, _)| h);
        let result = self.send(self.upstream.as_ref(), i, &grant, job, held == Some(i));
        let sent = Sent {
            grant,
            trial,
            prompt_tokens: job.prompt_tokens,
        };
        let (answer, sent) = self.settle(i, sent, result, turn)?;
        Ok(Won::new(answer, sent, i))
    }

    /// A racer cancelled because another won: no failure, no health damage; its key's
    /// request is answered (what it spent stays spent), its trial slot freed.
    pub(super) fn raced_out(
        &self,
        i: usize,
        sent: &Sent,
        result: Result<Answer, Failure>,
        trace: &mut Trace,
    ) {
        let c = self.pool.get(i);
        let record = self.recorder();
        let (rate, latency) = match &result {
            Ok(Answer::Full {
                rate,
                elapsed,
                stats,
                ..
            }) => {
                // It answered in full just too late: those tokens were spent.
                record.spent(c, &sent.grant, stats, sent.prompt_tokens);
                (&rate[..], *elapsed)
            }
            Ok(Answer::Stream(s)) => (&s.rate[..], s.ttft),
            Err(f) => (&f.rate[..], f.elapsed),
        };
        record.answered(c, &sent.grant, rate);
        record.let_go(c, sent.trial);
        trace.attempts.push(AttemptRecord {
            model: c.key().to_string(),
            status: None,
            kind: None,
            latency_ms: latency.as_millis() as u64,
            key: sent.grant.label.clone(),
            raced_out: true,
        });
    }

    /// The answer `w` handed to the client: a full answer as it is, a stream with the
    /// ticket that records its end.
    pub(super) fn serve(&self, w: Won, mut trace: Trace) -> Served<'_> {
        trace.served_model = Some(self.pool.get(w.candidate).key().to_string());
        trace.outcome = Outcome::Served;
        let delivery = match w.answer {
            Answer::Full {
                status,
                body,
                parsed,
                stats,
                ..
            } => Delivery::Full {
                status,
                body,
                parsed,
                stats,
            },
            Answer::Stream(stream) => Delivery::Stream(Box::new(Committed {
                stream: *stream,
                ticket: StreamTicket {
                    router: self,
                    candidate: w.candidate,
                    sent: Sent {
                        grant: w.grant,
                        trial: w.trial,
                        prompt_tokens: w.prompt_tokens,
                    },
                    client: w.client,
                },
            })),
        };
        Served { delivery, trace }
    }
}

/// `body` with its answer budget (`max_tokens` or `max_completion_tokens`, whichever it
/// has) set to `room`.
fn with_answer_budget(body: &Value, room: u64) -> Value {
    let mut out = body.clone();
    if let Some(obj) = out.as_object_mut() {
        for key in ["max_tokens", "max_completion_tokens"] {
            if let Some(v) = obj.get_mut(key) {
                *v = Value::from(room);
            }
        }
    }
    out
}

impl Won {
    pub(super) fn new(answer: Answer, sent: Sent, candidate: usize) -> Won {
        Won {
            answer,
            grant: sent.grant,
            candidate,
            trial: sent.trial,
            prompt_tokens: sent.prompt_tokens,
            client: None,
        }
    }
}

/// A committed stream's candidate and what it was sent with, for recording how it ended.
struct StreamTicket<'r> {
    router: &'r Router,
    candidate: usize,
    sent: Sent,
    /// A racer's client of its own, kept for the next race once the stream is delivered.
    client: Option<Box<dyn Exchange>>,
}

impl StreamTicket<'_> {
    fn settle(self, end: &StreamEnd, ttft: Duration, stats: &AnswerStats, trace: &mut Trace) {
        let router = self.router;
        let c = router.pool.get(self.candidate);
        router
            .recorder()
            .stream_end(c, &self.sent, end, ttft, stats);
        match end {
            StreamEnd::Complete { completion_tokens } => {
                trace.completion_tokens = *completion_tokens;
                if let Some(client) = self.client {
                    router.race_clients.give(&c.target.provider_id, client);
                }
            }
            StreamEnd::Failed(f) => {
                // Its own record: in a race, the losers' come after it.
                let own = trace
                    .attempts
                    .iter_mut()
                    .rev()
                    .find(|a| a.model == c.key() && !a.raced_out);
                if let Some(record) = own {
                    record.kind = Some(f.kind());
                }
                trace.outcome = Outcome::StreamFailedAfterContent;
            }
            StreamEnd::ClientGone => trace.outcome = Outcome::ClientAborted,
        }
    }
}
