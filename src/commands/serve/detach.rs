//! A server in the background: starting `fcm serve` detached from the terminal with its
//! log in `$FCM_HOME/serve.log`, waiting until it answers, and keeping that log from
//! growing without end. Finding and stopping the running server is `serve_info::live_server`
//! and `fcm stop`'s; the server itself is the same `fcm serve` as in the foreground.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::state::serve_info::{live_server, ServeInfo};

/// The log is rotated (to `serve.log.1`) once it is larger than this.
pub const LOG_ROTATE_BYTES: u64 = 10 * 1024 * 1024;
/// How long `--detach` waits for the server to answer `/health`.
const START_WAIT: Duration = Duration::from_secs(15);

/// Why a background server could not be started.
#[derive(Debug)]
pub enum DetachError {
    /// One already runs for this `FCM_HOME`.
    AlreadyRunning(ServeInfo),
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    Spawn(std::io::Error),
    /// It exited, or did not answer in time; the end of its log says why.
    NotStarted {
        why: String,
        log_tail: String,
    },
}

impl std::fmt::Display for DetachError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DetachError::AlreadyRunning(info) => write!(
                f,
                "fcm serve already runs at http://{}/v1 (pid {}); `fcm stop` stops it",
                info.address, info.pid
            ),
            DetachError::Log { path, source } => {
                write!(f, "cannot open the log {}: {source}", path.display())
            }
            DetachError::Spawn(e) => write!(f, "cannot start fcm serve in the background: {e}"),
            DetachError::NotStarted { why, log_tail } => {
                write!(f, "fcm serve did not start: {why}")?;
                if !log_tail.is_empty() {
                    write!(f, "; its log ends with:\n{log_tail}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for DetachError {}

/// Starts `fcm serve ARGS --log-file LOG` detached (its own session, no terminal, output
/// to `log`) and returns once it answers `/health`, with what `serve.json` says of it.
/// `env` is added to its environment (the access token travels there, never in argv).
pub fn start(
    args: &[String],
    env: &[(&str, String)],
    log: &Path,
) -> Result<ServeInfo, DetachError> {
    if let Some(info) = live_server() {
        return Err(DetachError::AlreadyRunning(info));
    }
    rotate(log);
    let log_error = |source| DetachError::Log {
        path: log.to_path_buf(),
        source,
    };
    let out = open_log(log).map_err(log_error)?;
    let err = out.try_clone().map_err(log_error)?;
    let start_len = out.metadata().map(|m| m.len()).unwrap_or(0);
    let exe = std::env::current_exe().map_err(DetachError::Spawn)?;
    let mut cmd = Command::new(exe);
    cmd.arg("serve")
        .args(args)
        .arg("--log-file")
        .arg(log)
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    own_session(&mut cmd);
    let mut child = cmd.spawn().map_err(DetachError::Spawn)?;
    let pid = child.id();
    let started = Instant::now();
    loop {
        if let Some(info) = live_server().filter(|i| i.pid == pid) {
            if answers_health(&info) {
                return Ok(info);
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(DetachError::NotStarted {
                why: format!("it exited ({status})"),
                log_tail: log_tail(log, start_len),
            });
        }
        if started.elapsed() > START_WAIT {
            let _ = child.kill();
            return Err(DetachError::NotStarted {
                why: format!(
                    "it did not answer /health within {} s",
                    START_WAIT.as_secs()
                ),
                log_tail: log_tail(log, start_len),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The log, appended to and readable by its owner alone (it names models and keys' labels).
fn open_log(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::state::files::create_private_dir(dir).map_err(std::io::Error::other)?;
    }
    let mut opts = OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(path)
}

/// Moves a log larger than [`LOG_ROTATE_BYTES`] to `NAME.1` (replacing the one before)
/// and empties it. The server writes in append mode, so it carries on at the new end; the
/// few lines written between the copy and the cut are lost, which a log can afford.
pub fn rotate(path: &Path) {
    let Ok(meta) = fs::metadata(path) else {
        return;
    };
    if meta.len() <= LOG_ROTATE_BYTES {
        return;
    }
    let mut old = path.as_os_str().to_owned();
    old.push(".1");
    if fs::copy(path, &old).is_ok() {
        if let Ok(f) = OpenOptions::new().write(true).open(path) {
            let _ = f.set_len(0);
        }
    }
}

/// Whether the server answers `/health` on loopback.
fn answers_health(info: &ServeInfo) -> bool {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(2)))
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent();
    agent
        .get(&format!("{}/health", info.base_url()))
        .call()
        .is_ok_and(|r| r.status().as_u16() == 200)
}

/// What the log gained since `from`, its last 20 lines.
fn log_tail(path: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.seek(SeekFrom::Start(from));
        let _ = f.take(64 * 1024).read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Runs the server in a session of its own: closing the terminal or Ctrl-C in it does not
/// reach it.
#[cfg(unix)]
fn own_session(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Runs the server without a console of its own, apart from the one that started it.
/// Windows hands a new process every inheritable handle of its parent, this command's own
/// output among them when that is a pipe: the server would hold the pipe open for as long
/// as it runs, and whoever reads this command's output would wait for it. So this
/// command's standard handles stop being inheritable first (the server gets the log).
#[cfg(windows)]
fn own_session(cmd: &mut Command) {
    use std::os::windows::io::AsRawHandle;
    use std::os::windows::process::CommandExt;
    #[link(name = "kernel32")]
    extern "system" {
        fn SetHandleInformation(handle: *mut std::ffi::c_void, mask: u32, flags: u32) -> i32;
    }
    const HANDLE_FLAG_INHERIT: u32 = 0x0000_0001;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    for handle in [
        std::io::stdin().as_raw_handle(),
        std::io::stdout().as_raw_handle(),
        std::io::stderr().as_raw_handle(),
    ] {
        if !handle.is_null() {
            // SAFETY: only clears the inherit flag of a handle this process holds; a
            // handle that is not valid makes the call fail, which is harmless here.
            unsafe {
                SetHandleInformation(handle, HANDLE_FLAG_INHERIT, 0);
            }
        }
    }
    cmd.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}

#[cfg(not(any(unix, windows)))]
fn own_session(_cmd: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_log_is_rotated_and_a_small_one_left() {
        let dir = std::env::temp_dir().join(format!("fcm-daemon-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let log = dir.join("serve.log");
        fs::write(&log, b"small\n").unwrap();
        rotate(&log);
        assert_eq!(fs::read(&log).unwrap(), b"small\n");
        let big = vec![b'x'; LOG_ROTATE_BYTES as usize + 1];
        fs::write(&log, &big).unwrap();
        rotate(&log);
        assert_eq!(fs::metadata(&log).unwrap().len(), 0);
        assert_eq!(
            fs::metadata(dir.join("serve.log.1")).unwrap().len(),
            big.len() as u64
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
