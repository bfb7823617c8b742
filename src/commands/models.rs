//! `fcm models`: the catalog as a table (with its date) or JSON, with each model's key
//! status; `--refresh` asks the providers what they serve now.

use anyhow::Result;
use argh::{ArgsInfo, FromArgs};
use serde_json::{json, Value};

use crate::commands::exit::ExitCode;
use crate::providers::overlay::{Listing, Overlay};

use crate::commands::{require_provider, usage, Setup};
use crate::providers::catalog::{tier_rank, Age, Catalog, TIERS};
use crate::table;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
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
    /// ask each provider with a key which models it serves now, and keep the differences
    /// ($FCM_HOME/catalog-overlay.json): retired models leave rotation, new ones join
    #[argh(switch)]
    pub(crate) refresh: bool,
}

/// How long one provider's model list may take.
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// `fcm models --refresh`: `GET /models` at each provider with a key (or none needed),
/// the differences printed and saved for every later command to lay over the catalog.
fn refresh(args: &ModelsArgs) -> Result<ExitCode> {
    // The catalog without the last overlay: differences are always from the catalog itself.
    let setup = Setup::load_without_overlay()?;
    if let Some(p) = &args.provider {
        require_provider(&setup.catalog, p)?;
    }
    let catalog = &setup.catalog;
    let keys = setup.keys();
    let secrets = setup.secrets(None);
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(LIST_TIMEOUT))
        .build()
        .new_agent();
    let path = crate::state::files::state_file("catalog-overlay.json")?;
    let mut overlay: Overlay = crate::state::files::load_json(&path)?;
    overlay.version = 1;
    let now = crate::time::rfc3339(crate::time::now_ms());
    let mut report = Vec::new();
    let (mut asked, mut answered) = (0, 0);
    for p in &catalog.providers {
        if args.provider.as_deref().is_some_and(|id| id != p.id) {
            continue;
        }
        let (status, key) = keys.lookup(p);
        if !status.usable() {
            continue;
        }
        asked += 1;
        let listed = list_models(&agent, p, key.as_deref());
        let line = match listed {
            Ok(listing) => {
                answered += 1;
                let drift = listing.drift(p, &now);
                let line = json!({"provider": p.id, "catalog": p.models.len(), "served": listing.served.len(),
                    "retired": drift.retired, "added": drift.added.iter().map(|l| &l.id).collect::<Vec<_>>()});
                overlay.providers.insert(p.id.clone(), drift);
                line
            }
            Err(why) => json!({"provider": p.id, "error": why}),
        };
        report.push(line);
    }
    if asked == 0 {
        return usage("no provider with a key to ask (`fcm keys list`)");
    }
    crate::state::files::write_json_atomic(&path, &overlay)?;
    let retired: usize = overlay.providers.values().map(|d| d.retired.len()).sum();
    let added: usize = overlay.providers.values().map(|d| d.added.len()).sum();
    if args.json {
        let doc =
            json!({"refreshedAt": now, "providers": report, "overlay": path.display().to_string()});
        println!("{}", secrets.redact(&serde_json::to_string_pretty(&doc)?));
    } else {
        for r in &report {
            let line = match r.get("error") {
                Some(e) => format!(
                    "{}: cannot list its models: {}",
                    r["provider"].as_str().unwrap_or(""),
                    e.as_str().unwrap_or("")
                ),
                None => {
                    let names = |k: &str| {
                        let v: Vec<&str> = r[k]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect();
                        if v.is_empty() {
                            "none".to_string()
                        } else {
                            v.join(", ")
                        }
                    };
                    format!(
                        "{}: {} in the catalog, {} served; retired: {}; new: {}",
                        r["provider"].as_str().unwrap_or(""),
                        r["catalog"],
                        r["served"],
                        names("retired"),
                        names("added")
                    )
                }
            };
            println!("{}", secrets.redact(&line));
        }
        println!(
            "Saved {}: {retired} models leave rotation, {added} join it with tier ? until `fcm bench` measures them.",
            path.display()
        );
    }
    Ok(if answered > 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failure
    })
}

/// One provider's `GET /models`, with its key and headers; why not, in one line.
fn list_models(
    agent: &ureq::Agent,
    p: &crate::providers::catalog::Provider,
    key: Option<&str>,
) -> Result<Listing, String> {
    let url = p
        .models_url(&crate::providers::catalog::process_env)
        .map_err(|e| e.to_string())?;
    let mut req = agent.get(&url).header("accept", "application/json");
    for (k, v) in &p.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    if let Some(k) = key {
        req = req.header("authorization", format!("Bearer {k}"));
    }
    let mut response = req.call().map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .with_config()
        .limit(32 * 1024 * 1024)
        .read_to_string()
        .map_err(|e| e.to_string())?;
    if !(200..300).contains(&status) {
        return Err(format!(
            "HTTP {status}: {}",
            crate::answers::failure::one_line(&text)
        ));
    }
    let body: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    Listing::parse(&body).ok_or_else(|| "no model list in the answer".to_string())
}

/// `Catalog of 2026-10-10 (54 days old): 227 models across 22 providers`: how old the
/// catalog in force is, and how large (custom providers and the last refresh included).
fn catalog_line(catalog: &Catalog, now_ms: u64) -> String {
    format!(
        "Catalog {}: {}",
        Age::of(catalog.updated, now_ms).describe(),
        catalog.size()
    )
}

pub(crate) fn run(args: ModelsArgs) -> Result<ExitCode> {
    if args.refresh {
        return refresh(&args);
    }
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
        return Ok(ExitCode::Ok);
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
    println!("{}", catalog_line(&setup.catalog, crate::time::now_ms()));
    let ready = rows
        .iter()
        .filter(|m| keys.lookup(m.provider).0.usable())
        .count();
    println!(
        "{} models, {ready} usable with the keys set now",
        rows.len()
    );
    Ok(ExitCode::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_line_gives_date_age_and_size() {
        let day = |d: &str| crate::time::parse_iso_date(d).unwrap() as u64 * crate::time::DAY_MS;
        let catalog = |updated: &str, models: &str| {
            let text = format!(
                r#"{{"version":1,{updated}"providers":[{{"id":"a","baseUrl":"http://x","models":[{models}]}}]}}"#
            );
            Catalog::parse(&text, "t").unwrap()
        };
        let two = r#"{"id":"m","context":1},{"id":"n","context":1}"#;
        let cases = [
            (
                catalog(r#""updated":"2026-10-10","#, two),
                "Catalog of 2026-10-10 (54 days old): 2 models across 1 provider",
            ),
            (
                catalog("", r#"{"id":"m","context":1}"#),
                "Catalog undated: 1 model across 1 provider",
            ),
        ];
        for (c, line) in cases {
            assert_eq!(catalog_line(&c, day("2026-12-03")), line);
        }
    }
}
