//! Command-line flags (argh), dispatch and exit codes. No logic lives here.

use argh::FromArgs;

use crate::cmd;

/// Exit code for a usage error (bad flag, unknown provider or model).
pub const EXIT_USAGE: i32 = 2;
/// Exit code for a runtime failure.
pub const EXIT_FAILURE: i32 = 1;

/// A mistake in how fcm was called; exits 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for returning a usage error.
pub fn usage<T>(msg: impl Into<String>) -> anyhow::Result<T> {
    Err(UsageError(msg.into()).into())
}

#[derive(FromArgs)]
/// fcm: find, benchmark and route between free coding LLMs.
pub struct Fcm {
    #[argh(subcommand)]
    pub command: Command,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub enum Command {
    Models(ModelsArgs),
    Bench(BenchArgs),
    Check(CheckArgs),
    Demo(DemoArgs),
    Serve(ServeArgs),
    Breakers(BreakersArgs),
    History(HistoryArgs),
    Install(InstallArgs),
    Sets(SetsArgs),
    FakeProvider(FakeProviderArgs),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "models")]
/// List the catalog's models and whether their keys are set.
pub struct ModelsArgs {
    /// only this provider (e.g. groq)
    #[argh(option)]
    pub provider: Option<String>,
    /// only this tier (S+, S, A+, A, A-, B+, B, C)
    #[argh(option)]
    pub tier: Option<String>,
    /// print JSON instead of a table
    #[argh(switch)]
    pub json: bool,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "bench")]
/// Probe models in parallel, measure latency and answer validity, rank them.
pub struct BenchArgs {
    /// providers to probe: all (default) or ID[,ID...]
    #[argh(option, default = "String::from(\"all\")")]
    pub provider: String,
    /// probe only this model (provider/modelId); repeatable
    #[argh(option)]
    pub model: Vec<String>,
    /// pings per model, one after another (default 3)
    #[argh(option, default = "3")]
    pub pings: u32,
    /// seconds one ping may take (default 15)
    #[argh(option, default = "15")]
    pub timeout: u64,
    /// models probed at once (default 32)
    #[argh(option, default = "32")]
    pub concurrency: usize,
    /// print one JSON document instead of the table
    #[argh(switch)]
    pub json: bool,
    /// do not save results to $FCM_HOME/bench.json
    #[argh(switch)]
    pub no_save: bool,
}

#[derive(FromArgs)]
#[argh(
    subcommand,
    name = "check",
    note = "Runs one real completion through the content gate and prints one line.",
    error_code(0, "ok: the model answered with real content"),
    error_code(2, "usage error"),
    error_code(3, "key not set (or a variable the provider URL needs)"),
    error_code(4, "key rejected (HTTP 401/403)"),
    error_code(5, "rate limited or out of quota"),
    error_code(
        6,
        "answer unusable (empty, error payload, invalid JSON, HTML, bad request)"
    ),
    error_code(7, "unreachable, timed out, or provider error")
)]
/// Smoke-check a provider key with one real completion (for CI).
pub struct CheckArgs {
    /// PROVIDER or PROVIDER/MODEL
    #[argh(positional)]
    pub target: String,
    /// seconds to wait for the answer (default 30)
    #[argh(option, default = "30")]
    pub timeout: u64,
    /// print one JSON object instead of a line
    #[argh(switch)]
    pub json: bool,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "demo")]
/// Bench a built-in simulated provider on loopback: no keys or network needed.
pub struct DemoArgs {
    /// pings per model (default 3)
    #[argh(option, default = "3")]
    pub pings: u32,
    /// print JSON instead of the table
    #[argh(switch)]
    pub json: bool,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "serve")]
/// Run the routing proxy (OpenAI-compatible) on 127.0.0.1:19280.
pub struct ServeArgs {
    /// address to listen on (default 127.0.0.1; anything else requires a token)
    #[argh(option, default = "String::from(\"127.0.0.1\")")]
    pub host: String,
    /// port (default: config.json port, else 19280)
    #[argh(option)]
    pub port: Option<u16>,
    /// access token required on every request (also FCM_TOKEN or serve.token in config.json)
    #[argh(option)]
    pub token: Option<String>,
    /// requests handled at once before answering 503 (default 256)
    #[argh(option, default = "256")]
    pub max_in_flight: usize,
    /// no per-request log lines on stderr
    #[argh(switch)]
    pub quiet: bool,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "breakers")]
/// Show per-model breaker state (live from a running server, else from breakers.json).
pub struct BreakersArgs {
    /// print JSON instead of a table
    #[argh(switch)]
    pub json: bool,
    /// reset one model's breaker (provider/modelId) or all of them
    #[argh(option)]
    pub reset: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "history")]
/// Show recent routing decisions (live from a running server, else from history.json).
pub struct HistoryArgs {
    /// how many recent requests (default 20)
    #[argh(option, short = 'n', default = "20")]
    pub n: usize,
    /// print JSON instead of a table
    #[argh(switch)]
    pub json: bool,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "install")]
/// Point a coding tool at `fcm serve` by editing its own config (a backup is kept).
pub struct InstallArgs {
    /// the tool: claude-code, codex, cline, cursor, opencode, crush or aider
    #[argh(positional)]
    pub tool: Option<String>,
    /// model name the tool sends (default fcm: automatic routing; or fcm:provider/modelId)
    #[argh(option, default = "String::from(\"fcm\")")]
    pub model: String,
    /// port of fcm serve (default: config.json port, else 19280)
    #[argh(option)]
    pub port: Option<u16>,
    /// print the change and write nothing
    #[argh(switch)]
    pub dry_run: bool,
    /// remove what fcm added and restore the previous values
    #[argh(switch)]
    pub uninstall: bool,
    /// list the tools, their config files and whether fcm is installed there
    #[argh(switch)]
    pub list: bool,
    /// cursor only: the public HTTPS URL of a tunnel to fcm serve (Cursor calls it from its servers)
    #[argh(option)]
    pub url: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "sets")]
/// List model sets (your own order of models), or add, remove or choose one.
pub struct SetsArgs {
    #[argh(subcommand)]
    pub action: Option<SetsAction>,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub enum SetsAction {
    Add(SetsAdd),
    Rm(SetsRm),
    Use(SetsUse),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "add")]
/// Add (or replace) a set: `fcm sets add NAME provider/model...`; use it as model `fcm:NAME`.
pub struct SetsAdd {
    /// the set's name (letters, digits, '-', '_', '.')
    #[argh(positional)]
    pub name: String,
    /// the models in order (provider/modelId)
    #[argh(positional)]
    pub models: Vec<String>,
    /// fallback (in order, next on failure; default) or round-robin (rotate the first)
    #[argh(option, default = "String::from(\"fallback\")")]
    pub strategy: String,
    /// round-robin: requests in a row on one model before moving on (default 1)
    #[argh(option, default = "1")]
    pub sticky: u32,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "rm")]
/// Remove a set.
pub struct SetsRm {
    /// the set's name
    #[argh(positional)]
    pub name: String,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "use")]
/// Make a set the one model `fcm` routes with (`none` for all models by ranking).
pub struct SetsUse {
    /// the set's name, or none
    #[argh(positional)]
    pub name: String,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "fake-provider")]
/// Run the scripted fake provider on loopback (tests and benchmark scripts).
pub struct FakeProviderArgs {
    /// port on 127.0.0.1 (default 0: any free port, printed on stdout)
    #[argh(option, default = "0")]
    pub port: u16,
    /// keep no log of requests (long benchmark runs)
    #[argh(switch)]
    pub no_record: bool,
}

/// Parses the command line, runs the command, returns the process exit code.
pub fn run() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    let name = args
        .first()
        .map(std::path::Path::new)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("fcm");
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let fcm = match Fcm::from_args(&[name], &rest) {
        Ok(f) => f,
        Err(early) => {
            return match early.status {
                Ok(()) => {
                    print!("{}", early.output);
                    0
                }
                Err(()) => {
                    eprint!("{}", early.output);
                    EXIT_USAGE
                }
            };
        }
    };
    let result = match fcm.command {
        Command::Models(a) => cmd::models::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Breakers(a) => cmd::breakers::run(a),
        Command::History(a) => cmd::history::run(a),
        Command::Install(a) => cmd::install::run(a),
        Command::Sets(a) => cmd::sets::run(a),
        Command::FakeProvider(a) => cmd::fake_provider::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<UsageError>().is_some() => {
            eprintln!("fcm: {e}");
            EXIT_USAGE
        }
        Err(e) => {
            eprintln!("fcm: {e:#}");
            EXIT_FAILURE
        }
    }
}
