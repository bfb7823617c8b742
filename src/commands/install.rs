//! `fcm install`: apply, preview, list or undo a tool's fcm settings.

use std::path::Path;

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};

use crate::commands::exit::ExitCode;
use crate::commands::{edit_config, usage, Setup};
use crate::install::cursor;
use crate::install::doc::{Doc, DocError};
use crate::install::tools::{self, Tool, ToolContext, TOOLS};
use crate::install::{self as inst, diff, Plan};
use crate::state::files::{self, Holds};
use crate::table;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "install")]
/// Point a coding tool at `fcm serve` by editing its own config (a backup is kept).
pub(crate) struct InstallArgs {
    /// the tool: claude-code, codex, cline, cursor, opencode, crush or aider
    #[argh(positional)]
    pub(crate) tool: Option<String>,
    /// model name the tool sends (default fcm: automatic routing; or fcm:provider/modelId)
    #[argh(option, default = "String::from(\"fcm\")")]
    pub(crate) model: String,
    /// port of fcm serve (default: config.json port, else 19280)
    #[argh(option)]
    pub(crate) port: Option<u16>,
    /// print the change and write nothing
    #[argh(switch)]
    pub(crate) dry_run: bool,
    /// remove what fcm added and restore the previous values
    #[argh(switch)]
    pub(crate) uninstall: bool,
    /// list the tools, their config files and whether fcm is installed there
    #[argh(switch)]
    pub(crate) list: bool,
    /// with --list: print JSON instead of a table
    #[argh(switch)]
    pub(crate) json: bool,
    /// cursor only: the public HTTPS URL of a tunnel to fcm serve (Cursor calls it from its servers)
    #[argh(option)]
    pub(crate) url: Option<String>,
    /// cursor only: Cursor is closed (when fcm cannot list processes to tell)
    #[argh(switch)]
    pub(crate) cursor_closed: bool,
}

/// What tools send as their key when fcm serve needs none.
pub(crate) const LOCAL_TOKEN: &str = "fcm-local";

/// What fcm writes into the tools' configs: this port, this model, and the access token
/// (or [`LOCAL_TOKEN`] when the server needs none); the tool runs in this folder and this
/// environment.
pub(crate) fn tool_context(
    home: std::path::PathBuf,
    port: u16,
    model: &str,
    token: Option<&str>,
) -> ToolContext {
    ToolContext {
        home,
        port,
        model: model.to_string(),
        token: token.unwrap_or(LOCAL_TOKEN).to_string(),
        cwd: std::env::current_dir().unwrap_or_default(),
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
    }
}

pub(crate) fn run(args: InstallArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    let home =
        crate::state::files::home_dir().context("cannot find your home directory (set HOME)")?;
    let token = setup.config.serve.access_token(None);
    let port = args.port.unwrap_or(setup.config.port);
    let ctx = tool_context(home, port, &args.model, token.as_deref());
    if args.list {
        return list(&ctx, args.json);
    }
    if args.json {
        return usage("--json goes with --list: `fcm install --list --json`");
    }
    let Some(name) = args.tool.as_deref() else {
        return usage(format!(
            "name a tool ({}) or use --list",
            tools::names().join(", ")
        ));
    };
    if args.model != "fcm"
        && !args.model.starts_with("fcm:")
        && setup.catalog.find(&args.model).is_none()
    {
        return usage(format!(
            "--model {:?} is neither fcm, fcm:provider/modelId nor a catalog model (`fcm models`)",
            args.model
        ));
    }
    if name == "cursor" {
        return cursor(&args, &ctx, token);
    }
    let Some(tool) = tools::find(name) else {
        let mut names = tools::names();
        names.push("cursor");
        return usage(format!(
            "unknown tool {name:?}; fcm can install into: {}",
            names.join(", ")
        ));
    };
    let mut records = inst::load_records()?;
    if args.uninstall {
        return uninstall(tool, &ctx, &mut records, args.dry_run);
    }
    let overrides = (tool.overrides)(&ctx);
    if !overrides.is_empty() {
        eprintln!(
            "fcm install {}: {} would still not use fcm: settings that win over {} send it elsewhere:",
            tool.name,
            tool.label,
            tool.path(&ctx).display()
        );
        for o in &overrides {
            eprintln!("  {o}");
        }
        eprintln!("Remove or change those (or install from another folder); nothing was changed.");
        return Ok(ExitCode::Failure);
    }
    let mut plans = Vec::new();
    for part in (tool.parts)(&ctx) {
        let (text, existed) = read_text(&part.path)?;
        let refused = |e: DocError| {
            anyhow::anyhow!(
                "cannot parse {}: {e}; fix or move the file, nothing was changed",
                part.path.display()
            )
        };
        let doc = Doc::parse(part.format, &text).map_err(refused)?;
        let settings = (part.settings)(&ctx, &doc);
        let found = inst::Found {
            text: &text,
            existed,
        };
        let plan = inst::plan_install(
            part.format,
            found,
            &settings,
            records.get(&part.key),
            &part.path,
        )
        .map_err(refused)?;
        plans.push((part, plan));
    }
    if plans.iter().all(|(_, p)| !p.changes()) {
        println!(
            "{} already points at fcm ({}); nothing changed.",
            tool.label,
            tool.path(&ctx).display()
        );
        return Ok(ExitCode::Ok);
    }
    if args.dry_run {
        for (part, plan) in &plans {
            preview(plan, &part.path);
        }
        return Ok(ExitCode::Ok);
    }
    // The tool sends fcm's access token, when one is set, from these files: nobody else may
    // read them.
    let holds = if token.is_some() {
        Holds::Secret
    } else {
        Holds::Settings
    };
    for (part, plan) in plans.into_iter().filter(|(_, p)| p.changes()) {
        if let Some(backup) = inst::backup_once(&part.path)? {
            println!("Backed up {} to {}", part.path.display(), backup.display());
        }
        let mut record = plan.record.clone().unwrap_or_default();
        if record.created_file && record.created_dirs.is_empty() {
            record.created_dirs = missing_dirs(&part.path);
        }
        files::write_user_file(&part.path, plan.after.as_bytes(), holds)?;
        records.insert(part.key.clone(), record);
        inst::save_records(&records)?;
        println!("Wrote {}:", part.path.display());
        print!("{}", diff(&plan.before, &plan.after));
    }
    println!(
        "Next: start the proxy with `fcm serve`, then {}.",
        tool.next
    );
    Ok(ExitCode::Ok)
}

/// A file's text and whether it exists (a missing file reads as empty).
fn read_text(path: &Path) -> Result<(String, bool)> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok((t, true)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((String::new(), false)),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The folders above `file` that do not exist yet, outermost first: made for it, and taken
/// away again with it.
fn missing_dirs(file: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = file
        .ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// Gives the folder `dir`, made by fcm for `from`'s file, to the records of fcm's other files
/// inside it: the last of them to go takes it away.
fn hand_over(records: &mut inst::Records, from: &str, dir: &Path) {
    for (key, r) in records.iter_mut() {
        if key != from && r.file.starts_with(dir) && !r.created_dirs.iter().any(|d| d == dir) {
            r.created_dirs.insert(0, dir.to_path_buf());
        }
    }
}

/// Undoes every file fcm wrote for `tool`: the user's own bytes back where the file still
/// holds what fcm wrote, fcm's settings taken out where the user changed it since, and the
/// files (and folders) fcm created removed.
fn uninstall(
    tool: &Tool,
    ctx: &ToolContext,
    records: &mut inst::Records,
    dry_run: bool,
) -> Result<ExitCode> {
    let parts = (tool.parts)(ctx);
    let done: Vec<_> = parts
        .iter()
        .filter_map(|p| Some((p, records.get(&p.key)?.clone())))
        .collect();
    if done.is_empty() {
        println!(
            "fcm is not installed in {} ({}); nothing to remove.",
            tool.label,
            tool.path(ctx).display()
        );
        return Ok(ExitCode::Ok);
    }
    for (part, record) in done {
        // The file fcm wrote, wherever the tool's path points today.
        let file = if record.file.as_os_str().is_empty() {
            part.path.clone()
        } else {
            record.file.clone()
        };
        let (text, existed) = read_text(&file)?;
        let plan = inst::plan_uninstall(part.format, &text, &record).map_err(|e| {
            anyhow::anyhow!(
                "cannot parse {}: {e}; fix or move the file, nothing was changed",
                file.display()
            )
        })?;
        if dry_run {
            if plan.remove_file && existed {
                println!("Would remove {} (fcm created it; dry run).", file.display());
            } else {
                preview(&plan, &file);
            }
            continue;
        }
        if plan.remove_file {
            if existed {
                std::fs::remove_file(&file)
                    .with_context(|| format!("cannot remove {}", file.display()))?;
            }
            for dir in record.created_dirs.iter().rev() {
                // Only while empty: anything else there is not fcm's. A folder fcm made that
                // holds another tool's file fcm wrote goes when that one goes.
                if std::fs::remove_dir(dir).is_err() {
                    hand_over(records, &part.key, dir);
                }
            }
            println!("Removed {} (fcm created it).", file.display());
        } else if plan.changes() {
            // What comes back is the user's own: the file keeps its mode.
            files::write_user_file(&file, plan.after.as_bytes(), Holds::Settings)?;
            println!("Restored {}.", file.display());
        }
        records.remove(&part.key);
        inst::save_records(records)?;
    }
    if !dry_run {
        println!(
            "Removed fcm's settings from {}; your earlier values are back.",
            tool.label
        );
    }
    Ok(ExitCode::Ok)
}

/// Cursor: a tunnel URL, an access token, and its SQLite settings (see `install::cursor`).
/// `existing` is the access token already configured, if any.
fn cursor(args: &InstallArgs, ctx: &ToolContext, existing: Option<String>) -> Result<ExitCode> {
    let db = cursor::db_path(&ctx.home);
    let mut records = inst::load_records()?;
    if args.uninstall {
        let Some(record) = records.get("cursor") else {
            println!(
                "fcm is not installed in Cursor ({}); nothing to remove.",
                db.display()
            );
            return Ok(ExitCode::Ok);
        };
        cursor::ensure_closed(&db, args.cursor_closed, |is| crate::process::running(is))?;
        if args.dry_run {
            println!(
                "Would restore {} setting(s) in {} (dry run, nothing written).",
                record.settings.len(),
                db.display()
            );
            return Ok(ExitCode::Ok);
        }
        let n = cursor::uninstall(&db, record)?;
        records.remove("cursor");
        inst::save_records(&records)?;
        println!(
            "Restored {n} setting(s) in {}; Cursor uses its own models again.",
            db.display()
        );
        return Ok(ExitCode::Ok);
    }
    let Some(url) = args.url.as_deref() else {
        return usage(
            "Cursor calls custom endpoints from its own servers, so it cannot reach 127.0.0.1: expose `fcm serve` \
             through an HTTPS tunnel and pass its URL, e.g. `fcm install cursor --url https://<tunnel>/v1`",
        );
    };
    if !url.starts_with("https://") {
        return usage(format!(
            "--url must be an https:// URL (Cursor refuses plain http), got {url:?}"
        ));
    }
    let url = if url.trim_end_matches('/').ends_with("/v1") {
        url.trim_end_matches('/').to_string()
    } else {
        format!("{}/v1", url.trim_end_matches('/'))
    };
    cursor::ensure_closed(&db, args.cursor_closed, |is| crate::process::running(is))?;
    // The tunnel makes fcm serve reachable from the internet: it needs an access token.
    let token = match &existing {
        Some(t) => t.clone(),
        None => cursor::new_token()?,
    };
    // Checks the database (and plans the change) before anything is written anywhere.
    let (record, changes) =
        cursor::install(&db, &url, &args.model, &token, records.get("cursor"), true)?;
    if changes.is_empty() {
        println!(
            "Cursor already points at fcm ({}); nothing changed.",
            db.display()
        );
        return Ok(ExitCode::Ok);
    }
    if args.dry_run {
        println!("Would set in {} (dry run, nothing written):", db.display());
        changes.iter().for_each(|c| println!("+ {c}"));
        return Ok(ExitCode::Ok);
    }
    if let Some(backup) = inst::backup_once(&db)? {
        println!("Backed up {} to {}", db.display(), backup.display());
    }
    let (record, _) = cursor::install(&db, &url, &args.model, &token, Some(&record), false)?;
    // Cursor's database now holds the access token as its API key.
    files::make_private(&db)?;
    if existing.is_none() {
        save_token(&token)?;
        let others: Vec<&str> = records
            .keys()
            .map(String::as_str)
            .filter(|t| *t != "cursor")
            .collect();
        if !others.is_empty() {
            println!(
                "fcm serve now requires this token: run `fcm install` again for {} so they send it",
                others.join(", ")
            );
        }
    }
    records.insert("cursor".into(), record);
    inst::save_records(&records)?;
    println!("Wrote {}:", db.display());
    changes.iter().for_each(|c| println!("+ {c}"));
    println!("Next:");
    println!(
        "  1. fcm serve   (it requires the access token now kept in config.json as serve.token)"
    );
    println!("  2. expose it over HTTPS, e.g. `cloudflared tunnel --url http://127.0.0.1:{}` or `ngrok http {}`;", ctx.port, ctx.port);
    println!("     the tunnel's address must be the --url you gave ({url})");
    println!(
        "  3. start Cursor and pick the model {} in the chat's model list",
        args.model
    );
    Ok(ExitCode::Ok)
}

/// Stores a new access token as `serve.token` in the user's config.json.
fn save_token(token: &str) -> Result<()> {
    let path = edit_config(|doc| {
        doc.set(&["serve", "token"], &serde_json::json!(token))?;
        Ok(())
    })?;
    println!(
        "Made an access token for fcm serve and saved it as serve.token in {}",
        path.display()
    );
    Ok(())
}

fn preview(plan: &Plan, file: &Path) {
    if plan.changes() {
        println!(
            "Would change {} (dry run, nothing written):",
            file.display()
        );
        print!("{}", diff(&plan.before, &plan.after));
    } else {
        println!("{} would not change.", file.display());
    }
}

/// Where a tool stands, as `fcm install --list` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Standing {
    Installed,
    /// Installed, but a project file or variable wins over fcm's settings.
    NotUsed(String),
    /// Installed once; its file has changed since and no longer holds fcm's settings.
    Changed,
    NotInstalled,
    Unreadable,
    NoConfigFile,
}

impl Standing {
    /// The word for `--json`.
    fn key(&self) -> &'static str {
        match self {
            Standing::Installed => "installed",
            Standing::NotUsed(_) => "not_used",
            Standing::Changed => "changed",
            Standing::NotInstalled => "not_installed",
            Standing::Unreadable => "unreadable",
            Standing::NoConfigFile => "no_config_file",
        }
    }

    /// The table's words.
    fn describe(&self) -> String {
        match self {
            Standing::Installed => "installed".into(),
            Standing::NotUsed(why) => format!("not used: {why}"),
            Standing::Changed => "installed, since changed".into(),
            Standing::NotInstalled => "not installed".into(),
            Standing::Unreadable => "unreadable".into(),
            Standing::NoConfigFile => "no config file".into(),
        }
    }
}

fn list(ctx: &ToolContext, json: bool) -> Result<ExitCode> {
    let records = inst::load_records()?;
    let mut rows: Vec<(String, String, Standing)> = TOOLS
        .iter()
        .map(|tool| {
            let path = tool.path(ctx).display().to_string();
            (tool.name.to_string(), path, standing(tool, ctx, &records))
        })
        .collect();
    let db = cursor::db_path(&ctx.home);
    let cursor_standing = match (records.contains_key("cursor"), db.exists()) {
        (true, _) => Standing::Installed,
        (false, true) => Standing::NotInstalled,
        (false, false) => Standing::NoConfigFile,
    };
    rows.push(("cursor".into(), db.display().to_string(), cursor_standing));
    if json {
        let doc: Vec<serde_json::Value> = rows
            .iter()
            .map(|(tool, config, s)| {
                let mut v = serde_json::json!({"tool": tool, "config": config, "status": s.key()});
                if let Standing::NotUsed(why) = s {
                    v["notUsedBecause"] = serde_json::json!(why);
                }
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::Ok);
    }
    let mut t = table::new(&["Tool", "Config file", "fcm"]);
    for (tool, config, s) in &rows {
        t.add_row(vec![tool.clone(), config.clone(), s.describe()]);
    }
    println!("{t}");
    Ok(ExitCode::Ok)
}

fn standing(tool: &Tool, ctx: &ToolContext, records: &inst::Records) -> Standing {
    let recorded = records.contains_key(tool.name);
    match inst::installed(tool, ctx, records) {
        Some(true) => match (tool.overrides)(ctx).into_iter().next() {
            Some(why) => Standing::NotUsed(why),
            None => Standing::Installed,
        },
        Some(false) if recorded => Standing::Changed,
        Some(false) => Standing::NotInstalled,
        None if tool.path(ctx).exists() => Standing::Unreadable,
        None => Standing::NoConfigFile,
    }
}
