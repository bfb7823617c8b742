//! The bench table's rows: one per probed model, in rank order and numbered 1, 2, 3... as
//! shown, and the models still being probed marked as such (the live table shows them while
//! the bench runs).

use crate::state::bench_file::{BenchReport, ModelResult};
use crate::table;

/// Marks a model sent fewer pings than asked: its known daily budget allows the bench only
/// a small share.
pub(super) const BUDGET_MARK: &str = "*";

/// The probed models in rank order, then the `pending` ones (still being probed) marked
/// as such; at most `limit` rows. The `Tools` column shows only when tool pings were sent.
pub(super) fn table(
    report: &BenchReport,
    pending: &[String],
    limit: Option<usize>,
) -> table::Table {
    let tools = report.models.iter().any(|m| m.tool_pings.is_some());
    let mut header = vec!["#", "Model", "Verdict", "OK"];
    if tools {
        header.push("Tools");
    }
    header.extend(["TTFT p50", "p50", "p95", "Jitter", "Tok/s", "Last failure"]);
    let mut t = table::new(&header);
    // `#` is the place among the rows shown: the report ranks the models not contacted (no
    // key, over budget) too, and their numbers would leave gaps here.
    let probed = report.models.iter().filter(|m| m.pings > 0);
    let mut rows: Vec<Vec<String>> = probed
        .enumerate()
        .map(|(i, m)| row(i + 1, m, tools))
        .collect();
    for key in pending {
        let mut r = vec![
            "…".to_string(),
            key.clone(),
            "probing".to_string(),
            String::new(),
        ];
        r.resize(header.len(), String::new());
        rows.push(r);
    }
    for r in rows.into_iter().take(limit.unwrap_or(usize::MAX)) {
        t.add_row(r);
    }
    t
}

/// One probed model's row, at `place` in the table.
fn row(place: usize, m: &ModelResult, tools: bool) -> Vec<String> {
    let failure = match (&m.last_failure_kind, m.last_failure_status) {
        (Some(k), Some(s)) if !(200..300).contains(&s) => format!("{k} (HTTP {s})"),
        (Some(k), _) => k.to_string(),
        // A wrong answer or a provider notice: what it said, cut short.
        (None, _) => m
            .last_failure
            .as_deref()
            .map(|f| f.chars().take(60).collect())
            .unwrap_or_default(),
    };
    let mut row = vec![
        place.to_string(),
        m.model.clone(),
        m.verdict.label().to_string(),
        format!(
            "{}/{}{}",
            m.successes,
            m.pings,
            if m.budget_capped { BUDGET_MARK } else { "" }
        ),
    ];
    if tools {
        row.push(tool_cell(m));
    }
    row.extend([
        table::ms(m.ttft_ms_p50),
        table::ms(m.latency_ms_p50),
        table::ms(m.latency_ms_p95),
        table::ms(m.jitter_ms),
        m.tokens_per_sec.map_or("-".into(), |v| format!("{v:.1}")),
        failure,
    ]);
    row
}

/// `valid calls/tool pings`, or `-` when no tool ping was sent.
fn tool_cell(m: &ModelResult) -> String {
    match (m.tool_calls, m.tool_pings) {
        (Some(calls), Some(pings)) => format!("{calls}/{pings}"),
        _ => "-".to_string(),
    }
}
