//! The endpoints fcm answers itself, without a provider: health, the model list, Anthropic's
//! token count, the admin reads and resets, stop, and the dashboard page. Each takes the
//! request and the server's state and returns a [`Reply`]; none of them routes.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::edge::app::App;
use crate::edge::http::Request;
use crate::edge::reply::Reply;
use crate::protocol::{self, BadRequest, ErrorReport, Protocol};

pub(super) fn health(app: &App) -> Reply {
    let now = crate::time::now_ms();
    let rows = app.router.breaker_rows(now);
    let c = crate::state::breaker::Counts::of(&rows, app.router.answering());
    Reply::json(
        200,
        &json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeSecs": app.started.elapsed().as_secs(),
            "address": app.address.to_string(),
            "pid": std::process::id(),
            "models": {
                "routable": c.routable,
                "closed": c.closed,
                "healthy": c.healthy,
                "failing": c.failing,
                "untried": c.untried,
                "degraded": c.degraded,
                "halfOpen": c.half_open,
                "open": c.open,
                "quotaPaused": c.quota_paused,
            },
            "conversations": conversations(app, now).into_iter().map(|(m, n)| (m, json!(n))).collect::<serde_json::Map<_, _>>(),
            "inFlight": app.in_flight.load(Ordering::Acquire),
            "connections": app.connections.open(),
            "stateWrites": {"breakers": app.writes.breakers.load(Ordering::Relaxed), "history": app.writes.history.load(Ordering::Relaxed), "usage": app.writes.usage.load(Ordering::Relaxed), "affinity": app.writes.affinity.load(Ordering::Relaxed), "carry": app.writes.carry.load(Ordering::Relaxed)},
        }),
    )
}

/// `fcm` and every routable `fcm:provider/modelId`, in OpenAI's list shape.
pub(super) fn models(app: &App) -> Reply {
    let mut data = vec![json!({"id": "fcm", "object": "model", "owned_by": "fcm", "created": 0})];
    data.extend(app.router.routable().map(|c| json!({"id": format!("fcm:{}", c.target.key), "object": "model", "owned_by": c.target.provider_id, "created": 0})));
    Reply::json(200, &json!({"object": "list", "data": data}))
}

/// Anthropic's `/v1/messages/count_tokens`, estimated locally.
pub(super) fn count_tokens(req: &Request) -> Reply {
    match serde_json::from_slice::<Value>(&req.body) {
        Ok(v) => Reply::json(200, &protocol::anthropic::count_tokens(&v)),
        Err(e) => {
            let why = BadRequest::NotJson(e.to_string()).to_string();
            Reply::json(
                400,
                &Protocol::Anthropic.error(&ErrorReport::new(400, &why)),
            )
        }
    }
}

pub(super) fn breakers(app: &App) -> Reply {
    Reply::json(
        200,
        &serde_json::to_value(app.router.breaker_rows(crate::time::now_ms())).unwrap_or_default(),
    )
}

/// Resets one model's breaker (`?model=provider%2Fid`) or all of them.
pub(super) fn reset_breakers(req: &Request, app: &App) -> Reply {
    let model = req.head.query("model").unwrap_or_else(|| "all".into());
    let n = app.router.reset(if model == "all" {
        None
    } else {
        Some(model.as_str())
    });
    Reply::json(200, &json!({"reset": n, "model": model}))
}

/// Stops as SIGTERM does: running streams finish, state is saved.
pub(super) fn stop() -> Reply {
    crate::edge::signals::request_stop();
    Reply::json(200, &json!({"stopping": true, "pid": std::process::id()}))
}

pub(super) fn usage(app: &App) -> Reply {
    Reply::json(
        200,
        &serde_json::to_value(app.router.ledger.snapshot()).unwrap_or_default(),
    )
}

/// The last `?n=` history entries (all of them without it), oldest first.
pub(super) fn history(req: &Request, app: &App) -> Reply {
    let n = req
        .head
        .query("n")
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    Reply::json(
        200,
        &serde_json::to_value(app.router.history.last(n)).unwrap_or_default(),
    )
}

/// Conversations each model keeps now, busiest first (none with affinity off).
fn conversations(app: &App, now: u64) -> Vec<(String, usize)> {
    let mut active: Vec<(String, usize)> = app
        .router
        .affinity
        .as_ref()
        .map(|a| a.active(now).into_iter().collect())
        .unwrap_or_default();
    active.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    active
}

pub(super) fn dashboard(app: &App) -> Reply {
    let now = crate::time::now_ms();
    let summary = crate::edge::dashboard::Summary {
        version: env!("CARGO_PKG_VERSION"),
        address: app.address.to_string(),
        uptime_ms: app.started.elapsed().as_millis() as u64,
        routable: app.router.routable().count(),
        in_flight: app.in_flight.load(Ordering::Acquire),
        conversations: conversations(app, now),
    };
    let usage = app.router.usage_today(&app.catalog, now);
    let history = app.router.history.last(crate::state::trace::HISTORY_LEN);
    let strips = crate::edge::dashboard::strips(&history, now, |m| app.router.live_results(m));
    let page = crate::edge::dashboard::render(
        &summary,
        &strips,
        &app.router.breaker_rows(now),
        &usage,
        &history[history.len().saturating_sub(50)..],
    );
    Reply::new(200, "text/html; charset=utf-8", page.into_bytes())
}
