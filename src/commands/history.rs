//! `fcm history`: recent routing decisions with their attempt chains, and a summary.

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};

use crate::commands::admin::admin_get;
use crate::commands::exit::ExitCode;
use crate::commands::{usage, Setup};
use crate::state::files;
use crate::state::serve_info::live_server;
use crate::state::summary::summarize;
use crate::state::trace::{HistoryFile, Trace};
use crate::table;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "history")]
/// Show recent routing decisions (live from a running server, else from history.json).
pub(crate) struct HistoryArgs {
    /// how many recent requests (default 20)
    #[argh(option, short = 'n', default = "20")]
    pub(crate) n: usize,
    /// print JSON instead of a table
    #[argh(switch)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: HistoryArgs) -> Result<ExitCode> {
    if args.n == 0 {
        return usage("-n must be at least 1");
    }
    let entries: Vec<Trace> = match live_server() {
        Some(info) => {
            let setup = Setup::load()?;
            serde_json::from_value(admin_get(
                &info,
                &setup,
                &format!("/fcm/admin/history?n={}", args.n),
            )?)
            .context("unexpected answer from the server")?
        }
        None => {
            let file: HistoryFile = files::load_json(&files::state_file("history.json")?)?;
            let skip = file.entries.len().saturating_sub(args.n);
            file.entries.into_iter().skip(skip).collect()
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(ExitCode::Ok);
    }
    if entries.is_empty() {
        println!("No requests yet. Point a client at http://127.0.0.1:19280/v1 with model \"fcm\" after `fcm serve`.");
        return Ok(ExitCode::Ok);
    }
    let mut t = table::new(&[
        "Time",
        "Request",
        "Model",
        "Outcome",
        "Served by",
        "Attempts",
        "Skips",
        "Conversation",
        "Wall",
    ]);
    for e in &entries {
        t.add_row(vec![
            e.time.replace('T', " ").trim_end_matches('Z').to_string(),
            e.id.clone(),
            e.requested_model.clone(),
            e.outcome.as_str().to_string(),
            e.served_model.clone().unwrap_or_else(|| "-".into()),
            if e.attempts.is_empty() {
                "-".into()
            } else {
                e.attempt_chain(" -> ")
            },
            e.skipped.len().to_string(),
            conversation(e),
            format!("{} ms", e.wall_ms),
        ]);
    }
    println!("{t}");
    let s = summarize(&entries);
    let broken = match s.broken_streams {
        0 => String::new(),
        n => format!(" ({n} broken mid-answer)"),
    };
    println!(
        "{} requests: {:.1}% served, {:.1}% failed{broken}, {:.1}% failed over, {:.2} attempts on average",
        s.requests, s.served_pct, s.failed_pct, s.failover_pct, s.avg_attempts
    );
    let compressed: Vec<u64> = entries.iter().filter_map(|e| e.saved_tokens).collect();
    if !compressed.is_empty() {
        println!(
            "compression kept ~{} tokens of tool output out of {} requests with tool results",
            crate::compress::cut::grouped(compressed.iter().sum()),
            compressed.len()
        );
    }
    Ok(ExitCode::Ok)
}

/// A request's conversation as the table shows it: the start of its hash and what
/// affinity did (`3f9a1c2e kept`), or `-` outside a conversation.
fn conversation(e: &Trace) -> String {
    match (&e.session, &e.affinity) {
        (Some(s), Some(a)) => format!("{} {a}", &s[..s.len().min(8)]),
        (None, Some(a)) => a.clone(),
        _ => "-".into(),
    }
}
