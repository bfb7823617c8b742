//! `fcm doctor`: checks everything a working setup needs, one line each, with the fix for
//! what fails. It reads and never changes: a corrupt state file is reported, not moved
//! aside; keys are only tried with `--online`.

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use argh::{ArgsInfo, FromArgs};
use serde::Serialize;

use crate::commands::admin::admin_get;
use crate::commands::exit::ExitCode;
use crate::commands::Setup;
use crate::providers::catalog::{Age, Catalog, OLD_AFTER_DAYS};
use crate::state::config::Config;
use crate::state::files;
use crate::state::serve_info::{live_server, ServeInfo};

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "doctor")]
/// Check the setup (home, config, catalog, state, server, port, keys, tools); exit 1 if not ok.
pub(crate) struct DoctorArgs {
    /// also try each provider's key with one cheap completion
    #[argh(switch)]
    pub(crate) online: bool,
    /// seconds each online check may take (default 20)
    #[argh(option, default = "20")]
    pub(crate) timeout: u64,
    /// print one JSON document instead of the lines
    #[argh(switch)]
    pub(crate) json: bool,
}

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Pass,
    /// Works, but worth knowing.
    Note,
    Fail,
}

/// One line of the report, with what to do when it did not pass.
#[derive(Serialize)]
struct Check {
    outcome: Outcome,
    what: String,
    fix: Option<String>,
}

fn pass(what: impl Into<String>) -> Check {
    Check {
        outcome: Outcome::Pass,
        what: what.into(),
        fix: None,
    }
}

fn note(what: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        outcome: Outcome::Note,
        what: what.into(),
        fix: Some(fix.into()),
    }
}

fn fail(what: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        outcome: Outcome::Fail,
        what: what.into(),
        fix: Some(fix.into()),
    }
}

pub(crate) fn run(args: DoctorArgs) -> Result<ExitCode> {
    if args.timeout == 0 || args.timeout > 600 {
        return crate::commands::usage(format!(
            "--timeout must be between 1 and 600 seconds (got {})",
            args.timeout
        ));
    }
    let mut checks = Vec::new();
    let home = match files::fcm_home() {
        Ok(h) => h,
        Err(e) => {
            checks.push(fail(
                format!("FCM_HOME: {e}"),
                "set FCM_HOME to a writable directory",
            ));
            return Ok(print(&checks, args.json));
        }
    };
    checks.push(home_check(&home));
    let config_path = home.join("config.json");
    let config = match Config::load(&config_path) {
        Ok(loaded) => {
            let mut c = pass(format!("config: {}", shown(&config_path)));
            if !loaded.warnings.is_empty() {
                c = note(
                    format!(
                        "config: {}: {}",
                        shown(&config_path),
                        loaded.warnings.join("; ")
                    ),
                    "edit those settings (unknown ones are ignored, out-of-range ones clamped)",
                );
            }
            checks.push(c);
            Some(loaded.config)
        }
        Err(e) => {
            checks.push(fail(
                format!("config: {}", chain(&e)),
                format!(
                    "fix {} (it is yours: fcm never rewrites it)",
                    shown(&config_path)
                ),
            ));
            None
        }
    };
    let catalog = match Catalog::load() {
        Ok(mut c) => {
            let merged = config.as_ref().map(|cfg| cfg.merge_into(&mut c));
            match merged {
                Some(Err(e)) => {
                    checks.push(fail(
                        format!("catalog: {}", chain(&e)),
                        "fix config.json providers",
                    ));
                    None
                }
                _ => {
                    let overlay: Option<crate::providers::overlay::Overlay> =
                        std::fs::read(home.join("catalog-overlay.json"))
                            .ok()
                            .and_then(|b| serde_json::from_slice(&b).ok());
                    let drift = match &overlay {
                        Some(o) => {
                            o.apply(&mut c);
                            let retired: usize =
                                o.providers.values().map(|d| d.retired.len()).sum();
                            let added: usize = o.providers.values().map(|d| d.added.len()).sum();
                            format!(
                                " (after `fcm models --refresh`: {retired} retired, {added} added)"
                            )
                        }
                        None => String::new(),
                    };
                    checks.push(catalog_check(&c, &drift, crate::time::now_ms()));
                    Some(c)
                }
            }
        }
        Err(e) => {
            checks.push(fail(
                format!("catalog: {}", chain(&e)),
                "fix the file FCM_CATALOG names, or unset FCM_CATALOG",
            ));
            None
        }
    };
    for name in [
        "breakers.json",
        "history.json",
        "usage.json",
        "bench.json",
        "installs.json",
        "catalog-overlay.json",
    ] {
        checks.push(state_check(&home.join(name), name));
    }
    let (Some(config), Some(catalog)) = (config, catalog) else {
        return Ok(print(&checks, args.json));
    };
    let setup = Setup { catalog, config };
    let server = live_server();
    let port = server
        .as_ref()
        .and_then(ServeInfo::port)
        .unwrap_or(setup.config.port);
    match &server {
        Some(info) => match admin_get(info, &setup, "/health") {
            Ok(h) => checks.push(pass(format!(
                "server: running at http://{}/v1 (pid {}, {} routable models)",
                info.address, info.pid, h["models"]["routable"]
            ))),
            Err(e) => checks.push(fail(
                format!("server: pid {} runs but does not answer: {e:#}", info.pid),
                "`fcm stop`, then start it again (`fcm serve --detach`)",
            )),
        },
        None => {
            checks.push(note(
                "server: not running",
                "`fcm serve --detach` starts it in the background",
            ));
            checks.push(port_check(setup.config.port));
        }
    }
    checks.extend(key_checks(
        &setup,
        args.online,
        Duration::from_secs(args.timeout),
    ));
    checks.extend(tool_checks(&setup, port));
    Ok(print(&checks, args.json))
}

/// Prints the report; the exit code: 0 when nothing failed.
/// The report, as lines or (`--json`) as `{ok, failed, checks: [{outcome, what, fix}]}`;
/// exit 1 when a check failed.
fn print(checks: &[Check], json: bool) -> ExitCode {
    let failed = checks.iter().filter(|c| c.outcome == Outcome::Fail).count();
    let code = if failed == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failure
    };
    if json {
        let doc = serde_json::json!({"ok": failed == 0, "failed": failed, "checks": checks});
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return code;
    }
    for c in checks {
        let tag = match c.outcome {
            Outcome::Pass => "ok  ",
            Outcome::Note => "note",
            Outcome::Fail => "FAIL",
        };
        println!("{tag} {}", c.what);
        if let (Some(fix), true) = (&c.fix, c.outcome != Outcome::Pass) {
            println!("     fix: {fix}");
        }
    }
    if failed == 0 {
        println!("fcm doctor: all {} checks passed", checks.len());
    } else {
        println!("fcm doctor: {failed} of {} checks failed", checks.len());
    }
    code
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// An error and its causes on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    crate::state::persist::with_causes(e)
}

/// The catalog's size and date; a note, with what to do, once it is older than
/// [`OLD_AFTER_DAYS`]. `drift` is what the last refresh changed, as the line shows it.
fn catalog_check(catalog: &Catalog, drift: &str, now_ms: u64) -> Check {
    let age = Age::of(catalog.updated, now_ms);
    let what = format!("catalog: {}, {}{drift}", catalog.size(), age.describe());
    match age {
        Age::Old { date, .. } => note(
            format!("{what}: older than {OLD_AFTER_DAYS} days; since {date} providers may have retired models, made them paid or changed their limits"),
            "`fcm models --refresh` asks each provider with a key which models it serves now; a newer fcm carries a newer catalog",
        ),
        Age::Undated | Age::Current { .. } => pass(what),
    }
}

/// `FCM_HOME` exists (or can be made), is a directory fcm can write, and is the user's own.
fn home_check(home: &Path) -> Check {
    let what = format!("FCM_HOME: {}", shown(home));
    if !home.exists() {
        return note(
            format!("{what} does not exist yet"),
            "it is made (0700) when fcm first saves",
        );
    }
    if !home.is_dir() {
        return fail(
            format!("{what} is not a directory"),
            "set FCM_HOME to a directory",
        );
    }
    let probe = home.join(format!(".doctor-{}", std::process::id()));
    if std::fs::write(&probe, b"").is_err() {
        return fail(
            format!("{what} is not writable"),
            format!("make it writable: chmod u+w {}", shown(home)),
        );
    }
    let _ = std::fs::remove_file(&probe);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| m.permissions().mode() & 0o777)
                .ok()
        };
        let config = home.join("config.json");
        if let Some(m) = mode(&config).filter(|m| m & 0o077 != 0) {
            return fail(
                format!(
                    "{}: mode {m:03o}: other users can read it, and it may hold keys",
                    shown(&config)
                ),
                format!("chmod 600 {}", shown(&config)),
            );
        }
        if let Some(m) = mode(home).filter(|m| m & 0o077 != 0) {
            return note(
                format!("{what} is mode {m:03o}: other users can see its file names (the files fcm writes are 0600)"),
                format!("chmod 700 {}", shown(home)),
            );
        }
    }
    pass(what)
}

/// A state file parses (read only: a corrupt one is reported, not moved).
fn state_check(path: &Path, name: &str) -> Check {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => pass(format!("{name}: none yet")),
        Err(e) => fail(
            format!("{name}: cannot read {}: {e}", shown(path)),
            "check its owner and mode",
        ),
        Ok(bytes) if bytes.len() as u64 > files::MAX_STATE_FILE => fail(
            format!("{name}: {} bytes, larger than fcm writes", bytes.len()),
            "fcm sets it aside and starts fresh when it next loads it; or remove it",
        ),
        Ok(bytes) => match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(_) => pass(format!("{name}: readable")),
            Err(e) => fail(
                format!("{name}: corrupt ({e})"),
                "fcm moves it aside as NAME.corrupt-<time> and starts fresh when it next loads it",
            ),
        },
    }
}

/// The configured port is free (no server runs, so nothing of fcm's holds it).
fn port_check(port: u16) -> Check {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => pass(format!("port {port}: free")),
        Err(e) => fail(
            format!("port {port}: in use by another program ({e})"),
            "set another \"port\" in config.json (then `fcm install <tool>` again), or stop that program",
        ),
    }
}

/// Which providers have keys; with `online`, one completion per keyed provider.
fn key_checks(setup: &Setup, online: bool, timeout: Duration) -> Vec<Check> {
    let keys = setup.keys();
    let keyed: Vec<&crate::providers::catalog::Provider> = setup
        .catalog
        .providers
        .iter()
        .filter(|p| !keys.keys(p).is_empty())
        .collect();
    let keyless = setup
        .catalog
        .providers
        .iter()
        .filter(|p| !p.key_required)
        .count();
    let mut out = Vec::new();
    if keyed.is_empty() && keyless == 0 {
        out.push(fail(
            "keys: no provider key is set, and every provider needs one",
            "`fcm keys list` shows where to sign up; `fcm keys set PROVIDER` stores a key",
        ));
        return out;
    }
    let names: Vec<String> = keyed.iter().map(|p| p.id.clone()).collect();
    out.push(pass(format!(
        "keys: {} provider{} with keys ({}), {keyless} need none",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        if names.is_empty() {
            "-".to_string()
        } else {
            names.join(", ")
        }
    )));
    if !online {
        return out;
    }
    for p in keyed {
        let Ok(models) = crate::commands::check::choose(setup, &p.id) else {
            continue;
        };
        // fcm check's own line, as a child process would print it, is captured here.
        match check_quietly(setup, &models, timeout) {
            (ExitCode::Ok, line) => out.push(pass(format!("key {}: {line}", p.id))),
            (code, line) => out.push(fail(
                format!("key {}: {line}", p.id),
                match code {
                    ExitCode::NoKey | ExitCode::KeyRejected => format!(
                        "`fcm keys set {}` with a working key ({})",
                        p.id, p.signup_url
                    ),
                    ExitCode::RateLimited => {
                        "wait for the quota to come back (`fcm usage` shows when)".to_string()
                    }
                    _ => format!(
                        "`fcm check {}` again later; `fcm breakers` shows its models' health",
                        p.id
                    ),
                },
            )),
        }
    }
    out
}

/// One completion with the provider's key through `fcm check`'s own path, as its line.
fn check_quietly(
    setup: &Setup,
    models: &[crate::providers::catalog::ModelRef<'_>],
    timeout: Duration,
) -> (ExitCode, String) {
    match crate::commands::check::outcome(setup, models, None, timeout) {
        Ok(outcome) => outcome,
        Err(e) => (ExitCode::Failure, format!("{e:#}")),
    }
}

/// Each tool set up for fcm points at this server's port and sends its token.
fn tool_checks(setup: &Setup, port: u16) -> Vec<Check> {
    let token = setup.config.serve.access_token(None);
    let mut out = Vec::new();
    for t in crate::commands::status::tools(port, token.as_deref()) {
        let (Some(points_at), file, name) = (t.port, t.config, t.tool) else {
            continue;
        };
        if !t.this_server {
            out.push(fail(
                format!("{name}: {file} points at port {points_at}, fcm serves on {port}"),
                format!("`fcm install {name} --port {port}`"),
            ));
        } else if let Some(by) = &t.overridden_by {
            out.push(fail(
                format!("{name}: points at this server, but will not use it: {by}"),
                format!("remove or change that setting, then `fcm install {name}`"),
            ));
        } else if !t.token_matches && token.is_some() {
            out.push(fail(
                format!("{name}: {file} does not send the server's access token"),
                format!("`fcm install {name}` writes the current token"),
            ));
        } else {
            out.push(pass(format!("{name}: {file} points at this server")));
        }
    }
    if out.is_empty() {
        out.push(note(
            "tools: none points at fcm",
            "`fcm install --list` shows the tools fcm can set up",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_catalog_is_a_note_with_its_date_and_the_refresh() {
        let on = |d: &str| crate::time::parse_iso_date(d).unwrap() as u64 * crate::time::DAY_MS;
        let catalog = |updated: &str| {
            let text = format!(
                r#"{{"version":1,{updated}"providers":[{{"id":"a","baseUrl":"http://x","models":[{{"id":"m","context":1}}]}}]}}"#
            );
            Catalog::parse(&text, "t").unwrap()
        };
        let dated = catalog(r#""updated":"2026-10-10","#);
        let cases = [
            (
                &dated,
                "2026-12-09",
                Outcome::Pass,
                "catalog: 1 model across 1 provider, of 2026-10-10 (60 days old)",
            ),
            (
                &dated,
                "2026-12-10",
                Outcome::Note,
                "catalog: 1 model across 1 provider, of 2026-10-10 (61 days old): older than 60 days; since 2026-10-10 providers may have retired models, made them paid or changed their limits",
            ),
            (
                &catalog(""),
                "2030-01-01",
                Outcome::Pass,
                "catalog: 1 model across 1 provider, undated",
            ),
        ];
        for (c, today, outcome, what) in cases {
            let check = catalog_check(c, "", on(today));
            assert_eq!(
                (check.outcome, check.what.as_str()),
                (outcome, what),
                "{today}"
            );
        }
        let old = catalog_check(
            &dated,
            " (after `fcm models --refresh`: 1 retired, 0 added)",
            on("2027-01-01"),
        );
        assert!(
            old.what
                .contains("(83 days old) (after `fcm models --refresh`"),
            "{}",
            old.what
        );
        assert!(old.fix.unwrap().contains("`fcm models --refresh`"));
    }
}
