//! The running server's shared state, handed to every connection's thread: the router, the
//! limits and timeouts of the edge, the access token. Plain data; the edge's files read it.

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::edge::connections::Connections;
use crate::routing::Router;

/// A running server's shared state.
pub struct App {
    pub router: Router,
    /// The catalog the router was built from (the dashboard's usage section names limits).
    pub catalog: crate::providers::catalog::Catalog,
    pub address: SocketAddr,
    pub started: Instant,
    pub in_flight: AtomicUsize,
    pub connections: Arc<Connections>,
    pub max_in_flight: usize,
    /// A request's head and body must arrive within this from its first byte.
    pub request_timeout: Duration,
    /// A connection waits this long for the next request before it closes.
    pub idle_timeout: Duration,
    pub quiet: bool,
    /// Required on every request but `/health` when set (`Authorization: Bearer` or `x-api-key`).
    pub token: Option<String>,
    /// Admits `fcm stop` (see [`crate::edge::access`]); also in `serve.json`.
    pub stop_key: String,
    pub writes: crate::state::persist::WriteCounts,
}

impl crate::state::persist::StateSource for App {
    fn breakers(&self) -> &crate::state::breaker::Breakers {
        &self.router.breakers
    }
    fn history(&self) -> &crate::state::trace::History {
        &self.router.history
    }
    fn ledger(&self) -> &crate::state::ledger::Ledger {
        &self.router.ledger
    }
    fn affinity(&self) -> Option<&crate::state::affinity::Affinity> {
        self.router.affinity.as_ref()
    }
    fn carry_to_save(&self) -> Option<crate::state::carry_file::CarryFile> {
        let file = self.router.carry.take_dirty()?;
        Some(file.redacted(&|s: &str| match self.router.redact(s) {
            std::borrow::Cow::Owned(clean) => Some(clean),
            std::borrow::Cow::Borrowed(_) => None,
        }))
    }
    fn carry_unsaved(&self) {
        self.router.carry.mark_dirty();
    }
    fn writes(&self) -> &crate::state::persist::WriteCounts {
        &self.writes
    }
}
