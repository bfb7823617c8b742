//! `fcm sets`: the user's model sets in config.json, edited in place (other settings kept).

use anyhow::Result;
use argh::FromArgs;
use serde_json::json;

use crate::cmd::{edit_config, usage, Setup};
use crate::table;

#[derive(FromArgs)]
#[argh(subcommand, name = "sets")]
/// List model sets (your own order of models), or add, remove or choose one.
pub(crate) struct SetsArgs {
    #[argh(subcommand)]
    pub(crate) action: Option<SetsAction>,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub(crate) enum SetsAction {
    Add(SetsAdd),
    Rm(SetsRm),
    Use(SetsUse),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "add")]
/// Add (or replace) a set: `fcm sets add NAME provider/model...`; use it as model `fcm:NAME`.
pub(crate) struct SetsAdd {
    /// the set's name (letters, digits, '-', '_', '.')
    #[argh(positional)]
    pub(crate) name: String,
    /// the models in order (provider/modelId)
    #[argh(positional)]
    pub(crate) models: Vec<String>,
    /// fallback (in order, next on failure; default) or round-robin (rotate the first)
    #[argh(option, default = "String::from(\"fallback\")")]
    pub(crate) strategy: String,
    /// round-robin: requests in a row on one model before moving on (default 1)
    #[argh(option, default = "1")]
    pub(crate) sticky: u32,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "rm")]
/// Remove a set.
pub(crate) struct SetsRm {
    /// the set's name
    #[argh(positional)]
    pub(crate) name: String,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "use")]
/// Make a set the one model `fcm` routes with (`none` for all models by ranking).
pub(crate) struct SetsUse {
    /// the set's name, or none
    #[argh(positional)]
    pub(crate) name: String,
}

pub(crate) fn run(args: SetsArgs) -> Result<i32> {
    let setup = Setup::load()?;
    match args.action {
        None => list(&setup),
        Some(SetsAction::Add(a)) => {
            if !crate::sets::valid_name(&a.name) || a.name == "fcm" || a.name == "none" {
                return usage(format!("set name {:?}: use letters, digits, '-', '_' or '.' (never '/'), and not \"fcm\" or \"none\"", a.name));
            }
            if !crate::sets::STRATEGIES.contains(&a.strategy.as_str()) {
                return usage(format!(
                    "--strategy must be fallback or round-robin, not {:?}",
                    a.strategy
                ));
            }
            if a.sticky == 0 {
                return usage("--sticky must be at least 1");
            }
            if a.models.is_empty() {
                return usage(
                    "name the set's models in order: `fcm sets add NAME provider/modelId...`",
                );
            }
            if let Some(unknown) = a.models.iter().find(|m| setup.catalog.find(m).is_none()) {
                return usage(format!(
                    "unknown model {unknown:?}; `fcm models` lists them as provider/modelId"
                ));
            }
            edit_config(|doc| {
                doc.set(
                    &["router", "sets", &a.name],
                    &json!({"strategy": a.strategy, "sticky": a.sticky, "models": a.models}),
                )?;
                Ok(())
            })?;
            println!("Set {:?} saved: {} ({}). Use it as model \"fcm:{}\", or make it the default with `fcm sets use {}`.", a.name, a.models.join(" -> "), a.strategy, a.name, a.name);
            Ok(0)
        }
        Some(SetsAction::Rm(a)) => {
            if !setup.config.router.sets.contains_key(&a.name) {
                return usage(format!("no set named {:?}; `fcm sets` lists them", a.name));
            }
            let active = setup.config.router.active_set.as_deref() == Some(a.name.as_str());
            edit_config(|doc| {
                doc.remove(&["router", "sets", &a.name]);
                if active {
                    doc.remove(&["router", "activeSet"]);
                }
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
            Ok(0)
        }
        Some(SetsAction::Use(a)) if a.name == "none" => {
            edit_config(|doc| {
                doc.remove(&["router", "activeSet"]);
                Ok(())
            })?;
            println!("Model \"fcm\" routes over all models by ranking.");
            Ok(0)
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
            Ok(0)
        }
    }
}

fn list(setup: &Setup) -> Result<i32> {
    let sets = &setup.config.router.sets;
    if sets.is_empty() {
        println!("No sets yet. Add one with `fcm sets add NAME provider/modelId...`; use it as model \"fcm:NAME\".");
        return Ok(0);
    }
    let keys = setup.keys();
    let mut t = table::new(&["Set", "Strategy", "Sticky", "Models", "Default"]);
    for (name, set) in sets {
        let models: Vec<String> = set
            .models
            .iter()
            .map(|m| match setup.catalog.find(m) {
                None => format!("{m} (stale)"),
                Some(r) if !keys.lookup(r.provider).0.usable() => format!("{m} (no key)"),
                Some(_) => m.clone(),
            })
            .collect();
        let active = setup.config.router.active_set.as_deref() == Some(name.as_str());
        t.add_row(vec![
            name.clone(),
            set.strategy.clone(),
            set.sticky.to_string(),
            models.join("\n"),
            if active { "yes".into() } else { String::new() },
        ]);
    }
    println!("{t}");
    Ok(0)
}
