//! The counters behind `/metrics`: requests by outcome, attempts and skips by model, the
//! tokens each model's answers cost, what tool-result compression saved, a histogram of
//! request durations and one of each model's time to first token. Fed from the request
//! path without a lock or an allocation: fixed arrays of atomics, a row per model known
//! at start, indexed by the outcome, failure kind, skip reason and compression mode enums.
//! Which of these series a scrape writes (every model, or those with traffic) and the
//! gauges read from their owners (breakers, budgets, conversations) are the edge's.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::answers::classify::FailureKind;
use crate::compress::Mode;
use crate::state::histogram::{Histogram, HistogramSnapshot};
use crate::state::ledger::Tokens;
use crate::state::trace::{Outcome, SkipReason, Trace};

/// Upper bounds (µs) of the request duration buckets, from 1 ms: what fcm answers itself
/// and a fast local model take a few ms; then an agent's usual turn, a long stream, up to
/// the default failover budget (`totalBudgetMs`, 120 s) and past, in Prometheus's usual
/// 1-2.5-5 steps.
pub(crate) const DURATION_BOUNDS_US: [u64; 18] = [
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    20_000_000,
    30_000_000,
    60_000_000,
    120_000_000,
    300_000_000,
];

/// Upper bounds (µs) of the time to first token buckets: the fastest free providers answer
/// in tens of ms, and the first token timeout (`firstTokenTimeoutMs`) is 30 s by default.
pub(crate) const TTFT_BOUNDS_US: [u64; 11] = [
    50_000, 100_000, 200_000, 400_000, 800_000, 1_500_000, 3_000_000, 6_000_000, 12_000_000,
    20_000_000, 30_000_000,
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
    tokens: [AtomicU64; TokenKind::ALL.len()],
}

impl ModelRow {
    fn new() -> ModelRow {
        ModelRow {
            attempts: std::array::from_fn(|_| AtomicU64::new(0)),
            skips: std::array::from_fn(|_| AtomicU64::new(0)),
            ttft: Histogram::new(&TTFT_BOUNDS_US),
            tokens: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The tokens a model's answers cost, counted apart: `/metrics` writes one counter each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Prompt,
    Completion,
    /// Of the prompt, what the provider's cache served.
    CachedPrompt,
}

impl TokenKind {
    pub(crate) const ALL: [TokenKind; 3] = [
        TokenKind::Prompt,
        TokenKind::Completion,
        TokenKind::CachedPrompt,
    ];

    fn of(self, t: &Tokens) -> u64 {
        match self {
            TokenKind::Prompt => t.prompt,
            TokenKind::Completion => t.completion,
            TokenKind::CachedPrompt => t.cached,
        }
    }
}

/// What tool-result compression did in one mode.
#[derive(Default)]
struct CompressionRow {
    /// Requests holding tool results.
    requests: AtomicU64,
    /// Tokens (estimated) taken out of their tool results.
    saved_tokens: AtomicU64,
}

/// What tool-result compression did in one mode, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompressionCounts {
    pub(crate) mode: Mode,
    pub(crate) requests: u64,
    pub(crate) saved_tokens: u64,
}

/// The counters of a running server.
pub(crate) struct Metrics {
    models: Vec<String>,
    index: HashMap<String, usize, BuildHasherDefault<KeyHasher>>,
    rows: Vec<ModelRow>,
    requests: [AtomicU64; Outcome::ALL.len()],
    duration: Histogram,
    compression: [CompressionRow; Mode::ALL.len()],
}

/// One model's counters, as read by a scrape.
pub(crate) struct ModelCounters<'a> {
    pub(crate) model: &'a str,
    row: &'a ModelRow,
}

impl ModelCounters<'_> {
    /// Whether any attempt went to the model since the server started.
    pub(crate) fn attempted(&self) -> bool {
        self.row.attempts.iter().any(|c| c.load(Relaxed) > 0)
    }

    /// Attempts per result, every result (zeros too).
    pub(crate) fn attempts(&self) -> impl Iterator<Item = (AttemptResult, u64)> + '_ {
        self.row
            .attempts
            .iter()
            .enumerate()
            .map(|(i, c)| (AttemptResult::of_index(i), c.load(Relaxed)))
    }

    /// Skips per reason, only the reasons it was skipped for.
    pub(crate) fn skips(&self) -> impl Iterator<Item = (SkipReason, u64)> + '_ {
        SkipReason::ALL
            .into_iter()
            .zip(&self.row.skips)
            .map(|(r, c)| (r, c.load(Relaxed)))
            .filter(|(_, n)| *n > 0)
    }

    /// Time to first token of its attempts that served.
    pub(crate) fn ttft(&self) -> HistogramSnapshot {
        self.row.ttft.snapshot()
    }

    /// The tokens its answers cost, per kind.
    pub(crate) fn tokens(&self) -> impl Iterator<Item = (TokenKind, u64)> + '_ {
        TokenKind::ALL
            .into_iter()
            .zip(&self.row.tokens)
            .map(|(k, c)| (k, c.load(Relaxed)))
    }
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
            rows: models.iter().map(|_| ModelRow::new()).collect(),
            models,
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            duration: Histogram::new(&DURATION_BOUNDS_US),
            compression: std::array::from_fn(|_| CompressionRow::default()),
        }
    }

    /// Counts a finished request that took `wall`: its outcome and duration, each attempt
    /// (a served one's time to first token) and each skip. Models not known at start (a
    /// set's stale member) are not counted.
    pub(crate) fn record(&self, t: &Trace, wall: Duration) {
        self.requests[t.outcome as usize].fetch_add(1, Relaxed);
        self.duration.observe(wall);
        for a in &t.attempts {
            let Some(row) = self.row(&a.model) else {
                continue;
            };
            let result = match (a.raced_out, a.kind) {
                (true, _) => AttemptResult::RacedOut,
                (false, Some(k)) => AttemptResult::Failed(k),
                (false, None) => {
                    row.ttft.observe_ms(a.latency_ms);
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

    /// Counts the tokens one answer of `model` cost (whatever its end).
    pub(crate) fn tokens(&self, model: &str, t: &Tokens) {
        if let Some(row) = self.row(model) {
            for (kind, c) in TokenKind::ALL.into_iter().zip(&row.tokens) {
                c.fetch_add(kind.of(t), Relaxed);
            }
        }
    }

    /// Counts a request whose tool results went through compression in `mode`, and the
    /// tokens that took out of them.
    pub(crate) fn compressed(&self, mode: Mode, saved_tokens: u64) {
        let row = &self.compression[mode as usize];
        row.requests.fetch_add(1, Relaxed);
        row.saved_tokens.fetch_add(saved_tokens, Relaxed);
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

    pub(crate) fn duration(&self) -> HistogramSnapshot {
        self.duration.snapshot()
    }

    /// Every model's counters, in the order the server knows them.
    pub(crate) fn models(&self) -> impl Iterator<Item = ModelCounters<'_>> {
        self.models
            .iter()
            .zip(&self.rows)
            .map(|(model, row)| ModelCounters { model, row })
    }

    /// What compression did per mode that compresses (zeros too): `off` counts nothing.
    pub(crate) fn compression(&self) -> impl Iterator<Item = CompressionCounts> + '_ {
        Mode::ALL
            .into_iter()
            .filter(|m| *m != Mode::Off)
            .map(|mode| {
                let row = &self.compression[mode as usize];
                CompressionCounts {
                    mode,
                    requests: row.requests.load(Relaxed),
                    saved_tokens: row.saved_tokens.load(Relaxed),
                }
            })
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
        for (i, m) in Mode::ALL.into_iter().enumerate() {
            assert_eq!(m as usize, i);
        }
        for r in [AttemptResult::Ok, AttemptResult::RacedOut] {
            assert_eq!(AttemptResult::of_index(r.index()), r);
        }
    }

    #[test]
    fn a_trace_counts_once_per_outcome_attempt_and_skip() {
        let m = Metrics::new(["p/a", "p/b", "p/idle"].into_iter());
        let mut t = Trace::new("r1", "fcm", false);
        t.outcome = Outcome::Served;
        t.attempts = vec![
            attempt("p/a", Some(FailureKind::ProviderServerError), 30),
            attempt("p/b", None, 120),
            attempt("gone/model", None, 5),
        ];
        t.skipped = vec![Skip::new("p/a", SkipReason::CircuitOpen)];
        m.record(&t, Duration::from_micros(700_000));
        let mut failed = Trace::new("r2", "fcm", false);
        failed.outcome = Outcome::AllFailed;
        m.record(&failed, Duration::from_micros(1_700));

        let requests: Vec<(Outcome, u64)> = m.requests().filter(|(_, n)| *n > 0).collect();
        assert_eq!(
            requests,
            [(Outcome::Served, 1), (Outcome::AllFailed, 1)],
            "every outcome is listed, zeros too"
        );
        assert_eq!(m.requests().count(), Outcome::ALL.len());
        let models: Vec<ModelCounters> = m.models().collect();
        let [a, b, idle] = &models[..] else {
            panic!("three models")
        };
        assert!(a.attempted() && b.attempted() && !idle.attempted());
        let nonzero = |c: &ModelCounters| -> Vec<(AttemptResult, u64)> {
            c.attempts().filter(|(_, n)| *n > 0).collect()
        };
        assert_eq!(
            nonzero(a),
            [(AttemptResult::Failed(FailureKind::ProviderServerError), 1)]
        );
        assert_eq!(nonzero(b), [(AttemptResult::Ok, 1)]);
        assert_eq!(b.attempts().count(), RESULTS, "every result, zeros too");
        assert_eq!(
            a.skips().collect::<Vec<_>>(),
            [(SkipReason::CircuitOpen, 1)],
            "only the reasons it was skipped for"
        );
        assert_eq!(b.skips().count(), 0);
        let d = m.duration();
        assert_eq!((d.count, d.sum_us), (2, 701_700));
        assert_eq!(d.buckets[0], (Some(1_000), 0), "1.7 ms is past 1 ms");
        assert_eq!(d.buckets[1], (Some(2_500), 1));
        assert_eq!(d.buckets[9], (Some(1_000_000), 2), "cumulative");
        assert_eq!(*d.buckets.last().unwrap(), (None, 2));
        assert_eq!(a.ttft().count, 0, "a failure has no first token");
        let ttft = b.ttft();
        assert_eq!(ttft.count, 1);
        assert_eq!(ttft.buckets[1], (Some(100_000), 0));
        assert_eq!(
            ttft.buckets[2],
            (Some(200_000), 1),
            "120 ms counts under 200"
        );
    }

    #[test]
    fn tokens_and_compression_count_apart() {
        let m = Metrics::new(["p/a"].into_iter());
        let t = Tokens {
            prompt: 1_000,
            completion: 50,
            cached: 600,
            estimated: 0,
        };
        m.tokens("p/a", &t);
        m.tokens("p/a", &t);
        m.tokens("gone/model", &t);
        let a = m.models().next().unwrap();
        assert_eq!(
            a.tokens().collect::<Vec<_>>(),
            [
                (TokenKind::Prompt, 2_000),
                (TokenKind::Completion, 100),
                (TokenKind::CachedPrompt, 1_200)
            ]
        );
        m.compressed(Mode::Lossless, 300);
        m.compressed(Mode::Lossless, 0);
        let c: Vec<(Mode, u64, u64)> = m
            .compression()
            .map(|c| (c.mode, c.requests, c.saved_tokens))
            .collect();
        assert_eq!(c, [(Mode::Lossless, 2, 300), (Mode::Aggressive, 0, 0)]);
    }
}
