//! `fcm usage`: what fcm spent on each provider (and model) today or over the last days,
//! the catalog's limits, and what each provider last said is left. From the running server
//! when there is one (its latest figures), else from `usage.json`.

use anyhow::{Context, Result};
use argh::FromArgs;

use crate::cmd::admin::admin_get;
use crate::cmd::{usage, Setup};
use crate::ledger::report::{report, KeyLine, Left, Resets, UsageLine, UsageReport};
use crate::ledger::UsageBook;
use crate::persist::live_server;
use crate::state;
use crate::table;
use crate::time::{self, human_ms};

#[derive(FromArgs)]
#[argh(subcommand, name = "usage")]
/// Show what fcm spent per provider and what is left of each free tier.
pub(crate) struct UsageArgs {
    /// UTC days to add up, ending today (default 1: today)
    #[argh(option, default = "1")]
    pub(crate) days: u64,
    /// a line per model too
    #[argh(switch, short = 'v')]
    pub(crate) verbose: bool,
    /// print one JSON document instead of tables
    #[argh(switch)]
    pub(crate) json: bool,
}

/// The ledger keeps this many days.
const MAX_DAYS: u64 = crate::ledger::book::KEEP_DAYS;

pub(crate) fn run(args: UsageArgs) -> Result<i32> {
    if args.days == 0 || args.days > MAX_DAYS {
        return usage(format!(
            "--days must be between 1 and {MAX_DAYS} (the ledger keeps {MAX_DAYS} days; got {})",
            args.days
        ));
    }
    let setup = Setup::load()?;
    let server = live_server();
    let (book, source): (UsageBook, String) = match &server {
        Some(info) => (
            serde_json::from_value(admin_get(info, &setup, "/fcm/admin/usage")?)
                .context("unexpected answer from the server")?,
            format!("live from the server at {}", info.address),
        ),
        None => {
            let path = state::state_file("usage.json")?;
            (state::load_json(&path)?, format!("from {}", path.display()))
        }
    };
    let keys = setup.keys();
    let configured: Vec<&str> = setup
        .catalog
        .providers
        .iter()
        .filter(|p| !keys.keys(p).is_empty())
        .map(|p| p.id.as_str())
        .collect();
    let now = time::now_ms();
    let r = report(&book, &setup.catalog, &configured, now, args.days);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(0);
    }
    print!("{}", text(&r, args.verbose, now));
    println!("{source}");
    Ok(0)
}

/// The tables and the notes under them.
fn text(r: &UsageReport, verbose: bool, now: u64) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let period = if r.from == r.day {
        format!("today ({} UTC)", r.day)
    } else {
        format!("{} to {} (UTC)", r.from, r.day)
    };
    if r.providers.is_empty() {
        let _ = writeln!(out, "Nothing spent {period}, and no provider key is set (`fcm models` lists the variables).");
        return out;
    }
    let header = [
        "Provider",
        "Keys",
        "Requests",
        "Tokens in / out",
        "429s",
        "Limits (catalog)",
        "Left (provider says)",
        "Resets in",
    ];
    let mut t = table::new(&header);
    for p in &r.providers {
        t.add_row(row(&p.provider, p, now, true));
    }
    let _ = writeln!(out, "Spent {period}:\n{t}");
    if verbose && !r.models.is_empty() {
        let mut header = header;
        header[0] = "Model";
        let mut t = table::new(&header);
        for m in &r.models {
            t.add_row(row(m.model.as_deref().unwrap_or(""), m, now, false));
        }
        let _ = writeln!(out, "{t}");
    }
    for p in &r.providers {
        for k in &p.keys {
            if let (Some(until), Some(why)) = (&k.held_until, k.held_for) {
                let why = match why {
                    crate::ledger::HoldReason::KeyRejected => "rejected by the provider",
                    crate::ledger::HoldReason::RetryStorm => "three 429s within a minute",
                    crate::ledger::HoldReason::RateLimited => "rate limited",
                };
                let _ = writeln!(out, "{}: {why}; passed over until {until}", k.key);
            }
        }
    }
    if r.providers
        .iter()
        .chain(&r.models)
        .any(|l| l.estimated_tokens > 0)
    {
        let _ = writeln!(
            out,
            "~ marks tokens partly estimated (characters / 4) where an answer reported no usage."
        );
    }
    out
}

fn row(name: &str, l: &UsageLine, now: u64, provider: bool) -> Vec<String> {
    let keys = if provider {
        keys_cell(&l.keys)
    } else {
        String::new()
    };
    let requests = match l.limits.as_ref().and_then(|q| q.requests_per_day) {
        Some(limit) => format!("{} of {limit}/day", l.requests),
        None => l.requests.to_string(),
    };
    let approx = if l.estimated_tokens > 0 { "~" } else { "" };
    let tokens = format!("{approx}{} / {}", l.prompt_tokens, l.completion_tokens);
    let limits = l.limits.as_ref().map_or("-".to_string(), |q| q.describe());
    vec![
        name.to_string(),
        keys,
        requests,
        tokens,
        l.rate_limited.to_string(),
        limits,
        left_cell(&l.remaining),
        resets_cell(&l.reset_at, now),
    ]
}

fn keys_cell(keys: &[KeyLine]) -> String {
    match keys.len() {
        0 => "-".to_string(),
        n => {
            let held = keys.iter().filter(|k| k.held_until.is_some()).count();
            if held > 0 {
                format!("{n} ({held} held)")
            } else {
                n.to_string()
            }
        }
    }
}

fn left_cell(left: &Left) -> String {
    let mut parts = Vec::new();
    if let Some(n) = left.requests {
        parts.push(format!("{n} requests"));
    }
    if let Some(n) = left.tokens {
        parts.push(format!("{n} tokens"));
    }
    if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join(", ")
    }
}

fn resets_cell(resets: &Resets, now: u64) -> String {
    let when = |at: &Option<String>| {
        at.as_deref()
            .and_then(crate::time::parse_rfc3339)
            .map(|t| human_ms(t.saturating_sub(now)))
    };
    let parts: Vec<String> = [when(&resets.requests), when(&resets.tokens)]
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join(" / ")
    }
}
