//! `fcm keys`: set, list and remove provider keys in `config.json` without opening it. A
//! key is read from stdin or a prompt that does not echo, never from the command line
//! (which other users can see), and never printed back.

use std::io::{IsTerminal, Read};
use std::time::Duration;

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};
use serde_json::Value;

use crate::commands::exit::ExitCode;
use crate::commands::{edit_config, require_provider, usage, Setup};
use crate::providers::catalog::{KeyStatus, Provider};
use crate::table;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "keys")]
/// Set, list or remove provider keys (config.json apiKeys); a key never on the command line.
pub(crate) struct KeysArgs {
    #[argh(subcommand)]
    pub(crate) action: KeysAction,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(subcommand)]
pub(crate) enum KeysAction {
    Set(SetArgs),
    List(ListArgs),
    Rm(RmArgs),
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "set")]
/// Store a provider's key (read from stdin, or a prompt that does not echo), then check it.
pub(crate) struct SetArgs {
    /// the provider (`fcm keys list` names them)
    #[argh(positional)]
    pub(crate) provider: String,
    /// keep the provider's other keys and add this one to them
    #[argh(switch)]
    pub(crate) add: bool,
    /// store it without checking it with a completion
    #[argh(switch)]
    pub(crate) no_check: bool,
    /// seconds the check may take (default 30)
    #[argh(option, default = "30")]
    pub(crate) timeout: u64,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "list")]
/// Which providers have keys, where each comes from (never a key itself), signup for the rest.
pub(crate) struct ListArgs {
    /// print JSON instead of a table
    #[argh(switch)]
    pub(crate) json: bool,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "rm")]
/// Remove a provider's keys from config.json.
pub(crate) struct RmArgs {
    #[argh(positional)]
    pub(crate) provider: String,
}

pub(crate) fn run(args: KeysArgs) -> Result<ExitCode> {
    match args.action {
        KeysAction::Set(a) => set(a),
        KeysAction::List(a) => list(a),
        KeysAction::Rm(a) => rm(a),
    }
}

/// Longest key accepted (keys are under 200 characters; more is a pasted file).
const MAX_KEY: usize = 4096;

/// The key, from a prompt that does not echo when stdin is a terminal, else from stdin.
fn read_key(provider: &Provider) -> Result<String> {
    let text = if std::io::stdin().is_terminal() {
        let hint = match provider.signup_url.as_str() {
            "" => String::new(),
            url => format!(" (from {url})"),
        };
        rpassword::prompt_password(format!("{} key{hint}: ", provider.id))
            .context("cannot read the key from the terminal")?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .take(MAX_KEY as u64 + 1)
            .read_to_string(&mut text)
            .context("cannot read the key from stdin")?;
        text
    };
    let key = text.trim().to_string();
    if key.is_empty() {
        return usage(
            "no key given (type it at the prompt, or pipe it in: `fcm keys set groq < key.txt`)",
        );
    }
    if key.len() > MAX_KEY || key.chars().any(char::is_whitespace) {
        return usage("that is not one key (it holds spaces or line breaks, or is very long)");
    }
    Ok(key)
}

fn set(a: SetArgs) -> Result<ExitCode> {
    if a.timeout == 0 || a.timeout > 600 {
        return usage(format!(
            "--timeout must be between 1 and 600 seconds (got {})",
            a.timeout
        ));
    }
    let setup = Setup::load()?;
    let provider = require_provider(&setup.catalog, &a.provider)?.clone();
    let key = read_key(&provider)?;
    let existing: Vec<String> = setup
        .config
        .api_keys
        .get(&provider.id)
        .map(|l| l.iter().map(str::to_string).collect())
        .unwrap_or_default();
    let mut keys = if a.add { existing } else { Vec::new() };
    if !keys.contains(&key) {
        keys.push(key.clone());
    }
    let value = match keys.as_slice() {
        [one] => Value::String(one.clone()),
        many => Value::from(many.to_vec()),
    };
    let path = edit_config(|doc| {
        doc.set(&["apiKeys", &provider.id], &value)?;
        Ok(())
    })?;
    let count = keys.len();
    println!(
        "Saved {} key{} for {} in {} (mode 0600).",
        count,
        if count == 1 { "" } else { "s" },
        provider.id,
        path.display()
    );
    let setup = Setup::load()?;
    let found = setup.keys().keys(
        setup
            .catalog
            .provider(&provider.id)
            .expect("in the catalog"),
    );
    let me = found.iter().find(|k| k.value == key);
    if let Some(env) = found.iter().find(|k| matches!(k.origin, KeyStatus::Env(_))) {
        if let KeyStatus::Env(var) = &env.origin {
            println!(
                "Note: {var} is set in your environment and is used first; this key is {}.",
                me.map_or("?", |k| k.label.as_str())
            );
        }
    }
    if a.no_check {
        return Ok(ExitCode::Ok);
    }
    let models = crate::commands::check::choose(&setup, &provider.id)?;
    println!(
        "Checking it with one completion (as `fcm check {}` would; the next of its models when one fails):",
        provider.id
    );
    crate::commands::check::check(
        &setup,
        &models,
        Some(&key),
        Duration::from_secs(a.timeout),
        false,
    )
}

fn list(a: ListArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    let keys = setup.keys();
    let mut rows = Vec::new();
    for p in &setup.catalog.providers {
        let found = keys.keys(p);
        let (state, sources) = if !found.is_empty() {
            let sources: Vec<String> = found
                .iter()
                .map(|k| match &k.origin {
                    KeyStatus::Env(var) => format!("{} ({var})", k.label),
                    _ => format!("{} (config.json)", k.label),
                })
                .collect();
            ("set", sources)
        } else if p.key_required {
            ("missing", Vec::new())
        } else {
            ("not_needed", Vec::new())
        };
        rows.push((p, state, sources));
    }
    if a.json {
        let out: Vec<Value> = rows
            .iter()
            .map(|(p, state, sources)| {
                serde_json::json!({"provider": p.id, "status": state, "keys": sources,
                    "variables": p.api_key_env, "signupUrl": p.signup_url})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::Ok);
    }
    let mut t = table::new(&["Provider", "Key", "From", "Sign up"]);
    for (p, state, sources) in &rows {
        let from = match *state {
            "set" => sources.join(", "),
            "missing" if p.api_key_env.is_empty() => format!("`fcm keys set {}`", p.id),
            "missing" => format!("`fcm keys set {}` or {}", p.id, p.api_key_env.join(" / ")),
            _ => "-".to_string(),
        };
        let signup = if *state == "missing" {
            p.signup_url.clone()
        } else {
            String::new()
        };
        let state = match *state {
            "not_needed" => "not needed",
            s => s,
        };
        t.add_row(vec![p.id.clone(), state.to_string(), from, signup]);
    }
    println!("{t}");
    let set = rows.iter().filter(|(_, s, _)| *s == "set").count();
    println!("{set} of {} providers have a key.", rows.len());
    Ok(ExitCode::Ok)
}

fn rm(a: RmArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    let provider = require_provider(&setup.catalog, &a.provider)?;
    if !setup.config.api_keys.contains_key(&provider.id) {
        println!(
            "config.json holds no key for {}; nothing to remove.",
            provider.id
        );
    } else {
        let path = edit_config(|doc| {
            doc.remove_pruned(&["apiKeys", &provider.id]);
            Ok(())
        })?;
        println!("Removed {}'s keys from {}.", provider.id, path.display());
    }
    let still: Vec<String> = setup
        .keys()
        .keys(provider)
        .into_iter()
        .filter_map(|k| match k.origin {
            KeyStatus::Env(var) => Some(var),
            _ => None,
        })
        .collect();
    if !still.is_empty() {
        println!(
            "{} still set in your environment: {} keeps using it until you unset it.",
            still.join(", "),
            provider.id
        );
    }
    Ok(ExitCode::Ok)
}
