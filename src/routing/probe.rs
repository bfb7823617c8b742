//! Opt-in probes (`router.probe.intervalSec`): each model whose cooldown has ended gets one
//! small request as its HALF_OPEN trial, so a recovered model is back in rotation before a
//! real request has to find out. Off by default: probes spend free quota.

use std::time::Duration;

use crate::answers::classify::Verdict;
use crate::bench::{metered_ping, Ping, Question};
use crate::state::breaker::{Admission, BreakerState};

use super::Router;

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
            let question = Question::Sum;
            let sent = metered_ping(
                self.upstream.as_ref(),
                &c.target,
                &c.metered,
                &self.ledger,
                question,
                timeout,
                true,
                None,
            );
            let ok = match sent {
                Err(_) => {
                    self.breakers.release_trial(c.key());
                    continue;
                }
                Ok((Ping::Ok { ttft_ms, .. }, _)) => {
                    self.record_success(c.key(), Duration::from_millis(ttft_ms));
                    true
                }
                Ok((Ping::Failed { kind, pause, .. }, _)) => {
                    let verdict = c.breaker_verdict(&Verdict::of(kind, pause));
                    self.breakers
                        .record_failure(c.key(), &verdict, crate::time::now_ms(), true);
                    false
                }
            };
            out.push((c.key().to_string(), ok));
        }
        out
    }
}
