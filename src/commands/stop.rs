//! `fcm stop`: stops the running server gracefully (its streams finish, its state is
//! saved) and waits until it has exited: through its admin endpoint, else by SIGTERM.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use argh::{ArgsInfo, FromArgs};

use crate::commands::admin::admin_post;
use crate::commands::exit::ExitCode;
use crate::commands::Setup;
use crate::state::serve_info::live_server;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "stop")]
/// Stop the running fcm serve (state saved); exit 1 when none runs.
pub(crate) struct StopArgs {}

/// How long a stopping server may take: its streams get 5 s, then it saves its state.
const STOP_WAIT: Duration = Duration::from_secs(20);

pub(crate) fn run(_args: StopArgs) -> Result<ExitCode> {
    let setup = Setup::load()?;
    let Some(info) = live_server() else {
        eprintln!(
            "fcm: no fcm serve is running for {} (no live server in its serve.json)",
            crate::state::files::fcm_home()?.display()
        );
        return Ok(ExitCode::Failure);
    };
    // Through the server's admin endpoint, with the stop key from its serve.json (or this
    // shell's access token, for a server from before stop keys); when that is unreachable,
    // by SIGTERM, which only its owner may send.
    let mut saved = true;
    if let Err(e) = admin_post(&info, &setup, crate::edge::access::STOP_PATH) {
        if !crate::process::terminate(info.pid) {
            return Err(e.context(format!("cannot stop fcm serve (pid {})", info.pid)));
        }
        // Without signals the process is ended at once: it saves nothing.
        saved = cfg!(unix);
    }
    let started = Instant::now();
    while crate::process::alive(info.pid) {
        if started.elapsed() > STOP_WAIT {
            bail!(
                "fcm serve (pid {}) is still running {} s after it was asked to stop",
                info.pid,
                STOP_WAIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if saved {
        println!(
            "fcm: stopped fcm serve at http://{}/v1 (pid {}); its state is saved",
            info.address, info.pid
        );
    } else {
        if let Ok(path) = crate::state::serve_info::serve_info_path() {
            let _ = std::fs::remove_file(path);
        }
        println!(
            "fcm: ended fcm serve at http://{}/v1 (pid {}) at once: it did not answer its stop request; what it counted since its last save (every few seconds) is lost",
            info.address, info.pid
        );
    }
    Ok(ExitCode::Ok)
}
