//! `fcm bench`: choose the models, probe them on a thread pool, print and save the ranking.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use argh::{ArgsInfo, FromArgs};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::bench::{
    merge, over_budget, probe, questions, rank, summarize, BenchReport, BenchVerdict, ModelResult,
};
use crate::commands::exit::ExitCode;
use crate::commands::{process_id_token, require_provider, usage, Setup};
use crate::providers::catalog::{Catalog, KeySource, ModelRef};
use crate::providers::exchange::Exchange;
use crate::providers::upstream::Upstream;
use crate::routing::rank::Policy;
use live::LiveTable;

mod live;
mod pool;
mod rows;
use crate::routing::{Candidate, Recorder};
use crate::secrets::Secrets;
use crate::state::files;
use crate::state::ledger::{Ledger, Room};
use crate::time;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "bench")]
/// Probe models in parallel, measure latency and answer validity, rank them.
pub(crate) struct BenchArgs {
    /// providers to probe: all (default) or ID[,ID...]
    #[argh(option, default = "String::from(\"all\")")]
    pub(crate) provider: String,
    /// probe only this model (provider/modelId); repeatable
    #[argh(option)]
    pub(crate) model: Vec<String>,
    /// pings per model, one after another (default 3)
    #[argh(option, default = "3")]
    pub(crate) pings: u32,
    /// also ask each model, once per ping, to call an offered tool (the Tools column)
    #[argh(switch)]
    pub(crate) tools: bool,
    /// seconds one ping may take (default 15)
    #[argh(option, default = "15")]
    pub(crate) timeout: u64,
    /// models probed at once (default 32)
    #[argh(option, default = "32")]
    pub(crate) concurrency: usize,
    /// print one JSON document instead of the table
    #[argh(switch)]
    pub(crate) json: bool,
    /// do not save results to $FCM_HOME/bench.json
    #[argh(switch)]
    pub(crate) no_save: bool,
}

/// Upper bounds that keep a typo from opening thousands of sockets or running for hours.
const MAX_PINGS: u32 = 50;
const MAX_CONCURRENCY: usize = 512;
const MAX_TIMEOUT_SECS: u64 = 600;

/// How to probe.
pub struct ProbePlan {
    pub pings: u32,
    /// Send a tool ping after each plain ping.
    pub tools: bool,
    pub timeout: Duration,
    pub concurrency: usize,
    pub progress: bool,
    /// Show the table filling in as models finish (stdout is a terminal, no `--json`).
    pub live: bool,
    /// The one ordering of models (`router.prefer`, `router.maxTtftMs`).
    pub policy: Policy,
    /// A Ctrl-C (or SIGTERM) stops the probes and keeps what was measured; the caller has
    /// routed those signals to `edge::signals`.
    pub interruptible: bool,
}

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    // Ctrl-C stops the probes; what was measured is still printed and saved (partial).
    crate::edge::signals::install();
    let setup = Setup::load()?;
    let plan = validate(&args, Policy::of(&setup.config.router))?;
    let models = select(&setup.catalog, &args.provider, &args.model)?;
    let secrets = setup.secrets(None);
    // Where the results and the spending go, before a request is spent: a home that cannot
    // be made is one clear error up front, on every system.
    files::create_private_dir(&files::fcm_home()?)?;
    let usage_path = files::state_file("usage.json")?;
    let ledger = Ledger::load(&usage_path, time::now_ms(), setup.config.router.keys.sticky)?;
    let report = execute(&models, &setup.keys(), &plan, &secrets, &ledger);
    // What the pings spent, whatever came of them (a running server takes it in).
    if let Err(e) = ledger.sync(&usage_path, time::now_ms()) {
        eprintln!("fcm bench: warning: {e:#}", e = anyhow::Error::new(e));
    }
    let report = report?;
    if args.json {
        print_json(&report, &secrets)?;
    } else {
        print_table(&report, &secrets);
    }
    if !args.no_save {
        save(&report, &secrets, plan.policy)?;
    }
    if report.partial {
        let measured = report.models.iter().filter(|m| m.pings > 0).count();
        eprintln!(
            "fcm bench: interrupted: {measured} models measured, {} not finished; {}",
            report.unfinished.len(),
            if args.no_save {
                "nothing saved (--no-save)".to_string()
            } else {
                format!(
                    "saved to {} marked partial (the others keep their last results)",
                    files::state_file("bench.json")?.display()
                )
            }
        );
        return Ok(ExitCode::Interrupted);
    }
    Ok(exit_code(&report))
}

pub fn validate(args: &BenchArgs, policy: Policy) -> Result<ProbePlan> {
    if args.pings == 0 || args.pings > MAX_PINGS {
        return usage(format!(
            "--pings must be between 1 and {MAX_PINGS} (got {})",
            args.pings
        ));
    }
    if args.concurrency == 0 || args.concurrency > MAX_CONCURRENCY {
        return usage(format!(
            "--concurrency must be between 1 and {MAX_CONCURRENCY} (got {})",
            args.concurrency
        ));
    }
    if args.timeout == 0 || args.timeout > MAX_TIMEOUT_SECS {
        return usage(format!(
            "--timeout must be between 1 and {MAX_TIMEOUT_SECS} seconds (got {})",
            args.timeout
        ));
    }
    Ok(ProbePlan {
        pings: args.pings,
        tools: args.tools,
        timeout: Duration::from_secs(args.timeout),
        concurrency: args.concurrency,
        progress: !args.json && std::io::stderr().is_terminal(),
        live: !args.json && std::io::stdout().is_terminal(),
        policy,
        interruptible: true,
    })
}

/// The models named by `--provider` and `--model`; unknown names are usage errors.
pub fn select<'a>(
    catalog: &'a Catalog,
    providers: &str,
    models: &[String],
) -> Result<Vec<ModelRef<'a>>> {
    if !models.is_empty() {
        return models
            .iter()
            .map(|key| match catalog.find(key) {
                Some(m) => Ok(m),
                None => usage(format!(
                    "unknown model {key:?}; `fcm models` lists them as provider/modelId"
                )),
            })
            .collect();
    }
    if providers.trim() == "all" {
        return Ok(catalog.models().collect());
    }
    let mut chosen = Vec::new();
    for id in providers
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        require_provider(catalog, id)?;
        chosen.extend(catalog.models().filter(|m| m.provider.id == id));
    }
    if chosen.is_empty() {
        return usage("--provider names no provider");
    }
    Ok(chosen)
}

/// Probes every model that has a key (the others are reported as `no key`) and ranks them.
/// Every ping goes through `ledger`: a model whose known daily budget (its last tenth kept
/// back) is below the pings it needs is not contacted (`over budget`), and a plan that
/// spends more than a tenth of a known daily limit is said before it starts.
pub fn execute(
    models: &[ModelRef<'_>],
    keys: &KeySource<'_>,
    plan: &ProbePlan,
    secrets: &Arc<Secrets>,
    ledger: &Ledger,
) -> Result<BenchReport> {
    let session = process_id_token();
    let now = time::rfc3339(time::now_ms());
    let upstream = Upstream::new();
    // The bench keeps no breakers: what it learns goes to bench.json, what it spends to
    // the ledger.
    let record = Recorder {
        ledger,
        health: None,
    };
    let (reachable, no_key): (Vec<&ModelRef<'_>>, Vec<&ModelRef<'_>>) = models
        .iter()
        .partition(|m| keys.lookup(m.provider).0.usable());
    let asked = questions(plan.pings, plan.tools);
    let all: Vec<(ModelRef<'_>, Candidate)> = reachable
        .iter()
        .map(|m| (**m, Candidate::of(**m, keys, &session, secrets)))
        .collect();
    let budget = budget_plan(&all, ledger, asked.len() as u64);
    for line in &budget.notices {
        eprintln!("fcm bench: {line}");
    }
    let (targets, over): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|(m, _)| budget.for_model(&m.key(), 1) > 0);
    let live = plan.live.then(|| {
        let keys = targets.iter().map(|(m, _)| m.key()).collect();
        std::sync::Mutex::new(LiveTable::new(keys, plan.policy, secrets))
    });
    let bar = if plan.progress && live.is_none() {
        let b =
            ProgressBar::with_draw_target(Some(targets.len() as u64), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} probing [{bar:30}] {pos}/{len} models {elapsed}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b.enable_steady_tick(Duration::from_millis(120));
        b
    } else {
        ProgressBar::hidden()
    };
    // The probes' own client: a Ctrl-C shuts it down, so the pings in flight end at once.
    let client = upstream.sibling();
    let done = pool::run_all(
        &targets,
        plan.concurrency,
        |(m, c), stop| {
            let allowed = budget.for_model(&m.key(), asked.len() as u64) as usize;
            let pings = probe(record, &*client, c, &asked[..allowed], plan.timeout, stop);
            let mut result = match pings.is_empty() {
                // Its budget ran out before its first ping (a request beside the bench).
                true => over_budget(*m, &now),
                false => summarize(*m, &pings, &now),
            };
            result.budget_capped = allowed < asked.len();
            if !stop.load(std::sync::atomic::Ordering::SeqCst) {
                bar.inc(1);
                if let Some(live) = &live {
                    live.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .finished(&result);
                }
            }
            result
        },
        || plan.interruptible && crate::edge::signals::stop_requested(),
        || client.shutdown(),
        || {
            if let Some(live) = &live {
                live.lock().unwrap_or_else(|e| e.into_inner()).tick();
            }
        },
    )?;
    bar.finish_and_clear();
    if let Some(live) = live {
        live.into_inner().unwrap_or_else(|e| e.into_inner()).clear();
    }
    let mut results = done.results;
    let unfinished: Vec<String> = done
        .unfinished
        .iter()
        .map(|&i| targets[i].0.key())
        .collect();
    results.extend(no_key.iter().map(|m| summarize(**m, &[], &now)));
    results.extend(over.iter().map(|(m, _)| over_budget(*m, &now)));
    rank(&mut results, plan.policy);
    Ok(BenchReport {
        generated_at: now,
        models: results,
        partial: !unfinished.is_empty(),
        unfinished,
    })
}

/// The share of a known daily limit a bench run may spend: a bench is a look, not a
/// day's work. At least one request while the counter has any room for probes.
pub const BENCH_SHARE: f64 = 0.02;

/// What a bench run may spend, decided before it starts.
#[derive(Debug, Default)]
pub struct BudgetPlan {
    /// Requests each model whose counter has a known daily limit may be sent (0: not
    /// contacted); a model not named here may be sent every ping asked for.
    pub allowed: BTreeMap<String, u64>,
    /// Lines for stderr: what was cut or skipped, and why.
    pub notices: Vec<String>,
}

impl BudgetPlan {
    /// The requests `model` may be sent, of the `asked`.
    pub fn for_model(&self, model: &str, asked: u64) -> u64 {
        self.allowed.get(model).map_or(asked, |n| (*n).min(asked))
    }
}

/// The bench's pings against each counter's known daily budget: a counter (a model, or a
/// whole provider's account) gives the bench at most [`BENCH_SHARE`] of its daily limit
/// (at least one request while it has room for probes, none once it is spent), shared
/// out among its models in catalog order. `--pings` asks, the budget decides. `pings`:
/// requests each model is asked.
pub fn budget_plan(
    models: &[(ModelRef<'_>, Candidate)],
    ledger: &Ledger,
    pings: u64,
) -> BudgetPlan {
    let now = time::now_ms();
    // counter -> (its room, models)
    let mut counters: BTreeMap<String, (Room, Vec<String>)> = BTreeMap::new();
    for (m, c) in models {
        if let Some(room) = ledger.probe_room(&c.metered, now) {
            let entry = counters
                .entry(room.counter.clone())
                .or_insert_with(|| (room, Vec::new()));
            entry.1.push(m.key());
        }
    }
    let mut plan = BudgetPlan::default();
    for (counter, (room, members)) in counters {
        let share = ((room.daily_limit as f64 * BENCH_SHARE) as u64).max(1);
        let mut total = share.min(room.left);
        let wanted = pings * members.len() as u64;
        for model in &members {
            let mine = pings.min(total);
            total -= mine;
            plan.allowed.insert(model.clone(), mine);
        }
        let skipped = members.iter().filter(|m| plan.allowed[*m] == 0).count();
        if wanted > share.min(room.left) {
            let sent = wanted - members.iter().map(|m| pings - plan.allowed[m]).sum::<u64>();
            plan.notices.push(format!(
                "{counter}: {sent} of the {wanted} requests asked for, a known {} a day allowing the bench {}{}{}",
                room.daily_limit,
                if room.left == 0 { "nothing more today" .to_string() } else { format!("{:.0}% of it", BENCH_SHARE * 100.0) },
                if skipped > 0 { format!("; {skipped} of its {} models not contacted", members.len()) } else { String::new() },
                if room.left == 0 { " (`fcm usage` shows when it frees up)" } else { "" },
            ));
        }
    }
    plan
}

/// 0 when at least one model is usable, 1 when none is.
pub fn exit_code(report: &BenchReport) -> ExitCode {
    if report.models.iter().any(|m| m.usable) {
        ExitCode::Ok
    } else {
        ExitCode::Failure
    }
}

/// `fcm bench --json`: the report, without a secret a provider echoed.
pub fn print_json(report: &BenchReport, secrets: &Secrets) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    println!("{}", secrets.redact(&text));
    Ok(())
}

/// Merges this run into `$FCM_HOME/bench.json`. The whole file is cleaned of secrets as it
/// is written, so entries kept from earlier runs are too.
pub fn save(report: &BenchReport, secrets: &Secrets, policy: Policy) -> Result<()> {
    let path = files::state_file("bench.json")?;
    let previous: BenchReport = files::load_json(&path)?;
    let text = serde_json::to_string_pretty(&merge(previous, report, policy))?;
    Ok(files::write_atomic(
        &path,
        secrets.redact(&text).as_bytes(),
    )?)
}

/// The table and its summary lines, without a secret a provider echoed.
pub fn print_table(report: &BenchReport, secrets: &Secrets) {
    print!("{}", secrets.redact(&table_text(report)));
}

/// The table; the `Tools` column shows only when this run sent tool pings.
fn table_text(report: &BenchReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let (probed, no_key): (Vec<_>, Vec<_>) = report.models.iter().partition(|m| m.pings > 0);
    let t = rows::table(report, &[], None);
    if !probed.is_empty() {
        let _ = writeln!(out, "{t}");
    }
    let usable = probed.iter().filter(|m| m.usable).count();
    let _ = writeln!(out, "{} models probed, {usable} usable", probed.len());
    if probed.iter().any(|m| m.budget_capped) {
        let _ = writeln!(
            out,
            "{} fewer pings than asked: a known daily limit gives the bench {:.0}% of it",
            rows::BUDGET_MARK,
            BENCH_SHARE * 100.0
        );
    }
    let (over, no_key): (Vec<_>, Vec<_>) = no_key
        .into_iter()
        .partition(|m| m.verdict == BenchVerdict::QuotaBudget);
    let providers = |models: &[&ModelResult]| {
        let mut ids: Vec<&str> = models.iter().map(|m| m.provider.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.join(", ")
    };
    if !no_key.is_empty() {
        let _ = writeln!(
            out,
            "{} models not contacted (no key): {} (see `fcm models` for the variables to set)",
            no_key.len(),
            providers(&no_key)
        );
    }
    if !over.is_empty() {
        let _ = writeln!(
            out,
            "{} models not contacted (over budget): {} (see `fcm usage` for what is left)",
            over.len(),
            providers(&over)
        );
    }
    out
}
