//! In-process tests of routing: a real [`Router`] over a small catalog, with a scripted
//! provider ([`Script`](super::script::Script)) behind the exchange seam. A case says which
//! models there are, what each answers, and what must come of it: the decision header, the
//! refusal's status, and what was recorded (breakers, live windows, the ledger).

mod affinity;
mod exhaustion;
mod failover;
mod records;
mod strategies;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::script::{Reply, Script};
use super::{Ask, Delivery, Parts, Router, SessionName};
use crate::answers::stream::{StreamEnd, StreamItem};
use crate::providers::catalog::{Catalog, KeySource};
use crate::secrets::Secrets;
use crate::state::affinity::{Affinity, AffinityFile};
use crate::state::breaker::{BreakerBook, BreakerRow, Breakers};
use crate::state::config::RouterConfig;
use crate::state::ledger::{Ledger, UsageBook};
use crate::state::trace::{History, HistoryFile, Trace};

/// A model of a test catalog: `provider/id`, its tier and its context window.
pub(super) struct Model {
    pub key: &'static str,
    pub tier: &'static str,
    pub context: u64,
    /// What the catalog says it can do: `tools` unless a test says otherwise.
    pub capabilities: &'static [&'static str],
    /// Its SWE-bench score (50 unless a test says otherwise).
    pub swe: f64,
}

impl Model {
    pub(super) fn new(key: &'static str, tier: &'static str, context: u64) -> Model {
        Model {
            key,
            tier,
            context,
            capabilities: &["tools"],
            swe: 50.0,
        }
    }
}

/// `provider/id` models in ranking order: tiers S+, S, A+, A, ... by position, so the
/// first is tried first.
pub(super) fn ranked(keys: &[&'static str]) -> Vec<Model> {
    const TIERS: [&str; 7] = ["S+", "S", "A+", "A", "A-", "B+", "B"];
    keys.iter()
        .enumerate()
        .map(|(n, key)| Model::new(key, TIERS[n], 131_072))
        .collect()
}

/// A catalog of `models`; `shared` names providers with one account-wide quota.
fn catalog(models: &[Model], shared: &[&str]) -> Catalog {
    let mut providers: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for m in models {
        let (provider, id) = m.key.split_once('/').expect("provider/id");
        providers.entry(provider).or_default().push(json!({
            "id": id, "label": id, "tier": m.tier, "sweBench": m.swe,
            "context": m.context, "capabilities": m.capabilities}));
    }
    let providers: Vec<Value> = providers
        .into_iter()
        .map(|(id, models)| {
            json!({"id": id, "name": id, "baseUrl": format!("http://{id}.test/v1"),
                   "apiKeyEnv": [format!("{}_KEY", id.to_uppercase())], "keyRequired": true,
                   "signupUrl": "http://signup.test/", "limits": "none",
                   "sharedQuota": shared.contains(&id), "models": models})
        })
        .collect();
    let text = json!({"version": 1, "providers": providers}).to_string();
    Catalog::parse(&text, "test").expect("a valid test catalog")
}

/// A router over `models` answering from a script, with `config` (router settings as in
/// config.json) and `env` (key variables: `P_KEY` and the like; every provider's first key
/// is set unless `env` names it otherwise).
pub(super) struct World {
    pub router: Router,
    pub script: Script,
}

pub(super) struct Setup<'a> {
    pub models: Vec<Model>,
    pub config: Value,
    pub shared: &'a [&'a str],
    /// Extra key variables (`P_KEY_2`) with their values.
    pub env: &'a [(&'a str, &'a str)],
}

impl Default for Setup<'_> {
    fn default() -> Self {
        Setup {
            models: Vec::new(),
            config: json!({}),
            shared: &[],
            env: &[],
        }
    }
}

impl Setup<'_> {
    pub(super) fn world(self) -> World {
        let catalog = catalog(&self.models, self.shared);
        let config: RouterConfig =
            serde_json::from_value(self.config).expect("valid router settings");
        let extra: Vec<(String, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |var: &str| {
            extra
                .iter()
                .find(|(k, _)| k == var)
                .map(|(_, v)| v.clone())
                .or_else(|| var.ends_with("_KEY").then(|| format!("key-{var}")))
        };
        let keys = KeySource {
            env: &env,
            config_keys: &BTreeMap::new(),
        };
        let now = crate::time::now_ms();
        let script = Script::default();
        let router = Router::new(Parts {
            catalog: &catalog,
            keys: &keys,
            config: &config,
            breakers: Breakers::new(BreakerBook::default(), config.breaker.clone(), now),
            ledger: Ledger::new(UsageBook::default(), now, config.keys.sticky),
            history: History::new(HistoryFile::default()),
            carry: Default::default(),
            affinity: config.affinity.enabled.then(|| {
                Affinity::new(
                    AffinityFile::default(),
                    config.affinity.idle_minutes * 60_000,
                    now,
                )
            }),
            bench: None,
            session_id: "session",
            secrets: Arc::new(Secrets::new(["key-P_KEY"])),
            exchange: script.client(),
        });
        World { router, script }
    }
}

/// What a request came to, as a client and the history see it.
#[derive(Debug)]
pub(super) struct Answered {
    /// `x-fcm-v2-decision`.
    pub decision: String,
    /// The HTTP status the client gets.
    pub status: u16,
    pub retry_after: Option<u64>,
    pub trace: Trace,
}

/// An error status with this message and no headers.
pub(super) fn status(code: u16, message: &'static str) -> Reply {
    Reply::Status(code, message, Vec::new())
}

/// A plain chat request.
pub(super) fn chat(text: &str) -> Value {
    json!({"model": "fcm", "messages": [{"role": "user", "content": text}]})
}

impl World {
    /// Routes `body` (streams are read to their end) as a request for `model`.
    pub(super) fn ask(&self, model: &str, body: Value) -> Answered {
        self.ask_in(None, model, body)
    }

    /// Like [`ask`](Self::ask), for a client that names its session `session`.
    pub(super) fn ask_in(&self, session: Option<&str>, model: &str, body: Value) -> Answered {
        let session = session.map(|s| SessionName {
            source: "x-fcm-session",
            value: s.to_string(),
        });
        let route = self.router.resolve(model).expect("a known model");
        let stream = body["stream"].as_bool().unwrap_or(false);
        let ask = Ask {
            body: &body,
            stream,
            needs: crate::capability::detect(&body),
            tools: None,
            session,
            exclude: None,
        };
        let trace = Trace::new("req", model, stream);
        match self.router.route(&route, &ask, trace) {
            Ok(served) => {
                let mut trace = served.trace;
                if let Delivery::Stream(committed) = served.delivery {
                    let mut committed = *committed;
                    let end = drain(&mut committed.stream);
                    committed.finish(&end, &mut trace);
                }
                Answered {
                    decision: trace.decision_header(),
                    status: 200,
                    retry_after: None,
                    trace,
                }
            }
            Err(refused) => Answered {
                decision: refused.trace.decision_header(),
                status: refused.status,
                retry_after: refused.retry_after_secs,
                trace: refused.trace,
            },
        }
    }

    /// Routes a plain chat request with model `fcm`.
    pub(super) fn auto(&self) -> Answered {
        self.ask("fcm", chat("hello"))
    }

    /// The breaker row of `model` (a fresh one when nothing was recorded).
    pub(super) fn breaker(&self, model: &str) -> Option<BreakerRow> {
        self.router
            .breakers
            .rows(crate::time::now_ms())
            .into_iter()
            .find(|r| r.model == model)
    }

    /// `model`'s live window: its recent results, `None` for a failure.
    pub(super) fn live(&self, model: &str) -> Vec<Option<u64>> {
        self.router.live_results(model)
    }
}

/// Reads a committed stream to its end, as a client that takes everything would.
fn drain(stream: &mut crate::answers::stream::OpenStream) -> StreamEnd {
    loop {
        let _ = stream.take_chunks();
        match stream.next_item() {
            StreamItem::Data(_) => {}
            StreamItem::End => {
                return match stream.tool_failure() {
                    Some(f) => StreamEnd::Failed(f),
                    None => StreamEnd::Complete {
                        completion_tokens: stream.stats().completion_tokens,
                    },
                }
            }
            StreamItem::Failed(f, _) => return StreamEnd::Failed(f),
        }
    }
}
