//! The top-level command (argh), dispatch, and which exit code an error or an early exit
//! gives (the codes themselves are `commands::exit`'s). Each subcommand's flags live beside
//! its code in `commands/<name>.rs`; no logic lives here.

use argh::FromArgs;

use crate::commands::exit::ExitCode;
use crate::commands::{self, UsageError};

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
    Models(commands::models::ModelsArgs),
    Bench(commands::bench::BenchArgs),
    Check(commands::check::CheckArgs),
    Demo(commands::demo::DemoArgs),
    Serve(commands::serve::ServeArgs),
    Breakers(commands::breakers::BreakersArgs),
    History(commands::history::HistoryArgs),
    Install(commands::install::InstallArgs),
    Sets(commands::sets::SetsArgs),
    Usage(commands::usage::UsageArgs),
    Stop(commands::stop::StopArgs),
    Status(commands::status::StatusArgs),
    Top(commands::top::TopArgs),
    Keys(commands::keys::KeysArgs),
    Doctor(commands::doctor::DoctorArgs),
    Service(commands::service::ServiceArgs),
    FakeProvider(commands::fake_provider::FakeProviderArgs),
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
        return ExitCode::Ok.code();
    }
    let fcm = match Fcm::from_args(&[name], &rest) {
        Ok(f) => f,
        Err(early) => {
            return match early.status {
                Ok(()) => {
                    print!("{}", early.output);
                    ExitCode::Ok.code()
                }
                Err(()) => {
                    eprint!("{}", early.output);
                    ExitCode::Usage.code()
                }
            };
        }
    };
    if !matches!(fcm.command, Command::Serve(_) | Command::FakeProvider(_)) {
        crate::edge::signals::quiet_on_closed_pipe();
    }
    let result = match fcm.command {
        Command::Models(a) => commands::models::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Check(a) => commands::check::run(a),
        Command::Demo(a) => commands::demo::run(a),
        Command::Serve(a) => commands::serve::run(a),
        Command::Breakers(a) => commands::breakers::run(a),
        Command::History(a) => commands::history::run(a),
        Command::Install(a) => commands::install::run(a),
        Command::Sets(a) => commands::sets::run(a),
        Command::Usage(a) => commands::usage::run(a),
        Command::Stop(a) => commands::stop::run(a),
        Command::Status(a) => commands::status::run(a),
        Command::Top(a) => commands::top::run(a),
        Command::Keys(a) => commands::keys::run(a),
        Command::Doctor(a) => commands::doctor::run(a),
        Command::Service(a) => commands::service::run(a),
        Command::FakeProvider(a) => commands::fake_provider::run(a),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<UsageError>().is_some() => {
            eprintln!("fcm: {e}");
            ExitCode::Usage
        }
        Err(e) => {
            eprintln!("fcm: {e:#}");
            ExitCode::Failure
        }
    };
    code.code()
}
