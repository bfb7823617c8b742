//! `$FCM_HOME/serve.json`: the record a running `fcm serve` keeps of itself (pid, address,
//! start time, version, stop key), where it is, writing it, and reading it back to reach
//! the live server (`fcm breakers`, `fcm history`, `fcm stop`, `fcm status`, ...).
//!
//! One server per home: the running server holds `$FCM_HOME/serve.lock` exclusively (an
//! OS lock, released however the process ends), so a second `fcm serve` on the same home
//! refuses before it binds or touches `serve.json`.
//!
//! A record whose pid is gone names no server. The debounced writes of the server's other
//! state files are `persist`'s; what the stop key lets a client do is the edge's.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::files::{self, StateError};

/// `$FCM_HOME/serve.json`: a live server's address, for `fcm breakers` and `fcm history`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServeInfo {
    pub pid: u32,
    pub address: String,
    pub started_at: String,
    pub version: String,
    /// Whether requests need the access token.
    #[serde(default)]
    pub token_required: bool,
    /// What lets `fcm stop` stop it without the token (see [`crate::edge::access`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_key: Option<String>,
}

pub fn serve_info_path() -> Result<PathBuf, StateError> {
    files::state_file("serve.json")
}

pub fn write_serve_info(path: &Path, info: &ServeInfo) -> Result<(), StateError> {
    files::write_json_atomic(path, info)
}

/// The running server's hold on its home; the home is free again when it is dropped (or
/// the process ends).
#[derive(Debug)]
pub struct HomeLock {
    _file: std::fs::File,
}

/// Takes the home for this server: `Ok(None)` when another process holds it.
pub fn lock_home() -> Result<Option<HomeLock>, StateError> {
    let path = files::state_file("serve.lock")?;
    if let Some(home) = path.parent() {
        files::create_private_dir(home)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(&path).map_err(|source| StateError::Write {
        path: path.clone(),
        source,
    })?;
    match file.try_lock() {
        Ok(()) => Ok(Some(HomeLock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(source)) => Err(StateError::Write { path, source }),
    }
}

/// Why a second server may not start on this home, naming the one that runs (from its
/// `serve.json`, when it has written it yet).
pub fn home_taken_message(home: &Path) -> String {
    let how = format!(
        "`fcm stop` stops it; a second server needs a home of its own (FCM_HOME={} is this one)",
        home.display()
    );
    match serve_info_path().ok().and_then(|p| read_serve_info(&p)) {
        Some(info) => format!(
            "fcm serve already runs on this home: pid {} at {}/v1 (started {}); {how}",
            info.pid,
            info.base_url(),
            info.started_at
        ),
        None => format!("another fcm serve is starting or stopping on this home; {how}"),
    }
}

/// What a `serve.json` says, if it can be read.
pub fn read_serve_info(path: &Path) -> Option<ServeInfo> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The running server, if `serve.json` names a live process.
pub fn live_server() -> Option<ServeInfo> {
    let info = read_serve_info(&serve_info_path().ok()?)?;
    crate::process::alive(info.pid).then_some(info)
}

impl ServeInfo {
    /// The port it listens on.
    pub fn port(&self) -> Option<u16> {
        self.address.rsplit(':').next()?.parse().ok()
    }

    /// The server's base URL (no `/v1`), a wildcard bind (0.0.0.0, ::) reached through
    /// loopback.
    pub fn base_url(&self) -> String {
        match self.address.parse::<std::net::SocketAddr>() {
            Ok(a) if a.ip().is_unspecified() => format!("http://127.0.0.1:{}", a.port()),
            Ok(a) => format!("http://{a}"),
            Err(_) => format!("http://{}", self.address),
        }
    }
}
