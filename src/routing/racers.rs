//! Racers' clients of their own, kept per provider between races. A client of its own
//! costs a new connection (TCP and TLS handshakes), which would eat into what a race gains:
//! the winner's comes back when its answer is delivered, a failed racer's at once; a shut
//! client (a loser's) is never reused.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::providers::exchange::Exchange;

/// Idle racer clients kept per provider.
const KEPT_PER_PROVIDER: usize = 4;

/// Racers' clients between races, per provider id.
#[derive(Default)]
pub(crate) struct RaceClients {
    idle: Mutex<HashMap<String, Vec<Box<dyn Exchange>>>>,
}

impl RaceClients {
    /// A client for a racer on `provider`: a kept one (its connection likely warm), else a
    /// new one sharing `shared`'s name cache.
    pub(super) fn take(&self, provider: &str, shared: &dyn Exchange) -> Box<dyn Exchange> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.get_mut(provider)
            .and_then(Vec::pop)
            .unwrap_or_else(|| shared.sibling())
    }

    /// Keeps a client that was not shut down, for the next race on `provider`.
    pub(crate) fn give(&self, provider: &str, client: Box<dyn Exchange>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let kept = idle.entry(provider.to_string()).or_default();
        if kept.len() < KEPT_PER_PROVIDER {
            kept.push(client);
        }
    }

    /// Clients kept for `provider` (tests).
    #[cfg(test)]
    fn kept(&self, provider: &str) -> usize {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.get(provider).map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::exchange::Exchange;
    use crate::providers::upstream::Upstream;

    #[test]
    fn clients_are_kept_per_provider_up_to_a_bound() {
        let clients = RaceClients::default();
        let shared = Upstream::new();
        let a = clients.take("groq", &shared);
        clients.give("groq", a);
        assert_eq!(clients.kept("groq"), 1);
        let _again = clients.take("groq", &shared);
        assert_eq!(clients.kept("groq"), 0, "taken back out");
        for _ in 0..10 {
            clients.give("cerebras", shared.sibling());
        }
        assert_eq!(clients.kept("cerebras"), KEPT_PER_PROVIDER);
        assert_eq!(clients.kept("groq"), 0);
    }
}
