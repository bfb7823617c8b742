//! The router: what it is built from ([`Parts`]), what a request's model name means
//! ([`Route`]), and what the rest of fcm may ask of it (the routable models, breaker
//! resets, the history). A request's path through it is `failover`; an attempt's steps
//! are `attempt`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::answers::limits::Limits;
use crate::providers::catalog::{Catalog, KeySource};
use crate::providers::exchange::Exchange;
use crate::secrets::Secrets;
use crate::state::affinity::Affinity;
use crate::state::breaker::Breakers;
use crate::state::config::{FailoverConfig, ModelSet, ReasoningConfig, RouterConfig};
use crate::state::ledger::Ledger;
use crate::state::trace::{History, Trace};

use super::candidates::{Candidate, Candidates, Known};
use super::live::LiveEvidence;
use super::racers::RaceClients;
use super::rank::Policy;

/// Largest non-stream answer the router accepts from a provider.
const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// Tool results (before and after compression) remembered between turns: a long agent
/// session's history holds one or two MB of them, so this keeps some thirty sessions.
const MEMO_BYTES: usize = 64 * 1024 * 1024;

/// How a request names its model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// `fcm`, or any name fcm does not know: route across healthy models.
    Auto,
    /// One catalog model by key.
    Pinned(String),
    /// A user's model set (`fcm:<name>`, or `fcm` when it is the active set): its models first,
    /// in the set's order, then every other healthy model.
    Set(String),
}

/// The pools in force: the configured ones, and for a hard capability without one, the
/// catalog's free models that claim it (`access: "free"` providers', or any when none is
/// marked).
fn capability_pools(
    catalog: &Catalog,
    configured: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, Vec<String>> {
    let mut pools = configured.clone();
    for name in crate::capability::HARD {
        pools.entry(name.to_string()).or_insert_with(|| {
            catalog
                .models()
                .filter(|m| m.model.capabilities.iter().any(|c| c == name))
                .filter(|m| m.provider.access.as_deref() != Some("limited"))
                .map(|m| m.key())
                .collect()
        });
    }
    pools
}

/// An unknown model or set named with `fcm:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownModel(pub String);

impl std::fmt::Display for UnknownModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown model or set {:?}: `fcm models` lists the models as provider/modelId and `fcm sets` the sets; use model \"fcm\" to route automatically", self.0)
    }
}

impl std::error::Error for UnknownModel {}

pub(crate) struct Router {
    pub(super) pool: Candidates,
    pub(super) sets: BTreeMap<String, ModelSet>,
    pub(super) active_set: Option<String>,
    /// Requests served per round-robin set.
    pub(super) set_counters: Mutex<HashMap<String, u64>>,
    pub(super) evidence: LiveEvidence,
    pub breakers: Breakers,
    /// Providers whose connections fail right now: all their models wait.
    pub outages: crate::state::outages::Outages,
    /// Requests out to each candidate (by index) and not yet answered.
    pub(super) in_flight: Vec<std::sync::atomic::AtomicU32>,
    /// What was spent and is left, per provider, model and key; which key goes next.
    pub ledger: Ledger,
    pub history: History,
    /// Counts of finished requests for `/metrics`.
    pub metrics: crate::state::metrics::Metrics,
    /// The model and key each conversation keeps (`None`: affinity is off).
    pub affinity: Option<Affinity>,
    pub failover: FailoverConfig,
    pub reasoning: ReasoningConfig,
    /// Per hard capability, the models to use first when no candidate claims it.
    pub(super) capability_pools: BTreeMap<String, Vec<String>>,
    /// Trim the middle of a conversation that fits no model left (`router.context`).
    pub(super) trim_history: bool,
    /// How models are ordered (`router.prefer`, `router.maxTtftMs`).
    pub(super) policy: Policy,
    pub(super) upstream: Box<dyn Exchange>,
    /// Racers' clients of their own, kept between races.
    pub(super) race_clients: RaceClients,
    /// Every secret fcm knows, shared with each candidate's target.
    pub(super) secrets: Arc<Secrets>,
    /// How tool results are compressed when neither the request nor its set says.
    pub(super) compress: crate::compress::Mode,
    /// Tool results compressed on earlier turns.
    pub(super) memo: crate::compress::Memo,
    /// Provider state the next turns of conversations need (thought signatures, ...).
    pub carry: super::carry::CarryStore,
}

/// What a router is built from.
pub(crate) struct Parts<'a> {
    pub catalog: &'a Catalog,
    pub keys: &'a KeySource<'a>,
    pub config: &'a RouterConfig,
    pub breakers: Breakers,
    pub ledger: Ledger,
    pub history: History,
    /// Conversations held from earlier (`affinity.json`); `None` turns affinity off.
    pub affinity: Option<Affinity>,
    /// Provider state kept from earlier (`carry.json`).
    pub carry: crate::state::carry_file::CarryFile,
    /// `bench.json`: the only file the router reads itself (see [`Router::refresh_bench`]).
    pub bench: Option<PathBuf>,
    /// Sent to providers that ask for a session id.
    pub session_id: &'a str,
    /// Removed from everything a provider says before a client, a log or the history sees it.
    pub secrets: Arc<Secrets>,
    /// The exchange with providers: [`Upstream`](crate::providers::upstream::Upstream), or
    /// a test's script.
    pub exchange: Box<dyn Exchange>,
}

/// Where a model fcm does not know is named: a set, or a capability pool.
pub(crate) enum NamedIn {
    Set(String),
    Pool(String),
}

impl Router {
    /// Builds the candidate table and loads `bench.json` (reloaded off the request path by
    /// [`Router::refresh_bench`]).
    pub fn new(p: Parts<'_>) -> Router {
        let pool = Candidates::new(p.catalog, p.keys, p.session_id, &p.secrets);
        let evidence = LiveEvidence::new(pool.all().map(Candidate::key), p.bench);
        let metrics = crate::state::metrics::Metrics::new(pool.all().map(Candidate::key));
        let in_flight = pool.all().map(|_| Default::default()).collect();
        let cfg = p.config;
        Router {
            metrics,
            pool,
            sets: cfg.sets.clone(),
            active_set: cfg.active_set.clone(),
            set_counters: Mutex::new(HashMap::new()),
            evidence,
            breakers: p.breakers,
            outages: crate::state::outages::Outages::default(),
            in_flight,
            ledger: p.ledger,
            history: p.history,
            affinity: p.affinity,
            failover: cfg.failover.clone(),
            reasoning: cfg.reasoning.clone(),
            capability_pools: capability_pools(p.catalog, &cfg.capability_pools),
            trim_history: cfg.context.trim_history,
            policy: Policy::of(cfg),
            upstream: p.exchange,
            race_clients: RaceClients::default(),
            secrets: p.secrets,
            compress: cfg.compress,
            memo: crate::compress::Memo::new(MEMO_BYTES),
            // Kept as long as the conversation it belongs to.
            carry: super::carry::CarryStore::new(
                p.carry,
                cfg.affinity.idle_minutes * 60_000,
                crate::time::now_ms(),
            ),
        }
    }

    /// What is known of every model now, for planning.
    pub(super) fn known(&self) -> Known<'_> {
        Known {
            breakers: &self.breakers,
            outages: &self.outages,
            ledger: &self.ledger,
            evidence: &self.evidence,
            policy: self.policy,
            now_ms: crate::time::now_ms(),
        }
    }

    /// Models that automatic routing may use (their key is set or not needed).
    pub(crate) fn routable(&self) -> impl Iterator<Item = &Candidate> {
        self.pool.routable()
    }

    /// Every secret fcm knows (for cleaning what a client is told).
    pub(crate) fn secrets(&self) -> Arc<Secrets> {
        self.secrets.clone()
    }

    pub(crate) fn knows(&self, key: &str) -> bool {
        self.pool.knows(key)
    }

    /// A model's recent real results, oldest first (`None`: a failure).
    pub(crate) fn live_results(&self, key: &str) -> Vec<Option<u64>> {
        self.evidence.recent(key)
    }

    /// Reloads `bench.json` if it changed (the server calls this from a timer thread).
    pub(crate) fn refresh_bench(&self) {
        self.evidence.refresh_bench();
    }

    /// Reads the request's `model`: `fcm`, `fcm:provider/modelId`, a catalog key, or
    /// anything else (auto).
    pub(crate) fn resolve(&self, requested: &str) -> Result<Route, UnknownModel> {
        if let Some(key) = requested.strip_prefix("fcm:") {
            if self.sets.contains_key(key) {
                return Ok(Route::Set(key.to_string()));
            }
            return if self.knows(key) {
                Ok(Route::Pinned(key.to_string()))
            } else {
                Err(UnknownModel(key.to_string()))
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

    /// Set and pool members fcm does not know (typos, models gone from the catalog; missing
    /// keys are fine), with the set or pool naming them: reported at start, never silently
    /// ignored.
    pub(crate) fn stale_set_members(&self) -> Vec<(NamedIn, String)> {
        let mut out = Vec::new();
        for (name, pool) in &self.capability_pools {
            out.extend(
                pool.iter()
                    .filter(|m| !self.knows(m))
                    .map(|m| (NamedIn::Pool(name.clone()), m.clone())),
            );
        }
        for (name, set) in &self.sets {
            out.extend(
                set.models
                    .iter()
                    .chain(&set.panel)
                    .chain(&set.judge)
                    .filter(|m| !self.knows(m))
                    .map(|m| (NamedIn::Set(name.clone()), m.clone())),
            );
        }
        out
    }

    /// A set's models in this request's order (round-robin sets advance per request).
    pub(super) fn set_order(&self, name: &str) -> Vec<String> {
        let Some(set) = self.sets.get(name) else {
            return Vec::new();
        };
        let mut counters = self.set_counters.lock().unwrap_or_else(|e| e.into_inner());
        let counter = counters.entry(name.to_string()).or_insert(0);
        let order = crate::state::sets::order(set, *counter);
        *counter += 1;
        order
    }

    pub(super) fn limits(
        &self,
        deadline: Instant,
        keep_chunks: bool,
        tools: Option<std::sync::Arc<crate::answers::toolcall::Offered>>,
    ) -> Limits {
        Limits {
            body_read: Duration::from_millis(self.failover.body_read_timeout_ms),
            first_token: Duration::from_millis(self.failover.first_token_timeout_ms),
            stream_stall: Duration::from_millis(self.failover.stream_stall_timeout_ms),
            deadline,
            validation: self.failover.content_validation,
            max_body: MAX_ANSWER_BYTES,
            keep_chunks,
            tools,
        }
    }

    /// Resets breakers (one model, or all) and the live windows with them, so a reset model
    /// is ranked on its bench figures again instead of staying at the back. Returns how many
    /// breakers were reset.
    pub(crate) fn reset(&self, model: Option<&str>) -> usize {
        self.evidence.forget(model);
        self.breakers.reset(model)
    }

    /// A text without any secret fcm knows (a client's model name on the log line).
    pub(crate) fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        self.secrets.redact(text)
    }

    /// Adds a finished request to the history ring, without a secret the client sent in
    /// its model name or request id.
    pub(crate) fn complete(&self, mut trace: Trace, started: Instant) {
        let wall = started.elapsed();
        trace.wall_ms = wall.as_millis() as u64;
        self.metrics.record(&trace, wall);
        trace.redact(&self.secrets);
        self.history.push(trace);
    }
}
