//! Opt-in probes (`router.probe.intervalSec`): each model whose cooldown has ended gets one
//! small request as its HALF_OPEN trial, so a recovered model is back in rotation before a
//! real request has to find out. Off by default: probes spend free quota. A probe is a
//! [`ping`](super::ping::ping), recorded as any request's attempt is.

use std::time::Duration;

use crate::state::breaker::{Admission, BreakerState};

use super::ping::{ping, Ping, Question, Spend};
use super::router::Router;

impl Router {
    /// Probes each model whose cooldown has ended. Returns (model, ok) per probe.
    pub(crate) fn probe_recovered(&self, timeout: Duration) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for c in self.routable() {
            let now = crate::time::now_ms();
            if self.breakers.state(c.key(), now) != BreakerState::HalfOpen {
                continue;
            }
            if self.breakers.admit(c.key(), now) != Admission::Trial {
                continue;
            }
            // A probe never spends the last tenth of a daily budget, nor a spent one.
            let sent = ping(
                self.recorder(),
                self.upstream.as_ref(),
                c,
                Question::Sum,
                timeout,
                Spend::Probe,
                true,
            );
            match sent {
                Ok((Ping::Ok { .. }, _)) => out.push((c.key().to_string(), true)),
                Ok((Ping::Failed { .. }, _)) => out.push((c.key().to_string(), false)),
                // Not sent: its trial slot is back.
                Err(_) => {}
            }
        }
        out
    }
}
