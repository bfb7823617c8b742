//! What the router knows of each model's recent performance: a rolling window of real
//! results per model, and the last bench run (`bench.json`) as the prior until there is
//! enough real traffic, and the one word on which models call tools. The bench file is read
//! by [`LiveEvidence::refresh_bench`], which the server calls from a timer thread: nothing here
//! touches the disk on a request's path.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use crate::state::bench_file::BenchReport;

use crate::routing::rank::{Evidence, FAILING, PROVEN, UNKNOWN};

use super::silence::Silence;

/// Results a model's ranking learns from.
pub(crate) const LIVE_WINDOW: usize = 20;
/// Results needed before real traffic outweighs the bench prior.
pub(crate) const LIVE_MIN: usize = 3;

/// A model's last [`LIVE_WINDOW`] real results (time to first answer, or a failure) and the
/// ranking they give, worked out when a result arrives: every request reads it for every
/// candidate, results arrive once per attempt.
#[derive(Debug, Default, Clone)]
pub(crate) struct LiveWindow {
    results: VecDeque<Option<u64>>,
    rank: Option<(Evidence, Option<u64>)>,
}

impl LiveWindow {
    pub(crate) fn push(&mut self, result: Option<u64>) {
        if self.results.len() == LIVE_WINDOW {
            self.results.pop_front();
        }
        self.results.push_back(result);
        self.rank = self.compute_rank();
    }

    /// (evidence, median ttft) for ranking, as for bench results: proven when at least 80%
    /// of recent requests succeeded, unknown from half, else failing. `None` until there are
    /// enough results.
    pub(crate) fn rank(&self) -> Option<(Evidence, Option<u64>)> {
        self.rank
    }

    /// The slowest of the recent successful starts (about a 95th percentile), once there
    /// are [`LIVE_MIN`] of them.
    pub(crate) fn slowest(&self) -> Option<u64> {
        let ok = self.results.iter().flatten();
        (ok.clone().count() >= LIVE_MIN)
            .then(|| ok.copied().max())
            .flatten()
    }

    fn compute_rank(&self) -> Option<(Evidence, Option<u64>)> {
        if self.results.len() < LIVE_MIN {
            return None;
        }
        // On the stack: this runs after every attempt.
        let mut ok = [0u64; LIVE_WINDOW];
        let mut n = 0;
        for t in self.results.iter().flatten() {
            ok[n] = *t;
            n += 1;
        }
        let ok = &mut ok[..n];
        ok.sort_unstable();
        let rate = n as f64 / self.results.len() as f64;
        let evidence = if rate >= 0.8 {
            PROVEN
        } else if rate >= 0.5 {
            UNKNOWN
        } else {
            FAILING
        };
        Some((evidence, ok.get(n.saturating_sub(1) / 2).copied()))
    }
}

/// A window's ranking packed into one word, so requests read it without a lock:
/// 0 is "not enough results", else `(evidence + 1) << 56 | (ttft + 1)` (ttft 0: none).
fn pack(rank: Option<(Evidence, Option<u64>)>) -> u64 {
    match rank {
        None => 0,
        Some((evidence, ttft)) => {
            let ttft = ttft.map_or(0, |t| t.min(TTFT_MASK - 1) + 1);
            (evidence as u64 + 1) << 56 | ttft
        }
    }
}

fn unpack(word: u64) -> Option<(Evidence, Option<u64>)> {
    if word == 0 {
        return None;
    }
    let ttft = word & TTFT_MASK;
    let evidence = match (word >> 56) - 1 {
        0 => Evidence::Proven,
        1 => Evidence::Unknown,
        _ => Evidence::Failing,
    };
    Some((evidence, ttft.checked_sub(1)))
}

const TTFT_MASK: u64 = (1 << 56) - 1;

/// What the last bench run said of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BenchEntry {
    usable: bool,
    ttft_ms: Option<u64>,
    /// Its tool pings proved it calls tools ([`crate::state::bench_file::proves_tool_calls`]).
    calls_tools: bool,
}

/// The last bench run, by model.
type BenchPrior = HashMap<String, BenchEntry>;

/// Live windows and the bench prior, shared by every request.
pub(crate) struct LiveEvidence {
    /// Each model's position in `windows` and `ranks`.
    index: HashMap<String, usize>,
    windows: Vec<Mutex<LiveWindow>>,
    /// Each window's ranking, [`pack`]ed: what requests read.
    ranks: Vec<AtomicU64>,
    /// Each model's first-token deadline, and the silent ones.
    silence: Silence,
    bench: RwLock<Arc<BenchPrior>>,
    /// `bench.json` and the modification time of the version loaded.
    bench_file: Mutex<(Option<PathBuf>, Option<SystemTime>)>,
}

impl LiveEvidence {
    /// Windows for `models`; loads `bench.json` once (before the server takes requests).
    pub(crate) fn new<'a>(
        models: impl Iterator<Item = &'a str>,
        bench_path: Option<PathBuf>,
    ) -> LiveEvidence {
        let index: HashMap<String, usize> = models
            .enumerate()
            .map(|(i, m)| (m.to_string(), i))
            .collect();
        let evidence = LiveEvidence {
            windows: (0..index.len()).map(|_| Mutex::default()).collect(),
            ranks: (0..index.len()).map(|_| AtomicU64::new(0)).collect(),
            silence: Silence::new(index.len()),
            index,
            bench: RwLock::new(Arc::new(HashMap::new())),
            bench_file: Mutex::new((bench_path, None)),
        };
        evidence.refresh_bench();
        evidence
    }

    /// Reloads `bench.json` when it changed since the last load. Called off the request
    /// path (a timer thread); requests keep ranking with the previous version meanwhile.
    pub(crate) fn refresh_bench(&self) {
        let (path, loaded) = self
            .bench_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(path) = path else { return };
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        if modified == loaded {
            return;
        }
        let fresh = Arc::new(load_bench(&path));
        *self.bench.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        self.bench_file.lock().unwrap_or_else(|e| e.into_inner()).1 = modified;
    }

    /// What ranking reads for one request: the bench prior as it is now, and the live
    /// rankings, read without a lock.
    pub(crate) fn view(&self) -> EvidenceView<'_> {
        EvidenceView {
            evidence: self,
            bench: self.bench.read().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }

    /// Empties one model's window, or every window: the bench prior decides again.
    pub(crate) fn forget(&self, model: Option<&str>) {
        for (key, &i) in &self.index {
            if model.is_none_or(|m| m == key) {
                *self.windows[i].lock().unwrap_or_else(|e| e.into_inner()) = LiveWindow::default();
                self.ranks[i].store(0, Ordering::Release);
                self.silence.forget(i);
            }
        }
    }

    /// The model's recent real results, oldest first (`None`: a failure): the dashboard's
    /// sparkline.
    pub(crate) fn recent(&self, model: &str) -> Vec<Option<u64>> {
        self.index.get(model).map_or_else(Vec::new, |&i| {
            let window = self.windows[i].lock().unwrap_or_else(|e| e.into_inner());
            window.results.iter().copied().collect()
        })
    }

    /// Whether the model answered at least once lately (a success in its window), or its
    /// last bench found it usable.
    pub(crate) fn has_answered(&self, model: &str) -> bool {
        let live = self.index.get(model).is_some_and(|&i| {
            let window = self.windows[i].lock().unwrap_or_else(|e| e.into_inner());
            window.results.iter().any(Option::is_some)
        });
        live || self
            .bench
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(model)
            .is_some_and(|b| b.usable)
    }

    /// Adds a real result to the model's window (`None`: a failure).
    pub(crate) fn observe(&self, model: &str, ttft_ms: Option<u64>) {
        let Some(&i) = self.index.get(model) else {
            return;
        };
        let mut window = self.windows[i].lock().unwrap_or_else(|e| e.into_inner());
        window.push(ttft_ms);
        self.ranks[i].store(pack(window.rank()), Ordering::Release);
        if ttft_ms.is_some() {
            self.silence.heard(i, window.slowest());
        }
    }

    /// The model missed its first-token deadline: silent, behind every responsive model
    /// until it is heard again.
    pub(crate) fn fell_silent(&self, model: &str, now: u64) {
        if let Some(&i) = self.index.get(model) {
            self.silence.missed(i, now);
        }
    }

    /// Silent models due a probe at `now`.
    pub(crate) fn silent_due(&self, now: u64) -> Vec<String> {
        let mut due: Vec<String> = self
            .index
            .iter()
            .filter(|(_, &i)| self.silence.due(i, now))
            .map(|(m, _)| m.clone())
            .collect();
        due.sort();
        due
    }

    /// How long `model` may take to send its first token on a prompt of `prompt_tokens`,
    /// at most `ceiling` (see `silence`).
    pub(crate) fn first_token(
        &self,
        model: &str,
        prompt_tokens: u64,
        ceiling: Duration,
    ) -> Duration {
        match self.index.get(model) {
            Some(&i) => self.silence.first_token(i, prompt_tokens, ceiling),
            None => ceiling,
        }
    }
}

/// What one request's ranking reads.
pub(crate) struct EvidenceView<'a> {
    evidence: &'a LiveEvidence,
    bench: Arc<BenchPrior>,
}

impl EvidenceView<'_> {
    /// (evidence, median ttft): real traffic first; the last bench run is the prior until
    /// there is enough of it; a model never benched is unknown.
    pub(crate) fn of(&self, model: &str) -> (Evidence, Option<u64>) {
        let at = self.evidence.index.get(model).copied();
        // Silent: behind every model that answers, until it is heard again.
        if at.is_some_and(|i| self.evidence.silence.is_silent(i)) {
            return (FAILING, None);
        }
        let live = at.and_then(|i| unpack(self.evidence.ranks[i].load(Ordering::Acquire)));
        match live {
            Some(ranked) => ranked,
            None => match self.bench.get(model) {
                Some(b) if b.usable => (PROVEN, b.ttft_ms),
                Some(_) => (FAILING, None),
                None => (UNKNOWN, None),
            },
        }
    }

    /// Whether the last bench proved the model calls tools, and it is not failing now: a
    /// model that broke since its bench loses the head of the line with its ranking.
    pub(crate) fn proves_tool_calls(&self, model: &str) -> bool {
        self.bench.get(model).is_some_and(|b| b.calls_tools) && self.of(model).0 != FAILING
    }
}

fn load_bench(path: &Path) -> BenchPrior {
    let report: BenchReport = crate::state::files::load_json(path).unwrap_or_default();
    report
        .models
        .into_iter()
        // A model the bench did not contact (no key, over budget) proved nothing either way.
        .filter(|m| m.pings > 0)
        .map(|m| {
            let entry = BenchEntry {
                usable: m.usable,
                ttft_ms: m.ttft_ms_p50,
                calls_tools: m.proves_tool_calls(),
            };
            (m.model, entry)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_window_ranks_by_recent_results() {
        let mut w = LiveWindow::default();
        w.push(Some(100));
        w.push(Some(300));
        assert_eq!(w.rank(), None, "too few results: the bench prior decides");
        w.push(Some(200));
        assert_eq!(w.rank(), Some((PROVEN, Some(200))));
        for _ in 0..20 {
            w.push(None);
        }
        assert_eq!(
            w.rank(),
            Some((FAILING, None)),
            "failing now: ranked with the unusable"
        );
        for _ in 0..20 {
            w.push(Some(50));
        }
        assert_eq!(w.rank(), Some((PROVEN, Some(50))), "recovered: climbs back");
    }

    #[test]
    fn forgetting_a_model_gives_it_back_to_the_bench_prior() {
        let e = LiveEvidence::new(["p/a", "p/b"].into_iter(), None);
        for _ in 0..3 {
            e.observe("p/a", None);
            e.observe("p/b", None);
        }
        assert_eq!(e.view().of("p/a"), (FAILING, None));
        e.forget(Some("p/a"));
        assert_eq!(
            e.view().of("p/a"),
            (UNKNOWN, None),
            "a reset model is not kept at the back"
        );
        assert_eq!(
            e.view().of("p/b"),
            (FAILING, None),
            "the others keep their record"
        );
        e.forget(None);
        assert_eq!(e.view().of("p/b"), (UNKNOWN, None));
    }

    #[test]
    fn rankings_pack_into_a_word() {
        for rank in [
            None,
            Some((PROVEN, Some(0))),
            Some((FAILING, None)),
            Some((UNKNOWN, Some(123_456))),
        ] {
            assert_eq!(unpack(pack(rank)), rank);
        }
    }

    #[test]
    fn bench_prior_until_live_results_and_reload_on_change() {
        let dir = std::env::temp_dir().join(format!("fcm-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bench.json");
        let write = |usable: bool| {
            let report = serde_json::json!({"generatedAt": "x", "models": [
                {"rank": 1, "model": "p/m", "provider": "p", "label": "M", "tier": "A",
                 "usable": usable, "verdict": "perfect", "pings": 2, "successes": 2,
                 "successRate": 1.0, "ttftMsP50": 40, "measuredAt": "x",
                 "toolPings": 1, "toolCalls": 1}]});
            std::fs::write(&path, report.to_string()).unwrap();
        };
        write(true);
        let e = LiveEvidence::new(["p/m"].into_iter(), Some(path.clone()));
        assert_eq!(e.view().of("p/m"), (PROVEN, Some(40)));
        assert_eq!(e.view().of("p/other"), (UNKNOWN, None));
        assert!(e.view().proves_tool_calls("p/m"));
        assert!(!e.view().proves_tool_calls("p/other"));
        // A newer file is picked up by the refresh, not by a request.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write(false);
        let t = SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_eq!(e.view().of("p/m"), (PROVEN, Some(40)));
        e.refresh_bench();
        assert_eq!(e.view().of("p/m"), (FAILING, None));
        assert!(
            !e.view().proves_tool_calls("p/m"),
            "a proof is void while the model fails"
        );
        for _ in 0..3 {
            e.observe("p/m", Some(7));
        }
        assert_eq!(e.view().of("p/m"), (PROVEN, Some(7)), "live traffic wins");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
