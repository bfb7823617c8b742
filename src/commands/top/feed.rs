//! Where `fcm top`'s snapshots come from: a thread that asks the running server (found
//! through `serve.json`, with the access token every command sends) for
//! `/fcm/admin/live?since=N` once a period, or, when none runs or it does not answer,
//! reads what fcm knows without one: the catalog's routable models with `breakers.json`,
//! `bench.json` and the last entries of `history.json`. It also sends the last bench's
//! figures and the pins in config.json when their files change. State files are only read
//! here, never moved aside: a viewer leaves a corrupt file to the commands that own it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use serde::de::DeserializeOwned;

use crate::commands::admin::admin_get;
use crate::commands::Setup;
use crate::edge::live::{Decision, Live, LiveModel};
use crate::routing::{Evidence, EvidenceFrom, ModelStatus};
use crate::state::bench_file::BenchReport;
use crate::state::breaker::{rows, BreakerBook};
use crate::state::config::Config;
use crate::state::files;
use crate::state::serve_info::live_server;
use crate::state::trace::HistoryFile;

use super::board::{BenchFigures, Pins, Snapshot, PIN_SET};

/// Decisions read from `history.json` when no server runs.
const OFFLINE_DECISIONS: usize = 50;

/// What the feed thread sends.
pub(crate) enum Update {
    Snapshot(Box<Snapshot>),
    /// The last bench's figures and when it ran (`bench.json` changed).
    Bench(HashMap<String, BenchFigures>, Option<String>),
    /// config.json's pins changed.
    Pins(Pins),
    /// An action's result for the bottom line.
    Message(String),
}

/// The running feed: updates come in on `updates`; `poke` asks for a snapshot now.
pub(crate) struct Feed {
    pub(crate) updates: Receiver<Update>,
    /// For actions that report later (starting a server).
    pub(crate) sender: Sender<Update>,
    poke: Sender<()>,
}

impl Feed {
    /// Starts the thread, which asks every `period` (and when poked) until the feed is
    /// dropped.
    pub(crate) fn start(setup: Arc<Setup>, period: Duration) -> Feed {
        let (tx, rx) = mpsc::channel();
        let (poke, poked) = mpsc::channel();
        let sender = tx.clone();
        std::thread::Builder::new()
            .name("fcm-top-feed".into())
            .spawn(move || run(&setup, period, &tx, &poked))
            .expect("a thread starts");
        Feed {
            updates: rx,
            sender,
            poke,
        }
    }

    /// Asks for a snapshot now (after an action).
    pub(crate) fn poke(&self) {
        let _ = self.poke.send(());
    }
}

/// A file's modification time, to notice changes.
fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// A state file's contents, or `None` when it is missing or unreadable.
fn read_json<T: DeserializeOwned>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Watches one file: `changed` says whether it changed since the last call.
struct Watched {
    path: Option<PathBuf>,
    seen: Option<Option<SystemTime>>,
}

impl Watched {
    fn new(name: &str) -> Watched {
        Watched {
            path: files::state_file(name).ok(),
            seen: None,
        }
    }

    fn changed(&mut self) -> Option<&Path> {
        let path = self.path.as_deref()?;
        let now = modified(path);
        if self.seen == Some(now) {
            return None;
        }
        self.seen = Some(now);
        Some(path)
    }
}

fn run(setup: &Setup, period: Duration, tx: &Sender<Update>, poked: &Receiver<()>) {
    let mut seq = 0;
    let mut pid = None;
    let mut bench = Watched::new("bench.json");
    let mut config = Watched::new("config.json");
    loop {
        if let Some(path) = bench.changed() {
            let (figures, at) = bench_figures(path);
            if tx.send(Update::Bench(figures, at)).is_err() {
                return;
            }
        }
        if let Some(path) = config.changed() {
            if tx.send(Update::Pins(pins(path))).is_err() {
                return;
            }
        }
        let snapshot = match live_server() {
            Some(info) => {
                if pid != Some(info.pid) {
                    (seq, pid) = (0, Some(info.pid));
                }
                let asked = admin_get(&info, setup, &format!("/fcm/admin/live?since={seq}"))
                    .and_then(|v| {
                        serde_json::from_value::<Live>(v)
                            .context("the server's live view is not what this fcm reads")
                    });
                match asked {
                    Ok(live) => {
                        seq = live.seq;
                        Snapshot {
                            server: Some(live.server),
                            models: live.models,
                            active_set: live.active_set,
                            decisions: live.decisions,
                            note: None,
                            server_recorded: true,
                            replace_decisions: false,
                        }
                    }
                    Err(e) => offline(setup, format!("{e:#}"), true),
                }
            }
            None => {
                pid = None;
                offline(setup, "no fcm serve is running".into(), false)
            }
        };
        if tx.send(Update::Snapshot(Box::new(snapshot))).is_err() {
            return;
        }
        match poked.recv_timeout(period) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn bench_figures(path: &Path) -> (HashMap<String, BenchFigures>, Option<String>) {
    let Some(report) = read_json::<BenchReport>(path) else {
        return (HashMap::new(), None);
    };
    let figures = report
        .models
        .iter()
        .filter(|m| m.pings > 0)
        .map(|m| {
            let f = BenchFigures {
                success_rate: m.success_rate,
                ttft_ms: m.ttft_ms_p50,
            };
            (m.model.clone(), f)
        })
        .collect();
    (figures, Some(report.generated_at))
}

/// The members of set `top` and the active set, as config.json says now.
pub(crate) fn pins(path: &Path) -> Pins {
    let Ok(loaded) = Config::load(path) else {
        return Pins::default();
    };
    let router = loaded.config.router;
    Pins {
        pinned: router
            .sets
            .get(PIN_SET)
            .map(|s| s.members().to_vec())
            .unwrap_or_default(),
        active_set: router.active_set,
    }
}

/// What fcm knows without a server: the routable models of the catalog, their breakers
/// as `breakers.json` left them, the last bench's evidence, and the last decisions.
fn offline(setup: &Setup, note: String, server_recorded: bool) -> Snapshot {
    let now = crate::time::now_ms();
    let path = |name: &str| files::state_file(name).ok();
    let cfg = &setup.config.router.breaker;
    let mut book: BreakerBook = path("breakers.json")
        .and_then(|p| read_json(&p))
        .unwrap_or_default();
    book.clamp(now, cfg);
    let breakers: HashMap<String, _> = rows(&book, now, cfg)
        .into_iter()
        .map(|r| (r.model.clone(), r))
        .collect();
    let bench: HashMap<String, crate::state::bench_file::ModelResult> = path("bench.json")
        .and_then(|p| read_json::<BenchReport>(&p))
        .map(|r| r.models.into_iter().map(|m| (m.model.clone(), m)).collect())
        .unwrap_or_default();
    let keys = setup.keys();
    let mut models = Vec::new();
    for p in &setup.catalog.providers {
        if p.key_required && keys.keys(p).is_empty() {
            continue;
        }
        for m in &p.models {
            let key = format!("{}/{}", p.id, m.id);
            let row = breakers.get(&key);
            let b = bench.get(&key).filter(|b| b.pings > 0);
            let (evidence, evidence_from) = match b {
                Some(b) if b.usable => (Evidence::Proven, EvidenceFrom::Bench),
                Some(_) => (Evidence::Failing, EvidenceFrom::Bench),
                None => (Evidence::Unknown, EvidenceFrom::None),
            };
            models.push(LiveModel {
                status: ModelStatus {
                    rank: b.map(|b| b.rank),
                    ranked_ttft_ms: b.and_then(|b| b.ttft_ms_p50),
                    ..ModelStatus::of(key.clone(), p.id.clone(), row, evidence, evidence_from)
                },
                tier: m.tier.clone(),
                label: if m.label.is_empty() {
                    key
                } else {
                    m.label.clone()
                },
            });
        }
    }
    close_rank_gaps(&mut models);
    let history: HistoryFile = path("history.json")
        .and_then(|p| read_json(&p))
        .unwrap_or_default();
    let skip = history.entries.len().saturating_sub(OFFLINE_DECISIONS);
    let decisions = history
        .entries
        .into_iter()
        .enumerate()
        .skip(skip)
        .map(|(i, trace)| Decision {
            seq: i as u64 + 1,
            trace,
        })
        .collect();
    Snapshot {
        server: None,
        models,
        active_set: None,
        decisions,
        note: Some(note),
        server_recorded,
        replace_decisions: true,
    }
}

/// Numbers the models shown 1, 2, 3... in the order of the ranks they carry. The last bench
/// ranked every model it knew, those without a key too, and those are not shown here.
fn close_rank_gaps(models: &mut [LiveModel]) {
    let mut ranked: Vec<&mut LiveModel> = models
        .iter_mut()
        .filter(|m| m.status.rank.is_some())
        .collect();
    ranked.sort_by_key(|m| m.status.rank);
    for (place, m) in ranked.into_iter().enumerate() {
        m.status.rank = Some(place + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_of_the_models_shown_run_without_gaps() {
        let model = |key: &str, rank: Option<usize>| LiveModel {
            status: ModelStatus {
                rank,
                ..ModelStatus::of(
                    key.into(),
                    "p".into(),
                    None,
                    Evidence::Unknown,
                    EvidenceFrom::None,
                )
            },
            tier: "A".into(),
            label: key.into(),
        };
        let mut models = vec![
            model("p/c", Some(14)),
            model("p/never-benched", None),
            model("p/a", Some(2)),
            model("p/b", Some(5)),
        ];
        close_rank_gaps(&mut models);
        let ranks: Vec<(&str, Option<usize>)> = models
            .iter()
            .map(|m| (m.status.model.as_str(), m.status.rank))
            .collect();
        assert_eq!(
            ranks,
            [
                ("p/c", Some(3)),
                ("p/never-benched", None),
                ("p/a", Some(1)),
                ("p/b", Some(2))
            ]
        );
    }
}
