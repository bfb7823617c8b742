//! `fcm demo`: a first run without keys or network. Starts the simulated provider on
//! loopback and benches it, so the table shows what the content gate catches.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, Result};
use argh::FromArgs;
use serde_json::json;

use crate::catalog::{Catalog, KeySource};
use crate::cmd::bench::{execute, print_json, print_table, ProbePlan};
use crate::cmd::usage;
use crate::fake_provider::{Behavior, FakeProvider};

#[derive(FromArgs)]
#[argh(subcommand, name = "demo")]
/// Bench a built-in simulated provider on loopback: no keys or network needed.
pub(crate) struct DemoArgs {
    /// pings per model (default 3)
    #[argh(option, default = "3")]
    pub(crate) pings: u32,
    /// print JSON instead of the table
    #[argh(switch)]
    pub(crate) json: bool,
}

/// The simulated models: (id, label, behaviour).
fn models() -> Vec<(&'static str, &'static str, Behavior)> {
    vec![
        ("healthy-fast", "Healthy and fast", Behavior::Ok),
        (
            "slow-thinker",
            "Healthy but slow",
            Behavior::Slow(Duration::from_millis(2200)),
        ),
        (
            "empty-choices",
            "200 OK with choices: []",
            Behavior::EmptyChoices,
        ),
        (
            "stream-error",
            "Stream opens with an error frame",
            Behavior::SseErrorFirst,
        ),
        (
            "rate-limited",
            "429 with Retry-After: 60",
            Behavior::RateLimit(60),
        ),
    ]
}

pub(crate) fn run(args: DemoArgs) -> Result<i32> {
    if args.pings == 0 || args.pings > 10 {
        return usage(format!(
            "--pings must be between 1 and 10 (got {})",
            args.pings
        ));
    }
    let script: HashMap<String, Behavior> = models()
        .into_iter()
        .map(|(id, _, b)| (id.to_string(), b))
        .collect();
    let fake = FakeProvider::start(0, script)
        .context("cannot start the simulated provider on 127.0.0.1")?;
    let doc = json!({"version": 1, "providers": [{
        "id": "demo", "name": "Simulated provider", "baseUrl": fake.base_url(), "keyRequired": false,
        "models": models().iter().map(|(id, label, _)| json!({"id": id, "label": label, "tier": "A", "context": 131072})).collect::<Vec<_>>()
    }]});
    let catalog: Catalog = Catalog::parse(&doc.to_string(), "demo catalog")?;
    let no_env = |_: &str| None;
    let keys = KeySource {
        env: &no_env,
        config_keys: &Default::default(),
    };
    let all: Vec<_> = catalog.models().collect();
    if !args.json {
        eprintln!(
            "fcm demo: benching {} simulated models on {} (no keys, no network)",
            all.len(),
            fake.base_url()
        );
    }
    let plan = ProbePlan {
        pings: args.pings,
        tools: false,
        timeout: Duration::from_secs(10),
        concurrency: all.len(),
        progress: !args.json && std::io::stderr().is_terminal(),
    };
    // The simulated provider takes no key: there is no secret to keep out of the output.
    let secrets = Default::default();
    // The simulated provider's spending is not the user's: an in-memory ledger, not saved.
    let ledger = crate::ledger::Ledger::new(Default::default(), crate::time::now_ms(), 1);
    let report = execute(&all, &keys, &plan, &secrets, &ledger)?;
    if args.json {
        print_json(&report, &secrets)?;
        return Ok(0);
    }
    print_table(&report, &secrets);
    println!();
    println!("What happened: every model answered HTTP 200 or 429, yet only two are usable.");
    println!("The content gate failed `empty-choices` (choices: []) and `stream-error` (an error");
    println!("frame inside a 200 stream); `rate-limited` was paused after its 429, not hammered.");
    println!("Next: set a provider key (`fcm models` lists them) and run `fcm bench`.");
    Ok(0)
}
