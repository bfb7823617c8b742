//! `fcm install`: apply, preview, list or undo a tool's fcm settings.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{usage, InstallArgs};
use crate::cmd::Setup;
use crate::install::tools::{self, Tool, ToolContext, TOOLS};
use crate::install::{self as inst, diff, Plan};
use crate::state;
use crate::table;

/// What tools send as their key when fcm serve needs none.
const LOCAL_TOKEN: &str = "fcm-local";

pub fn run(args: InstallArgs) -> Result<i32> {
    let setup = Setup::load()?;
    let home = dirs::home_dir().context("cannot find your home directory (set HOME)")?;
    let token = std::env::var("FCM_TOKEN")
        .ok()
        .or_else(|| setup.config.serve.token.clone())
        .filter(|t| !t.is_empty());
    let ctx = ToolContext {
        home,
        port: args.port.unwrap_or(setup.config.port),
        model: args.model.clone(),
        token: token.unwrap_or_else(|| LOCAL_TOKEN.to_string()),
    };
    if args.list {
        return list(&ctx);
    }
    let Some(name) = args.tool.as_deref() else {
        return usage(format!(
            "name a tool ({}) or use --list",
            tools::names().join(", ")
        ));
    };
    let Some(tool) = tools::find(name) else {
        return usage(format!(
            "unknown tool {name:?}; fcm can install into: {}",
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
    let file = (tool.path)(&ctx);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let mut records = inst::load_records()?;
    let refused = |e: String| {
        anyhow::anyhow!(
            "cannot parse {}: {e}; fix or move the file, nothing was changed",
            file.display()
        )
    };
    if args.uninstall {
        let Some(record) = records.get(tool.name) else {
            println!(
                "fcm is not installed in {} ({}); nothing to remove.",
                tool.label,
                file.display()
            );
            return Ok(0);
        };
        let plan = inst::plan_uninstall(tool, &text, record).map_err(refused)?;
        if args.dry_run {
            return preview(&plan, &file);
        }
        if plan.changes() {
            state::write_atomic(&file, plan.after.trim_end().as_bytes())?;
        }
        records.remove(tool.name);
        inst::save_records(&records)?;
        println!(
            "Removed fcm's settings from {} ({}); your earlier values are back.",
            tool.label,
            file.display()
        );
        return Ok(0);
    }
    let settings = (tool.settings)(&ctx);
    let plan = inst::plan_install(tool, &text, &settings, records.get(tool.name), &file)
        .map_err(refused)?;
    if !plan.changes() {
        println!(
            "{} already points at fcm ({}); nothing changed.",
            tool.label,
            file.display()
        );
        return Ok(0);
    }
    if args.dry_run {
        return preview(&plan, &file);
    }
    if let Some(backup) = inst::backup_once(&file)? {
        println!("Backed up {} to {}", file.display(), backup.display());
    }
    state::write_atomic(&file, plan.after.trim_end().as_bytes())?;
    if let Some(record) = plan.record.clone() {
        records.insert(tool.name.to_string(), record);
        inst::save_records(&records)?;
    }
    println!("Wrote {}:", file.display());
    print!("{}", diff(&plan.before, &plan.after));
    println!(
        "Next: start the proxy with `fcm serve`, then {}.",
        tool.next
    );
    Ok(0)
}

fn preview(plan: &Plan, file: &Path) -> Result<i32> {
    if plan.changes() {
        println!(
            "Would change {} (dry run, nothing written):",
            file.display()
        );
        print!("{}", diff(&plan.before, &plan.after));
    } else {
        println!("{} would not change.", file.display());
    }
    Ok(0)
}

fn list(ctx: &ToolContext) -> Result<i32> {
    let records = inst::load_records()?;
    let mut t = table::new(&["Tool", "Config file", "fcm"]);
    for tool in TOOLS {
        t.add_row(vec![
            tool.name.to_string(),
            (tool.path)(ctx).display().to_string(),
            status(tool, ctx, records.contains_key(tool.name)),
        ]);
    }
    println!("{t}");
    Ok(0)
}

fn status(tool: &Tool, ctx: &ToolContext, recorded: bool) -> String {
    match inst::installed(tool, ctx) {
        Some(true) => "installed".into(),
        Some(false) if recorded => "installed, since changed".into(),
        Some(false) => "not installed".into(),
        None if (tool.path)(ctx).exists() => "unreadable".into(),
        None => "no config file".into(),
    }
}
