//! The failover loop: try the ordered candidates one by one within the request's budget
//! and attempt limit, and record every attempt's outcome, in one place, for breakers, the
//! live ranking and the trace. A committed stream carries a [`StreamTicket`] so its end is
//! recorded the same way when it finishes.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::answers::call::{attempt, Answer};
use crate::answers::classify::FailureKind;
use crate::answers::failure::Failure;
use crate::answers::gate::AnswerStats;
use crate::answers::limits::Limits;
use crate::answers::stream::{OpenStream, StreamEnd};
use crate::capability::Needs;
use crate::state::breaker::Admission;
use crate::state::ledger::{Blocked, Grant, Tokens};
use crate::state::trace::{AttemptRecord, Outcome, Skip, SkipReason, Trace};

use super::race::RaceEnd;
use super::refusal::{FailedAttempt, Refused};
use super::{Route, Router};
use crate::tokens;

/// A 502/503/504 with a `Retry-After` this short from the last candidate is waited out once.
const SHORT_RETRY: Duration = Duration::from_secs(5);

/// One chat request as the router sees it.
pub(crate) struct Ask<'a> {
    pub body: &'a Value,
    pub stream: bool,
    /// What the client's own request needs (read before translation).
    pub needs: Needs,
    /// The tools the request offers: tool calls are checked against them.
    pub tools: Option<std::sync::Arc<crate::answers::toolcall::Offered>>,
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

/// What every attempt of one request sends.
pub(super) struct Job<'a> {
    /// The client's request, or its history trimmed to fit a smaller window.
    pub body: std::borrow::Cow<'a, Value>,
    pub stream: bool,
    pub limits: Limits,
    /// The prompt's estimated tokens, charged against token budgets.
    pub prompt_tokens: u64,
}

/// An answer a race or a fusion settled on: its answer and key, its candidate, whether it
/// held a trial slot, and the prompt it answered (a judge's is not the client's).
pub(super) struct Won {
    pub answer: Answer,
    pub grant: Grant,
    pub candidate: usize,
    pub trial: bool,
    pub prompt_tokens: u64,
    /// A racer's client of its own, kept again when its stream has been delivered.
    pub client: Option<Box<dyn crate::providers::exchange::Exchange>>,
}

/// Why one candidate did not serve.
pub(super) enum Missed {
    /// It was tried and failed.
    Failed(Failure),
    /// No key of it may be sent a request now (a spent budget, paused or rejected keys):
    /// nothing was sent.
    Blocked(Blocked),
}

impl Router {
    /// Routes one chat request. Streams return once committed; delivering them records
    /// how they ended.
    pub(crate) fn route<'r>(
        &'r self,
        route: &Route,
        ask: &Ask<'_>,
        mut trace: Trace,
    ) -> Result<Served<'r>, Box<Refused>> {
        let deadline = Instant::now() + Duration::from_millis(self.failover.total_budget_ms);
        let mut job = Job {
            body: std::borrow::Cow::Borrowed(ask.body),
            stream: ask.stream,
            // Streams keep the gate's parsed chunks: the client's protocol shapes them.
            limits: self.limits(deadline, ask.stream, ask.tools.clone()),
            prompt_tokens: tokens::prompt(ask.body),
        };
        let mut details = Vec::new();
        if let Route::Pinned(key) = route {
            let i = self
                .pool
                .position(key)
                .expect("resolve only pins known models");
            let c = self.pool.get(i);
            if let Some(how) = &c.missing_key {
                trace
                    .skipped
                    .push(Skip::new(key.clone(), SkipReason::MissingKey));
                return Err(Box::new(self.refuse_missing_key(trace, key, how)));
            }
            // The user asked for this model by name: sent even when OPEN or paused, and a
            // HALF_OPEN trial slot is taken if free so its result counts as the trial.
            let trial = self.breakers.admit(key, crate::time::now_ms()) == Admission::Trial;
            return match self.try_one(i, &job, &mut trace, &mut details, trial) {
                Ok(answer) => Ok(self.served(answer, trace, i, trial, job.prompt_tokens)),
                Err(Missed::Failed(f)) => Err(Box::new(self.refuse_pinned(trace, &f, details))),
                // Not sent: it would have been refused for its spent budget.
                Err(Missed::Blocked(b)) => Err(Box::new(self.refuse_blocked(trace, key, &b))),
            };
        }
        let mut needed = tokens::with_answer(job.prompt_tokens, ask.body);
        // With trimming, windows are judged in the loop below, where it is known whether a
        // larger window is left.
        let trimming = self.trim_history;
        let (mut order, skipped) = self.pool.plan(
            &self.breakers,
            &self.ledger,
            &self.evidence,
            crate::time::now_ms(),
            if trimming { 0 } else { needed },
            job.prompt_tokens,
        );
        trace.skipped = skipped;
        let mut preferred = Vec::new();
        if let Route::Set(name) = route {
            preferred = self.set_order(name);
            self.pool.order_by_set(&mut order, &preferred, &mut trace);
        }
        self.pool.order_by_capability(
            &mut order,
            ask.needs,
            &preferred,
            &self.evidence,
            &self.capability_pools,
            &mut trace,
        );
        let mut blocked: HashSet<&str> = HashSet::new();
        let mut last_resort = self
            .failover
            .last_resort_model
            .clone()
            .filter(|m| self.knows(m));
        let mut queue: VecDeque<usize> = order.into();
        let mut waited = false;
        // Candidates sent again with another of their keys, once per extra key.
        let mut key_retries: Vec<usize> = Vec::new();
        if let Some(set) = self.fusion_set(route) {
            if crate::routing::fusion::bodies::offers_tools(&job.body) {
                // A merged answer cannot carry a tool call the agent would run.
                trace.notes.push("fusion:not_fused:tools_offered".into());
            } else if let Some(w) = self.fuse(
                set,
                &mut queue,
                &job,
                needed,
                &blocked,
                &mut trace,
                &mut details,
            ) {
                return Ok(self.served_won(w, trace));
            }
        }
        if let Some(width) = self.race_width(route) {
            let width = width.min(self.ordinary_attempts(last_resort.is_some()));
            match self.race(
                &mut queue,
                width,
                &job,
                needed,
                &mut blocked,
                &mut trace,
                &mut details,
            ) {
                RaceEnd::Won(w) => return Ok(self.served_won(*w, trace)),
                RaceEnd::Lost { stop: true } => queue.clear(),
                RaceEnd::Lost { stop: false } => {}
            }
        }
        while let Some(i) = queue.pop_front() {
            let c = self.pool.get(i);
            if trace.attempts.len() >= self.ordinary_attempts(last_resort.is_some())
                || Instant::now() >= deadline
            {
                break;
            }
            if c.context < needed && trimming && trace.trimmed.is_none() {
                // No larger window is left (down, paused, or never there): the middle of
                // the conversation goes, to fit the largest window that is.
                let window = queue
                    .iter()
                    .map(|j| self.pool.get(*j).context)
                    .chain([c.context])
                    .max()
                    .unwrap_or(c.context);
                if window < needed {
                    if let Some((body, dropped)) = trimmed_for(&job.body, window) {
                        job.prompt_tokens = tokens::prompt(&body);
                        needed = tokens::with_answer(job.prompt_tokens, &body);
                        job.body = std::borrow::Cow::Owned(body);
                        trace.trimmed = Some(dropped);
                        trace.notes.push(format!(
                            "history_trimmed:{dropped}_messages:to_fit_{window}"
                        ));
                    }
                }
            }
            let Some(trial) = self.admit_now(i, needed, &blocked, &mut trace) else {
                continue;
            };
            let f = match self.try_one(i, &job, &mut trace, &mut details, trial) {
                Ok(answer) => return Ok(self.served(answer, trace, i, trial, job.prompt_tokens)),
                Err(Missed::Failed(f)) => f,
                // Its budget was spent since planning (by a request running beside this
                // one): skipped like the others, nothing sent.
                Err(Missed::Blocked(_)) => continue,
            };
            if last_resort.as_deref() == Some(c.key()) {
                last_resort = None;
            }
            blocked.extend(c.blocked_provider(&f));
            if f.kind() == FailureKind::ContextOverflow {
                // Only a larger window can take it.
                needed = needed.max(c.context + 1);
            }
            if !f.verdict.failover {
                break;
            }
            // With several keys a rejected or rate-limited key is that key's fault: the
            // same model goes again at once with the next (the ledger holds this one).
            let keys = c.metered.key_count();
            if keys > 1 && (f.kind() == FailureKind::AuthError || f.kind().is_quota()) {
                let tried = key_retries.iter().filter(|j| **j == i).count();
                if tried + 1 < keys {
                    key_retries.push(i);
                    queue.push_front(i);
                    continue;
                }
            }
            // The last candidate asks for a moment (a 502/503/504 with a short
            // Retry-After): wait once and ask again rather than fail the request.
            if let Some(wait) = f
                .retry_after
                .filter(|w| *w <= SHORT_RETRY && queue.is_empty() && !waited)
            {
                if f.status.is_some_and(|s| (502..=504).contains(&s))
                    && Instant::now() + wait < deadline
                {
                    waited = true;
                    std::thread::sleep(wait);
                    queue.push_front(i);
                    continue;
                }
            }
            self.pool.family_first(&mut queue, i);
        }
        // The last resort takes the slot kept for it, but not when every failure was the
        // request's fault (it would fail the same way), nor on a provider whose key was just
        // rejected.
        let request_blamed = !details.is_empty()
            && details
                .iter()
                .all(|d| d.blame == crate::answers::classify::Blame::Client);
        let has_slot = trace.attempts.len() < self.failover.max_attempts as usize;
        if let Some(key) = last_resort.filter(|_| !request_blamed && has_slot) {
            let i = self.pool.position(&key).expect("filtered to known models");
            let c = self.pool.get(i);
            if c.missing_key.is_none()
                && !blocked.contains(c.target.provider_id.as_str())
                && Instant::now() < deadline
            {
                // Tried whatever its breaker says, like a pinned model.
                let trial = self.breakers.admit(&key, crate::time::now_ms()) == Admission::Trial;
                match self.try_one(i, &job, &mut trace, &mut details, trial) {
                    Ok(answer) => {
                        return Ok(self.served(answer, trace, i, trial, job.prompt_tokens))
                    }
                    Err(Missed::Blocked(_) | Missed::Failed(_)) => {}
                }
            }
        }
        Err(Box::new(self.refuse_all(trace, details, needed)))
    }

    /// Whether candidate `i` may be tried now, and as its breaker's HALF_OPEN trial: not
    /// when its provider's key was just rejected, its window is smaller than `needed`, or
    /// its breaker is OPEN or paused (each a skip in the trace).
    pub(super) fn admit_now(
        &self,
        i: usize,
        needed: u64,
        blocked: &HashSet<&str>,
        trace: &mut Trace,
    ) -> Option<bool> {
        let c = self.pool.get(i);
        if blocked.contains(c.target.provider_id.as_str()) {
            trace
                .skipped
                .push(Skip::new(c.key(), SkipReason::ProviderBlocked));
            return None;
        }
        if c.context < needed {
            trace
                .skipped
                .push(Skip::new(c.key(), SkipReason::ContextTooSmall));
            return None;
        }
        match self.breakers.admit(c.key(), crate::time::now_ms()) {
            Admission::Yes => Some(false),
            Admission::Trial => Some(true),
            Admission::CircuitOpen { .. } => {
                trace
                    .skipped
                    .push(Skip::new(c.key(), SkipReason::CircuitOpen));
                None
            }
            Admission::Paused(pause) => {
                trace.skipped.push(c.pause_skip(pause));
                None
            }
        }
    }

    /// How many attempts the ordered candidates may use. `maxAttempts` bounds every request;
    /// a configured last resort keeps the final one of them for itself (with `maxAttempts: 1`
    /// there is no slot to keep, and the one attempt goes to the best candidate).
    fn ordinary_attempts(&self, last_resort: bool) -> usize {
        let max = self.failover.max_attempts as usize;
        if last_resort && max >= 2 {
            max - 1
        } else {
            max
        }
    }

    /// One attempt and its trace record: a key from the ledger (or none, when no key may
    /// be sent a request now), the request, and its outcome recorded here, except for a
    /// committed stream, whose outcome is known only when it ends.
    pub(super) fn try_one(
        &self,
        i: usize,
        job: &Job<'_>,
        trace: &mut Trace,
        details: &mut Vec<FailedAttempt>,
        trial: bool,
    ) -> Result<(Answer, Grant), Missed> {
        let grant = self
            .reserve(i, job, trial, trace)
            .map_err(Missed::Blocked)?;
        let result = self.send(self.upstream.as_ref(), i, &grant, job);
        self.settle(i, grant, result, job, trace, details, trial)
    }

    /// A key and one request of budget for candidate `i`; when none may be sent a request
    /// now, its HALF_OPEN trial slot (`trial`) is given back and the trace says why it was
    /// skipped.
    pub(super) fn reserve(
        &self,
        i: usize,
        job: &Job<'_>,
        trial: bool,
        trace: &mut Trace,
    ) -> Result<Grant, Blocked> {
        let c = self.pool.get(i);
        let granted =
            self.ledger
                .reserve(&c.metered, job.prompt_tokens, crate::time::now_ms(), false);
        if let Err(b) = &granted {
            if trial {
                self.breakers.release_trial(c.key());
            }
            trace.skipped.push(c.ledger_skip(b));
        }
        granted
    }

    /// Sends `job` to candidate `i` with `grant`'s key through `upstream`.
    pub(super) fn send(
        &self,
        upstream: &dyn crate::providers::exchange::Exchange,
        i: usize,
        grant: &Grant,
        job: &Job<'_>,
    ) -> Result<Answer, Failure> {
        let c = self.pool.get(i);
        let api_key = grant.api_key(&c.target.keys);
        attempt(
            upstream,
            &c.target,
            api_key,
            &job.body,
            job.stream,
            &job.limits,
        )
    }

    /// Records what one attempt came to: the ledger, the breaker and live window, the trace
    /// and, for a failure, the details a refusal lists.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn settle(
        &self,
        i: usize,
        grant: Grant,
        result: Result<Answer, Failure>,
        job: &Job<'_>,
        trace: &mut Trace,
        details: &mut Vec<FailedAttempt>,
        trial: bool,
    ) -> Result<(Answer, Grant), Missed> {
        let c = self.pool.get(i);
        let key = c.key();
        match result {
            Ok(answer) => {
                let now = crate::time::now_ms();
                let (status, latency, rate) = match &answer {
                    Answer::Full {
                        status,
                        elapsed,
                        rate,
                        ..
                    } => (*status, *elapsed, rate),
                    Answer::Stream(s) => (s.status, s.ttft, &s.rate),
                };
                self.ledger.answered(&c.metered, &grant, rate, now);
                if let Answer::Full { stats, .. } = &answer {
                    self.record_success(key, latency);
                    let tokens = Tokens::of(stats, job.prompt_tokens);
                    self.ledger.tokens(&c.metered, &grant, tokens, now);
                }
                trace.attempts.push(AttemptRecord {
                    model: key.to_string(),
                    status: Some(status),
                    kind: None,
                    latency_ms: latency.as_millis() as u64,
                    key: grant.label.clone(),
                    raced_out: false,
                });
                Ok((answer, grant))
            }
            Err(mut f) => {
                self.ledger
                    .answered(&c.metered, &grant, &f.rate, crate::time::now_ms());
                self.record_failure(i, &mut f, trial, &grant);
                trace.attempts.push(AttemptRecord {
                    model: key.to_string(),
                    status: f.status,
                    kind: Some(f.kind()),
                    latency_ms: f.elapsed.as_millis() as u64,
                    key: grant.label.clone(),
                    raced_out: false,
                });
                details.push(FailedAttempt {
                    model: key.to_string(),
                    status: f.status,
                    kind: f.kind(),
                    blame: f.verdict.blame,
                    detail: f.detail.clone(),
                });
                Err(Missed::Failed(f))
            }
        }
    }

    /// A model answered: its breaker closes (or stays closed) and the live window learns.
    pub(super) fn record_success(&self, key: &str, ttft: Duration) {
        self.breakers.record_success(key, crate::time::now_ms());
        self.evidence.observe(key, Some(ttft.as_millis() as u64));
    }

    /// A model failed: its breaker, its live window, the ledger (a rate-limited or rejected
    /// key) and, for an account-wide quota, every model of its provider. A third 429
    /// within a minute stretches the pause to 15 min (`f`'s verdict says so afterwards).
    /// With several keys a 429 pauses that key in the ledger, not the model.
    fn record_failure(&self, i: usize, f: &mut Failure, trial: bool, grant: &Grant) {
        let c = self.pool.get(i);
        let now = crate::time::now_ms();
        if let Some(pause) = f.verdict.quota_pause {
            f.verdict.quota_pause = Some(self.ledger.rate_limited(&c.metered, grant, pause, now));
        }
        if f.kind() == FailureKind::AuthError {
            self.ledger.rejected(&c.metered, grant, now);
        }
        let verdict = c.breaker_verdict(&f.verdict);
        self.breakers.record_failure(c.key(), &verdict, now, trial);
        if verdict.damages_health {
            self.evidence.observe(c.key(), None);
        }
        if let (true, Some(pause)) = (c.shared_quota, verdict.quota_pause) {
            // One account-wide quota: every model of the provider waits.
            let until = now + pause.as_millis() as u64;
            for other in self.pool.of_provider(&c.target.provider_id) {
                self.breakers.pause(other.key(), until);
            }
        }
    }

    fn served_won(&self, w: Won, trace: Trace) -> Served<'_> {
        let (i, trial, prompt_tokens) = (w.candidate, w.trial, w.prompt_tokens);
        self.served_with(
            (w.answer, w.grant),
            trace,
            i,
            trial,
            prompt_tokens,
            w.client,
        )
    }

    fn served<'r>(
        &'r self,
        answer: (Answer, Grant),
        trace: Trace,
        i: usize,
        trial: bool,
        prompt_tokens: u64,
    ) -> Served<'r> {
        self.served_with(answer, trace, i, trial, prompt_tokens, None)
    }

    /// `client`: a racer's client of its own, kept for the next race once its stream has
    /// been delivered in full.
    fn served_with<'r>(
        &'r self,
        (answer, grant): (Answer, Grant),
        mut trace: Trace,
        i: usize,
        trial: bool,
        prompt_tokens: u64,
        client: Option<Box<dyn crate::providers::exchange::Exchange>>,
    ) -> Served<'r> {
        trace.served_model = Some(self.pool.get(i).key().to_string());
        trace.outcome = Outcome::Served;
        let delivery = match answer {
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
                settle: Box::new(StreamTicket {
                    router: self,
                    candidate: i,
                    trial,
                    grant,
                    prompt_tokens,
                    client,
                }),
            })),
        };
        Served { delivery, trace }
    }
}

/// Records how a committed stream ended (breaker, live ranking, trace): given by the
/// router with the stream, so the attempt that committed is the one that is judged.
pub(crate) trait Settle {
    /// `stats`: what the stream carried (usage, characters), for what it cost.
    fn settle(
        self: Box<Self>,
        end: &StreamEnd,
        ttft: Duration,
        stats: &AnswerStats,
        trace: &mut Trace,
    );
}

/// A committed stream with the recorder that judges its end.
pub(crate) struct Committed<'r> {
    pub stream: OpenStream,
    pub settle: Box<dyn Settle + 'r>,
}

impl Committed<'_> {
    /// Records how the stream ended, once it has been delivered (or drained).
    pub(crate) fn finish(self, end: &StreamEnd, trace: &mut Trace) {
        self.settle
            .settle(end, self.stream.ttft, self.stream.stats(), trace);
    }
}

/// `body` with the middle of its history dropped to fit `window` (see `trim`): the prompt
/// to [`trim::FILL`] of it, `max_tokens` cut to the room left; and how many messages went.
/// `None` when it cannot be made to fit.
fn trimmed_for(body: &Value, window: u64) -> Option<(Value, usize)> {
    let obj = body.as_object()?;
    let messages = obj.get("messages")?.as_array()?;
    let tools = obj
        .get("tools")
        .map_or(0, |t| tokens::estimate(tokens::text_chars(t)));
    let budget = ((window as f64 * crate::routing::trim::FILL) as u64).checked_sub(tools)?;
    let t = crate::routing::trim::trim(messages, budget)?;
    let room = window.saturating_sub(t.tokens + tools).max(1);
    let mut out = serde_json::Map::with_capacity(obj.len());
    for (k, v) in obj {
        match k.as_str() {
            "messages" => {}
            "max_tokens" | "max_completion_tokens" => {
                let n = v.as_u64().map_or(room, |n| n.min(room));
                out.insert(k.clone(), Value::from(n));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert("messages".into(), Value::Array(t.messages));
    Some((Value::Object(out), t.dropped))
}

/// The committed stream's model, trial slot and key, for recording how the stream ended
/// and what it cost.
struct StreamTicket<'r> {
    router: &'r Router,
    candidate: usize,
    trial: bool,
    grant: Grant,
    prompt_tokens: u64,
    client: Option<Box<dyn crate::providers::exchange::Exchange>>,
}

impl Settle for StreamTicket<'_> {
    fn settle(
        self: Box<Self>,
        end: &StreamEnd,
        ttft: Duration,
        stats: &AnswerStats,
        trace: &mut Trace,
    ) {
        let router = self.router;
        let c = router.pool.get(self.candidate);
        let key = c.key();
        // Whatever the end, the tokens that came were spent.
        let tokens = Tokens::of(stats, self.prompt_tokens);
        router
            .ledger
            .tokens(&c.metered, &self.grant, tokens, crate::time::now_ms());
        match end {
            StreamEnd::Complete { completion_tokens } => {
                router.record_success(key, ttft);
                trace.completion_tokens = *completion_tokens;
                if let Some(client) = self.client {
                    router.race_clients.give(&c.target.provider_id, client);
                }
            }
            StreamEnd::Failed(f) => {
                let mut f = f.clone();
                router.record_failure(self.candidate, &mut f, self.trial, &self.grant);
                // Its own record: in a race, the losers' come after it.
                let own = trace
                    .attempts
                    .iter_mut()
                    .rev()
                    .find(|a| a.model == key && !a.raced_out);
                if let Some(record) = own {
                    record.kind = Some(f.kind());
                }
                trace.outcome = Outcome::StreamFailedAfterContent;
            }
            StreamEnd::ClientGone => {
                // The model was delivering; only the client left.
                if self.trial {
                    router.breakers.release_trial(key);
                }
                router.evidence.observe(key, Some(ttft.as_millis() as u64));
                trace.outcome = Outcome::ClientAborted;
            }
        }
    }
}
