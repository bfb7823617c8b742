//! The failover loop: one request's path through its candidates. A pinned model gets one
//! attempt; otherwise the candidates are planned and ordered, a race or fusion set sends
//! its first ones side by side, and the rest are tried one by one within the request's
//! budget and attempt limit, with a configured last resort at the end. Each attempt is the
//! steps of `attempt` (admit, reserve, send, settle); this file only decides which comes
//! next.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::answers::classify::{Blame, FailureKind};
use crate::answers::failure::Failure;
use crate::capability::Needs;
use crate::state::breaker::Admission;
use crate::state::ledger::Why;
use crate::state::sets::Strategy;
use crate::state::trace::{Skip, SkipReason, Trace};
use crate::tokens;

use super::affinity;
use super::attempt::{Job, Missed, Served, Turn, Won};
use super::conversation::{Keeping, SessionName};
use super::race::RaceEnd;
use super::refusal::Refused;
use super::router::{Route, Router};

/// How long a request waits for its conversation's own model to come out of a rate window
/// (see `Router::wait_for_held`).
const HOLD_WAIT: Duration = Duration::from_secs(20);
/// Past the window's end: a provider's clock and fcm's differ by a little.
const HOLD_MARGIN: Duration = Duration::from_millis(150);

/// A 502/503/504 with a `Retry-After` this short from the last candidate is waited out once.
const SHORT_RETRY: Duration = Duration::from_secs(5);
/// A failure that came back this fast without an answer (refused before a byte, an
/// instant 429, 403 or 404) cost the request nothing: it does not use up one of
/// `maxAttempts`, which bounds the attempts that reached a model and cost time.
const FREE_FAILURE: Duration = Duration::from_millis(1500);
/// How long an instant "overloaded" or a burst limit's 429 is waited out before the held
/// model is asked again.
const BURST_WAIT: Duration = Duration::from_secs(1);
/// Free failures one request may meet before it gives up all the same: each is an
/// upstream request, and a request that every provider turns away is not worth more.
const MAX_FREE_FAILURES: usize = 24;

/// One chat request as the router sees it.
pub(crate) struct Ask<'a> {
    pub body: &'a Value,
    pub stream: bool,
    /// What the client's own request needs (read before translation).
    pub needs: Needs,
    /// The tools the request offers: tool calls are checked against them.
    pub tools: Option<std::sync::Arc<crate::answers::toolcall::Offered>>,
    /// The session id the client sent, naming its conversation.
    pub session: Option<SessionName>,
    /// A model not to try: the one whose answer broke off, when another continues it.
    pub exclude: Option<&'a str>,
}

/// The one-by-one loop's state between candidates.
struct Queue {
    order: VecDeque<usize>,
    /// A configured last resort not yet tried, with the attempt slot kept for it.
    last_resort: Option<String>,
    /// A short `Retry-After` was waited out already.
    waited: bool,
    /// Candidates sent again with another of their keys, once per extra key.
    key_retries: Vec<usize>,
    /// The conversation's own model was asked again after a passing server error.
    held_retried: bool,
    /// The conversation's own model, asked again after an instant "overloaded": its
    /// back-off, set for everyone else, does not stop this one request.
    overlooked: Option<usize>,
    deadline: Instant,
    /// Which candidates may stand in for one another when a conversation is placed (see
    /// `affinity::Peers`).
    peers: affinity::Peers,
}

impl Router {
    /// Routes one chat request. Streams return once committed; delivering them records
    /// how they ended.
    pub(crate) fn route<'r>(
        &'r self,
        route: &Route,
        ask: &Ask<'_>,
        trace: Trace,
    ) -> Result<Served<'r>, Box<Refused>> {
        let deadline = Instant::now() + Duration::from_millis(self.failover.total_budget_ms);
        let prompt_tokens = tokens::prompt(ask.body);
        let mut job = Job {
            body: Cow::Borrowed(ask.body),
            stream: ask.stream,
            // Streams keep the gate's parsed chunks: the client's protocol shapes them.
            limits: self.limits(deadline, ask.stream, ask.tools.clone()),
            prompt_tokens,
            placeholder: Default::default(),
        };
        let mut turn = Turn::new(trace, tokens::with_answer(prompt_tokens, ask.body));
        if let Route::Pinned(key) = route {
            return self.route_pinned(key, &job, turn);
        }
        turn.keeping = Keeping::of(self, route, ask.session.as_ref(), ask.body);
        let said = (turn.trace.skipped.len(), turn.trace.notes.len());
        let mut planned = self.plan(route, ask.needs, ask.exclude, &job, &mut turn);
        // Only when the plan passed over the conversation's own model for a rate window:
        // nothing more is read for any other request.
        // Others on the same account may take the window's first room: the wait goes on,
        // within HOLD_WAIT in all, while the plan still passes over it for a window.
        let mut waited = Duration::ZERO;
        while self.held_paused(&turn) {
            let Some(more) = self.wait_for_held(&job, deadline, &turn, HOLD_WAIT - waited) else {
                break;
            };
            waited += more;
            turn.trace.skipped.truncate(said.0);
            turn.trace.notes.truncate(said.1);
            turn.trace
                .notes
                .push(format!("waited_for_held:{}ms", waited.as_millis()));
            planned = self.plan(route, ask.needs, ask.exclude, &job, &mut turn);
        }
        let (order, peers) = planned;
        let mut queue = Queue {
            order: order.into(),
            peers,
            last_resort: self
                .failover
                .last_resort_model
                .clone()
                .filter(|m| self.knows(m) && Some(m.as_str()) != ask.exclude),
            waited: false,
            key_retries: Vec::new(),
            held_retried: false,
            overlooked: None,
            deadline,
        };
        let won = match self.side_by_side_first(route, &job, &mut queue, &mut turn) {
            Some(Ok(w)) => Some(w),
            Some(Err(())) => None,
            None => self
                .one_by_one(&mut job, &mut queue, &mut turn)
                .or_else(|| self.last_resort(&job, &queue, &mut turn)),
        };
        if let Some(w) = won {
            self.note_served(w.candidate, &job, &mut turn.trace);
            let key = w.grant.label.clone();
            affinity::settle(self, &mut turn, Some((w.candidate, key.as_deref())));
            return Ok(self.serve(w, turn.trace));
        }
        affinity::settle(self, &mut turn, None);
        let needed = turn.needed;
        Err(Box::new(Refused::all(
            self,
            turn.trace,
            turn.details,
            needed,
        )))
    }

    /// A pinned model: one attempt, sent even when OPEN or paused (the user asked for it by
    /// name); a HALF_OPEN trial slot is taken if free so its result counts as the trial.
    fn route_pinned<'r>(
        &'r self,
        key: &str,
        job: &Job<'_>,
        mut turn: Turn<'r>,
    ) -> Result<Served<'r>, Box<Refused>> {
        let i = self
            .pool
            .position(key)
            .expect("resolve only pins known models");
        if let Some(how) = &self.pool.get(i).missing_key {
            turn.trace
                .skipped
                .push(Skip::new(key, SkipReason::MissingKey));
            return Err(Box::new(Refused::missing_key(turn.trace, key, how)));
        }
        let trial = self.breakers.admit(key, crate::time::now_ms()) == Admission::Trial;
        match self.try_one(i, job, trial, &mut turn) {
            Ok(w) => {
                self.note_served(i, job, &mut turn.trace);
                Ok(self.serve(w, turn.trace))
            }
            Err(Missed::Failed(f)) => Err(Box::new(Refused::pinned(turn.trace, &f, turn.details))),
            // Not sent: it would have been refused for its spent budget.
            Err(Missed::Blocked(b)) => Err(Box::new(Refused::blocked(turn.trace, key, &b))),
        }
    }

    /// When the model a conversation holds is held back only by a rate window that ends
    /// within [`HOLD_WAIT`] (a per-minute budget spent, a 429's short pause), the request
    /// waits for it rather than moving the conversation: a switch costs the agent more
    /// (another model's manners, a cold cache, a half-done task) than seconds. Never past the request's
    /// time budget, and not for a model that is out for another reason; at most `left`.
    /// Returns how long it waited.
    fn wait_for_held(
        &self,
        job: &Job<'_>,
        deadline: Instant,
        turn: &Turn<'_>,
        left: Duration,
    ) -> Option<Duration> {
        let (held, _) = turn.keeping.as_ref().and_then(|k| k.kept)?;
        let c = self.pool.get(held);
        let now = crate::time::now_ms();
        let (state, pause) = self.breakers.states(&[c.key()], now)[0];
        let breaker_until = match (state, pause) {
            (crate::state::breaker::BreakerState::Open, _) => return None,
            // An overload back-off, a model gone, a notice: not a window.
            (_, Some(p)) if p.why.is_some() => return None,
            (_, Some(p)) => p.until_ms,
            (_, None) => now,
        };
        let budget = self
            .ledger
            .assess(std::iter::once(&c.metered), job.prompt_tokens, now)
            .pop();
        let budget_until = match budget {
            Some(Err(b)) if matches!(b.why, Why::Budget(_) | Why::Paused) => b.until_ms,
            Some(Err(_)) => return None,
            _ => now,
        };
        let until = breaker_until.max(budget_until);
        let down = !matches!(
            self.outages.state(&c.target.provider_id, now),
            crate::state::outages::Reachable::Yes
        );
        if until <= now || down {
            return None;
        }
        let wait = Duration::from_millis(until - now) + HOLD_MARGIN;
        if wait > left || Instant::now() + wait >= deadline {
            return None;
        }
        std::thread::sleep(wait);
        Some(wait)
    }

    /// Whether the plan just made passed over the conversation's own model for a paused
    /// window or a spent budget.
    fn held_paused(&self, turn: &Turn<'_>) -> bool {
        let Some((held, _)) = turn.keeping.as_ref().and_then(|k| k.kept) else {
            return false;
        };
        let key = self.pool.get(held).key();
        turn.trace.skipped.iter().any(|s| {
            s.model == key && matches!(s.reason, SkipReason::QuotaBudget | SkipReason::QuotaPaused)
        })
    }

    /// Says in the trace when the serving model took a lower answer budget than the request
    /// asked for (its window had less room: see `tokens::ANSWER_ROOM`), and when it was
    /// given Google's placeholder for a thought signature fcm did not have.
    fn note_served(&self, i: usize, job: &Job<'_>, trace: &mut Trace) {
        let c = self.pool.get(i);
        if job.placeholder.load(std::sync::atomic::Ordering::Relaxed)
            && super::placeholder::checks_signatures(&c.target.wire_model)
        {
            trace.notes.push("signature_placeholder".to_string());
        }
        if let Some((asked, room)) = tokens::lowered(c.context, job.prompt_tokens, &job.body) {
            trace.max_tokens = Some(room);
            trace
                .notes
                .push(format!("max_tokens_lowered:{asked}_to_{room}"));
        }
    }

    /// The candidates in the order they will be tried: the routable ones that may be tried
    /// now in ranking order, then a set's own order, then capabilities. Skips go into the
    /// trace.
    fn plan(
        &self,
        route: &Route,
        needs: Needs,
        exclude: Option<&str>,
        job: &Job<'_>,
        turn: &mut Turn<'_>,
    ) -> (Vec<usize>, affinity::Peers) {
        // With trimming, windows are judged in the loop, where it is known whether a larger
        // window is left.
        let window = if self.trim_history { 0 } else { turn.needed };
        let plan = self.pool.plan(&self.known(), window, job.prompt_tokens);
        let mut order = plan.order;
        turn.trace.skipped.extend(plan.skipped);
        // New and moving conversations alike go where the load is least; a held model
        // that may serve is put first again below.
        let size = affinity::Size {
            needed: turn.needed,
            prompt: job.prompt_tokens,
        };
        // A set's order is its user's: after a failure its next model stands in, not the
        // least loaded of the ranking.
        let peers = match route {
            Route::Set(_) => affinity::Peers::default(),
            _ => affinity::Peers::of(self, &order, &plan.standings, size, needs),
        };
        let load = turn.keeping.as_ref().map(|k| {
            let held = k.held.as_ref().map(|h| h.model.as_str());
            let load = affinity::Load::now(self, Some(k.conversation.id())).leaving(held);
            affinity::spread(self, &mut order, &plan.standings, &load, size);
            load
        });
        let mut preferred = Vec::new();
        if let Route::Set(name) = route {
            preferred = self.set_order(name);
            self.pool
                .order_by_set(&mut order, &preferred, &mut turn.trace);
        }
        self.pool.order_by_capability(
            &mut order,
            needs,
            &preferred,
            &self.evidence,
            &self.capability_pools,
            &mut turn.trace,
        );
        if let Some(load) = &load {
            affinity::keep_first(self, &mut order, needs, load, turn);
        }
        if let Some(broke) = exclude {
            order.retain(|&i| self.pool.get(i).key() != broke);
        }
        (order, peers)
    }

    /// A fusion or race set's first candidates, side by side (taken off the queue): the
    /// answer served (`Some(Ok)`), the request ended by a failure no other model would fix
    /// (`Some(Err)`), or nothing yet and the one-by-one loop goes on (`None`). What a
    /// route's strategy does is decided here, once.
    fn side_by_side_first<'r>(
        &'r self,
        route: &Route,
        job: &Job<'_>,
        queue: &mut Queue,
        turn: &mut Turn<'r>,
    ) -> Option<Result<Won, ()>> {
        let Route::Set(name) = route else {
            return None;
        };
        let set = self.sets.get(name)?;
        match set.strategy {
            Strategy::Fusion if super::fusion::bodies::offers_tools(&job.body) => {
                // A merged answer cannot carry a tool call the agent would run.
                turn.trace
                    .notes
                    .push("fusion:not_fused:tools_offered".into());
                None
            }
            Strategy::Fusion => super::fusion::fuse(self, set, &mut queue.order, job, turn).map(Ok),
            Strategy::Race => {
                let width =
                    (set.width as usize).min(self.ordinary_attempts(queue.last_resort.is_some()));
                match super::race::race(self, &mut queue.order, width, job, turn) {
                    RaceEnd::Won(w) => Some(Ok(*w)),
                    RaceEnd::Lost { stop: true } => Some(Err(())),
                    RaceEnd::Lost { stop: false } => None,
                }
            }
            Strategy::Fallback | Strategy::RoundRobin => None,
        }
    }

    /// Tries the queue's candidates one by one until one serves, the attempts or the budget
    /// run out, or a failure says no other model would do better.
    fn one_by_one<'r>(
        &'r self,
        job: &mut Job<'_>,
        queue: &mut Queue,
        turn: &mut Turn<'r>,
    ) -> Option<Won> {
        while let Some(i) = queue.order.pop_front() {
            let spent = Spent::of(turn);
            if spent.costly >= self.ordinary_attempts(queue.last_resort.is_some())
                || spent.free >= MAX_FREE_FAILURES
                || Instant::now() >= queue.deadline
            {
                break;
            }
            if self.untried_busy(i) && !turn.deferred.contains(&i) {
                // After the others: a model that has not answered yet takes one request
                // at a time while there is anyone else.
                turn.deferred.push(i);
                let skip = Skip::new(self.pool.get(i).key(), SkipReason::UntriedBusy);
                turn.trace.skipped.push(skip);
                queue.order.push_back(i);
                continue;
            }
            if turn.deferred.contains(&i) {
                // Its turn came after all: no longer a skip.
                let key = self.pool.get(i).key();
                turn.trace
                    .skipped
                    .retain(|s| !(s.model == key && s.reason == SkipReason::UntriedBusy));
            }
            // After a failure, the least loaded of the candidates that may stand in for
            // this one: requests failing over together do not all land on one model.
            let i = if turn.trace.attempts.is_empty() {
                i
            } else {
                affinity::least_loaded_peer(self, i, &mut queue.order, &queue.peers, turn)
            };
            self.trim_to_fit(i, job, &queue.order, turn);
            let overlook = queue.overlooked.take() == Some(i);
            let Some(trial) = self.admit_as(i, turn, overlook) else {
                continue;
            };
            affinity::place(self, i, turn);
            let f = match self.try_one(i, job, trial, turn) {
                Ok(w) => {
                    if overlook {
                        // Answered past the pause its last answer set: that was a moment's.
                        self.breakers
                            .lift_pause(self.pool.get(i).key(), crate::time::now_ms());
                    }
                    return Some(w);
                }
                Err(Missed::Failed(f)) => f,
                // Its budget was spent since planning (by a request running beside this
                // one): skipped like the others, nothing sent.
                Err(Missed::Blocked(_)) => continue,
            };
            let c = self.pool.get(i);
            if queue.last_resort.as_deref() == Some(c.key()) {
                queue.last_resort = None;
            }
            if f.kind() == FailureKind::ContextOverflow && f.verdict.over_tpm().is_none() {
                // Only a larger window can take it.
                turn.needed = turn.needed.max(c.context + 1);
            }
            if !f.verdict.failover {
                break;
            }
            let held = turn.keeping.as_ref().and_then(|k| k.kept).map(|(h, _)| h);
            if self.again(i, &f, queue, held == Some(i)) {
                queue.order.push_front(i);
                continue;
            }
            self.pool.family_first(&mut queue.order, i);
        }
        None
    }

    /// Whether candidate `i`, which just failed with `f`, goes again at once: with another
    /// of its keys after a rejected or rate-limited one (the ledger holds that one back);
    /// once, when it is the model the conversation holds (`held`) and the failure was a
    /// server error, an "overloaded" or a dropped connection that came back at once (a
    /// passing fault: moving the conversation would cost more than asking again); or as the last candidate
    /// after a short `Retry-After` on a 502/503/504 (waited out once).
    fn again(&self, i: usize, f: &Failure, queue: &mut Queue, held: bool) -> bool {
        let keys = self.pool.get(i).metered.key_count();
        if keys > 1 && (f.kind() == FailureKind::AuthError || f.kind().is_quota()) {
            let tried = queue.key_retries.iter().filter(|j| **j == i).count();
            if tried + 1 < keys {
                queue.key_retries.push(i);
                return true;
            }
        }
        let server_error = f.status.is_some_and(|s| s >= 500)
            && matches!(
                f.kind(),
                FailureKind::ProviderServerError | FailureKind::HtmlMaintenance
            );
        let overloaded = f.kind() == FailureKind::ModelOverloaded;
        let passing = (server_error || overloaded || f.kind() == FailureKind::NetworkError)
            && f.elapsed < FREE_FAILURE
            && f.retry_after.is_none_or(|w| w <= SHORT_RETRY);
        if held && passing && !queue.held_retried {
            queue.held_retried = true;
            if overloaded {
                // "Retry shortly": a second, not at once into the same moment.
                queue.overlooked = Some(i);
                if Instant::now() + BURST_WAIT < queue.deadline {
                    std::thread::sleep(BURST_WAIT);
                }
            }
            return true;
        }
        // The conversation's own model said to come back within seconds (a 429 with a short
        // reset): waited out once, as a held model's rate window is before the request.
        if held && !queue.held_retried && f.kind() == FailureKind::RateLimit {
            let said = f.retry_after.or(f.verdict.quota_pause);
            if let Some(wait) = said.filter(|w| *w <= HOLD_WAIT).map(|w| w + HOLD_MARGIN) {
                if Instant::now() + wait < queue.deadline {
                    queue.held_retried = true;
                    std::thread::sleep(wait);
                    return true;
                }
            }
        }
        // A 429 that gave no time while the windows it reported still had room: a limit
        // of a second or a burst, not the minute's or the day's. Asked once more after a
        // second, past the pause that 429 set.
        if held
            && !queue.held_retried
            && burst_limited(f)
            && Instant::now() + BURST_WAIT < queue.deadline
        {
            queue.held_retried = true;
            queue.overlooked = Some(i);
            std::thread::sleep(BURST_WAIT);
            return true;
        }
        let Some(wait) = f.retry_after.filter(|w| *w <= SHORT_RETRY) else {
            return false;
        };
        if queue.order.is_empty()
            && !queue.waited
            && f.status.is_some_and(|s| (502..=504).contains(&s))
            && Instant::now() + wait < queue.deadline
        {
            queue.waited = true;
            std::thread::sleep(wait);
            return true;
        }
        false
    }

    /// Before trying `i`: when the request fits no window left (candidate `i`'s nor any
    /// still queued: the larger ones are down, paused or were never there), the middle of
    /// the conversation goes, to fit the largest window that is. Once per request.
    fn trim_to_fit(
        &self,
        i: usize,
        job: &mut Job<'_>,
        queued: &VecDeque<usize>,
        turn: &mut Turn<'_>,
    ) {
        let c = self.pool.get(i);
        if c.context >= turn.needed || !self.trim_history || turn.trace.trimmed.is_some() {
            return;
        }
        let window = queued
            .iter()
            .map(|j| self.pool.get(*j).context)
            .chain([c.context])
            .max()
            .unwrap_or(c.context);
        if window >= turn.needed {
            return;
        }
        if let Some((body, dropped)) = trimmed_for(&job.body, window) {
            job.prompt_tokens = tokens::prompt(&body);
            turn.needed = tokens::with_answer(job.prompt_tokens, &body);
            job.body = Cow::Owned(body);
            turn.trace.trimmed = Some(dropped);
            turn.trace.notes.push(format!(
                "history_trimmed:{dropped}_messages:to_fit_{window}"
            ));
        }
    }

    /// The last resort takes the slot kept for it, whatever its breaker says, but not when
    /// every failure was the request's fault (it would fail the same way), nor on a
    /// provider whose key was just rejected.
    fn last_resort<'r>(&'r self, job: &Job<'_>, queue: &Queue, turn: &mut Turn<'r>) -> Option<Won> {
        let key = queue.last_resort.as_deref()?;
        let request_blamed =
            !turn.details.is_empty() && turn.details.iter().all(|d| d.blame == Blame::Client);
        let has_slot = Spent::of(turn).costly < self.failover.max_attempts as usize;
        let i = self.pool.position(key)?;
        let c = self.pool.get(i);
        if request_blamed
            || !has_slot
            || c.missing_key.is_some()
            || turn.blocked.contains(c.target.provider_id.as_str())
            || Instant::now() >= queue.deadline
        {
            return None;
        }
        // Tried whatever its breaker says, like a pinned model.
        let trial = self.breakers.admit(key, crate::time::now_ms()) == Admission::Trial;
        self.try_one(i, job, trial, turn).ok()
    }

    /// How many attempts the ordered candidates may use. `maxAttempts` bounds every request;
    /// a configured last resort keeps the final one of them for itself (with `maxAttempts: 1`
    /// there is no slot to keep, and the one attempt goes to the best candidate).
    pub(super) fn ordinary_attempts(&self, last_resort: bool) -> usize {
        let max = self.failover.max_attempts as usize;
        if last_resort && max >= 2 {
            max - 1
        } else {
            max
        }
    }
}

/// What a request's attempts so far have cost: those that reached a model and took time
/// (bounded by `maxAttempts`), and those that cost nothing.
struct Spent {
    costly: usize,
    free: usize,
}

impl Spent {
    fn of(turn: &Turn<'_>) -> Spent {
        let free = turn
            .trace
            .attempts
            .iter()
            .filter(|a| cost_nothing(a))
            .count();
        Spent {
            costly: turn.trace.attempts.len() - free,
            free,
        }
    }
}

/// Whether an attempt cost the request nothing: it failed within [`FREE_FAILURE`] without
/// an answer to judge (an error status, or no connection at all). A 2xx that failed the
/// gate, a timeout and a race's loser reached a model; a refusal of the request itself
/// (`invalid_request`) counts too, since another model would likely refuse it the same
/// way and `maxAttempts` keeps it from being sent everywhere.
/// Whether `f` is a 429 that said nothing of when to come back while every window its
/// headers reported had requests and tokens left (see `again`).
fn burst_limited(f: &Failure) -> bool {
    f.kind() == FailureKind::RateLimit
        && f.retry_after.is_none()
        && !f.rate.is_empty()
        && f.rate
            .iter()
            .all(|w| w.remaining.is_none_or(|left| left > 0))
}

fn cost_nothing(a: &crate::state::trace::AttemptRecord) -> bool {
    let quick = a.latency_ms < FREE_FAILURE.as_millis() as u64;
    let unanswered = match (a.status, a.kind) {
        (_, Some(FailureKind::InvalidRequest)) => false,
        (Some(status), Some(_)) => !(200..300).contains(&status),
        (None, Some(kind)) => matches!(
            kind,
            FailureKind::NetworkError | FailureKind::ProviderUrlUnresolvable
        ),
        _ => false,
    };
    quick && unanswered && !a.raced_out
}

/// `body` with the middle of its history dropped to fit `window` (see `trim`): the prompt
/// to [`trim::FILL`](super::trim::FILL) of it, `max_tokens` cut to the room left; and how
/// many messages went. `None` when it cannot be made to fit.
fn trimmed_for(body: &Value, window: u64) -> Option<(Value, usize)> {
    let obj = body.as_object()?;
    let messages = obj.get("messages")?.as_array()?;
    let tools = obj
        .get("tools")
        .map_or(0, |t| tokens::estimate(tokens::text_chars(t)));
    let budget = ((window as f64 * super::trim::FILL) as u64).checked_sub(tools)?;
    let t = super::trim::trim(messages, budget)?;
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
