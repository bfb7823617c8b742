//! `fcm models`: the catalog as a table or JSON, with each model's key status.

use anyhow::Result;
use argh::FromArgs;
use serde_json::json;

use crate::catalog::{tier_rank, TIERS};
use crate::cmd::{require_provider, usage, Setup};
use crate::table;

#[derive(FromArgs)]
#[argh(subcommand, name = "models")]
/// List the catalog's models and whether their keys are set.
pub(crate) struct ModelsArgs {
    /// only this provider (e.g. groq)
    #[argh(option)]
    pub(crate) provider: Option<String>,
    /// only this tier (S+, S, A+, A, A-, B+, B, C)
    #[argh(option)]
    pub(crate) tier: Option<String>,
    /// print JSON instead of a table
    #[argh(switch)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: ModelsArgs) -> Result<i32> {
    let setup = Setup::load()?;
    if let Some(p) = &args.provider {
        require_provider(&setup.catalog, p)?;
    }
    if let Some(t) = &args.tier {
        if !TIERS.contains(&t.as_str()) {
            return usage(format!(
                "unknown tier {t:?}; valid tiers: {}",
                TIERS.join(", ")
            ));
        }
    }
    let keys = setup.keys();
    let mut rows: Vec<_> = setup
        .catalog
        .models()
        .filter(|m| args.provider.as_deref().is_none_or(|p| m.provider.id == p))
        .filter(|m| args.tier.as_deref().is_none_or(|t| m.model.tier == t))
        .collect();
    rows.sort_by_key(|m| {
        (
            tier_rank(&m.model.tier),
            std::cmp::Reverse((m.model.swe_bench.unwrap_or(-1.0) * 10.0) as i64),
        )
    });
    if args.json {
        let out: Vec<_> = rows
            .iter()
            .map(|m| {
                let (status, _) = keys.lookup(m.provider);
                json!({
                    "model": m.key(), "provider": m.provider.id, "label": m.model.label,
                    "tier": m.model.tier, "sweBench": m.model.swe_bench, "context": m.model.context,
                    "capabilities": m.model.capabilities, "keyStatus": status.code(),
                    "custom": m.provider.custom,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    let mut t = table::new(&[
        "Provider", "Model", "Label", "Tier", "SWE %", "Context", "Key",
    ]);
    for m in &rows {
        let (status, _) = keys.lookup(m.provider);
        let provider = if m.provider.custom {
            format!("{} (custom)", m.provider.id)
        } else {
            m.provider.id.clone()
        };
        t.add_row(vec![
            provider,
            m.key(),
            m.model.label.clone(),
            m.model.tier.clone(),
            m.model.swe_bench.map_or("-".into(), |s| format!("{s:.1}")),
            table::tokens(m.model.context),
            match keys.keys(m.provider).len() {
                n if n > 1 => format!("{} ({n} keys)", status.describe()),
                _ => status.describe(),
            },
        ]);
    }
    println!("{t}");
    let ready = rows
        .iter()
        .filter(|m| keys.lookup(m.provider).0.usable())
        .count();
    println!(
        "{} models, {ready} usable with the keys set now",
        rows.len()
    );
    Ok(0)
}
