//! `GET /metrics`: the running server in the Prometheus text exposition format (0.0.4):
//! the counters and histograms fed by finished requests (`state::metrics`), and gauges read
//! now from the breakers, the ledger and the conversations (`routing::ModelStatus`).
//! docs/monitoring.md lists every metric. The same access rules as every endpoint but
//! `/health`: a scraper sends the access token when one is set.
//!
//! The format is written here by hand ([`Exposition`]): `# HELP` and `# TYPE` once per
//! family before its samples, label values escaped (`\\`, `\"`, `\n`), histogram buckets
//! cumulative with `le` ending at `+Inf`, then `_sum` and `_count`; durations in seconds.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::edge::app::App;
use crate::edge::reply::Reply;
use crate::routing::ModelStatus;
use crate::state::breaker::BreakerState;
use crate::state::ledger::report::UsageReport;
use crate::state::metrics::HistogramSnapshot;

/// The content type of the text format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const STATES: [BreakerState; 4] = [
    BreakerState::Closed,
    BreakerState::Degraded,
    BreakerState::HalfOpen,
    BreakerState::Open,
];

pub(super) fn reply(app: &App) -> Reply {
    Reply::new(200, CONTENT_TYPE, render(app).into_bytes())
}

/// Metric families being written.
pub(crate) struct Exposition {
    out: String,
}

impl Exposition {
    pub(crate) fn new() -> Exposition {
        Exposition {
            out: String::with_capacity(16 * 1024),
        }
    }

    /// Starts a family: its help line and type (`counter`, `gauge`, `histogram`).
    pub(crate) fn family(&mut self, name: &str, kind: &str, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    /// One sample of the family just started (`name` may carry a suffix: `_bucket`).
    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                for c in v.chars() {
                    match c {
                        '\\' => self.out.push_str("\\\\"),
                        '"' => self.out.push_str("\\\""),
                        '\n' => self.out.push_str("\\n"),
                        c => self.out.push(c),
                    }
                }
                self.out.push('"');
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }

    /// A histogram's samples, ms turned into seconds.
    pub(crate) fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        let bucket = format!("{name}_bucket");
        for (bound, count) in &h.buckets {
            let le = bound.map_or("+Inf".to_string(), |ms| number(ms as f64 / 1000.0));
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&bucket, &with_le, *count as f64);
        }
        self.sample(&format!("{name}_sum"), labels, h.sum_ms as f64 / 1000.0);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

/// A value as the format writes it: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn render(app: &App) -> String {
    let now = crate::time::now_ms();
    let router = &app.router;
    let usage = router.usage_today(&app.catalog, now);
    let models = router.statuses(&app.catalog, &usage, now);
    let mut e = Exposition::new();

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

    let m = &router.metrics;
    // Every series of a routable model exists from the start (zeros), so that rate() and
    // increase() see its first attempt; others appear when something happens to them.
    let routable: std::collections::HashSet<&str> =
        models.iter().map(|s| s.model.as_str()).collect();
    let listed = |model: &str| routable.contains(model);
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
    e.family("fcm_attempts_total", "counter", "Attempts by model and result: ok, a failure kind, or raced_out (cancelled when another racer won).");
    for (model, result, n) in m.attempts(listed) {
        e.sample(
            "fcm_attempts_total",
            &[("model", model), ("result", result.as_str())],
            n as f64,
        );
    }
    e.family("fcm_skips_total", "counter", "Models passed over without an attempt, by model and reason (circuit_open, quota_paused, quota_budget, ...).");
    for (model, reason, n) in m.skips(listed) {
        e.sample(
            "fcm_skips_total",
            &[("model", model), ("reason", reason.as_str())],
            n as f64,
        );
    }
    e.family("fcm_time_to_first_token_seconds", "histogram", "Time to first token of the attempts that served (a whole answer's time when not streamed), by model.");
    for (model, h) in m.ttft(listed) {
        e.histogram("fcm_time_to_first_token_seconds", &[("model", model)], &h);
    }

    model_gauges(&mut e, &models);
    budget_gauges(&mut e, &usage);
    e.finish()
}

/// A per-model gauge: its name, help and value.
type Gauge = (&'static str, &'static str, fn(&ModelStatus) -> f64);

fn model_gauges(e: &mut Exposition, models: &[ModelStatus]) {
    e.family(
        "fcm_routable_models",
        "gauge",
        "Models whose key is set or not needed.",
    );
    e.sample("fcm_routable_models", &[], models.len() as f64);
    e.family("fcm_breaker_state", "gauge", "1 for the state each model's breaker is in (CLOSED, DEGRADED, HALF_OPEN, OPEN), 0 for the others.");
    for s in models {
        for state in STATES {
            let on = f64::from(u8::from(s.state == state));
            e.sample(
                "fcm_breaker_state",
                &[("model", &s.model), ("state", state.as_str())],
                on,
            );
        }
    }
    let per_model: [Gauge; 5] = [
        ("fcm_breaker_consecutive_failures", "Consecutive failures counted against each model's breaker.", |s| s.consecutive_failures as f64),
        ("fcm_breaker_cooldown_seconds", "Seconds left of an OPEN breaker's cooldown (0 when none).", |s| s.cooldown_ms_left as f64 / 1000.0),
        ("fcm_model_pause_seconds", "Seconds left of a model's pause: a quota, an overloaded model's back-off, a provider notice (0 when none).", |s| s.pause_ms_left as f64 / 1000.0),
        ("fcm_model_rank", "Each model's place in the order model fcm would try now, 1 first; 0 when it would be skipped.", |s| s.rank.unwrap_or(0) as f64),
        ("fcm_conversations_active", "Conversations whose last turn this model served and that are not idle too long.", |s| s.conversations as f64),
    ];
    for (name, help, value) in per_model {
        e.family(name, "gauge", help);
        for s in models {
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

/// What each provider has left today: what it last said (`requests`, `tokens`, its
/// tightest live window), and the catalog's provider-wide daily limits less today's use
/// (`requests_per_day`, `tokens_per_day`). Only what is known is written.
fn budget_gauges(e: &mut Exposition, usage: &UsageReport) {
    e.family("fcm_budget_remaining", "gauge", "What each provider has left, by counter: requests and tokens as the provider last said (tightest live window); requests_per_day and tokens_per_day as the catalog's provider-wide daily limit less today's use.");
    for p in &usage.providers {
        let provider_wide = p
            .limits
            .as_ref()
            .filter(|q| q.scope_or_provider() == crate::providers::quota::Scope::Provider);
        let tokens_today = p.prompt_tokens + p.completion_tokens;
        let counters = [
            ("requests", p.remaining.requests),
            ("tokens", p.remaining.tokens),
            (
                "requests_per_day",
                provider_wide
                    .and_then(|q| q.requests_per_day)
                    .map(|l| l.saturating_sub(p.requests)),
            ),
            (
                "tokens_per_day",
                provider_wide
                    .and_then(|q| q.tokens_per_day)
                    .map(|l| l.saturating_sub(tokens_today)),
            ),
        ];
        for (counter, left) in counters {
            if let Some(left) = left {
                e.sample(
                    "fcm_budget_remaining",
                    &[("provider", &p.provider), ("counter", counter)],
                    left as f64,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_escape_label_values_and_write_numbers_plainly() {
        let mut e = Exposition::new();
        e.family("x_total", "counter", "A help\nwith a \\ and a newline.");
        e.sample(
            "x_total",
            &[("model", "p/a\"b\\c\nd"), ("result", "ok")],
            3.0,
        );
        e.sample("x_total", &[], 0.25);
        e.sample("x_total", &[], f64::INFINITY);
        assert_eq!(
            e.finish(),
            "# HELP x_total A help\\nwith a \\\\ and a newline.\n# TYPE x_total counter\n\
             x_total{model=\"p/a\\\"b\\\\c\\nd\",result=\"ok\"} 3\nx_total 0.25\nx_total +Inf\n"
        );
    }

    #[test]
    fn a_histogram_is_cumulative_in_seconds() {
        let h = HistogramSnapshot {
            buckets: vec![(Some(50), 1), (Some(1500), 3), (None, 4)],
            sum_ms: 2_250,
            count: 4,
        };
        let mut e = Exposition::new();
        e.histogram("t_seconds", &[("model", "p/m")], &h);
        assert_eq!(
            e.finish(),
            "t_seconds_bucket{model=\"p/m\",le=\"0.05\"} 1\n\
             t_seconds_bucket{model=\"p/m\",le=\"1.5\"} 3\n\
             t_seconds_bucket{model=\"p/m\",le=\"+Inf\"} 4\n\
             t_seconds_sum{model=\"p/m\"} 2.25\n\
             t_seconds_count{model=\"p/m\"} 4\n"
        );
    }
}
