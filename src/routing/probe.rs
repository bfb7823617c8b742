//! Probes: small requests that find out whether a model answers again before a real
//! request has to. Opt-in (`router.probe.intervalSec`): each model whose cooldown has
//! ended gets one as its HALF_OPEN trial (off by default: probes spend free quota).
//! Always: a silent model (one that missed its first-token deadline) gets one when its
//! probe is due, since until then it waits behind every responsive model. A probe is a
//! [`ping`](super::ping::ping), recorded as any request's attempt is.

use std::time::Duration;

use crate::state::breaker::{Admission, BreakerState};

use super::candidates::Candidate;
use super::ping::{ping, Ping, Question, Spend};
use super::router::Router;

/// How long a silent model's probe waits: a model that answers at all answers a one-line
/// question well within it, and a silent one costs no longer.
const SILENT_PROBE_WAIT: Duration = Duration::from_secs(10);

impl Router {
    /// Probes each silent model whose probe is due, giving it [`SILENT_PROBE_WAIT`] (at
    /// most `ceiling`) to answer a one-line question. Returns (model, heard) per probe sent.
    pub(crate) fn probe_silent(&self, ceiling: Duration) -> Vec<(String, bool)> {
        let ceiling = ceiling.min(SILENT_PROBE_WAIT);
        let mut out = Vec::new();
        for model in self.evidence.silent_due(crate::time::now_ms()) {
            let Some(i) = self.pool.position(&model) else {
                continue;
            };
            let c = self.pool.get(i);
            if c.missing_key.is_some() {
                continue;
            }
            // The next probe waits longer, whatever comes of this one (a model that
            // answers is heard, and no longer silent).
            self.evidence.fell_silent(&model, crate::time::now_ms());
            // Not sent (its budget is spent): asked again when next due.
            out.extend(self.probe(c, ceiling, false));
        }
        out
    }

    /// One probe of `c` (as its breaker's trial when `trial`), recorded like any attempt:
    /// whether it answered, or `None` when its budget kept it from being sent.
    fn probe(&self, c: &Candidate, timeout: Duration, trial: bool) -> Option<(String, bool)> {
        // A probe never spends the last tenth of a daily budget, nor a spent one.
        let sent = ping(
            self.recorder(),
            self.upstream.as_ref(),
            c,
            Question::Sum,
            timeout,
            Spend::Probe,
            trial,
        );
        let heard = matches!(sent.ok()?.0, Ping::Ok { .. });
        Some((c.key().to_string(), heard))
    }

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
            // Not sent: its trial slot is back.
            out.extend(self.probe(c, timeout, true));
        }
        out
    }
}
