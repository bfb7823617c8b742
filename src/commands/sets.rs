//! `fcm sets`: the user's model sets in config.json, edited in place (other settings kept).

use anyhow::Result;
use argh::{ArgsInfo, FromArgs};
use serde_json::json;

use crate::commands::exit::ExitCode;
use crate::commands::{edit_config, usage, Setup};
use crate::state::sets::Strategy;
use crate::table;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "sets")]
/// List model sets (your own order of models), or add, remove or choose one.
pub(crate) struct SetsArgs {
    /// list the sets as JSON instead of a table
    #[argh(switch)]
    pub(crate) json: bool,
    #[argh(subcommand)]
    pub(crate) action: Option<SetsAction>,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(subcommand)]
pub(crate) enum SetsAction {
    Add(SetsAdd),
    Rm(SetsRm),
    Use(SetsUse),
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "add")]
/// Add (or replace) a set: `fcm sets add NAME provider/model...`; use it as model `fcm:NAME`.
/// A race set sends each request to its first --width models at once; a fusion set asks its
/// models (the panel) and has --judge merge their answers.
pub(crate) struct SetsAdd {
    /// the set's name (letters, digits, '-', '_', '.')
    #[argh(positional)]
    pub(crate) name: String,
    /// the models in order (provider/modelId); for fusion, the panel
    #[argh(positional)]
    pub(crate) models: Vec<String>,
    /// fallback (in order, next on failure; default), round-robin (rotate the first), race
    /// (first --width models at once, first good answer wins) or fusion (panel + --judge)
    #[argh(option, default = "Strategy::Fallback", from_str_fn(strategy))]
    pub(crate) strategy: Strategy,
    /// round-robin: requests in a row on one model before moving on (default 1)
    #[argh(option, default = "1")]
    pub(crate) sticky: u32,
    /// race: how many models get each request at once (2 to 8, default 2)
    #[argh(option)]
    pub(crate) width: Option<u32>,
    /// fusion: the model that merges the panel's answers (provider/modelId)
    #[argh(option)]
    pub(crate) judge: Option<String>,
    /// tool-result compression for this set's requests: off, lossless or aggressive
    /// (default: router.compress, lossless unless changed)
    #[argh(option, from_str_fn(compress_mode))]
    pub(crate) compress: Option<crate::compress::Mode>,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "rm")]
/// Remove a set.
pub(crate) struct SetsRm {
    /// the set's name
    #[argh(positional)]
    pub(crate) name: String,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "use")]
/// Make a set the one model `fcm` routes with (`none` for all models by ranking).
pub(crate) struct SetsUse {
    /// the set's name, or none
    #[argh(positional)]
    pub(crate) name: String,
}

pub(crate) fn run(args: SetsArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    match args.action {
        None => list(&setup, args.json),
        Some(_) if args.json => {
            usage("--json lists the sets: `fcm sets --json`, without a subcommand")
        }
        Some(SetsAction::Add(a)) => {
            if !crate::state::sets::valid_name(&a.name) || a.name == "fcm" || a.name == "none" {
                return usage(format!("set name {:?}: use letters, digits, '-', '_' or '.' (never '/'), and not \"fcm\" or \"none\"", a.name));
            }
            let set = match new_set(&setup, &a) {
                Ok(set) => set,
                Err(message) => return usage(message),
            };
            edit_config(|doc| {
                doc.set(&["router", "sets", &a.name], &set)?;
                Ok(())
            })?;
            let how = match a.strategy {
                Strategy::Race => format!(
                    "race, {} at once",
                    a.width.unwrap_or(crate::state::sets::DEFAULT_WIDTH)
                ),
                Strategy::Fusion => format!(
                    "fusion, judged by {}",
                    a.judge.as_deref().unwrap_or_default()
                ),
                other => other.to_string(),
            };
            let models = if a.strategy == Strategy::Fusion {
                format!("panel {}", a.models.join(", "))
            } else {
                a.models.join(" -> ")
            };
            println!("Set {:?} saved: {models} ({how}). Use it as model \"fcm:{}\", or make it the default with `fcm sets use {}`.", a.name, a.name, a.name);
            Ok(ExitCode::Ok)
        }
        Some(SetsAction::Rm(a)) => {
            if !setup.config.router.sets.contains_key(&a.name) {
                return usage(format!("no set named {:?}; `fcm sets` lists them", a.name));
            }
            let active = setup.config.router.active_set.as_deref() == Some(a.name.as_str());
            edit_config(|doc| {
                if active {
                    doc.remove(&["router", "activeSet"]);
                }
                doc.remove_pruned(&["router", "sets", &a.name]);
                Ok(())
            })?;
            println!(
                "Set {:?} removed{}.",
                a.name,
                if active {
                    "; model \"fcm\" routes over all models again"
                } else {
                    ""
                }
            );
            Ok(ExitCode::Ok)
        }
        Some(SetsAction::Use(a)) if a.name == "none" => {
            edit_config(|doc| {
                doc.remove_pruned(&["router", "activeSet"]);
                Ok(())
            })?;
            println!("Model \"fcm\" routes over all models by ranking.");
            Ok(ExitCode::Ok)
        }
        Some(SetsAction::Use(a)) => {
            if !setup.config.router.sets.contains_key(&a.name) {
                return usage(format!("no set named {:?}; `fcm sets` lists them", a.name));
            }
            edit_config(|doc| {
                doc.set(&["router", "activeSet"], &json!(a.name))?;
                Ok(())
            })?;
            println!(
                "Model \"fcm\" now routes with set {:?} first (restart a running `fcm serve`).",
                a.name
            );
            Ok(ExitCode::Ok)
        }
    }
}

/// The set `fcm sets add` writes, or what is wrong with the command line.
fn new_set(setup: &Setup, a: &SetsAdd) -> std::result::Result<serde_json::Value, String> {
    if a.sticky == 0 {
        return Err("--sticky must be at least 1".into());
    }
    if a.models.is_empty() {
        return Err(
            "name the set's models in order: `fcm sets add NAME provider/modelId...`".into(),
        );
    }
    let unknown = |m: &String| setup.catalog.find(m).is_none();
    if let Some(m) = a.models.iter().chain(&a.judge).find(|m| unknown(m)) {
        return Err(format!(
            "unknown model {m:?}; `fcm models` lists them as provider/modelId"
        ));
    }
    if a.width.is_some() && a.strategy != Strategy::Race {
        return Err("--width is for a race set (--strategy race)".into());
    }
    if a.judge.is_some() && a.strategy != Strategy::Fusion {
        return Err("--judge is for a fusion set (--strategy fusion)".into());
    }
    let mut set = match a.strategy {
        Strategy::Race => {
            let width = a.width.unwrap_or(crate::state::sets::DEFAULT_WIDTH);
            if !(2..=crate::state::sets::MAX_WIDTH).contains(&width) {
                return Err(format!(
                    "--width must be 2 to {}: each racer spends a request of quota",
                    crate::state::sets::MAX_WIDTH
                ));
            }
            json!({"strategy": "race", "width": width, "models": a.models})
        }
        Strategy::Fusion => {
            let Some(judge) = &a.judge else {
                return Err("a fusion set needs --judge provider/modelId, the model that merges the panel's answers".into());
            };
            json!({"strategy": "fusion", "panel": a.models, "judge": judge})
        }
        Strategy::Fallback | Strategy::RoundRobin => {
            json!({"strategy": a.strategy, "sticky": a.sticky, "models": a.models})
        }
    };
    if let Some(mode) = a.compress {
        set["compress"] = json!(mode);
    }
    Ok(set)
}

/// `--compress`'s value, named in the error when it is not one of the three.
fn compress_mode(value: &str) -> std::result::Result<crate::compress::Mode, String> {
    crate::compress::Mode::parse(value)
        .ok_or_else(|| format!("--compress must be off, lossless or aggressive, not {value:?}"))
}

/// `--strategy`'s value, named in the error when it is not one of the four.
fn strategy(value: &str) -> std::result::Result<Strategy, String> {
    Strategy::parse(value).ok_or_else(|| {
        format!("--strategy must be fallback, round-robin, race or fusion, not {value:?}")
    })
}

/// A set member's standing: routable, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Member {
    Ok,
    /// Its provider has no key.
    NoKey,
    /// Not in the catalog (any more).
    Stale,
}

fn member(setup: &Setup, keys: &crate::providers::catalog::KeySource<'_>, m: &str) -> Member {
    match setup.catalog.find(m) {
        None => Member::Stale,
        Some(r) if !keys.lookup(r.provider).0.usable() => Member::NoKey,
        Some(_) => Member::Ok,
    }
}

/// `fcm sets --json`: each set as config.json holds it, with its name, whether it is the
/// active one, and each member's status (`ok`, `no_key`, `stale`: not in the catalog).
fn list_json(setup: &Setup) -> Result<ExitCode> {
    let keys = setup.keys();
    let mut out = Vec::new();
    for (name, set) in &setup.config.router.sets {
        let mut entry = serde_json::Map::new();
        entry.insert("name".into(), json!(name));
        if let serde_json::Value::Object(fields) = serde_json::to_value(set)? {
            entry.extend(fields);
        }
        let active = setup.config.router.active_set.as_deref() == Some(name.as_str());
        entry.insert("active".into(), json!(active));
        let members: Vec<serde_json::Value> = set
            .members()
            .iter()
            .map(|m| json!({"model": m, "status": member(setup, &keys, m)}))
            .collect();
        entry.insert("members".into(), json!(members));
        out.push(serde_json::Value::Object(entry));
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::Ok)
}

fn list(setup: &Setup, json: bool) -> Result<ExitCode> {
    if json {
        return list_json(setup);
    }
    let sets = &setup.config.router.sets;
    if sets.is_empty() {
        println!("No sets yet. Add one with `fcm sets add NAME provider/modelId...`; use it as model \"fcm:NAME\".");
        return Ok(ExitCode::Ok);
    }
    let keys = setup.keys();
    let mut t = table::new(&["Set", "Strategy", "Options", "Models", "Default"]);
    for (name, set) in sets {
        let options = match set.strategy {
            Strategy::RoundRobin => format!("sticky {}", set.sticky),
            Strategy::Race => format!("width {}", set.width),
            Strategy::Fusion => format!("judge {}", set.judge.as_deref().unwrap_or_default()),
            Strategy::Fallback => String::new(),
        };
        let options = match (set.compress, options.is_empty()) {
            (None, _) => options,
            (Some(m), true) => format!("compress {m}"),
            (Some(m), false) => format!("{options}, compress {m}"),
        };
        let models: Vec<String> = set
            .members()
            .iter()
            .map(|m| match member(setup, &keys, m) {
                Member::Stale => format!("{m} (stale)"),
                Member::NoKey => format!("{m} (no key)"),
                Member::Ok => m.clone(),
            })
            .collect();
        let active = setup.config.router.active_set.as_deref() == Some(name.as_str());
        t.add_row(vec![
            name.clone(),
            set.strategy.to_string(),
            options,
            models.join("\n"),
            if active { "yes".into() } else { String::new() },
        ]);
    }
    println!("{t}");
    Ok(ExitCode::Ok)
}
