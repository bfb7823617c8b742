//! What a running fake provider keeps: its script (model id → behaviour), the requests it
//! received ([`RecordedRequest`]), and the counters and rate-limit windows that some
//! behaviours change over time. Shared by the connection threads; nothing here answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::behavior::Behavior;

/// A request as the fake provider received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the request had been read.
    pub at: Instant,
    pub keep_alive: bool,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn model(&self) -> String {
        self.json()
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    }
}

/// What the connection threads share.
pub(super) struct Shared {
    /// Behaviours for model ids that do not name one themselves.
    pub(super) script: HashMap<String, Behavior>,
    pub(super) requests: Mutex<Vec<RecordedRequest>>,
    pub(super) record: bool,
    pub(super) stop: AtomicBool,
    /// Requests answered so far (answer ids count with it).
    pub(super) counter: AtomicU64,
    /// Answers cut short because the client went away.
    pub(super) aborted: AtomicU64,
    /// Connections accepted.
    pub(super) connections: AtomicU64,
    /// Requests seen per model (for behaviours that change over time).
    pub(super) seen: Mutex<HashMap<String, u64>>,
    /// Rate-limit windows per model and key: when each started, requests in it.
    pub(super) windows: Mutex<HashMap<String, (Instant, u64)>>,
    /// Extra time before answering, per model id, set while running.
    latency: Mutex<HashMap<String, Duration>>,
}

impl Shared {
    pub(super) fn new(script: HashMap<String, Behavior>, record: bool) -> Shared {
        Shared {
            script,
            requests: Mutex::new(Vec::new()),
            record,
            stop: AtomicBool::new(false),
            counter: AtomicU64::new(0),
            aborted: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            seen: Mutex::new(HashMap::new()),
            windows: Mutex::new(HashMap::new()),
            latency: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one more request for `model`; returns how many it has seen, this one included.
    pub(super) fn count_seen(&self, model: &str) -> u64 {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let n = seen.entry(model.to_string()).or_insert(0);
        *n += 1;
        *n
    }

    /// Model `model` answers `extra` later from now on (zero: at once again).
    pub(super) fn set_latency(&self, model: &str, extra: Duration) {
        let mut l = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        if extra.is_zero() {
            l.remove(model);
        } else {
            l.insert(model.to_string(), extra);
        }
    }

    pub(super) fn latency_of(&self, model: &str) -> Option<Duration> {
        let l = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        l.get(model).copied()
    }

    /// The behaviour for `model`: scripted, else named by the id, else `ok`.
    pub(super) fn behavior_for(&self, model: &str) -> Behavior {
        self.script
            .get(model)
            .cloned()
            .or_else(|| Behavior::parse(model))
            .unwrap_or(Behavior::Ok)
    }
}
