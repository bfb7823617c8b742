//! The top-level command (argh), dispatch and exit codes. Each subcommand's flags live beside
//! its code in `cmd/<name>.rs`; no logic lives here.

use argh::FromArgs;

use crate::cmd::{self, UsageError};

/// Exit code for a usage error (bad flag, unknown provider or model).
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit code for a runtime failure.
pub(crate) const EXIT_FAILURE: i32 = 1;

#[derive(FromArgs)]
/// fcm: find, benchmark and route between free coding LLMs. `fcm --version` (`-V`, with
/// `-v` the commit and build target) prints the version.
pub(crate) struct Fcm {
    #[argh(subcommand)]
    pub(crate) command: Command,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub(crate) enum Command {
    Models(cmd::models::ModelsArgs),
    Bench(cmd::bench::BenchArgs),
    Check(cmd::check::CheckArgs),
    Demo(cmd::demo::DemoArgs),
    Serve(cmd::serve::ServeArgs),
    Breakers(cmd::breakers::BreakersArgs),
    History(cmd::history::HistoryArgs),
    Install(cmd::install::InstallArgs),
    Sets(cmd::sets::SetsArgs),
    Usage(cmd::usage::UsageArgs),
    Stop(cmd::stop::StopArgs),
    Status(cmd::status::StatusArgs),
    Keys(cmd::keys::KeysArgs),
    Doctor(cmd::doctor::DoctorArgs),
    Service(cmd::service::ServiceArgs),
    FakeProvider(cmd::fake_provider::FakeProviderArgs),
}

/// What `fcm --version` (or `-V`) prints: the version; with `-v` too, the git commit and
/// the target it was built for. `None` when the arguments ask for something else.
fn version(args: &[&str]) -> Option<String> {
    let asks = |a: &&str| matches!(*a, "--version" | "-V" | "-Vv" | "-vV");
    if args.is_empty() || !args.iter().any(asks) {
        return None;
    }
    let verbose = |a: &&str| matches!(*a, "-v" | "--verbose" | "-Vv" | "-vV");
    if !args.iter().all(|a| asks(a) || verbose(a)) {
        return None;
    }
    let short = format!("fcm {}", env!("CARGO_PKG_VERSION"));
    if args.iter().any(verbose) {
        Some(format!(
            "{short}\ncommit: {}\ntarget: {}",
            env!("FCM_GIT_COMMIT"),
            env!("FCM_BUILD_TARGET")
        ))
    } else {
        Some(short)
    }
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
    if let Some(text) = version(&rest) {
        println!("{text}");
        return 0;
    }
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
    if !matches!(fcm.command, Command::Serve(_) | Command::FakeProvider(_)) {
        crate::signals::quiet_on_closed_pipe();
    }
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
        Command::Usage(a) => cmd::usage::run(a),
        Command::Stop(a) => cmd::stop::run(a),
        Command::Status(a) => cmd::status::run(a),
        Command::Keys(a) => cmd::keys::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Service(a) => cmd::service::run(a),
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
