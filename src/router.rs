//! The router: picks candidates for a request, tries them in order, and explains itself.
//!
//! Candidates are the catalog models whose provider has a key (or needs none). Before
//! dispatch, models that are OPEN or quota-paused are skipped with a reason; the rest are
//! ordered by breaker state, then the latest bench results, then catalog tier. The failover
//! loop tries them through the shared [`attempt`](crate::attempt) within a wall-clock budget.
//! A pinned model (`fcm:provider/modelId`) gets one attempt, whatever its breaker says.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::attempt::{attempt, Answer, Failure, Limits, Target};
use crate::bench::BenchReport;
use crate::breaker::{Admission, BreakerState, Breakers};
use crate::capability::Needs;
use crate::catalog::{tier_rank, Catalog, KeySource, KeyStatus};
use crate::classify::{Blame, FailureKind};
use crate::config::{FailoverConfig, RouterConfig};
use crate::trace::{AttemptRecord, History, Outcome, Skip, SkipReason, Trace};
use crate::upstream::Upstream;

/// A `Retry-After` this short on a 502/503/504 from the last candidate is waited out once.
const SHORT_RETRY: Duration = Duration::from_secs(5);
/// Largest non-stream answer the router accepts from a provider.
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// How often `bench.json` is checked for a newer version.
const BENCH_RECHECK: Duration = Duration::from_secs(5);

/// A model the router can call.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub target: Target,
    pub tier: usize,
    pub swe: f64,
    /// Why it cannot be called at all (its key is not set), naming the variables.
    pub missing_key: Option<String>,
    /// The model's context window in tokens.
    pub context: u64,
    /// A 429 pauses every model of this provider (one account-wide free quota).
    pub shared_quota: bool,
    /// What the catalog says the model can do (`vision`, `tools`, ...).
    pub capabilities: Vec<String>,
    /// Its [`family`], the same model on other providers.
    pub family: String,
}

impl Candidate {
    /// The skip for a quota-paused model, naming the provider when the pause is account-wide.
    fn quota_skip(&self) -> Skip {
        if self.shared_quota {
            Skip::provider_paused(self.target.key.clone(), &self.target.provider_id)
        } else {
            Skip::new(self.target.key.clone(), SkipReason::QuotaPaused)
        }
    }
}

/// How a request names its model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `fcm`, or any name fcm does not know: route across healthy models.
    Auto,
    /// One catalog model by key.
    Pinned(String),
    /// A user's model set (`fcm:<name>`, or `fcm` when it is the active set): its models first,
    /// in the set's order, then every other healthy model.
    Set(String),
}

/// What ranking needs to know of one candidate.
#[derive(Debug, Clone)]
pub struct RankInput<'a> {
    pub key: &'a str,
    pub state: BreakerState,
    /// 0: usable in the last bench, 1: not benched, 2: benched and unusable.
    pub bench_class: u8,
    pub ttft_ms: Option<u64>,
    pub tier: usize,
    pub swe: f64,
}

/// Orders candidates best first: breaker state (CLOSED, DEGRADED, HALF_OPEN), then bench
/// results (usable first, then lower median time to first token; models never benched sit
/// between usable and unusable ones), then tier and SWE-bench score, then the key.
pub fn rank(inputs: &mut [RankInput<'_>]) {
    inputs.sort_by(|a, b| {
        a.state
            .cmp(&b.state)
            .then(a.bench_class.cmp(&b.bench_class))
            .then(
                a.ttft_ms
                    .unwrap_or(u64::MAX)
                    .cmp(&b.ttft_ms.unwrap_or(u64::MAX)),
            )
            .then(a.tier.cmp(&b.tier))
            .then(b.swe.total_cmp(&a.swe))
            .then(a.key.cmp(b.key))
    });
}

/// Results a model's ranking learns from.
const LIVE_WINDOW: usize = 20;
/// Results needed before real traffic outweighs the bench prior.
const LIVE_MIN: usize = 3;

/// A model's last [`LIVE_WINDOW`] real results (time to first answer, or a failure) and the
/// ranking they give, worked out when a result arrives: every request reads it for every
/// candidate, results arrive once per attempt.
#[derive(Debug, Default, Clone)]
pub struct LiveWindow {
    results: std::collections::VecDeque<Option<u64>>,
    rank: Option<(u8, Option<u64>)>,
}

impl LiveWindow {
    pub fn push(&mut self, result: Option<u64>) {
        if self.results.len() == LIVE_WINDOW {
            self.results.pop_front();
        }
        self.results.push_back(result);
        self.rank = self.compute_rank();
    }

    /// (class, median ttft) for ranking, as for bench results: class 0 when at least 80% of
    /// recent requests succeeded, 1 from half, else 2. `None` until there are enough results.
    pub fn rank(&self) -> Option<(u8, Option<u64>)> {
        self.rank
    }

    fn compute_rank(&self) -> Option<(u8, Option<u64>)> {
        if self.results.len() < LIVE_MIN {
            return None;
        }
        let mut ok: Vec<u64> = self.results.iter().flatten().copied().collect();
        ok.sort_unstable();
        let rate = ok.len() as f64 / self.results.len() as f64;
        let class = if rate >= 0.8 {
            0
        } else if rate >= 0.5 {
            1
        } else {
            2
        };
        Some((class, ok.get(ok.len().saturating_sub(1) / 2).copied()))
    }
}

/// Latest bench results, reloaded when `bench.json` changes.
struct BenchRanks {
    path: Option<PathBuf>,
    by_model: HashMap<String, (bool, Option<u64>)>,
    modified: Option<SystemTime>,
    checked: Option<Instant>,
}

impl BenchRanks {
    /// Whether `bench.json` may have changed (checked at most every few seconds).
    fn due(&mut self) -> Option<(PathBuf, Option<SystemTime>)> {
        if self.checked.is_some_and(|c| c.elapsed() < BENCH_RECHECK) {
            return None;
        }
        self.checked = Some(Instant::now());
        let path = self.path.clone()?;
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        (modified != self.modified).then_some((path, modified))
    }
}

/// Reads `bench.json` outside the lock every request's planning needs.
fn load_bench(path: &std::path::Path) -> HashMap<String, (bool, Option<u64>)> {
    let report: BenchReport = crate::state::load_json(path).unwrap_or_default();
    report
        .models
        .into_iter()
        .map(|m| (m.model, (m.usable, m.ttft_ms_p50)))
        .collect()
}

/// A request that was served: the committed answer and the trace so far.
pub struct Served {
    pub answer: Answer,
    pub trace: Trace,
    pub model: String,
    /// This request holds the model's HALF_OPEN trial slot.
    pub trial: bool,
}

/// One failed attempt, as error bodies list it.
#[derive(Debug, Clone)]
pub struct FailedAttempt {
    pub model: String,
    pub status: Option<u16>,
    pub kind: FailureKind,
    pub blame: Blame,
    /// One line, safe to show.
    pub detail: String,
}

/// A request that could not be served.
pub struct Refused {
    pub trace: Trace,
    pub status: u16,
    pub retry_after_secs: Option<u64>,
    pub message: String,
    /// Every failed attempt, in order.
    pub details: Vec<FailedAttempt>,
}

impl Refused {
    /// The error in OpenAI's shape, listing each attempt.
    pub fn openai_body(&self) -> Value {
        let kind = match self.status {
            401 => "authentication_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            400..=499 => "invalid_request_error",
            _ => "server_error",
        };
        json!({"error": {
            "message": self.message,
            "type": kind,
            "code": self.trace.outcome.as_str(),
            "attempts": self.details.iter().map(|a| json!({"model": a.model, "status": a.status, "kind": a.kind, "detail": a.detail})).collect::<Vec<_>>(),
        }})
    }
}

pub struct Router {
    candidates: Vec<Candidate>,
    sets: std::collections::BTreeMap<String, crate::config::ModelSet>,
    active_set: Option<String>,
    /// Requests served per round-robin set.
    set_counters: Mutex<HashMap<String, u64>>,
    /// Recent real results per model.
    live: Mutex<HashMap<String, LiveWindow>>,
    index: HashMap<String, usize>,
    pub breakers: Breakers,
    pub history: History,
    pub failover: FailoverConfig,
    bench: Mutex<BenchRanks>,
    upstream: Upstream,
}

impl Router {
    pub fn new(
        catalog: &Catalog,
        keys: &KeySource<'_>,
        cfg: &RouterConfig,
        breakers: Breakers,
        history: History,
        bench_path: Option<PathBuf>,
        session_id: &str,
    ) -> Router {
        let candidates: Vec<Candidate> = catalog
            .models()
            .map(|m| {
                let missing_key = match keys.lookup(m.provider).0 {
                    KeyStatus::Missing(vars) if vars.is_empty() => {
                        Some(format!("add apiKeys.{} to config.json", m.provider.id))
                    }
                    KeyStatus::Missing(vars) => Some(format!("set {}", vars.join(" or "))),
                    _ => None,
                };
                Candidate {
                    target: Target::resolve(m, keys, session_id),
                    tier: tier_rank(&m.model.tier),
                    swe: m.model.swe_bench.unwrap_or(-1.0),
                    missing_key,
                    context: m.model.context,
                    shared_quota: m.provider.shared_quota,
                    capabilities: m.model.capabilities.clone(),
                    family: family(&m.model.id),
                }
            })
            .collect();
        let index = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| (c.target.key.clone(), i))
            .collect();
        Router {
            candidates,
            sets: cfg.sets.clone(),
            active_set: cfg.active_set.clone(),
            set_counters: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            index,
            breakers,
            history,
            failover: cfg.failover.clone(),
            bench: Mutex::new(BenchRanks {
                path: bench_path,
                by_model: HashMap::new(),
                modified: None,
                checked: None,
            }),
            upstream: Upstream::new(),
        }
    }

    /// Models that automatic routing may use (their key is set or not needed).
    pub fn routable(&self) -> impl Iterator<Item = &Candidate> {
        self.candidates.iter().filter(|c| c.missing_key.is_none())
    }

    pub fn knows(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Reads the request's `model`: `fcm`, `fcm:provider/modelId`, a catalog key, or
    /// anything else (auto). An unknown pinned model is an error message.
    pub fn resolve(&self, requested: &str) -> Result<Route, String> {
        if let Some(key) = requested.strip_prefix("fcm:") {
            if self.sets.contains_key(key) {
                return Ok(Route::Set(key.to_string()));
            }
            return if self.knows(key) {
                Ok(Route::Pinned(key.to_string()))
            } else {
                Err(format!("unknown model or set {key:?}: `fcm models` lists the models as provider/modelId and `fcm sets` the sets; use model \"fcm\" to route automatically"))
            };
        }
        if self.knows(requested) {
            return Ok(Route::Pinned(requested.to_string()));
        }
        match &self.active_set {
            Some(set) => Ok(Route::Set(set.clone())),
            None => Ok(Route::Auto),
        }
    }

    /// Set members fcm does not know (typos, models gone from the catalog, missing keys are
    /// fine): reported at start and in traces, never silently ignored.
    pub fn stale_set_members(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, set) in &self.sets {
            out.extend(
                set.models
                    .iter()
                    .filter(|m| !self.knows(m))
                    .map(|m| (name.clone(), m.clone())),
            );
        }
        out
    }

    fn limits(&self, deadline: Instant) -> Limits {
        Limits {
            body_read: Duration::from_millis(self.failover.body_read_timeout_ms),
            first_token: Duration::from_millis(self.failover.first_token_timeout_ms),
            stream_stall: Duration::from_millis(self.failover.stream_stall_timeout_ms),
            deadline,
            validation: self.failover.content_validation,
            max_body: MAX_ANSWER_BYTES,
        }
    }

    /// The routable models in the order they would be tried, with the skipped ones.
    /// `needed_tokens`: the request's estimated size; smaller context windows are skipped.
    pub fn plan(&self, now_ms: u64, needed_tokens: u64) -> (Vec<usize>, Vec<Skip>) {
        let routable: Vec<usize> = (0..self.candidates.len())
            .filter(|i| self.candidates[*i].missing_key.is_none())
            .collect();
        let keys: Vec<&str> = routable
            .iter()
            .map(|i| self.candidates[*i].target.key.as_str())
            .collect();
        let states = self.breakers.states(&keys, now_ms);
        let due = self.bench.lock().unwrap_or_else(|e| e.into_inner()).due();
        if let Some((path, modified)) = due {
            let fresh = load_bench(&path);
            let mut bench = self.bench.lock().unwrap_or_else(|e| e.into_inner());
            bench.by_model = fresh;
            bench.modified = modified;
        }
        let bench = self.bench.lock().unwrap_or_else(|e| e.into_inner());
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let mut skipped = Vec::new();
        let mut inputs = Vec::new();
        for (n, i) in routable.iter().enumerate() {
            let c = &self.candidates[*i];
            let (state, quota_until) = states[n];
            if c.context < needed_tokens {
                skipped.push(Skip::new(c.target.key.clone(), SkipReason::ContextTooSmall));
                continue;
            }
            if quota_until > now_ms {
                skipped.push(c.quota_skip());
                continue;
            }
            if state == BreakerState::Open {
                skipped.push(Skip::new(c.target.key.clone(), SkipReason::CircuitOpen));
                continue;
            }
            // Real traffic first; the last bench run is the prior until there is enough of it.
            let (bench_class, ttft_ms) = match live.get(&c.target.key).and_then(LiveWindow::rank) {
                Some(ranked) => ranked,
                None => match bench.by_model.get(&c.target.key) {
                    Some((true, ttft)) => (0, *ttft),
                    Some((false, _)) => (2, None),
                    None => (1, None),
                },
            };
            inputs.push(RankInput {
                key: &c.target.key,
                state,
                bench_class,
                ttft_ms,
                tier: c.tier,
                swe: c.swe,
            });
        }
        rank(&mut inputs);
        let order = inputs.iter().map(|r| self.index[r.key]).collect();
        (order, skipped)
    }

    /// Routes one chat request. Streams return once committed; the caller forwards the rest
    /// and reports the end with [`Router::finish_stream`].
    pub fn route(
        &self,
        route: &Route,
        body: &Value,
        stream: bool,
        needs: Needs,
        mut trace: Trace,
    ) -> Result<Served, Box<Refused>> {
        let started = Instant::now();
        let deadline = started + Duration::from_millis(self.failover.total_budget_ms);
        let job = Job {
            body,
            stream,
            limits: self.limits(deadline),
        };
        let mut details = Vec::new();
        if let Route::Pinned(key) = route {
            let c = &self.candidates[self.index[key]];
            if let Some(how) = &c.missing_key {
                trace
                    .skipped
                    .push(Skip::new(key.clone(), SkipReason::MissingKey));
                trace.outcome = Outcome::AllFailed;
                return Err(Box::new(Refused {
                    trace,
                    status: 401,
                    retry_after_secs: None,
                    message: format!("no key for {key}: {how}"),
                    details,
                }));
            }
            // The user asked for this model by name: sent even when OPEN or paused, and a
            // HALF_OPEN trial slot is taken if free so its result counts as the trial.
            let trial = self.breakers.admit(key, crate::time::now_ms()) == Admission::Trial;
            return match self.try_one(c, &job, &mut trace, &mut details, trial) {
                Ok(answer) => Ok(self.served(answer, trace, key, trial)),
                Err(f) => Err(Box::new(self.refuse_pinned(trace, &f, details))),
            };
        }
        let mut needed = estimate_tokens(body);
        let (mut order, skipped) = self.plan(crate::time::now_ms(), needed);
        trace.skipped = skipped;
        if let Route::Set(name) = route {
            let preferred = self.set_order(name);
            for stale in preferred.iter().filter(|m| !self.knows(m)) {
                trace
                    .skipped
                    .push(Skip::new(stale.clone(), SkipReason::Stale));
            }
            // Stable: set members first in the set's order, everyone else in ranking order.
            order.sort_by_key(|i| {
                preferred
                    .iter()
                    .position(|m| *m == self.candidates[*i].target.key)
                    .unwrap_or(usize::MAX)
            });
        }
        self.order_by_capability(&mut order, needs, &mut trace);
        let mut blocked: HashSet<&str> = HashSet::new();
        let mut last_resort = self
            .failover
            .last_resort_model
            .clone()
            .filter(|m| self.knows(m));
        let mut queue: std::collections::VecDeque<usize> = order.into();
        let mut waited = false;
        while let Some(i) = queue.pop_front() {
            let c = &self.candidates[i];
            if trace.attempts.len() >= self.failover.max_attempts as usize
                || Instant::now() >= deadline
            {
                break;
            }
            if blocked.contains(c.target.provider_id.as_str()) {
                trace
                    .skipped
                    .push(Skip::new(c.target.key.clone(), SkipReason::ProviderBlocked));
                continue;
            }
            if c.context < needed {
                trace
                    .skipped
                    .push(Skip::new(c.target.key.clone(), SkipReason::ContextTooSmall));
                continue;
            }
            let trial = match self.breakers.admit(&c.target.key, crate::time::now_ms()) {
                Admission::Yes => false,
                Admission::Trial => true,
                Admission::CircuitOpen { .. } => {
                    trace
                        .skipped
                        .push(Skip::new(c.target.key.clone(), SkipReason::CircuitOpen));
                    continue;
                }
                Admission::QuotaPaused { .. } => {
                    trace.skipped.push(c.quota_skip());
                    continue;
                }
            };
            if last_resort.as_deref() == Some(c.target.key.as_str()) {
                last_resort = None;
            }
            match self.try_one(c, &job, &mut trace, &mut details, trial) {
                Ok(answer) => return Ok(self.served(answer, trace, &c.target.key, trial)),
                Err(f) => {
                    if f.verdict.blocks_provider {
                        blocked.insert(c.target.provider_id.as_str());
                    }
                    if f.kind() == FailureKind::ContextOverflow {
                        // Only a larger window can take it.
                        needed = needed.max(c.context + 1);
                    }
                    if !f.verdict.failover {
                        break;
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
                    // The same model served by another provider is the closest substitute.
                    let (same, rest): (Vec<usize>, Vec<usize>) = queue.iter().partition(|j| {
                        let o = &self.candidates[**j];
                        o.target.provider_id != c.target.provider_id && o.family == c.family
                    });
                    queue = same.into_iter().chain(rest).collect();
                }
            }
        }
        if let Some(key) = last_resort {
            let c = &self.candidates[self.index[&key]];
            if c.missing_key.is_none() && Instant::now() < deadline {
                // Tried whatever its breaker says, like a pinned model.
                let trial = self.breakers.admit(&key, crate::time::now_ms()) == Admission::Trial;
                if let Ok(answer) = self.try_one(c, &job, &mut trace, &mut details, trial) {
                    return Ok(self.served(answer, trace, &key, trial));
                }
            }
        }
        Err(Box::new(self.refuse_all(trace, details, needed)))
    }

    /// One attempt with its breaker bookkeeping and trace record.
    fn try_one(
        &self,
        c: &Candidate,
        job: &Job<'_>,
        trace: &mut Trace,
        details: &mut Vec<FailedAttempt>,
        trial: bool,
    ) -> Result<Answer, Failure> {
        let key = &c.target.key;
        match attempt(&self.upstream, &c.target, job.body, job.stream, &job.limits) {
            Ok(answer) => {
                let (status, latency) = match &answer {
                    Answer::Full {
                        status, elapsed, ..
                    } => (*status, *elapsed),
                    Answer::Stream(s) => (s.status, s.ttft),
                };
                if matches!(answer, Answer::Full { .. }) {
                    self.breakers.record_success(key, crate::time::now_ms());
                }
                self.observe(key, Some(latency.as_millis() as u64));
                trace.attempts.push(AttemptRecord {
                    model: key.clone(),
                    status: Some(status),
                    kind: None,
                    latency_ms: latency.as_millis() as u64,
                });
                Ok(answer)
            }
            Err(f) => {
                let now = crate::time::now_ms();
                self.breakers.record_failure(key, &f.verdict, now, trial);
                if f.verdict.damages_health {
                    self.observe(key, None);
                }
                if let (true, Some(pause)) = (c.shared_quota, f.verdict.quota_pause) {
                    // One account-wide quota: every model of the provider waits.
                    let until = now + pause.as_millis() as u64;
                    for other in self
                        .candidates
                        .iter()
                        .filter(|o| o.target.provider_id == c.target.provider_id)
                    {
                        self.breakers.pause(&other.target.key, until);
                    }
                }
                trace.attempts.push(AttemptRecord {
                    model: key.clone(),
                    status: f.status,
                    kind: Some(f.kind()),
                    latency_ms: f.elapsed.as_millis() as u64,
                });
                details.push(FailedAttempt {
                    model: key.clone(),
                    status: f.status,
                    kind: f.kind(),
                    blame: f.verdict.blame,
                    detail: f.detail.clone(),
                });
                Err(f)
            }
        }
    }

    fn served(&self, answer: Answer, mut trace: Trace, key: &str, trial: bool) -> Served {
        trace.served_model = Some(key.to_string());
        trace.outcome = Outcome::Served;
        Served {
            answer,
            trace,
            model: key.to_string(),
            trial,
        }
    }

    fn refuse_pinned(&self, mut trace: Trace, f: &Failure, details: Vec<FailedAttempt>) -> Refused {
        use FailureKind::*;
        trace.outcome = if f.verdict.blame == Blame::Client {
            Outcome::ClientError
        } else {
            Outcome::AllFailed
        };
        let (status, retry) = match f.kind() {
            RateLimit | QuotaExhausted => (429, f.verdict.quota_pause.map(|p| p.as_secs().max(1))),
            AuthError => (401, None),
            InvalidRequest => (
                f.status.filter(|s| (400..500).contains(s)).unwrap_or(400),
                None,
            ),
            Timeout | StreamStall => (504, None),
            ModelOverloaded => (503, Some(5)),
            _ => (502, None),
        };
        let model = trace
            .attempts
            .last()
            .map(|a| a.model.clone())
            .unwrap_or_default();
        let message = format!("{model} failed: {} ({})", f.kind(), f.detail);
        Refused {
            trace,
            status,
            retry_after_secs: retry,
            message,
            details,
        }
    }

    fn refuse_all(&self, mut trace: Trace, details: Vec<FailedAttempt>, needed: u64) -> Refused {
        let client_blamed = !details.is_empty() && details.iter().all(|a| a.blame == Blame::Client);
        if client_blamed {
            trace.outcome = Outcome::ClientError;
            let status = details
                .iter()
                .find_map(|a| a.status.filter(|s| (400..500).contains(s)))
                .unwrap_or(400);
            let message = format!(
                "every model refused the request; first reason: {}",
                details[0].detail
            );
            return Refused {
                trace,
                status,
                retry_after_secs: None,
                message,
                details,
            };
        }
        if details.is_empty()
            && !trace.skipped.is_empty()
            && trace
                .skipped
                .iter()
                .all(|s| s.reason == SkipReason::ContextTooSmall)
        {
            trace.outcome = Outcome::ClientError;
            let largest = self.routable().map(|c| c.context).max().unwrap_or(0);
            let message = format!(
                "the request needs about {needed} tokens (characters / 4, plus max_tokens); the largest routable context window is {largest}"
            );
            return Refused {
                trace,
                status: 400,
                retry_after_secs: None,
                message,
                details,
            };
        }
        trace.outcome = Outcome::AllFailed;
        let now = crate::time::now_ms();
        let retry = self
            .earliest_return_ms(now)
            .map(|t| t.saturating_sub(now).div_ceil(1000).max(1))
            .unwrap_or(1);
        let message = if details.is_empty() && self.routable().next().is_none() {
            "no model can be routed to: no provider key is set (`fcm models` lists the variables)"
                .to_string()
        } else if details.is_empty() {
            format!(
                "all {} candidate models are paused or their circuits are open",
                trace.skipped.len()
            )
        } else {
            let chain: Vec<String> = details
                .iter()
                .map(|a| match a.status {
                    Some(s) if !(200..300).contains(&s) => format!("{}: {s} {}", a.model, a.kind),
                    _ => format!("{}: {}", a.model, a.kind),
                })
                .collect();
            format!("all attempts failed ({})", chain.join("; "))
        };
        Refused {
            trace,
            status: 503,
            retry_after_secs: Some(retry),
            message,
            details,
        }
    }

    /// Models claiming every capability the request needs go first; the rest keep their order
    /// behind them (none is dropped: catalogs under-report). When none claims it, the trace
    /// says `capability_unknown`.
    fn order_by_capability(&self, order: &mut [usize], needs: Needs, trace: &mut Trace) {
        let names = needs.names();
        if names.is_empty() {
            return;
        }
        let capable = |i: &usize| needs.met_by(&self.candidates[*i].capabilities);
        if !order.iter().any(capable) {
            trace
                .notes
                .push(format!("capability_unknown:{}", names.join(",")));
            return;
        }
        let missing = order.iter().filter(|i| !capable(i)).count();
        if missing > 0 {
            trace.notes.push(format!(
                "capability_missing:{}:{missing}_tried_last",
                names.join(",")
            ));
        }
        order.sort_by_key(|i| !capable(i));
    }

    /// Probes each model whose cooldown has ended (HALF_OPEN) with one small request as its
    /// trial, when `router.probe.intervalSec` asks for it. Returns (model, ok) per probe.
    pub fn probe_recovered(&self, timeout: Duration) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for c in self.routable() {
            let now = crate::time::now_ms();
            if self.breakers.state(&c.target.key, now) != BreakerState::HalfOpen {
                continue;
            }
            if self.breakers.admit(&c.target.key, now) != Admission::Trial {
                continue;
            }
            let ok = match crate::bench::ping(&self.upstream, &c.target, timeout) {
                crate::bench::Ping::Ok { ttft_ms, .. } => {
                    self.breakers
                        .record_success(&c.target.key, crate::time::now_ms());
                    self.observe(&c.target.key, Some(ttft_ms));
                    true
                }
                crate::bench::Ping::Failed { kind, pause, .. } => {
                    let verdict = crate::classify::Verdict::of(kind, pause);
                    self.breakers.record_failure(
                        &c.target.key,
                        &verdict,
                        crate::time::now_ms(),
                        true,
                    );
                    false
                }
            };
            out.push((c.target.key.clone(), ok));
        }
        out
    }

    /// Adds a real result to the model's rolling window (`None`: a failure).
    fn observe(&self, model: &str, ttft_ms: Option<u64>) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.entry(model.to_string()).or_default().push(ttft_ms);
    }

    /// A set's models in this request's order (round-robin sets advance per request).
    fn set_order(&self, name: &str) -> Vec<String> {
        let Some(set) = self.sets.get(name) else {
            return Vec::new();
        };
        let mut counters = self.set_counters.lock().unwrap_or_else(|e| e.into_inner());
        let counter = counters.entry(name.to_string()).or_insert(0);
        let order = crate::sets::order(set, *counter);
        *counter += 1;
        order
    }

    /// The earliest moment any routable model can be tried again (ms since epoch).
    fn earliest_return_ms(&self, now: u64) -> Option<u64> {
        let keys: Vec<&str> = self.routable().map(|c| c.target.key.as_str()).collect();
        let rows = self.breakers.rows(now);
        let by_model: HashMap<&str, &crate::breaker::BreakerRow> =
            rows.iter().map(|r| (r.model.as_str(), r)).collect();
        keys.iter()
            .map(|k| match by_model.get(k) {
                Some(r) => now + r.cooldown_ms_left.max(r.quota_pause_ms_left),
                None => now,
            })
            .min()
    }

    /// Records how a committed stream ended and updates the trace's outcome.
    pub fn finish_stream(&self, trace: &mut Trace, model: &str, end: StreamEnd, trial: bool) {
        let now = crate::time::now_ms();
        match end {
            StreamEnd::Complete { completion_tokens } => {
                self.breakers.record_success(model, now);
                trace.completion_tokens = completion_tokens;
            }
            StreamEnd::Failed(f) => {
                self.breakers.record_failure(model, &f.verdict, now, trial);
                trace.outcome = Outcome::StreamFailedAfterContent;
            }
            StreamEnd::ClientGone => {
                if trial {
                    self.breakers.release_trial(model);
                }
                trace.outcome = Outcome::ClientAborted;
            }
        }
    }

    /// Adds a finished request to the history ring.
    pub fn complete(&self, mut trace: Trace, started: Instant) {
        trace.wall_ms = started.elapsed().as_millis() as u64;
        self.history.push(trace);
    }
}

/// Tokens a request needs: its text (characters / 4, the usual rough rate for English and
/// code) plus the answer it asks room for (`max_tokens`).
pub fn estimate_tokens(body: &Value) -> u64 {
    let chars: usize = ["messages", "tools"]
        .iter()
        .filter_map(|k| body.get(*k))
        .map(crate::protocol::text_chars)
        .sum();
    let answer = body
        .get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    crate::protocol::estimate_tokens(chars) + answer
}

/// A model's family across providers: its id without the vendor path, the `:free` tag or
/// an `-instruct`/`-it` suffix (`openai/gpt-oss-120b` and `gpt-oss-120b` are one family).
pub fn family(model_id: &str) -> String {
    let last = model_id
        .rsplit('/')
        .next()
        .unwrap_or(model_id)
        .to_ascii_lowercase();
    let base = last.split(':').next().unwrap_or(&last);
    base.trim_end_matches("-instruct")
        .trim_end_matches("-it")
        .to_string()
}

/// What every attempt of one request sends.
struct Job<'a> {
    body: &'a Value,
    stream: bool,
    limits: Limits,
}

/// How a committed stream ended.
pub enum StreamEnd {
    Complete { completion_tokens: Option<u64> },
    Failed(Failure),
    ClientGone,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(
        key: &str,
        state: BreakerState,
        bench_class: u8,
        ttft: Option<u64>,
        tier: usize,
    ) -> RankInput<'_> {
        RankInput {
            key,
            state,
            bench_class,
            ttft_ms: ttft,
            tier,
            swe: 0.0,
        }
    }

    #[test]
    fn ranking_order() {
        let mut v = vec![
            input("half", BreakerState::HalfOpen, 0, Some(10), 0),
            input("degraded", BreakerState::Degraded, 0, Some(10), 0),
            input("unbenched-top-tier", BreakerState::Closed, 1, None, 0),
            input("slow", BreakerState::Closed, 0, Some(900), 5),
            input("fast", BreakerState::Closed, 0, Some(100), 5),
            input("bench-unusable", BreakerState::Closed, 2, None, 0),
        ];
        rank(&mut v);
        let keys: Vec<&str> = v.iter().map(|r| r.key).collect();
        assert_eq!(
            keys,
            vec![
                "fast",
                "slow",
                "unbenched-top-tier",
                "bench-unusable",
                "degraded",
                "half"
            ]
        );
    }

    #[test]
    fn live_window_ranks_by_recent_results() {
        let mut w = LiveWindow::default();
        w.push(Some(100));
        w.push(Some(300));
        assert_eq!(w.rank(), None, "too few results: the bench prior decides");
        w.push(Some(200));
        assert_eq!(w.rank(), Some((0, Some(200))));
        for _ in 0..20 {
            w.push(None);
        }
        assert_eq!(
            w.rank(),
            Some((2, None)),
            "failing now: ranked with the unusable"
        );
        for _ in 0..20 {
            w.push(Some(50));
        }
        assert_eq!(w.rank(), Some((0, Some(50))), "recovered: climbs back");
    }

    #[test]
    fn families_across_providers() {
        assert_eq!(family("openai/gpt-oss-120b"), family("gpt-oss-120b"));
        assert_eq!(
            family("qwen/qwen3-coder-480b-a35b-instruct"),
            "qwen3-coder-480b-a35b"
        );
        assert_eq!(family("z-ai/glm-5.2:free"), family("glm-5.2"));
        assert_ne!(family("openai/gpt-oss-120b"), family("openai/gpt-oss-20b"));
    }

    #[test]
    fn tier_then_swe_break_ties() {
        let mut v = vec![
            RankInput {
                key: "b",
                state: BreakerState::Closed,
                bench_class: 1,
                ttft_ms: None,
                tier: 1,
                swe: 70.0,
            },
            RankInput {
                key: "a",
                state: BreakerState::Closed,
                bench_class: 1,
                ttft_ms: None,
                tier: 1,
                swe: 60.0,
            },
            RankInput {
                key: "c",
                state: BreakerState::Closed,
                bench_class: 1,
                ttft_ms: None,
                tier: 0,
                swe: 10.0,
            },
        ];
        rank(&mut v);
        assert_eq!(
            v.iter().map(|r| r.key).collect::<Vec<_>>(),
            vec!["c", "b", "a"]
        );
    }
}
