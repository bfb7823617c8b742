//! `fcm demo`: a first run without keys or network. Starts the simulated provider on
//! loopback and benches it, so the table shows what the content gate catches; then runs
//! `fcm serve` in front of it (in a temporary `FCM_HOME`, removed afterwards) and sends one
//! request whose first model answers empty, so the client sees the failover it never saw.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};
use serde_json::json;

use crate::commands::bench::{execute, print_table, ProbePlan};
use crate::commands::exit::ExitCode;
use crate::commands::usage;
use crate::fake_provider::{Behavior, FakeProvider};
use crate::providers::catalog::{Catalog, KeySource};

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
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

pub(crate) fn run(args: DemoArgs) -> Result<ExitCode> {
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
        live: false,
        policy: crate::routing::rank::Policy::of(&Default::default()),
        interruptible: false,
    };
    // The simulated provider takes no key: there is no secret to keep out of the output.
    let secrets = Default::default();
    // The simulated provider's spending is not the user's: an in-memory ledger, not saved.
    let ledger = crate::state::ledger::Ledger::new(Default::default(), crate::time::now_ms(), 1);
    let report = execute(&all, &keys, &plan, &secrets, &ledger)?;
    let routed = route_once(&fake.base_url());
    if args.json {
        let mut doc = serde_json::to_value(&report)?;
        doc["router"] = match &routed {
            Ok(r) => json!({"answer": r.answer, "decision": r.decision, "attempts": r.attempts,
                            "breakers": r.breakers}),
            Err(e) => json!({"error": format!("{e:#}")}),
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::Ok);
    }
    print_table(&report, &secrets);
    println!();
    println!("What happened: every model answered HTTP 200 or 429, yet only two are usable.");
    println!("The content gate failed `empty-choices` (choices: []) and `stream-error` (an error");
    println!("frame inside a 200 stream); `rate-limited` was paused after its 429, not hammered.");
    println!();
    match routed {
        Ok(r) => {
            println!(
                "Now the router: `fcm serve` on {} in front of the same provider,",
                r.address
            );
            println!("and one chat request with model \"fcm\". The client got:");
            println!("  {}", r.answer);
            println!("  x-fcm-v2-attempts: {}", r.attempts);
            println!("  x-fcm-v2-decision: {}", r.decision);
            println!("fcm tried `empty-choices` first (best tier), held its empty 200 back, and");
            println!("answered from `healthy-fast`. The breakers afterwards (`fcm breakers`):");
            for b in &r.breakers {
                println!(
                    "  {}  {}  {} failure(s), last {}",
                    b["model"].as_str().unwrap_or(""),
                    b["state"].as_str().unwrap_or(""),
                    b["consecutiveFailures"],
                    b["lastFailureKind"].as_str().unwrap_or("-")
                );
            }
        }
        Err(e) => println!("(The router part could not run: {e:#})"),
    }
    println!();
    println!("Next: set a provider key (`fcm keys set PROVIDER`), run `fcm bench`, then");
    println!("`fcm serve --detach` and `fcm install <tool>`.");
    Ok(ExitCode::Ok)
}

/// What the router did with the demo's one request.
struct Routed {
    address: String,
    answer: String,
    attempts: String,
    decision: String,
    breakers: Vec<serde_json::Value>,
}

/// Runs `fcm serve` (this binary) on a free loopback port in a temporary `FCM_HOME`, with
/// a catalog that ranks the empty-answer model first, sends one chat request, reads the
/// decision and the breakers, stops it, and removes the directory.
fn route_once(base_url: &str) -> Result<Routed> {
    let dir = std::env::temp_dir().join(format!(
        "fcm-demo-{}-{}",
        std::process::id(),
        crate::time::now_ms()
    ));
    let result = route_in(&dir, base_url);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn route_in(dir: &std::path::Path, base_url: &str) -> Result<Routed> {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).context("cannot make a temporary directory")?;
    let catalog = dir.join("catalog.json");
    let tier = |id: &str| match id {
        "empty-choices" => "S",
        "healthy-fast" => "A",
        _ => "B",
    };
    let doc = json!({"version": 1, "providers": [{
        "id": "demo", "name": "Simulated provider", "baseUrl": base_url, "keyRequired": false,
        "models": models().iter().map(|(id, label, _)| json!({"id": id, "label": label, "tier": tier(id), "context": 131072})).collect::<Vec<_>>()
    }]});
    std::fs::write(&catalog, doc.to_string())?;
    let exe = std::env::current_exe().context("cannot find the fcm binary")?;
    let mut child = std::process::Command::new(exe)
        .args(["serve", "--port", "0", "--quiet"])
        .env("FCM_HOME", &home)
        .env("FCM_CATALOG", &catalog)
        .env_remove("FCM_TOKEN")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("cannot start fcm serve")?;
    let outcome = ask(&home);
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

/// Waits for the demo server's address, then asks it once.
fn ask(home: &std::path::Path) -> Result<Routed> {
    let started = std::time::Instant::now();
    let base = loop {
        if let Some(info) = crate::state::serve_info::read_serve_info(&home.join("serve.json")) {
            break info.base_url();
        }
        if started.elapsed() > Duration::from_secs(5) {
            anyhow::bail!("fcm serve did not start within 5 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .proxy(None)
        .build()
        .new_agent();
    let body = json!({"model": "fcm", "messages": [{"role": "user", "content": "Say hello."}]});
    let mut r = agent
        .post(&format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .send(body.to_string().as_bytes())?;
    let header = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (attempts, decision) = (header("x-fcm-v2-attempts"), header("x-fcm-v2-decision"));
    let answer: serde_json::Value = serde_json::from_str(&r.body_mut().read_to_string()?)?;
    let text = answer
        .pointer("/choices/0/message/content")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_string();
    let breakers: Vec<serde_json::Value> = serde_json::from_str(
        &agent
            .get(&format!("{base}/fcm/admin/breakers"))
            .call()?
            .body_mut()
            .read_to_string()?,
    )?;
    Ok(Routed {
        address: format!("{base}/v1"),
        answer: format!("{text:?}"),
        attempts,
        decision,
        breakers,
    })
}
