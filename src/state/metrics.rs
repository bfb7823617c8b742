//! The counters behind `/metrics`: requests by outcome, attempts and skips by model, a
//! histogram of request durations and one of each model's time to first token. Fed once
//! per finished request from its trace ([`Metrics::record`]) without a lock or an
//! allocation: fixed arrays of atomics, a row per model known at start, indexed by the
//! outcome, failure kind and skip reason enums. Gauges (breakers, budgets, conversations)
//! are read from their owners when scraped; the exposition format is the edge's.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::answers::classify::FailureKind;
use crate::state::trace::{Outcome, SkipReason, Trace};

/// Upper bounds (ms) of the request duration buckets: a quick answer, an agent's usual
/// turn, a long stream, up to the default failover budget (`totalBudgetMs`, 120 s) and past.
pub(crate) const DURATION_BOUNDS_MS: [u64; 12] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 20_000, 30_000, 60_000, 120_000, 300_000,
];

/// Upper bounds (ms) of the time to first token buckets: the fastest free providers answer
/// in tens of ms, and the first token timeout (`firstTokenTimeoutMs`) is 30 s by default.
pub(crate) const TTFT_BOUNDS_MS: [u64; 11] = [
    50, 100, 200, 400, 800, 1_500, 3_000, 6_000, 12_000, 20_000, 30_000,
];

/// How an attempt ended, as `/metrics` labels it: `ok`, a failure kind, or `raced_out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttemptResult {
    Ok,
    Failed(FailureKind),
    /// Sent in a race another model won: cancelled, not a failure.
    RacedOut,
}

/// Results per model: `ok`, each failure kind, `raced_out`.
const RESULTS: usize = FailureKind::ALL.len() + 2;

impl AttemptResult {
    fn index(self) -> usize {
        match self {
            AttemptResult::Ok => 0,
            AttemptResult::Failed(k) => 1 + k as usize,
            AttemptResult::RacedOut => RESULTS - 1,
        }
    }

    fn of_index(i: usize) -> AttemptResult {
        match i {
            0 => AttemptResult::Ok,
            i if i == RESULTS - 1 => AttemptResult::RacedOut,
            i => AttemptResult::Failed(FailureKind::ALL[i - 1]),
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AttemptResult::Ok => "ok",
            AttemptResult::Failed(k) => k.as_str(),
            AttemptResult::RacedOut => "raced_out",
        }
    }
}

/// A histogram of durations in ms with fixed bucket bounds.
pub(crate) struct Histogram {
    bounds: &'static [u64],
    /// Per bucket (not cumulative), the last one past every bound (`+Inf`).
    counts: Box<[AtomicU64]>,
    sum_ms: AtomicU64,
}

/// A histogram as read: cumulative counts per bound (`None`: `+Inf`), the sum and count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistogramSnapshot {
    pub(crate) buckets: Vec<(Option<u64>, u64)>,
    pub(crate) sum_ms: u64,
    pub(crate) count: u64,
}

impl Histogram {
    fn new(bounds: &'static [u64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ms: AtomicU64::new(0),
        }
    }

    fn observe(&self, ms: u64) {
        // The first bound at or above `ms`: Prometheus buckets count values `<= le`.
        let i = self.bounds.partition_point(|b| *b < ms);
        self.counts[i].fetch_add(1, Relaxed);
        self.sum_ms.fetch_add(ms, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let mut total = 0;
        let buckets = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                total += c.load(Relaxed);
                (self.bounds.get(i).copied(), total)
            })
            .collect();
        HistogramSnapshot {
            buckets,
            sum_ms: self.sum_ms.load(Relaxed),
            count: total,
        }
    }
}

/// The hash of the model index: FxHash's (rustc's own), a multiply per 8 bytes. The keys
/// are catalog names, never chosen by a client, so a keyed hash's defence against crafted
/// collisions buys nothing; std's SipHash made the lookups most of [`Metrics::record`]'s
/// cost.
#[derive(Default, Clone, Copy)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x517c_c1b7_2722_0a95;
        let mut add = |word: u64| self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            add(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        for b in words.remainder() {
            add(u64::from(*b));
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One model's counters.
struct ModelRow {
    attempts: [AtomicU64; RESULTS],
    skips: [AtomicU64; SkipReason::ALL.len()],
    ttft: Histogram,
}

/// The counters of a running server.
pub(crate) struct Metrics {
    models: Vec<String>,
    index: HashMap<String, usize, BuildHasherDefault<KeyHasher>>,
    rows: Vec<ModelRow>,
    requests: [AtomicU64; Outcome::ALL.len()],
    duration: Histogram,
}

impl Metrics {
    /// Counters for `models` (every model the server may try).
    pub(crate) fn new<'a>(models: impl Iterator<Item = &'a str>) -> Metrics {
        let models: Vec<String> = models.map(str::to_string).collect();
        Metrics {
            index: models
                .iter()
                .enumerate()
                .map(|(i, m)| (m.clone(), i))
                .collect(),
            rows: models
                .iter()
                .map(|_| ModelRow {
                    attempts: std::array::from_fn(|_| AtomicU64::new(0)),
                    skips: std::array::from_fn(|_| AtomicU64::new(0)),
                    ttft: Histogram::new(&TTFT_BOUNDS_MS),
                })
                .collect(),
            models,
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            duration: Histogram::new(&DURATION_BOUNDS_MS),
        }
    }

    /// Counts a finished request: its outcome and duration, each attempt (a served one's
    /// latency, its time to first token) and each skip. Models not known at start (a
    /// set's stale member) are not counted.
    pub(crate) fn record(&self, t: &Trace) {
        self.requests[t.outcome as usize].fetch_add(1, Relaxed);
        self.duration.observe(t.wall_ms);
        for a in &t.attempts {
            let Some(row) = self.row(&a.model) else {
                continue;
            };
            let result = match (a.raced_out, a.kind) {
                (true, _) => AttemptResult::RacedOut,
                (false, Some(k)) => AttemptResult::Failed(k),
                (false, None) => {
                    row.ttft.observe(a.latency_ms);
                    AttemptResult::Ok
                }
            };
            row.attempts[result.index()].fetch_add(1, Relaxed);
        }
        for s in &t.skipped {
            if let Some(row) = self.row(&s.model) {
                row.skips[s.reason as usize].fetch_add(1, Relaxed);
            }
        }
    }

    fn row(&self, model: &str) -> Option<&ModelRow> {
        self.index.get(model).map(|&i| &self.rows[i])
    }

    /// Requests so far per outcome, every outcome (zeros too).
    pub(crate) fn requests(&self) -> impl Iterator<Item = (Outcome, u64)> + '_ {
        Outcome::ALL
            .into_iter()
            .map(|o| (o, self.requests[o as usize].load(Relaxed)))
    }

    /// Attempts so far per model and result: every result of the models `listed` says
    /// (zeros too, so that a rate sees their first attempt), and whatever happened to the
    /// others.
    pub(crate) fn attempts(
        &self,
        listed: impl Fn(&str) -> bool,
    ) -> Vec<(&str, AttemptResult, u64)> {
        let mut out = Vec::new();
        for (m, row) in self.models.iter().zip(&self.rows) {
            let all = listed(m);
            for (i, c) in row.attempts.iter().enumerate() {
                let n = c.load(Relaxed);
                if n > 0 || all {
                    out.push((m.as_str(), AttemptResult::of_index(i), n));
                }
            }
        }
        out
    }

    /// Skips so far per model and reason, as [`Metrics::attempts`] lists them.
    pub(crate) fn skips(&self, listed: impl Fn(&str) -> bool) -> Vec<(&str, SkipReason, u64)> {
        let mut out = Vec::new();
        for (m, row) in self.models.iter().zip(&self.rows) {
            let all = listed(m);
            for (reason, c) in SkipReason::ALL.into_iter().zip(&row.skips) {
                let n = c.load(Relaxed);
                if n > 0 || all {
                    out.push((m.as_str(), reason, n));
                }
            }
        }
        out
    }

    pub(crate) fn duration(&self) -> HistogramSnapshot {
        self.duration.snapshot()
    }

    /// Each model's time to first token: the models `listed` says, and any that served.
    pub(crate) fn ttft(&self, listed: impl Fn(&str) -> bool) -> Vec<(&str, HistogramSnapshot)> {
        self.models
            .iter()
            .zip(&self.rows)
            .map(|(m, row)| (m.as_str(), row.ttft.snapshot()))
            .filter(|(m, h)| h.count > 0 || listed(m))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::trace::{AttemptRecord, Skip};

    fn attempt(model: &str, kind: Option<FailureKind>, ms: u64) -> AttemptRecord {
        AttemptRecord {
            model: model.into(),
            status: Some(if kind.is_some() { 500 } else { 200 }),
            kind,
            latency_ms: ms,
            key: None,
            raced_out: false,
        }
    }

    #[test]
    fn enum_indexes_follow_declaration_order() {
        for (i, k) in FailureKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i);
            assert_eq!(AttemptResult::of_index(1 + i), AttemptResult::Failed(k));
        }
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(o as usize, i);
        }
        for (i, r) in SkipReason::ALL.into_iter().enumerate() {
            assert_eq!(r as usize, i);
        }
        for r in [AttemptResult::Ok, AttemptResult::RacedOut] {
            assert_eq!(AttemptResult::of_index(r.index()), r);
        }
    }

    #[test]
    fn a_trace_counts_once_per_outcome_attempt_and_skip() {
        let m = Metrics::new(["p/a", "p/b"].into_iter());
        let mut t = Trace::new("r1", "fcm", false);
        t.outcome = Outcome::Served;
        t.wall_ms = 700;
        t.attempts = vec![
            attempt("p/a", Some(FailureKind::ProviderServerError), 30),
            attempt("p/b", None, 120),
            attempt("gone/model", None, 5),
        ];
        t.skipped = vec![Skip::new("p/a", SkipReason::CircuitOpen)];
        m.record(&t);
        let mut failed = Trace::new("r2", "fcm", false);
        failed.outcome = Outcome::AllFailed;
        failed.wall_ms = 40;
        m.record(&failed);

        let requests: Vec<(Outcome, u64)> = m.requests().filter(|(_, n)| *n > 0).collect();
        assert_eq!(
            requests,
            [(Outcome::Served, 1), (Outcome::AllFailed, 1)],
            "every outcome is listed, zeros too"
        );
        assert_eq!(m.requests().count(), Outcome::ALL.len());
        let none = |_: &str| false;
        assert_eq!(
            m.attempts(none),
            [
                (
                    "p/a",
                    AttemptResult::Failed(FailureKind::ProviderServerError),
                    1
                ),
                ("p/b", AttemptResult::Ok, 1)
            ]
        );
        assert_eq!(m.skips(none), [("p/a", SkipReason::CircuitOpen, 1)]);
        let listed = |m: &str| m == "p/b";
        assert_eq!(
            m.attempts(listed).len(),
            RESULTS + 1,
            "every result of a listed model, zeros too"
        );
        assert_eq!(m.skips(listed).len(), SkipReason::ALL.len() + 1);
        assert_eq!(m.ttft(|m| m == "p/a").len(), 2);
        let d = m.duration();
        assert_eq!((d.count, d.sum_ms), (2, 740));
        assert_eq!(
            d.buckets[0],
            (Some(100), 1),
            "40 ms is under the first bound"
        );
        assert_eq!(d.buckets[3], (Some(1_000), 2), "cumulative");
        assert_eq!(*d.buckets.last().unwrap(), (None, 2));
        let ttft = m.ttft(none);
        assert_eq!(ttft.len(), 1, "only models that served: {ttft:?}");
        assert_eq!(ttft[0].0, "p/b");
        assert_eq!(ttft[0].1.buckets[1], (Some(100), 0));
        assert_eq!(
            ttft[0].1.buckets[2],
            (Some(200), 1),
            "120 ms counts under 200"
        );
    }

    #[test]
    fn a_value_on_a_bound_is_in_that_bucket() {
        let h = Histogram::new(&TTFT_BOUNDS_MS);
        h.observe(50);
        h.observe(0);
        h.observe(u64::MAX / 4);
        let s = h.snapshot();
        assert_eq!(s.buckets[0], (Some(50), 2));
        assert_eq!(s.buckets[TTFT_BOUNDS_MS.len() - 1].1, 2);
        assert_eq!(*s.buckets.last().unwrap(), (None, 3));
    }
}
