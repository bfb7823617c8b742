//! The page `fcm serve` shows at `/`: per model a strip of its last hour (a mark per
//! request: served, failed, skipped) and a sparkline of its recent times to first token;
//! breakers, quota pauses, today's usage of each free tier with a bar against its limit,
//! and the last decisions. One self-contained HTML page (inline SVG; no scripts or assets
//! from elsewhere) that reloads itself.

use std::fmt::Write;

use crate::state::breaker::BreakerRow;
use crate::state::ledger::report::UsageReport;
use crate::state::trace::Trace;
use crate::time::human_ms;

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
    /// Conversations each model keeps now (affinity), busiest first.
    pub(crate) conversations: Vec<(String, usize)>,
}

pub(crate) fn render(
    summary: &Summary,
    strips: &[Strip],
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
th{{background:#f0f0f0}}svg{{display:block}}.bar{{background:#eee;width:160px;height:10px;display:inline-block;vertical-align:middle;margin-right:6px}}.bar i{{display:block;height:10px;background:#1a7f37}}.bar i.hi{{background:#cf222e}}.CLOSED{{color:#1a7f37}}.DEGRADED{{color:#9a6700}}.HALF_OPEN{{color:#0969da}}.OPEN{{color:#cf222e;font-weight:bold}}\
.served,.continued{{color:#1a7f37}}.all_failed,.stream_failed_after_content{{color:#cf222e}}code{{font-size:12px}}\
</style></head><body><h1>fcm serve</h1><div class=\"meta\">{} · listening on {} · up {} · {} routable models · {} in flight · reloads every {REFRESH_SECS} s</div>",
        esc(summary.version),
        esc(&summary.address),
        human_ms(summary.uptime_ms),
        summary.routable,
        summary.in_flight
    );
    if !summary.conversations.is_empty() {
        let total: usize = summary.conversations.iter().map(|(_, n)| n).sum();
        let _ = write!(h, "<h2>Conversations ({total} active)</h2><table><tr><th>Model</th><th>Conversations it keeps</th></tr>");
        for (model, n) in &summary.conversations {
            let _ = write!(
                h,
                "<tr><td><code>{}</code></td><td>{n}</td></tr>",
                esc(model)
            );
        }
        h.push_str("</table>");
    }
    strips_section(&mut h, strips);
    h.push_str("<h2>Breakers</h2>");
    if breakers.is_empty() {
        h.push_str("<p>No model has failed yet: every breaker is CLOSED.</p>");
    } else {
        h.push_str("<table><tr><th>Model</th><th>State</th><th>Failures</th><th>Trips</th><th>Cooldown left</th><th>Last failure</th></tr>");
        for r in breakers.iter().filter(|r| {
            r.state != crate::state::breaker::BreakerState::Closed || r.consecutive_failures > 0
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
        .filter(|r| r.quota_pause_ms_left > 0 || r.held_ms_left > 0)
        .collect();
    if paused.is_empty() {
        h.push_str("<p>None.</p>");
    } else {
        h.push_str("<table><tr><th>Model</th><th>Paused for</th><th>Why</th><th>Until</th></tr>");
        for r in paused {
            // A used-up quota or a provider down says what and until when; a pause its
            // last failure.
            let (left, why, until) = if r.held_ms_left > r.quota_pause_ms_left {
                (
                    r.held_ms_left,
                    r.held_reason.clone().unwrap_or_default(),
                    r.held_until.clone().unwrap_or_default(),
                )
            } else {
                let kind = r
                    .last_failure_kind
                    .map_or("-".to_string(), |k| k.to_string());
                (r.quota_pause_ms_left, kind, "-".to_string())
            };
            let _ = write!(
                h,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.model),
                human_ms(left),
                esc(&why),
                esc(&until)
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

/// The strip's width in pixels: one per minute would be too narrow to hover, so six.
const STRIP_W: u32 = 360;
const STRIP_H: u32 = 14;
const SPARK_W: u32 = 120;
/// The hour a strip covers.
const STRIP_SPAN_MS: u64 = 3_600_000;

/// One request's mark on a model's strip.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mark {
    Served,
    /// Failed, with its kind (or status) on hover.
    Failed(String),
    /// Skipped before dispatch, with the reason on hover.
    Skipped(String),
}

/// One model's last hour and its recent times to first token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Strip {
    pub(crate) model: String,
    /// (ms since the epoch, what happened), oldest first.
    pub(crate) marks: Vec<(u64, Mark)>,
    /// The live window, oldest first (`None`: a failure).
    pub(crate) ttft: Vec<Option<u64>>,
}

/// The strips of every model the last hour of `history` touched (tried or skipped), in
/// the order they first appear; `live` gives a model's recent results.
pub(crate) fn strips(
    history: &[Trace],
    now: u64,
    live: impl Fn(&str) -> Vec<Option<u64>>,
) -> Vec<Strip> {
    let since = now.saturating_sub(STRIP_SPAN_MS);
    let mut out: Vec<Strip> = Vec::new();
    let mut strip = |model: &str| -> usize {
        match out.iter().position(|s| s.model == model) {
            Some(i) => i,
            None => {
                out.push(Strip {
                    model: model.to_string(),
                    marks: Vec::new(),
                    ttft: Vec::new(),
                });
                out.len() - 1
            }
        }
    };
    let mut marks: Vec<(usize, u64, Mark)> = Vec::new();
    for t in history {
        let Some(at) = crate::time::parse_rfc3339(&t.time).filter(|at| *at >= since) else {
            continue;
        };
        for a in &t.attempts {
            let mark = match a.kind {
                _ if a.raced_out => Mark::Skipped("raced_out".into()),
                None => Mark::Served,
                Some(_) => Mark::Failed(a.label()),
            };
            marks.push((strip(&a.model), at, mark));
        }
        for s in &t.skipped {
            let why = serde_json::to_value(s.reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            marks.push((strip(&s.model), at, Mark::Skipped(why)));
        }
    }
    for (i, at, mark) in marks {
        out[i].marks.push((at, mark));
    }
    for s in &mut out {
        s.ttft = live(&s.model);
    }
    out
}

/// The strips as a table: model, its hour (inline SVG), its recent TTFT.
fn strips_section(h: &mut String, strips: &[Strip]) {
    h.push_str("<h2>The last hour</h2>");
    if strips.is_empty() {
        h.push_str("<p>No requests in the last hour.</p>");
        return;
    }
    let now = crate::time::now_ms();
    let since = now.saturating_sub(STRIP_SPAN_MS);
    let _ = write!(
        h,
        "<table><tr><th>Model</th><th>Last 60 minutes (<span class=\"served\">served</span>, <span class=\"all_failed\">failed</span>, skipped; hover for why)</th><th>TTFT, last {} results</th></tr>",
        crate::routing::LIVE_WINDOW
    );
    for s in strips {
        let _ = write!(
            h,
            "<tr><td><code>{}</code></td><td><svg width=\"{STRIP_W}\" height=\"{STRIP_H}\" style=\"display:inline-block;vertical-align:middle;margin-right:8px\" role=\"img\"><rect width=\"{STRIP_W}\" height=\"{STRIP_H}\" fill=\"#f3f3f3\"/>",
            esc(&s.model)
        );
        for (at, mark) in &s.marks {
            let x = (at.saturating_sub(since) * u64::from(STRIP_W - 2) / STRIP_SPAN_MS) as u32;
            let (fill, title, y, height) = match mark {
                Mark::Served => ("#1a7f37", "served".to_string(), 0, STRIP_H),
                Mark::Failed(why) => ("#cf222e", format!("failed: {why}"), 0, STRIP_H),
                Mark::Skipped(why) => (
                    "#8c959f",
                    format!("skipped: {why}"),
                    STRIP_H / 2,
                    STRIP_H / 2,
                ),
            };
            let _ = write!(
                h,
                "<rect x=\"{x}\" y=\"{y}\" width=\"2\" height=\"{height}\" fill=\"{fill}\"><title>{} {}</title></rect>",
                crate::time::rfc3339(*at),
                esc(&title)
            );
        }
        let count = |f: fn(&Mark) -> bool| s.marks.iter().filter(|(_, m)| f(m)).count();
        let _ = write!(
            h,
            "</svg><span class=\"meta\">{} served, {} failed, {} skipped</span></td><td>",
            count(|m| *m == Mark::Served),
            count(|m| matches!(m, Mark::Failed(_))),
            count(|m| matches!(m, Mark::Skipped(_)))
        );
        h.push_str(&sparkline(&s.ttft));
        h.push_str("</td></tr>");
    }
    h.push_str("</table>");
}

/// Recent times to first token as a polyline (failures as red dots on the baseline), with
/// the median beside it.
fn sparkline(ttft: &[Option<u64>]) -> String {
    let times: Vec<u64> = ttft.iter().flatten().copied().collect();
    if ttft.is_empty() {
        return "-".to_string();
    }
    let max = times.iter().copied().max().unwrap_or(1).max(1);
    let step = f64::from(SPARK_W - 4) / (ttft.len().max(2) - 1) as f64;
    let y = |t: u64| 2.0 + f64::from(STRIP_H - 4) * (1.0 - t as f64 / max as f64);
    let mut points = Vec::new();
    let mut dots = String::new();
    for (i, r) in ttft.iter().enumerate() {
        let x = 2.0 + step * i as f64;
        match r {
            Some(t) => points.push(format!("{x:.1},{:.1}", y(*t))),
            None => {
                let _ = write!(dots, "<circle cx=\"{x:.1}\" cy=\"{}\" r=\"2\" fill=\"#cf222e\"><title>failed</title></circle>", STRIP_H - 2);
            }
        }
    }
    let mut sorted = times.clone();
    sorted.sort_unstable();
    let median = sorted.get(sorted.len().saturating_sub(1) / 2).copied();
    format!(
        "<svg width=\"{SPARK_W}\" height=\"{STRIP_H}\" style=\"display:inline-block;vertical-align:middle\" role=\"img\"><polyline points=\"{}\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"1.5\"/>{dots}</svg> {}",
        points.join(" "),
        median.map_or("-".to_string(), |m| format!("{m} ms"))
    )
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
        let bar = match budget_share(p) {
            Some(share) => format!(
                "<span class=\"bar\" title=\"{:.0}% of the known budget spent\"><i class=\"{}\" style=\"width:{:.0}%\"></i></span>",
                share * 100.0,
                if share >= 0.9 { "hi" } else { "" },
                (share * 100.0).clamp(0.0, 100.0)
            ),
            None => String::new(),
        };
        let [requests, tokens, limited, limits, remaining, reset] = p.cells(now);
        let held = match p.held_keys() {
            0 => String::new(),
            n => format!(" ({n} key{} held)", if n == 1 { "" } else { "s" }),
        };
        let _ = write!(
            h,
            "<tr><td><code>{}</code>{}</td><td>{bar}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.provider),
            esc(&held),
            esc(&requests),
            esc(&tokens),
            esc(&limited),
            esc(&limits),
            esc(&remaining),
            esc(&reset)
        );
    }
    h.push_str("</table>");
}

/// How much of its known daily budget a provider spent: against the catalog's
/// provider-wide `requestsPerDay`, else what the provider said is left of its requests.
fn budget_share(p: &crate::state::ledger::report::UsageLine) -> Option<f64> {
    let provider_wide = p
        .limits
        .as_ref()
        .filter(|q| q.scope_or_provider() == crate::providers::quota::Scope::Provider);
    if let Some(limit) = provider_wide
        .and_then(|q| q.requests_per_day)
        .filter(|l| *l > 0)
    {
        return Some(p.requests as f64 / limit as f64);
    }
    let left = p.remaining.requests?;
    let spent = p.requests;
    (spent + left > 0).then(|| spent as f64 / (spent + left) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_come_from_the_last_hour_of_history() {
        let now = crate::time::now_ms();
        let mut old = Trace::new("old", "fcm", false);
        old.time = crate::time::rfc3339(now - 2 * STRIP_SPAN_MS);
        old.attempts = vec![attempt("p/a", None)];
        let mut t = Trace::new("t", "fcm", false);
        t.attempts = vec![
            attempt(
                "p/a",
                Some(crate::answers::classify::FailureKind::EmptyChoices),
            ),
            attempt("p/b", None),
        ];
        t.skipped = vec![crate::state::trace::Skip::new(
            "p/c",
            crate::state::trace::SkipReason::QuotaBudget,
        )];
        let s = strips(&[old, t], now, |m| {
            if m == "p/b" {
                vec![Some(120)]
            } else {
                vec![]
            }
        });
        let names: Vec<&str> = s.iter().map(|s| s.model.as_str()).collect();
        assert_eq!(names, ["p/a", "p/b", "p/c"]);
        assert_eq!(
            s[0].marks.len(),
            1,
            "the request two hours ago is off the strip"
        );
        assert_eq!(s[0].marks[0].1, Mark::Failed("empty_choices".into()));
        assert_eq!(s[2].marks[0].1, Mark::Skipped("quota_budget".into()));
        assert_eq!(s[1].ttft, vec![Some(120)]);
    }

    fn attempt(
        model: &str,
        kind: Option<crate::answers::classify::FailureKind>,
    ) -> crate::state::trace::AttemptRecord {
        crate::state::trace::AttemptRecord {
            model: model.into(),
            status: Some(200),
            kind,
            latency_ms: 5,
            key: None,
            raced_out: false,
        }
    }

    #[test]
    fn page_is_self_contained_and_escapes() {
        let mut t = Trace::new("r1", "<script>", false);
        t.outcome = crate::state::trace::Outcome::Served;
        let strip = Strip {
            model: "p/<m>".into(),
            marks: vec![
                (crate::time::now_ms(), Mark::Served),
                (crate::time::now_ms(), Mark::Failed("429".into())),
                (crate::time::now_ms(), Mark::Skipped("quota_budget".into())),
            ],
            ttft: vec![Some(100), None, Some(300)],
        };
        let page = render(
            &Summary {
                version: "1",
                address: "127.0.0.1:1".into(),
                uptime_ms: 5000,
                routable: 3,
                in_flight: 0,
                conversations: vec![("p/<m>".into(), 2)],
            },
            &[strip],
            &[],
            &UsageReport {
                day: "2026-12-02".into(),
                from: "2026-12-02".into(),
                providers: vec![crate::state::ledger::report::UsageLine {
                    provider: "<groq>".into(),
                    requests: 7,
                    ..Default::default()
                }],
                models: Vec::new(),
            },
            &[t],
        );
        assert!(page.contains("&lt;script&gt;") && !page.contains("<script>"));
        assert!(page.contains("Conversations (2 active)"));
        assert!(page.contains("Usage today (2026-12-02 UTC)") && page.contains("&lt;groq&gt;"));
        assert!(page.contains("<code>p/&lt;m&gt;</code>") && page.contains("<svg"));
        assert!(page.contains("failed: 429") && page.contains("skipped: quota_budget"));
        assert!(page.contains("<polyline points=") && page.contains("> 100 ms"));
        assert!(!page.contains("<script"), "no scripts");
        assert!(
            !page.contains("src=") && !page.contains("href="),
            "no external assets"
        );
        assert!(page.contains("http-equiv=\"refresh\""));
    }
}
