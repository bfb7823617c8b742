//! `GET /metrics`: the running server in the Prometheus text format (`exposition`): the
//! counters and histograms fed from the request path (`state::metrics`), the `process_*`
//! metrics of its own process, and gauges read now from the breakers, the ledger and the
//! conversations (`routing::ModelStatus`). docs/monitoring.md lists every metric. The same
//! access rules as every endpoint but `/health`; gzipped when the scraper asks.
//!
//! Units are Prometheus's: seconds, bytes, and one metric per unit (requests and tokens
//! are never mixed in one family). The series are bounded by the models that matter, not
//! the catalog: every routable model has its place in the order; a model *in use* (an
//! attempt since the server started, a breaker that is not fresh, a pause, a conversation)
//! has its breaker and pause gauges; a model with an attempt has every series of its
//! attempts, first tokens and tokens from then on, zeros included, so that a rate sees its
//! first failure; skips only where they happened. With every provider of the catalog keyed
//! an idle server writes a few hundred series.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use crate::edge::app::App;
use crate::edge::encoding;
use crate::edge::exposition::{Exposition, CONTENT_TYPE};
use crate::edge::http::Request;
use crate::edge::process_metrics;
use crate::edge::reply::Reply;
use crate::routing::ModelStatus;
use crate::state::breaker::BreakerState;
use crate::state::ledger::report::UsageReport;
use crate::state::metrics::{Metrics, TokenKind};

const STATES: [BreakerState; 4] = [
    BreakerState::Closed,
    BreakerState::Degraded,
    BreakerState::HalfOpen,
    BreakerState::Open,
];

pub(super) fn reply(req: &Request, app: &App) -> Reply {
    let text = render(app);
    let packed = encoding::accepts_gzip(req.head.header("accept-encoding"))
        .then(|| encoding::gzip(text.as_bytes()))
        .flatten();
    let reply = match packed {
        Some(body) => Reply::new(200, CONTENT_TYPE, body).header("content-encoding", "gzip"),
        None => Reply::new(200, CONTENT_TYPE, text.into_bytes()),
    };
    reply.header("vary", "accept-encoding")
}

fn render(app: &App) -> String {
    let now = crate::time::now_ms();
    let router = &app.router;
    let usage = router.usage_today(&app.catalog, now);
    let models = router.statuses(&app.catalog, &usage, now);
    let mut e = Exposition::new();
    server_families(&mut e, app);
    process_metrics::write(&mut e);
    let m = &router.metrics;
    request_families(&mut e, m);
    let attempted: HashSet<&str> = m
        .models()
        .filter(|c| c.attempted())
        .map(|c| c.model)
        .collect();
    model_gauges(&mut e, &models, |model| attempted.contains(model));
    budget_gauges(&mut e, &usage);
    e.finish()
}

fn server_families(e: &mut Exposition, app: &App) {
    e.family(
        "fcm_build_info",
        "gauge",
        "The fcm version serving, as a label; always 1.",
    );
    e.sample(
        "fcm_build_info",
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    e.family(
        "fcm_uptime_seconds",
        "gauge",
        "Seconds since this server started.",
    );
    e.sample(
        "fcm_uptime_seconds",
        &[],
        app.started.elapsed().as_secs_f64().floor(),
    );
    // Neither counts this scrape.
    let in_flight = app.in_flight.load(Ordering::Acquire).saturating_sub(1);
    e.family(
        "fcm_in_flight_requests",
        "gauge",
        "Requests being answered now, not counting the scrape.",
    );
    e.sample("fcm_in_flight_requests", &[], in_flight as f64);
    e.family(
        "fcm_open_connections",
        "gauge",
        "Client connections open now (idle keep-alive ones included), not counting the scrape's.",
    );
    e.sample(
        "fcm_open_connections",
        &[],
        app.connections.open().saturating_sub(1) as f64,
    );
    e.family(
        "fcm_upstream_stale_retries_total",
        "counter",
        "Requests sent again on a new connection because the provider had closed the reused one before answering.",
    );
    e.sample(
        "fcm_upstream_stale_retries_total",
        &[],
        crate::providers::upstream::stale_retries() as f64,
    );
}

/// The counters and histograms fed by finished requests.
fn request_families(e: &mut Exposition, m: &Metrics) {
    e.family("fcm_requests_total", "counter", "Finished requests by outcome: served, all_failed, client_error, rejected, stream_failed_after_content, continued, client_aborted.");
    for (outcome, n) in m.requests() {
        e.sample(
            "fcm_requests_total",
            &[("outcome", outcome.as_str())],
            n as f64,
        );
    }
    e.family(
        "fcm_request_duration_seconds",
        "histogram",
        "Wall time of finished requests, from the request read to the last byte answered.",
    );
    e.histogram("fcm_request_duration_seconds", &[], &m.duration());

    e.family("fcm_attempts_total", "counter", "Attempts by model and result: ok, a failure kind, or raced_out (cancelled when another racer won); every result of the models tried since the server started.");
    for c in m.models().filter(|c| c.attempted()) {
        for (result, n) in c.attempts() {
            e.sample(
                "fcm_attempts_total",
                &[("model", c.model), ("result", result.as_str())],
                n as f64,
            );
        }
    }
    e.family("fcm_skips_total", "counter", "Models passed over without an attempt, by model and reason (circuit_open, quota_paused, quota_budget, ...); only the reasons a model was skipped for.");
    for c in m.models() {
        for (reason, n) in c.skips() {
            e.sample(
                "fcm_skips_total",
                &[("model", c.model), ("reason", reason.as_str())],
                n as f64,
            );
        }
    }
    e.family("fcm_time_to_first_token_seconds", "histogram", "Time to first token of the attempts that served (a whole answer's time when not streamed), by model, for the models tried since the server started.");
    for c in m.models().filter(|c| c.attempted()) {
        e.histogram(
            "fcm_time_to_first_token_seconds",
            &[("model", c.model)],
            &c.ttft(),
        );
    }

    let token_families = [
        (TokenKind::Prompt, "fcm_prompt_tokens_total", "Prompt tokens of the answers each model gave (as their usage said, else estimated), for the models tried since the server started."),
        (TokenKind::Completion, "fcm_completion_tokens_total", "Completion tokens of the answers each model gave (as their usage said, else estimated), for the models tried since the server started."),
        (TokenKind::CachedPrompt, "fcm_cached_prompt_tokens_total", "Of the prompt tokens, those the provider's prompt cache served, as it said."),
    ];
    for (kind, name, help) in token_families {
        e.family(name, "counter", help);
        for c in m.models().filter(|c| c.attempted()) {
            let provider = c.model.split_once('/').map_or(c.model, |(p, _)| p);
            let n = c.tokens().find(|(k, _)| *k == kind).map_or(0, |(_, n)| n);
            e.sample(
                name,
                &[("provider", provider), ("model", c.model)],
                n as f64,
            );
        }
    }

    e.family(
        "fcm_compression_requests_total",
        "counter",
        "Requests whose tool results went through compression, by mode: lossless, aggressive.",
    );
    for c in m.compression() {
        e.sample(
            "fcm_compression_requests_total",
            &[("mode", c.mode.as_str())],
            c.requests as f64,
        );
    }
    e.family("fcm_compression_saved_tokens_total", "counter", "Tokens (estimated) tool-result compression took out of requests, by mode; counted once per request, however many attempts sent it.");
    for c in m.compression() {
        e.sample(
            "fcm_compression_saved_tokens_total",
            &[("mode", c.mode.as_str())],
            c.saved_tokens as f64,
        );
    }
}

/// A per-model gauge: its name, help and value.
type Gauge = (&'static str, &'static str, fn(&ModelStatus) -> f64);

/// Whether a routable model's breaker and pause gauges are written: it had an attempt
/// since the server started, or its breaker, a pause or a conversation says something.
fn in_use(s: &ModelStatus, attempted: bool) -> bool {
    attempted
        || s.state != BreakerState::Closed
        || s.consecutive_failures > 0
        || s.pause_ms_left > 0
        || s.conversations > 0
}

fn model_gauges(e: &mut Exposition, models: &[ModelStatus], attempted: impl Fn(&str) -> bool) {
    e.family(
        "fcm_routable_models",
        "gauge",
        "Models whose key is set or not needed.",
    );
    e.sample("fcm_routable_models", &[], models.len() as f64);
    e.family("fcm_model_rank", "gauge", "Each routable model's place in the order model fcm would try now, 1 first; 0 when it would be skipped.");
    for s in models {
        e.sample(
            "fcm_model_rank",
            &[("model", &s.model)],
            s.rank.unwrap_or(0) as f64,
        );
    }
    let used: Vec<&ModelStatus> = models
        .iter()
        .filter(|s| in_use(s, attempted(&s.model)))
        .collect();
    e.family("fcm_breaker_state", "gauge", "1 for the state each model's breaker is in (CLOSED, DEGRADED, HALF_OPEN, OPEN), 0 for the others; models in use only.");
    for s in &used {
        for state in STATES {
            let on = f64::from(u8::from(s.state == state));
            e.sample(
                "fcm_breaker_state",
                &[("model", &s.model), ("state", state.as_str())],
                on,
            );
        }
    }
    let per_model: [Gauge; 4] = [
        ("fcm_breaker_consecutive_failures", "Consecutive failures counted against each model's breaker.", |s| s.consecutive_failures as f64),
        ("fcm_breaker_cooldown_seconds", "Seconds left of an OPEN breaker's cooldown (0 when none).", |s| s.cooldown_ms_left as f64 / 1000.0),
        ("fcm_model_pause_seconds", "Seconds left of a model's pause: a quota, an overloaded model's back-off, a provider notice (0 when none).", |s| s.pause_ms_left as f64 / 1000.0),
        ("fcm_conversations_active", "Conversations whose last turn this model served and that are not idle too long.", |s| s.conversations as f64),
    ];
    for (name, help, value) in per_model {
        e.family(name, "gauge", help);
        for s in &used {
            e.sample(name, &[("model", &s.model)], value(s));
        }
    }
    e.family("fcm_model_pause_reason", "gauge", "1 for what pauses each paused model: quota (a rate limit), quota_exhausted (a used-up free quota, until its reset), provider_down, model_overloaded, provider_notice, model_not_found.");
    for s in models.iter().filter(|s| s.pause_ms_left > 0) {
        let reason = match s.paused_for {
            None => "quota",
            Some(crate::answers::classify::FailureKind::NetworkError) => "provider_down",
            Some(k) => k.as_str(),
        };
        e.sample(
            "fcm_model_pause_reason",
            &[("model", &s.model), ("reason", reason)],
            1.0,
        );
    }
}

/// What each provider has left today, requests and tokens apart, each by `window`: `live`
/// as the provider last said (its tightest live window), `day` as the catalog's
/// provider-wide daily limit less today's use. Only what is known is written.
fn budget_gauges(e: &mut Exposition, usage: &UsageReport) {
    let mut requests = Vec::new();
    let mut tokens = Vec::new();
    for p in &usage.providers {
        let provider_wide = p
            .limits
            .as_ref()
            .filter(|q| q.scope_or_provider() == crate::providers::quota::Scope::Provider);
        let tokens_today = p.prompt_tokens + p.completion_tokens;
        let day_requests = provider_wide
            .and_then(|q| q.requests_per_day)
            .map(|l| l.saturating_sub(p.requests));
        let day_tokens = provider_wide
            .and_then(|q| q.tokens_per_day)
            .map(|l| l.saturating_sub(tokens_today));
        for (window, left) in [("live", p.remaining.requests), ("day", day_requests)] {
            if let Some(left) = left {
                requests.push((p.provider.as_str(), window, left));
            }
        }
        for (window, left) in [("live", p.remaining.tokens), ("day", day_tokens)] {
            if let Some(left) = left {
                tokens.push((p.provider.as_str(), window, left));
            }
        }
    }
    for (name, help, rows) in [
        ("fcm_budget_remaining_requests", "Requests each provider has left: window live as the provider last said (its tightest live window), window day as the catalog's provider-wide daily limit less today's use.", requests),
        ("fcm_budget_remaining_tokens", "Tokens each provider has left: window live as the provider last said (its tightest live window), window day as the catalog's provider-wide daily limit less today's use.", tokens),
    ] {
        e.family(name, "gauge", help);
        for (provider, window, left) in rows {
            e.sample(
                name,
                &[("provider", provider), ("window", window)],
                left as f64,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_in_use_when_anything_is_known_of_it() {
        use crate::routing::{Evidence, EvidenceFrom};
        let fresh = ModelStatus::of(
            "p/m".into(),
            "p".into(),
            None,
            Evidence::Unknown,
            EvidenceFrom::None,
        );
        assert!(!in_use(&fresh, false));
        assert!(in_use(&fresh, true), "an attempt since the start");
        for s in [
            ModelStatus {
                state: BreakerState::Open,
                ..fresh.clone()
            },
            ModelStatus {
                consecutive_failures: 1,
                ..fresh.clone()
            },
            ModelStatus {
                pause_ms_left: 10,
                ..fresh.clone()
            },
            ModelStatus {
                conversations: 1,
                ..fresh.clone()
            },
        ] {
            assert!(in_use(&s, false), "{s:?}");
        }
    }
}
