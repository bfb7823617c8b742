//! `fcm status`: one screen on the whole setup: whether a server runs, how its models
//! stand, which providers have keys, which tools point at this server (read from the
//! tools' own config files), and the last failures.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};
use serde::Serialize;
use serde_json::Value;

use crate::commands::admin::admin_get;
use crate::commands::exit::ExitCode;
use crate::commands::Setup;
use crate::install::tools::TOOLS;
use crate::install::{self as inst};
use crate::state::bench_file::BenchReport;
use crate::state::breaker::{rows, Answering, BreakerBook, BreakerRow, Counts};
use crate::state::files;
use crate::state::serve_info::{live_server, ServeInfo};
use crate::state::trace::{HistoryFile, Trace};

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "status")]
/// One screen: the server, models, keys, tools pointing at fcm, the last failures.
pub(crate) struct StatusArgs {
    /// print one JSON document instead
    #[argh(switch)]
    pub(crate) json: bool,
}

/// How many recent failed attempts are shown.
const LAST_FAILURES: usize = 5;

/// `fcm status --json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status {
    pub(crate) server: Server,
    pub(crate) models: Models,
    pub(crate) providers: Providers,
    pub(crate) tools: Vec<ToolStatus>,
    pub(crate) last_failures: Vec<LastFailure>,
    /// Conversations each model keeps now (affinity).
    pub(crate) conversations: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Server {
    pub(crate) running: bool,
    /// Where it listens (running), or where it would (the configured port).
    pub(crate) address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) uptime_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    pub(crate) token_required: bool,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Models {
    /// Models whose provider has a key (or needs none).
    pub(crate) routable: usize,
    /// With a CLOSED breaker (`healthy` + `failing` + `untried`).
    pub(crate) closed: usize,
    /// CLOSED, and shown to answer (lately, or in the last bench).
    pub(crate) healthy: usize,
    /// CLOSED, but the last bench or recent results found it not answering.
    pub(crate) failing: usize,
    /// CLOSED, with nothing known yet (never benched, no traffic).
    pub(crate) untried: usize,
    pub(crate) degraded: usize,
    pub(crate) half_open: usize,
    pub(crate) open: usize,
    pub(crate) quota_paused: usize,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Providers {
    /// Providers with at least one key, and how many.
    pub(crate) with_keys: Vec<ProviderKeys>,
    /// Providers that need a key and have none.
    pub(crate) missing: Vec<String>,
    /// Providers that need no key.
    pub(crate) keyless: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ProviderKeys {
    pub(crate) provider: String,
    pub(crate) keys: usize,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolStatus {
    pub(crate) tool: String,
    pub(crate) config: String,
    /// The loopback port its config sends it to (`null`: not set up for fcm).
    pub(crate) port: Option<u16>,
    /// It points at this server's port.
    pub(crate) this_server: bool,
    /// The key it sends is the access token this server wants.
    pub(crate) token_matches: bool,
    /// Settings that win over fcm's and send it elsewhere (a project file, a variable),
    /// when its config points at fcm: the tool will not use fcm while they are there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) overridden_by: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LastFailure {
    pub(crate) time: String,
    pub(crate) request_id: String,
    pub(crate) model: String,
    pub(crate) status: Option<u16>,
    pub(crate) kind: String,
}

pub(crate) fn run(args: StatusArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    let status = gather(&setup)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print!("{}", text(&status));
    }
    Ok(ExitCode::Ok)
}

/// Everything `fcm status` shows, from the running server when there is one, else from the
/// state files.
pub(crate) fn gather(setup: &Setup) -> Result<Status> {
    let info = live_server();
    let health = match &info {
        Some(i) => Some(admin_get(i, setup, "/health")?),
        None => None,
    };
    let token = setup.config.serve.access_token(None);
    let port = info
        .as_ref()
        .and_then(ServeInfo::port)
        .unwrap_or(setup.config.port);
    let server = server(info.as_ref(), health.as_ref(), setup, token.is_some());
    let keys = setup.keys();
    let mut providers = Providers {
        with_keys: Vec::new(),
        missing: Vec::new(),
        keyless: Vec::new(),
    };
    let mut routable: Vec<String> = Vec::new();
    for p in &setup.catalog.providers {
        let n = keys.keys(p).len();
        if n > 0 {
            providers.with_keys.push(ProviderKeys {
                provider: p.id.clone(),
                keys: n,
            });
        } else if p.key_required {
            providers.missing.push(p.id.clone());
            continue;
        } else {
            providers.keyless.push(p.id.clone());
        }
        routable.extend(p.models.iter().map(|m| format!("{}/{}", p.id, m.id)));
    }
    let history: Vec<Trace> = match &info {
        Some(i) => serde_json::from_value(admin_get(i, setup, "/fcm/admin/history?n=200")?)
            .context("unexpected answer from the server")?,
        None => files::load_json::<HistoryFile>(&files::state_file("history.json")?)?.entries,
    };
    let models = match &health {
        Some(h) => models_from_health(&h["models"]),
        None => {
            let book: BreakerBook = files::load_json(&files::state_file("breakers.json")?)?;
            let now = crate::time::now_ms();
            let rows = rows(&book, now, &setup.config.router.breaker);
            let bench: BenchReport = files::load_json(&files::state_file("bench.json")?)?;
            let evidence = OfflineEvidence::of(&bench, &history);
            models_from_rows(
                &rows,
                routable.iter().map(|m| (m.as_str(), evidence.of_model(m))),
            )
        }
    };
    let conversations = match &health {
        Some(h) => h["conversations"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(m, n)| (m.clone(), n.as_u64().unwrap_or(0)))
            .collect(),
        None => {
            let kept = &setup.config.router.affinity;
            let file = files::load_json(&files::state_file("affinity.json")?)?;
            let now = crate::time::now_ms();
            crate::state::affinity::Affinity::new(file, kept.idle_minutes * 60_000, now)
                .active(now)
                .into_iter()
                .map(|(m, n)| (m, n as u64))
                .collect()
        }
    };
    Ok(Status {
        server,
        models,
        providers,
        tools: tools(port, token.as_deref()),
        last_failures: last_failures(&history),
        conversations,
    })
}

fn server(info: Option<&ServeInfo>, health: Option<&Value>, setup: &Setup, token: bool) -> Server {
    match (info, health) {
        (Some(i), Some(h)) => Server {
            running: true,
            address: i.address.clone(),
            pid: Some(i.pid),
            uptime_secs: h["uptimeSecs"].as_u64(),
            version: h["version"].as_str().map(str::to_string),
            token_required: i.token_required,
        },
        _ => Server {
            running: false,
            address: format!("127.0.0.1:{}", setup.config.port),
            pid: None,
            uptime_secs: None,
            version: None,
            token_required: token,
        },
    }
}

fn models_from_health(m: &Value) -> Models {
    let n = |k: &str| m[k].as_u64().unwrap_or(0) as usize;
    Models {
        routable: n("routable"),
        closed: n("closed"),
        healthy: n("healthy"),
        failing: n("failing"),
        untried: n("untried"),
        degraded: n("degraded"),
        half_open: n("halfOpen"),
        open: n("open"),
        quota_paused: n("quotaPaused"),
    }
}

/// The same counts as a server's `/health`, from `breakers.json` and what the files say of
/// each routable model.
fn models_from_rows<'m>(
    rows: &[BreakerRow],
    routable: impl IntoIterator<Item = (&'m str, Answering)>,
) -> Models {
    let c = Counts::of(rows, routable);
    Models {
        routable: c.routable,
        closed: c.closed,
        healthy: c.healthy,
        failing: c.failing,
        untried: c.untried,
        degraded: c.degraded,
        half_open: c.half_open,
        open: c.open,
        quota_paused: c.quota_paused,
    }
}

/// Without a server, whether a model answers, from the files: it served a request in
/// `history.json`, or the last bench found it usable; it is failing when the last bench
/// found it unusable and it has served nothing since; else untried.
struct OfflineEvidence {
    served: HashSet<String>,
    /// Benched models (pings sent): usable or not.
    benched: HashMap<String, bool>,
}

impl OfflineEvidence {
    fn of(bench: &BenchReport, history: &[Trace]) -> OfflineEvidence {
        OfflineEvidence {
            served: history
                .iter()
                .flat_map(|t| &t.attempts)
                .filter(|a| a.kind.is_none() && !a.raced_out)
                .map(|a| a.model.clone())
                .collect(),
            benched: bench
                .models
                .iter()
                .filter(|m| m.pings > 0)
                .map(|m| (m.model.clone(), m.usable))
                .collect(),
        }
    }

    fn of_model(&self, model: &str) -> Answering {
        if self.served.contains(model) {
            return Answering::Proven;
        }
        match self.benched.get(model) {
            Some(true) => Answering::Proven,
            Some(false) => Answering::Failing,
            None => Answering::Untried,
        }
    }
}

/// Each tool fcm can set up, and where its own config sends it.
pub(crate) fn tools(port: u16, token: Option<&str>) -> Vec<ToolStatus> {
    let Some(home) = crate::state::files::home_dir() else {
        return Vec::new();
    };
    let ctx = crate::commands::install::tool_context(home, port, "fcm", token);
    TOOLS
        .iter()
        .map(|tool| {
            let p = inst::pointing(tool, &ctx);
            ToolStatus {
                tool: tool.name.to_string(),
                config: tool.path(&ctx).display().to_string(),
                port: p.as_ref().map(|p| p.port),
                this_server: p.as_ref().is_some_and(|p| p.port == port),
                token_matches: p.as_ref().is_some_and(|p| p.token_matches),
                overridden_by: p
                    .as_ref()
                    .and_then(|_| (tool.overrides)(&ctx).into_iter().next()),
            }
        })
        .collect()
}

/// The newest failed attempts first.
fn last_failures(history: &[Trace]) -> Vec<LastFailure> {
    let mut out = Vec::new();
    for t in history.iter().rev() {
        for a in t.attempts.iter().rev() {
            if let Some(kind) = a.kind {
                out.push(LastFailure {
                    time: t.time.clone(),
                    request_id: t.id.clone(),
                    model: a.model.clone(),
                    status: a.status,
                    kind: kind.to_string(),
                });
                if out.len() == LAST_FAILURES {
                    return out;
                }
            }
        }
    }
    out
}

/// The screen.
fn text(s: &Status) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let srv = &s.server;
    if srv.running {
        let _ = writeln!(
            out,
            "server:    running at http://{}/v1 (pid {}, up {}, version {}{})",
            srv.address,
            srv.pid.unwrap_or(0),
            match srv.uptime_secs.unwrap_or(0) {
                0 => "under a second".to_string(),
                s => crate::time::human_ms(s * 1000),
            },
            srv.version.as_deref().unwrap_or("?"),
            if srv.token_required {
                ", token required"
            } else {
                ""
            }
        );
    } else {
        let _ = writeln!(
            out,
            "server:    not running (`fcm serve --detach` starts it on http://{}/v1)",
            srv.address
        );
    }
    let m = &s.models;
    let _ = writeln!(
        out,
        "models:    {} routable: {} healthy, {} not answering, {} untried, {} degraded, {} half-open, {} open, {} quota-paused",
        m.routable, m.healthy, m.failing, m.untried, m.degraded, m.half_open, m.open, m.quota_paused
    );
    if !s.conversations.is_empty() {
        let mut busiest: Vec<(&String, &u64)> = s.conversations.iter().collect();
        busiest.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let each: Vec<String> = busiest.iter().map(|(m, n)| format!("{m} {n}")).collect();
        let total: u64 = s.conversations.values().sum();
        let _ = writeln!(out, "conversations: {total} active ({})", each.join(", "));
    }
    let keyed: Vec<String> = s
        .providers
        .with_keys
        .iter()
        .map(|p| match p.keys {
            1 => p.provider.clone(),
            n => format!("{} ({n} keys)", p.provider),
        })
        .collect();
    let _ = writeln!(
        out,
        "keys:      {} ({} provider{}); no key needed: {}; missing: {} (`fcm keys list`)",
        if keyed.is_empty() {
            "none".to_string()
        } else {
            keyed.join(", ")
        },
        keyed.len(),
        if keyed.len() == 1 { "" } else { "s" },
        if s.providers.keyless.is_empty() {
            "-".to_string()
        } else {
            s.providers.keyless.join(", ")
        },
        s.providers.missing.len()
    );
    let tools: Vec<String> = s
        .tools
        .iter()
        .filter_map(|t| {
            let port = t.port?;
            Some(match (t.this_server, t.token_matches) {
                (true, true) => format!("{} (this server)", t.tool),
                (true, false) => format!("{} (this server, but another token)", t.tool),
                (false, _) => format!("{} (port {port}, not this server)", t.tool),
            })
        })
        .collect();
    let _ = writeln!(
        out,
        "tools:     {}",
        if tools.is_empty() {
            "none points at fcm (`fcm install --list`)".to_string()
        } else {
            tools.join(", ")
        }
    );
    if s.last_failures.is_empty() {
        let _ = writeln!(out, "failures:  none recently");
    } else {
        let _ = writeln!(out, "failures:  the last {}:", s.last_failures.len());
        for f in &s.last_failures {
            let what = match f.status {
                Some(code) if !(200..300).contains(&code) => format!("{code} {}", f.kind),
                _ => f.kind.clone(),
            };
            let _ = writeln!(out, "  {}  {}  {what}", f.time, f.model);
        }
    }
    out
}
