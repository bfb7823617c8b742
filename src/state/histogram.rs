//! A histogram of durations for `/metrics`: fixed bucket bounds, a count per bucket and a
//! sum, all atomics, so an observation on the request path takes no lock and allocates
//! nothing. Durations are kept in microseconds: the proxy's own answers take a millisecond
//! or two, and whole milliseconds would put most of them on a bucket's edge. How the
//! buckets are written (seconds, cumulative, `+Inf`) is the exposition's business.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Microseconds in a millisecond, for bounds written in ms.
const US_PER_MS: u64 = 1_000;

/// A histogram of durations with fixed bucket bounds (µs).
pub(crate) struct Histogram {
    bounds: &'static [u64],
    /// Per bucket (not cumulative), the last one past every bound (`+Inf`).
    counts: Box<[AtomicU64]>,
    sum_us: AtomicU64,
}

/// A histogram as read: cumulative counts per bound in µs (`None`: `+Inf`), the sum (µs)
/// and the count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistogramSnapshot {
    pub(crate) buckets: Vec<(Option<u64>, u64)>,
    pub(crate) sum_us: u64,
    pub(crate) count: u64,
}

impl Histogram {
    /// A histogram whose buckets end at `bounds_us`, rising.
    pub(crate) fn new(bounds_us: &'static [u64]) -> Histogram {
        debug_assert!(bounds_us.windows(2).all(|w| w[0] < w[1]));
        Histogram {
            bounds: bounds_us,
            counts: (0..=bounds_us.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_us: AtomicU64::new(0),
        }
    }

    pub(crate) fn observe(&self, d: Duration) {
        self.observe_us(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    pub(crate) fn observe_ms(&self, ms: u64) {
        self.observe_us(ms.saturating_mul(US_PER_MS));
    }

    fn observe_us(&self, us: u64) {
        // The first bound at or above `us`: Prometheus buckets count values `<= le`.
        let i = self.bounds.partition_point(|b| *b < us);
        self.counts[i].fetch_add(1, Relaxed);
        self.sum_us.fetch_add(us, Relaxed);
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
            sum_us: self.sum_us.load(Relaxed),
            count: total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BOUNDS: [u64; 3] = [1_000, 5_000, 50_000];

    #[test]
    fn a_value_on_a_bound_is_in_that_bucket_and_counts_are_cumulative() {
        let h = Histogram::new(&BOUNDS);
        for us in [0, 999, 1_000, 1_001, 4_999, 50_001] {
            h.observe(Duration::from_micros(us));
        }
        h.observe_ms(5);
        let s = h.snapshot();
        assert_eq!(
            s.buckets,
            [
                (Some(1_000), 3),
                (Some(5_000), 6),
                (Some(50_000), 6),
                (None, 7)
            ]
        );
        assert_eq!((s.sum_us, s.count), (63_000, 7));
    }

    #[test]
    fn huge_values_land_past_every_bound() {
        let h = Histogram::new(&BOUNDS);
        h.observe(Duration::MAX);
        h.observe_ms(u64::MAX);
        assert_eq!(*h.snapshot().buckets.last().unwrap(), (None, 2));
        assert_eq!(h.snapshot().buckets[2].1, 0);
    }
}
