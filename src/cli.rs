//! The top-level command (argh), dispatch, and which exit code an error or an early exit
//! gives (the codes themselves are `commands::exit`'s). Each subcommand's flags live beside
//! its code in `commands/<name>.rs`; no logic lives here.

use argh::{ArgsInfo, FromArgs};

use crate::commands::exit::ExitCode;
use crate::commands::{self, UsageError};

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
/// fcm: find, benchmark and route between free coding LLMs.
pub(crate) struct Fcm {
    /// print the version
    #[argh(switch, short = 'V')]
    pub(crate) version: bool,
    /// print the version with its git commit and build target (alone or with -V)
    #[argh(switch, short = 'v')]
    pub(crate) verbose: bool,
    #[argh(subcommand)]
    pub(crate) command: Option<Command>,
}

#[derive(FromArgs, ArgsInfo)]
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
    Completions(commands::completions::CompletionsArgs),
    Man(commands::man::ManArgs),
    FakeProvider(commands::fake_provider::FakeProviderArgs),
}

/// The command definitions (argh's tree of commands and flags, under the name users type):
/// what "did you mean", the shell completions and the man page are written from.
pub(crate) fn definitions() -> argh::CommandInfoWithArgs {
    let mut info = Fcm::get_args_info();
    info.name = "fcm";
    info
}

/// What `fcm -V` prints: the version; with `-v` (alone or beside `-V`), the git commit and
/// the target it was built for too.
fn version(verbose: bool) -> String {
    let short = format!("fcm {}", env!("CARGO_PKG_VERSION"));
    if verbose {
        format!(
            "{short}\ncommit: {}\ntarget: {}",
            env!("FCM_GIT_COMMIT"),
            env!("FCM_BUILD_TARGET")
        )
    } else {
        short
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
    let fcm = match Fcm::from_args(&[name], &rest) {
        Ok(f) => f,
        Err(early) => {
            return match early.status {
                Ok(()) => {
                    print!("{}", early.output);
                    ExitCode::Ok.code()
                }
                Err(()) => {
                    eprintln!("{}", early.output.trim_end());
                    if let Some(hint) = commands::did_you_mean::hint(&definitions(), &rest) {
                        eprintln!("{hint}");
                    }
                    ExitCode::Usage.code()
                }
            };
        }
    };
    let command = match (fcm.command, fcm.version || fcm.verbose) {
        (None, true) => {
            println!("{}", version(fcm.verbose));
            return ExitCode::Ok.code();
        }
        (Some(_), true) => {
            eprintln!("fcm: -V and -v print the version on their own (`fcm -V`); run the command without them");
            return ExitCode::Usage.code();
        }
        (None, false) => {
            if let Err(help) = Fcm::from_args(&[name], &["--help"]) {
                eprint!("{}", help.output);
            }
            eprintln!("fcm: name a command (`fcm --help` lists them)");
            return ExitCode::Usage.code();
        }
        (Some(command), false) => command,
    };
    if !matches!(command, Command::Serve(_) | Command::FakeProvider(_)) {
        crate::edge::signals::quiet_on_closed_pipe();
    }
    let result = match command {
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
        Command::Completions(a) => commands::completions::run(a, &definitions()),
        Command::Man(a) => commands::man::run(a, &definitions()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's path of names, fcm itself first (`[]`, `["keys"]`, `["keys", "set"]`).
    fn paths(
        info: &argh::CommandInfoWithArgs,
        at: Vec<&'static str>,
        out: &mut Vec<Vec<&'static str>>,
    ) {
        out.push(at.clone());
        for sub in &info.commands {
            let mut next = at.clone();
            next.push(sub.name);
            paths(&sub.command, next, out);
        }
    }

    #[test]
    fn every_command_prints_its_help_for_dash_h() {
        let mut all = Vec::new();
        paths(&definitions(), Vec::new(), &mut all);
        assert!(all.len() > 20, "{all:?}");
        for path in all {
            for trigger in ["-h", "--help"] {
                let args = [&path[..], &[trigger]].concat();
                let early = Fcm::from_args(&["fcm"], &args)
                    .err()
                    .unwrap_or_else(|| panic!("{args:?} parsed as a command"));
                assert!(early.status.is_ok(), "{args:?}: {}", early.output);
                let usage = format!(
                    "Usage: {}",
                    ["fcm"]
                        .iter()
                        .chain(&path)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" ")
                );
                assert!(
                    early.output.starts_with(&usage),
                    "{args:?}: {}",
                    early.output
                );
            }
        }
    }

    #[test]
    fn version_lines() {
        assert_eq!(version(false), concat!("fcm ", env!("CARGO_PKG_VERSION")));
        let long = version(true);
        let lines: Vec<&str> = long.lines().collect();
        assert_eq!(lines.len(), 3, "{long}");
        assert!(lines[1].starts_with("commit: ") && lines[2].starts_with("target: "));
    }
}
