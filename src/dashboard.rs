//! The page `fcm serve` shows at `/`: breakers, quota pauses, today's usage of each free
//! tier and the last decisions, on one self-contained HTML page (no scripts or assets from
//! elsewhere) that reloads itself.

use std::fmt::Write;

use crate::breaker::BreakerRow;
use crate::ledger::report::UsageReport;
use crate::time::human_ms;
use crate::trace::Trace;

/// Seconds between reloads.
const REFRESH_SECS: u32 = 3;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Facts for the header line.
pub(crate) struct Summary {
    pub(crate) version: &'static str,
    pub(crate) address: String,
    pub(crate) uptime_ms: u64,
    pub(crate) routable: usize,
    pub(crate) in_flight: usize,
}

pub(crate) fn render(
    summary: &Summary,
    breakers: &[BreakerRow],
    usage: &UsageReport,
    recent: &[Trace],
) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}\">\
<title>fcm serve</title><style>\
body{{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}}\
h1{{font-size:20px;margin:0 0 4px}}h2{{font-size:16px;margin:24px 0 8px}}.meta{{color:#666}}\
table{{border-collapse:collapse;background:#fff;width:100%}}td,th{{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}}\
th{{background:#f0f0f0}}.CLOSED{{color:#1a7f37}}.DEGRADED{{color:#9a6700}}.HALF_OPEN{{color:#0969da}}.OPEN{{color:#cf222e;font-weight:bold}}\
.served{{color:#1a7f37}}.all_failed,.stream_failed_after_content{{color:#cf222e}}code{{font-size:12px}}\
</style></head><body><h1>fcm serve</h1><div class=\"meta\">{} · listening on {} · up {} · {} routable models · {} in flight · reloads every {REFRESH_SECS} s</div>",
        esc(summary.version),
        esc(&summary.address),
        human_ms(summary.uptime_ms),
        summary.routable,
        summary.in_flight
    );
    h.push_str("<h2>Breakers</h2>");
    if breakers.is_empty() {
        h.push_str("<p>No model has failed yet: every breaker is CLOSED.</p>");
    } else {
        h.push_str("<table><tr><th>Model</th><th>State</th><th>Failures</th><th>Trips</th><th>Cooldown left</th><th>Last failure</th></tr>");
        for r in breakers.iter().filter(|r| {
            r.state != crate::breaker::BreakerState::Closed || r.consecutive_failures > 0
        }) {
            let _ = write!(
                h,
                "<tr><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.model),
                r.state.as_str(),
                r.state.as_str(),
                r.consecutive_failures,
                r.trip_count,
                if r.cooldown_ms_left > 0 { human_ms(r.cooldown_ms_left) } else { "-".into() },
                r.last_failure_kind.map_or("-".to_string(), |k| k.to_string())
            );
        }
        h.push_str("</table>");
    }
    h.push_str("<h2>Quota pauses</h2>");
    let paused: Vec<&BreakerRow> = breakers
        .iter()
        .filter(|r| r.quota_pause_ms_left > 0)
        .collect();
    if paused.is_empty() {
        h.push_str("<p>None.</p>");
    } else {
        h.push_str("<table><tr><th>Model</th><th>Paused for</th><th>Why</th></tr>");
        for r in paused {
            let _ = write!(
                h,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                esc(&r.model),
                human_ms(r.quota_pause_ms_left),
                r.last_failure_kind
                    .map_or("-".to_string(), |k| k.to_string())
            );
        }
        h.push_str("</table>");
    }
    usage_section(&mut h, usage);
    let _ = write!(h, "<h2>Last {} decisions</h2>", recent.len());
    if recent.is_empty() {
        h.push_str("<p>No requests yet.</p>");
    } else {
        h.push_str("<table><tr><th>Time</th><th>Model asked</th><th>Outcome</th><th>Served by</th><th>Attempts</th><th>Skips</th><th>Wall</th></tr>");
        for t in recent.iter().rev() {
            let _ = write!(
                h,
                "<tr><td>{}</td><td><code>{}</code></td><td class=\"{}\">{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{} ms</td></tr>",
                esc(&t.time),
                esc(&t.requested_model),
                t.outcome.as_str(),
                t.outcome.as_str(),
                esc(t.served_model.as_deref().unwrap_or("-")),
                esc(&t.attempt_chain(" → ")),
                t.skipped.len(),
                t.wall_ms
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</body></html>");
    h
}

/// Today's spending per provider, as `fcm usage` shows it.
fn usage_section(h: &mut String, usage: &UsageReport) {
    let _ = write!(h, "<h2>Usage today ({} UTC)</h2>", esc(&usage.day));
    if usage.providers.is_empty() {
        h.push_str("<p>Nothing spent yet.</p>");
        return;
    }
    let now = crate::time::now_ms();
    h.push_str("<table><tr><th>Provider</th><th>Requests</th><th>Tokens in / out</th><th>429s</th><th>Limits (catalog)</th><th>Left (provider says)</th><th>Resets in</th></tr>");
    for p in &usage.providers {
        let held = p.keys.iter().filter(|k| k.held_until.is_some()).count();
        let held = match held {
            0 => String::new(),
            n => format!(" ({n} key{} held)", if n == 1 { "" } else { "s" }),
        };
        let _ = write!(
            h,
            "<tr><td><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.provider),
            esc(&held),
            esc(&p.requests_cell()),
            esc(&p.tokens_cell()),
            p.rate_limited,
            esc(&p.limits_cell()),
            esc(&p.remaining.describe()),
            esc(&p.reset_at.describe(now))
        );
    }
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_is_self_contained_and_escapes() {
        let mut t = Trace::new("r1", "<script>", false);
        t.outcome = crate::trace::Outcome::Served;
        let page = render(
            &Summary {
                version: "1",
                address: "127.0.0.1:1".into(),
                uptime_ms: 5000,
                routable: 3,
                in_flight: 0,
            },
            &[],
            &UsageReport {
                day: "2026-12-02".into(),
                from: "2026-12-02".into(),
                providers: vec![crate::ledger::report::UsageLine {
                    provider: "<groq>".into(),
                    requests: 7,
                    ..Default::default()
                }],
                models: Vec::new(),
            },
            &[t],
        );
        assert!(page.contains("&lt;script&gt;") && !page.contains("<script>"));
        assert!(page.contains("Usage today (2026-12-02 UTC)") && page.contains("&lt;groq&gt;"));
        assert!(
            !page.contains("src=") && !page.contains("href="),
            "no external assets"
        );
        assert!(page.contains("http-equiv=\"refresh\""));
    }
}
