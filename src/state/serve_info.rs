//! `$FCM_HOME/serve.json`: the record a running `fcm serve` keeps of itself (pid, address,
//! start time, version, stop key), where it is, writing it, and reading it back to reach
//! the live server (`fcm breakers`, `fcm history`, `fcm stop`, `fcm status`, ...).
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
