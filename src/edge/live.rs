//! `GET /fcm/admin/live?since=N`: the running server in one JSON snapshot, what `fcm top`
//! polls once a second: the server's line, every routable model's status in the order
//! model `fcm` would try them ([`ModelStatus`], with the catalog's tier and label), the
//! active set, and the decisions recorded after sequence number `N` (the newest
//! [`MAX_DECISIONS`] at most). The same access rules as every endpoint but `/health`.

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::edge::app::App;
use crate::edge::http::Request;
use crate::routing::ModelStatus;
use crate::state::trace::Trace;

/// Decisions in one snapshot at most: more than a screen shows.
pub(crate) const MAX_DECISIONS: usize = 100;

/// The snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Live {
    pub(crate) server: ServerLine,
    pub(crate) models: Vec<LiveModel>,
    /// The set model `fcm` uses first on this server (as it was started).
    #[serde(default)]
    pub(crate) active_set: Option<ActiveSet>,
    /// The newest decision's sequence number: ask for `since` it next time.
    pub(crate) seq: u64,
    /// Decisions after `since`, oldest first.
    pub(crate) decisions: Vec<Decision>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerLine {
    pub(crate) version: String,
    pub(crate) address: String,
    pub(crate) pid: u32,
    pub(crate) uptime_secs: u64,
    pub(crate) in_flight: usize,
    pub(crate) connections: usize,
    /// Conversations held (all models), not idle too long.
    pub(crate) conversations: usize,
    /// Whether conversation affinity is on.
    pub(crate) affinity: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LiveModel {
    #[serde(flatten)]
    pub(crate) status: ModelStatus,
    pub(crate) tier: String,
    pub(crate) label: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ActiveSet {
    pub(crate) name: String,
    pub(crate) models: Vec<String>,
}

/// One finished request with its sequence number.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Decision {
    pub(crate) seq: u64,
    #[serde(flatten)]
    pub(crate) trace: Trace,
}

/// The answer to `GET /fcm/admin/live` (`since` missing or unreadable: 0).
pub(crate) fn answer(req: &Request, app: &App) -> serde_json::Value {
    let since = req
        .head
        .query("since")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    serde_json::to_value(snapshot(app, since)).unwrap_or_default()
}

pub(crate) fn snapshot(app: &App, since: u64) -> Live {
    let now = crate::time::now_ms();
    let router = &app.router;
    let usage = router.usage_today(&app.catalog, now);
    let models = router
        .statuses(&app.catalog, &usage, now)
        .into_iter()
        .map(|status| {
            let found = app.catalog.find(&status.model);
            LiveModel {
                tier: found.map(|f| f.model.tier.clone()).unwrap_or_default(),
                label: found
                    .map(|f| f.model.label.clone())
                    .filter(|l| !l.is_empty())
                    .unwrap_or_else(|| status.model.clone()),
                status,
            }
        })
        .collect::<Vec<_>>();
    let (seq, entries) = router.history.since(since, MAX_DECISIONS);
    Live {
        server: ServerLine {
            version: env!("CARGO_PKG_VERSION").to_string(),
            address: app.address.to_string(),
            pid: std::process::id(),
            uptime_secs: app.started.elapsed().as_secs(),
            // Not counting this request and its connection.
            in_flight: app.in_flight.load(Ordering::Acquire).saturating_sub(1),
            connections: app.connections.open().saturating_sub(1),
            conversations: models.iter().map(|m| m.status.conversations).sum(),
            affinity: router.affinity.is_some(),
        },
        models,
        active_set: router.active_set().map(|(name, models)| ActiveSet {
            name: name.to_string(),
            models,
        }),
        seq,
        decisions: entries
            .into_iter()
            .map(|(seq, trace)| Decision { seq, trace })
            .collect(),
    }
}
