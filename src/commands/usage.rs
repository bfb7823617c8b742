//! `fcm usage`: what fcm spent on each provider (and model) today or over the last days,
//! the catalog's limits, what each provider last said is left, and the tokens that
//! tool-result compression kept out of the requests. From the running server
//! when there is one (its latest figures), else from `usage.json`.

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};

use crate::commands::admin::admin_get;
use crate::commands::exit::ExitCode;
use crate::commands::{usage, Setup};
use crate::compress::cut::grouped;
use crate::state::files;
use crate::state::ledger::report::{report, UsageLine, UsageReport};
use crate::state::ledger::UsageBook;
use crate::state::serve_info::live_server;
use crate::table;
use crate::time;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
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
    /// forget what was counted today against PROVIDER, what it said is left and its
    /// holds (a running server takes it in within a second)
    #[argh(option, arg_name = "provider")]
    pub(crate) reset: Option<String>,
}

/// The ledger keeps this many days.
const MAX_DAYS: u64 = crate::state::ledger::book::KEEP_DAYS;

pub(crate) fn run(args: UsageArgs) -> Result<ExitCode> {
    if args.days == 0 || args.days > MAX_DAYS {
        return usage(format!(
            "--days must be between 1 and {MAX_DAYS} (the ledger keeps {MAX_DAYS} days; got {})",
            args.days
        ));
    }
    let setup = Setup::load()?;
    if let Some(provider) = &args.reset {
        return reset(&setup, provider);
    }
    let server = live_server();
    let (book, source): (UsageBook, String) = match &server {
        Some(info) => (
            serde_json::from_value(admin_get(info, &setup, "/fcm/admin/usage")?)
                .context("unexpected answer from the server")?,
            format!("live from the server at {}", info.address),
        ),
        None => {
            let path = files::state_file("usage.json")?;
            (files::load_json(&path)?, format!("from {}", path.display()))
        }
    };
    let keys = setup.keys();
    let configured: Vec<(&str, Vec<String>)> = setup
        .catalog
        .providers
        .iter()
        .map(|p| {
            let labels: Vec<String> = keys.keys(p).into_iter().map(|k| k.label).collect();
            (p.id.as_str(), labels)
        })
        .filter(|(_, labels)| !labels.is_empty())
        .collect();
    let now = time::now_ms();
    let r = report(&book, &setup.catalog, &configured, now, args.days);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::Ok);
    }
    print!("{}", text(&r, args.verbose, now));
    println!("{source}");
    Ok(ExitCode::Ok)
}

/// `--reset PROVIDER`: today's counts of one provider forgotten in `usage.json`, under
/// the file's lock. A running server notices the file changed and takes it in (its own
/// additions since then stay).
fn reset(setup: &Setup, provider: &str) -> Result<ExitCode> {
    if !setup.catalog.providers.iter().any(|p| p.id == provider) {
        return usage(format!(
            "no provider {provider:?} in the catalog (`fcm models` lists the providers)"
        ));
    }
    let path = files::state_file("usage.json")?;
    let today = time::utc_day(time::now_ms());
    let mut forgotten = 0;
    files::update_json(&path, |file: &mut UsageBook| {
        let mut book = crate::state::ledger::book::Book::from_file(std::mem::take(file));
        forgotten = book.forget(provider, &today);
        *file = book.to_file();
    })?;
    println!(
        "fcm usage: forgot {forgotten} request(s) counted today ({today} UTC) against {provider}, \
         what it last said is left and its holds ({}).",
        path.display()
    );
    Ok(ExitCode::Ok)
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
    let columns = [
        "Requests",
        "Tokens in / out",
        "429s",
        "Limits (catalog)",
        "Left (provider says)",
        "Resets in",
    ];
    let mut t = table::new(&[&["Provider", "Keys"][..], &columns[..]].concat());
    for p in &r.providers {
        let mut cells = vec![p.provider.clone(), keys_cell(p)];
        cells.extend(p.cells(now));
        t.add_row(cells);
    }
    let _ = writeln!(out, "Spent {period}:\n{t}");
    if verbose && !r.models.is_empty() {
        let mut t = table::new(&[&["Model"][..], &columns[..]].concat());
        for m in &r.models {
            let mut cells = vec![m.model.clone().unwrap_or_default()];
            cells.extend(m.cells(now));
            t.add_row(cells);
        }
        let _ = writeln!(out, "{t}");
    }
    for p in &r.providers {
        for k in &p.keys {
            if let (Some(until), Some(why)) = (&k.held_until, k.held_for) {
                let mut why = why.says().to_string();
                if let Some(signal) = k.held_signal {
                    why = format!("{why}: {}", signal.says());
                }
                let whose = match &k.held_model {
                    Some(model) => format!("{model}, {}", k.key),
                    None => format!("{}, {}", p.provider, k.key),
                };
                let _ = writeln!(out, "{whose}: {why}; passed over until {until}");
            }
        }
    }
    let saved: u64 = r.providers.iter().map(|p| p.saved_tokens).sum();
    if saved > 0 {
        let each: Vec<String> = r
            .providers
            .iter()
            .filter(|p| p.saved_tokens > 0)
            .map(|p| format!("{} ~{}", p.provider, grouped(p.saved_tokens)))
            .collect();
        let _ = writeln!(
            out,
            "Compression kept ~{} tokens of tool output out of the requests ({}).",
            grouped(saved),
            each.join(", ")
        );
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

fn keys_cell(line: &UsageLine) -> String {
    match line.keys.len() {
        0 => "-".to_string(),
        n => {
            let held = line.held_keys();
            if held > 0 {
                format!("{n} ({held} held)")
            } else {
                n.to_string()
            }
        }
    }
}
