//! `fcm service install|uninstall|status`: `fcm serve` started at login by the platform's
//! service manager. Install writes the service file (and records what it wrote), then loads
//! it when the manager is reachable, else prints the commands; uninstall removes exactly
//! what install wrote.

pub(crate) mod unit;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use argh::{ArgsInfo, FromArgs};
use serde::{Deserialize, Serialize};

use crate::commands::exit::ExitCode;
use crate::commands::service::unit::{Manager, MARK};
use crate::commands::Setup;
use crate::state::files;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "service")]
/// Run fcm serve at login (systemd user unit on Linux, launchd agent on macOS).
pub(crate) struct ServiceArgs {
    #[argh(subcommand)]
    pub(crate) action: ServiceAction,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(subcommand)]
pub(crate) enum ServiceAction {
    Install(InstallArgs),
    Uninstall(UninstallArgs),
    Status(StatusArgs),
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "install")]
/// Write the service file and start it (idempotent).
pub(crate) struct InstallArgs {
    /// port the service listens on (default: config.json port, else 19280)
    #[argh(option)]
    pub(crate) port: Option<u16>,
}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "uninstall")]
/// Stop the service and remove exactly the file install wrote.
pub(crate) struct UninstallArgs {}

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "status")]
/// Whether the service file is in place, unchanged, and running.
pub(crate) struct StatusArgs {
    /// print one JSON document instead of the lines
    #[argh(switch)]
    pub(crate) json: bool,
}

/// `$FCM_HOME/service.json`: what install wrote, so uninstall removes that and nothing else.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ServiceRecord {
    file: PathBuf,
    /// Fingerprint of the text written (`catalog::key_id`): a file changed since is the
    /// user's, and is not removed.
    fingerprint: String,
    installed_at: String,
}

pub(crate) fn run(args: ServiceArgs) -> Result<ExitCode> {
    let Some(manager) = Manager::here() else {
        bail!("fcm service knows systemd (Linux) and launchd (macOS), not this system; start `fcm serve --detach` at login instead");
    };
    let home =
        crate::state::files::home_dir().context("cannot find your home directory (set HOME)")?;
    match args.action {
        ServiceAction::Install(a) => install(manager, &home, a),
        ServiceAction::Uninstall(_) => uninstall(manager, &home),
        ServiceAction::Status(a) => status(manager, &home, a.json),
    }
}

fn record_path() -> Result<PathBuf> {
    Ok(files::state_file("service.json")?)
}

fn fingerprint(text: &str) -> String {
    crate::providers::catalog::key_id(text)
}

fn install(manager: Manager, home: &Path, a: InstallArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    let port = a.port.unwrap_or(setup.config.port);
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot tell where the fcm binary is")?;
    let fcm_home = files::fcm_home()?;
    let file = manager.file(home);
    let text = manager.text(&exe, port, &fcm_home, &fcm_home.join("serve.log"));
    match std::fs::read_to_string(&file) {
        Ok(old) if old == text => {
            println!("{} is already installed, unchanged.", file.display());
        }
        Ok(old) if !old.contains(MARK) => bail!(
            "{} exists and is not fcm's (it lacks fcm's mark); move it away first",
            file.display()
        ),
        Ok(_) | Err(_) => {
            files::write_atomic(&file, text.trim_end().as_bytes())?;
            println!("Wrote {} (fcm serve --port {port}).", file.display());
        }
    }
    let record = ServiceRecord {
        file: file.clone(),
        fingerprint: fingerprint(&std::fs::read_to_string(&file)?),
        installed_at: crate::time::rfc3339(crate::time::now_ms()),
    };
    files::write_json_atomic(&record_path()?, &record)?;
    run_or_print(manager, &manager.start_commands(&file))?;
    println!("Keys from your shell's environment are not seen by the service: `fcm keys set PROVIDER` stores them where it reads them.");
    Ok(ExitCode::Ok)
}

/// What `fcm service install` recorded of the file it wrote, if it can be read.
fn load_record() -> Result<Option<ServiceRecord>> {
    Ok(std::fs::read_to_string(record_path()?)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok()))
}

fn uninstall(manager: Manager, home: &Path) -> Result<ExitCode> {
    let record = load_record()?;
    let file = record
        .as_ref()
        .map_or_else(|| manager.file(home), |r| r.file.clone());
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "No fcm service is installed ({} does not exist).",
                file.display()
            );
            let _ = std::fs::remove_file(record_path()?);
            return Ok(ExitCode::Ok);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let ours = match &record {
        Some(r) => r.fingerprint == fingerprint(&text),
        None => text.contains(MARK),
    };
    if !ours {
        bail!(
            "{} changed since `fcm service install` wrote it; it is yours now: stop the service and remove it yourself",
            file.display()
        );
    }
    run_or_print(manager, &manager.stop_commands(&file))?;
    std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
    let _ = std::fs::remove_file(record_path()?);
    println!("Removed {}.", file.display());
    if manager == Manager::Systemd {
        run_or_print(
            manager,
            &[vec![
                "systemctl".into(),
                "--user".into(),
                "daemon-reload".into(),
            ]],
        )?;
    }
    Ok(ExitCode::Ok)
}

/// The service file as `fcm service status` finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum FileState {
    NotInstalled,
    /// What fcm wrote, byte for byte.
    Unchanged,
    /// fcm's, edited since.
    Changed,
    /// A file of that name that fcm did not write.
    NotFcms,
}

/// `fcm service status --json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ServiceStatus {
    file: PathBuf,
    file_state: FileState,
    #[serde(skip_serializing_if = "Option::is_none")]
    installed_at: Option<String>,
    /// The service manager's own status command, whether it could be asked, what it said.
    manager_command: String,
    manager_reachable: bool,
    manager_said: String,
    server_running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_pid: Option<u32>,
}

fn status(manager: Manager, home: &Path, json: bool) -> Result<ExitCode> {
    let file = manager.file(home);
    let record = load_record()?;
    let (file_state, installed_at) = match std::fs::read_to_string(&file) {
        Err(_) => (FileState::NotInstalled, None),
        Ok(text) => match &record {
            Some(r) if r.fingerprint == fingerprint(&text) => {
                (FileState::Unchanged, Some(r.installed_at.clone()))
            }
            _ if text.contains(MARK) => (FileState::Changed, None),
            _ => (FileState::NotFcms, None),
        },
    };
    let cmd = manager.status_command();
    let reachable = available(manager);
    let said = if reachable {
        Command::new(&cmd[0])
            .args(&cmd[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    } else {
        String::new()
    };
    let server = crate::state::serve_info::live_server();
    let s = ServiceStatus {
        file,
        file_state,
        installed_at,
        manager_command: cmd.join(" "),
        manager_reachable: reachable,
        manager_said: said,
        server_running: server.is_some(),
        server_address: server.as_ref().map(|i| i.address.clone()),
        server_pid: server.as_ref().map(|i| i.pid),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::Ok);
    }
    let shown = s.file.display();
    match s.file_state {
        FileState::NotInstalled => println!("service file: not installed ({shown})"),
        FileState::Unchanged => println!(
            "service file: {shown} (installed by fcm at {}, unchanged)",
            s.installed_at.as_deref().unwrap_or("?")
        ),
        FileState::Changed => println!("service file: {shown} (installed by fcm, changed since)"),
        FileState::NotFcms => println!("service file: {shown} (present, not fcm's)"),
    }
    if s.manager_reachable {
        let said = if s.manager_said.is_empty() {
            "-"
        } else {
            &s.manager_said
        };
        println!("{}: {said}", s.manager_command);
    } else {
        println!(
            "{}: the service manager cannot be reached from here",
            s.manager_command
        );
    }
    match (&s.server_address, s.server_pid) {
        (Some(address), Some(pid)) => {
            println!("fcm serve: running at http://{address}/v1 (pid {pid})")
        }
        _ => println!("fcm serve: not running"),
    }
    Ok(ExitCode::Ok)
}

/// Whether the service manager answers for this user (a systemd user instance needs a
/// session bus; a container or CI has none).
fn available(manager: Manager) -> bool {
    let probe: &[&str] = match manager {
        Manager::Systemd => &["systemctl", "--user", "show-environment"],
        Manager::Launchd => &["launchctl", "version"],
    };
    Command::new(probe[0])
        .args(&probe[1..])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs each command when the manager answers (saying what ran and how it went), else
/// prints them for the user to run in a session that has one.
fn run_or_print(manager: Manager, commands: &[Vec<String>]) -> Result<()> {
    if !available(manager) {
        println!("The service manager cannot be reached from here; run:");
        for c in commands {
            println!("  {}", c.join(" "));
        }
        return Ok(());
    }
    for c in commands {
        let status = Command::new(&c[0])
            .args(&c[1..])
            .status()
            .with_context(|| format!("cannot run {}", c.join(" ")))?;
        let how = if status.success() {
            "ok".to_string()
        } else {
            status.to_string()
        };
        println!("$ {}  ({how})", c.join(" "));
    }
    Ok(())
}
