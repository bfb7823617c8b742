//! `fcm breakers`: per-model health, from the running server when there is one (so a reset
//! is not overwritten by its next flush), else from `breakers.json`.

use std::io::IsTerminal;

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};
use comfy_table::{Cell, Color};

use crate::commands::admin::{admin_get, admin_post};
use crate::commands::exit::ExitCode;
use crate::commands::{usage, Setup};
use crate::state::breaker::{rows, BreakerBook, BreakerRow, BreakerState};
use crate::state::files;
use crate::state::ledger::{HoldReason, UsageBook};
use crate::state::serve_info::live_server;
use crate::table;
use crate::time::human_ms;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "breakers")]
/// Show per-model breaker state (live from a running server, else from breakers.json).
pub(crate) struct BreakersArgs {
    /// print JSON instead of a table
    #[argh(switch)]
    pub(crate) json: bool,
    /// reset one model's breaker (provider/modelId) or all of them
    #[argh(option)]
    pub(crate) reset: Option<String>,
}

pub(crate) fn run(args: BreakersArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    if let Some(model) = &args.reset {
        if model != "all" && setup.catalog.find(model).is_none() {
            return usage(format!(
                "unknown model {model:?}; use provider/modelId as `fcm breakers` lists it, or all"
            ));
        }
    }
    let server = live_server();
    let rows: Vec<BreakerRow> = match (&server, &args.reset) {
        (Some(info), Some(model)) => {
            let v = admin_post(
                info,
                &setup,
                &format!(
                    "/fcm/admin/breakers/reset?model={}",
                    percent_encoding::utf8_percent_encode(
                        model,
                        percent_encoding::NON_ALPHANUMERIC
                    )
                ),
            )?;
            eprintln!(
                "fcm: reset {} breaker(s) on the running server at {}",
                v["reset"], info.address
            );
            serde_json::from_value(admin_get(info, &setup, "/fcm/admin/breakers")?)
                .context("unexpected answer from the server")?
        }
        (Some(info), None) => {
            serde_json::from_value(admin_get(info, &setup, "/fcm/admin/breakers")?)
                .context("unexpected answer from the server")?
        }
        (None, reset) => {
            let path = files::state_file("breakers.json")?;
            let mut book: BreakerBook = files::load_json(&path)?;
            if let Some(model) = reset {
                let n = if model == "all" {
                    let n = book.models.len();
                    book.models.clear();
                    n
                } else {
                    usize::from(book.models.remove(model).is_some())
                };
                book.version = 1;
                files::write_json_atomic(&path, &book)?;
                eprintln!("fcm: reset {n} breaker(s) in {}", path.display());
            }
            let now = crate::time::now_ms();
            // As a server would load it: times ahead of this clock cut to the longest.
            book.clamp(now, &setup.config.router.breaker);
            let mut rows = rows(&book, now, &setup.config.router.breaker);
            let usage: UsageBook = files::load_json(&files::state_file("usage.json")?)?;
            mark_exhausted(&mut rows, &usage, &setup, now);
            rows
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::Ok);
    }
    if rows.is_empty() {
        println!("No breaker has seen a failure yet: every model is CLOSED.");
        return Ok(ExitCode::Ok);
    }
    let colour = std::io::stdout().is_terminal();
    let mut t = table::new(&[
        "Model",
        "State",
        "Failures",
        "Trips",
        "Cooldown left",
        "Pause left",
        "Last failure",
        "Updated",
    ]);
    for r in &rows {
        let mut state = Cell::new(r.state.as_str());
        if colour {
            state = state.fg(match r.state {
                BreakerState::Closed => Color::Green,
                BreakerState::Degraded => Color::Yellow,
                BreakerState::HalfOpen => Color::Cyan,
                BreakerState::Open => Color::Red,
            });
        }
        let left = |ms: u64| {
            if ms == 0 {
                "-".to_string()
            } else {
                human_ms(ms)
            }
        };
        t.add_row(vec![
            Cell::new(&r.model),
            state,
            Cell::new(r.consecutive_failures),
            Cell::new(r.trip_count),
            Cell::new(left(r.cooldown_ms_left)),
            Cell::new(match (&r.held_for, r.paused_for) {
                (Some(held), _) if r.held_ms_left > r.quota_pause_ms_left => format!(
                    "{} ({held}: {}; until {})",
                    left(r.held_ms_left),
                    r.held_reason.as_deref().unwrap_or("-"),
                    r.held_until.as_deref().unwrap_or("-")
                ),
                (_, Some(why)) if r.quota_pause_ms_left > 0 => {
                    format!("{} ({why})", left(r.quota_pause_ms_left))
                }
                _ => left(r.quota_pause_ms_left),
            }),
            Cell::new(
                r.last_failure_kind
                    .map_or("-".to_string(), |k| k.to_string()),
            ),
            Cell::new(&r.updated_at),
        ]);
    }
    println!("{t}");
    let source = match &server {
        Some(info) => format!("live from the server at {}", info.address),
        None => "from breakers.json (no server running)".to_string(),
    };
    println!("{} models with history, {source}", rows.len());
    Ok(ExitCode::Ok)
}

/// Marks the models `usage.json` holds out for a used-up quota (a model's own hold, or its
/// provider's for every model on the key), with what ran out, the key and until when: what
/// a server would show without one running.
fn mark_exhausted(rows: &mut Vec<BreakerRow>, usage: &UsageBook, setup: &Setup, now: u64) {
    for hold in usage
        .holds
        .iter()
        .filter(|h| h.why == HoldReason::Exhausted && h.until_ms > now)
    {
        let says = hold.signal.map_or("free quota used up", |s| s.says());
        let reason = match &hold.whose.key {
            Some(key) => format!("{says} ({key})"),
            None => says.to_string(),
        };
        let models: Vec<String> = setup
            .catalog
            .models()
            .map(|m| m.key())
            .filter(|m| {
                *m == hold.whose.scope
                    || (hold.whose.scope == hold.whose.provider
                        && m.starts_with(&format!("{}/", hold.whose.provider)))
            })
            .collect();
        for model in models {
            let at = match rows.iter().position(|r| r.model == model) {
                Some(at) => at,
                None => {
                    rows.push(BreakerRow::closed(&model, now));
                    rows.len() - 1
                }
            };
            rows[at].hold("quota_exhausted", reason.clone(), hold.until_ms, now);
        }
    }
}
