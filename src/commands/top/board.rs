//! `fcm top`'s state between frames ([`Board`]): the latest [`Snapshot`], the decisions seen
//! so far, the last bench's figures, the pins in config.json, and what the user chose
//! (sort column and order, filter, selected model, help); and what a key does to it
//! ([`Board::key`], which returns the [`Action`] for the terminal loop to carry out). Pure:
//! no terminal, no I/O; `screen` draws it.

use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::edge::live::{ActiveSet, Decision, LiveModel, ServerLine};
use crate::routing::{Evidence, EvidenceFrom};
use crate::state::breaker::BreakerState;

/// Decisions kept for the feed: a few screens.
pub(crate) const KEEP_DECISIONS: usize = 200;
/// The set pinning edits (`router.sets.top`).
pub(crate) const PIN_SET: &str = "top";

/// What a feed delivers once a second: the running server's view, or what fcm knows
/// without one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// `None`: no server answered.
    pub(crate) server: Option<ServerLine>,
    pub(crate) models: Vec<LiveModel>,
    pub(crate) active_set: Option<ActiveSet>,
    /// Decisions new since the last snapshot, oldest first.
    pub(crate) decisions: Vec<Decision>,
    /// Why there is no live view (no server; one that refused or did not answer).
    pub(crate) note: Option<String>,
    /// A server's record names a live process (it may still refuse us).
    pub(crate) server_recorded: bool,
    /// `decisions` are the whole feed (read from `history.json`), not new ones.
    pub(crate) replace_decisions: bool,
}

/// What the last bench said of a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BenchFigures {
    pub(crate) success_rate: f64,
    pub(crate) ttft_ms: Option<u64>,
}

/// The pins as config.json has them: the members of set `top` and the active set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pins {
    pub(crate) pinned: Vec<String>,
    pub(crate) active_set: Option<String>,
}

/// A column of the models table, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Rank,
    Model,
    Tier,
    State,
    Left,
    Evidence,
    Ttft,
    Success,
    Budget,
    Conversations,
    Pin,
}

impl Column {
    pub(crate) const ALL: [Column; 11] = [
        Column::Rank,
        Column::Model,
        Column::Tier,
        Column::State,
        Column::Left,
        Column::Evidence,
        Column::Ttft,
        Column::Success,
        Column::Budget,
        Column::Conversations,
        Column::Pin,
    ];

    pub(crate) fn title(self) -> &'static str {
        match self {
            Column::Rank => "#",
            Column::Model => "Model",
            Column::Tier => "Tier",
            Column::State => "State",
            Column::Left => "Left",
            Column::Evidence => "Evidence",
            Column::Ttft => "TTFT",
            Column::Success => "Success",
            Column::Budget => "Budget",
            Column::Conversations => "Conv",
            Column::Pin => "Pin",
        }
    }

    /// What the help screen says the column shows.
    pub(crate) fn meaning(self) -> &'static str {
        match self {
            Column::Rank => "place in the order model \"fcm\" would try now (- : skipped)",
            Column::Model => "provider/modelId",
            Column::Tier => "the catalog's coding tier (S+ best)",
            Column::State => "breaker: CLOSED, DEGRADED, HALF_OPEN, OPEN; PAUSED for a pause",
            Column::Left => {
                "cooldown or pause left, and why (quota, overload, notice, gone); else a skip"
            }
            Column::Evidence => "proven / unknown / failing, from live traffic or the bench",
            Column::Ttft => "median time to first token (b: from the last bench)",
            Column::Success => "share of the last 20 requests served (b: bench)",
            Column::Budget => "requests left today (of the daily limit), or tokens",
            Column::Conversations => "conversations held by this model",
            Column::Pin => "* pinned in set \"top\"; set: in the server's active set",
        }
    }
}

/// What a key asks the terminal loop to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    None,
    Quit,
    /// Reset this model's breaker.
    Reset(String),
    /// Pin or unpin this model.
    TogglePin(String),
    /// Start `fcm serve --detach`.
    StartServer,
}

/// Everything a frame shows.
#[derive(Debug, Clone)]
pub(crate) struct Board {
    pub(crate) snapshot: Snapshot,
    /// Newest last.
    pub(crate) decisions: VecDeque<Decision>,
    pub(crate) bench: HashMap<String, BenchFigures>,
    /// When the last bench ran.
    pub(crate) bench_at: Option<String>,
    pub(crate) pins: Pins,
    pub(crate) sort: Column,
    /// The sort column's order turned around.
    pub(crate) inverted: bool,
    pub(crate) filter: String,
    /// Keys go to the filter.
    pub(crate) editing_filter: bool,
    /// The selected model's key.
    pub(crate) selected: Option<String>,
    pub(crate) help: bool,
    /// The last action's result, shown on the bottom line.
    pub(crate) message: Option<String>,
    /// A snapshot has arrived.
    pub(crate) loaded: bool,
}

impl Default for Board {
    fn default() -> Board {
        Board {
            snapshot: Snapshot::default(),
            decisions: VecDeque::new(),
            bench: HashMap::new(),
            bench_at: None,
            pins: Pins::default(),
            sort: Column::Rank,
            inverted: false,
            filter: String::new(),
            editing_filter: false,
            selected: None,
            help: false,
            message: None,
            loaded: false,
        }
    }
}

/// Tiers from the best; unknown ones after.
const TIERS: [&str; 8] = ["S+", "S", "A+", "A", "A-", "B+", "B", "C"];

/// How bad a model's state is, worst highest: what sorting by State puts first.
pub(crate) fn severity(m: &LiveModel) -> u8 {
    match m.status.state {
        BreakerState::Open => 4,
        BreakerState::HalfOpen => 3,
        _ if m.status.pause_ms_left > 0 => 2,
        BreakerState::Degraded => 1,
        BreakerState::Closed => 0,
    }
}

impl Board {
    /// Takes in a snapshot: the models are replaced, new decisions are added (all of them
    /// dropped first when the server is another one).
    pub(crate) fn update(&mut self, s: Snapshot) {
        let old_pid = self.snapshot.server.as_ref().map(|s| s.pid);
        let new_pid = s.server.as_ref().map(|s| s.pid);
        if s.replace_decisions || (new_pid.is_some() && new_pid != old_pid) {
            self.decisions.clear();
        }
        let mut s = s;
        for d in s.decisions.drain(..) {
            if self.decisions.len() == KEEP_DECISIONS {
                self.decisions.pop_front();
            }
            self.decisions.push_back(d);
        }
        if self.selected.is_none() {
            self.selected = s.models.first().map(|m| m.status.model.clone());
        }
        self.snapshot = s;
        self.loaded = true;
    }

    /// Whether `m` passes the filter (case-insensitive, on its key, label, state and tier).
    fn shows(&self, m: &LiveModel) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        let f = self.filter.to_lowercase();
        [
            m.status.model.as_str(),
            m.label.as_str(),
            m.status.state.as_str(),
            m.tier.as_str(),
        ]
        .iter()
        .any(|t| t.to_lowercase().contains(&f))
            || (m.status.pause_ms_left > 0 && "paused".contains(&f))
    }

    /// The models shown, filtered and sorted.
    pub(crate) fn rows(&self) -> Vec<&LiveModel> {
        let mut rows: Vec<&LiveModel> = self
            .snapshot
            .models
            .iter()
            .filter(|m| self.shows(m))
            .collect();
        rows.sort_by(|a, b| {
            self.compare(a, b)
                .then_with(|| a.status.model.cmp(&b.status.model))
        });
        rows
    }

    /// The decisions shown, newest first: those touching a shown model when filtering.
    pub(crate) fn feed(&self) -> Vec<&Decision> {
        let f = self.filter.to_lowercase();
        self.decisions
            .iter()
            .rev()
            .filter(|d| {
                f.is_empty() || {
                    let t = &d.trace;
                    std::iter::once(t.requested_model.as_str())
                        .chain(t.served_model.as_deref())
                        .chain(t.attempts.iter().map(|a| a.model.as_str()))
                        .chain(std::iter::once(t.id.as_str()))
                        .any(|m| m.to_lowercase().contains(&f))
                }
            })
            .collect()
    }

    /// The time to first token shown: the live median, else the last bench's (`true`).
    pub(crate) fn ttft(&self, m: &LiveModel) -> Option<(u64, bool)> {
        match m.status.ttft_ms_p50 {
            Some(t) => Some((t, false)),
            None => self
                .bench
                .get(&m.status.model)
                .and_then(|b| b.ttft_ms)
                .map(|t| (t, true)),
        }
    }

    /// The success rate shown (0 to 1): the live window's, else the last bench's (`true`).
    pub(crate) fn success(&self, m: &LiveModel) -> Option<(f64, bool)> {
        if m.status.live_results > 0 {
            return Some((
                m.status.live_ok as f64 / m.status.live_results as f64,
                false,
            ));
        }
        self.bench
            .get(&m.status.model)
            .map(|b| (b.success_rate, true))
    }

    pub(crate) fn pinned(&self, model: &str) -> bool {
        self.pins.pinned.iter().any(|m| m == model)
    }

    /// Whether config.json's sets say something other than the running server uses (a
    /// restart applies it).
    pub(crate) fn pins_pending(&self) -> bool {
        let Some(_) = &self.snapshot.server else {
            return false;
        };
        let running = self.snapshot.active_set.as_ref();
        let config_top = self.pins.active_set.as_deref() == Some(PIN_SET);
        match running {
            Some(set) if set.name == PIN_SET => !config_top || set.models != self.pins.pinned,
            _ => config_top && !self.pins.pinned.is_empty(),
        }
    }

    /// The natural order of the sort column (the interesting end first), `inverted`
    /// turning it around; a model without a value goes last either way.
    fn compare(&self, a: &LiveModel, b: &LiveModel) -> Ordering {
        fn last<T: PartialOrd>(a: Option<T>, b: Option<T>, inverted: bool) -> Ordering {
            match (a, b) {
                (Some(x), Some(y)) => {
                    let o = x.partial_cmp(&y).unwrap_or(Ordering::Equal);
                    if inverted {
                        o.reverse()
                    } else {
                        o
                    }
                }
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        }
        let inv = self.inverted;
        let (sa, sb) = (&a.status, &b.status);
        match self.sort {
            Column::Rank => last(sa.rank, sb.rank, inv),
            Column::Model => last(Some(&sa.model), Some(&sb.model), inv),
            Column::Tier => {
                let t = |m: &LiveModel| TIERS.iter().position(|t| *t == m.tier);
                last(t(a), t(b), inv)
            }
            // Worst first.
            Column::State => last(
                Some(std::cmp::Reverse(severity(a))),
                Some(std::cmp::Reverse(severity(b))),
                inv,
            ),
            Column::Left => {
                let left = |m: &LiveModel| {
                    let ms = m.status.cooldown_ms_left.max(m.status.pause_ms_left);
                    (ms > 0).then_some(std::cmp::Reverse(ms))
                };
                last(left(a), left(b), inv)
            }
            Column::Evidence => {
                let e = |m: &LiveModel| {
                    let e: Evidence = m.status.evidence;
                    let from: EvidenceFrom = m.status.evidence_from;
                    (e, from)
                };
                last(Some(e(a)), Some(e(b)), inv)
            }
            // Fastest first.
            Column::Ttft => last(self.ttft(a).map(|t| t.0), self.ttft(b).map(|t| t.0), inv),
            // Highest first.
            Column::Success => last(
                self.success(a).map(|s| std::cmp::Reverse(s.0)),
                self.success(b).map(|s| std::cmp::Reverse(s.0)),
                inv,
            ),
            // Least left first: the ones about to run out.
            Column::Budget => last(sa.budget.requests, sb.budget.requests, inv),
            Column::Conversations => last(
                Some(std::cmp::Reverse(sa.conversations)),
                Some(std::cmp::Reverse(sb.conversations)),
                inv,
            ),
            Column::Pin => last(
                Some(!self.pinned(&sa.model)),
                Some(!self.pinned(&sb.model)),
                inv,
            ),
        }
    }

    /// The selected row's index among `rows`.
    pub(crate) fn selected_index(&self, rows: &[&LiveModel]) -> Option<usize> {
        let key = self.selected.as_deref()?;
        rows.iter().position(|m| m.status.model == key)
    }

    fn select_by(&mut self, step: isize) {
        let rows = self.rows();
        if rows.is_empty() {
            return;
        }
        let at = self.selected_index(&rows).unwrap_or(0) as isize;
        let next = (at + step).clamp(0, rows.len() as isize - 1) as usize;
        self.selected = Some(rows[next].status.model.clone());
    }

    fn sort_by(&mut self, column: Column) {
        if self.sort == column {
            self.inverted = !self.inverted;
        } else {
            self.sort = column;
            self.inverted = false;
        }
    }

    fn selected_model(&self) -> Option<String> {
        let rows = self.rows();
        let i = self.selected_index(&rows)?;
        Some(rows[i].status.model.clone())
    }

    /// What a key press does. `page` is how many rows a page moves.
    pub(crate) fn key(&mut self, k: KeyEvent, page: usize) -> Action {
        if k.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(k.code, KeyCode::Char('c') | KeyCode::Char('d')) {
            return Action::Quit;
        }
        if self.editing_filter {
            match k.code {
                KeyCode::Enter => self.editing_filter = false,
                KeyCode::Esc => {
                    self.filter.clear();
                    self.editing_filter = false;
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) if !ctrl => self.filter.push(c),
                _ => {}
            }
            self.keep_selection_visible();
            return Action::None;
        }
        if self.help {
            self.help = false;
            return match k.code {
                KeyCode::Char('q') => Action::Quit,
                _ => Action::None,
            };
        }
        self.message = None;
        let page = page.max(1) as isize;
        match k.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') | KeyCode::Char('h') | KeyCode::F(1) => self.help = true,
            KeyCode::Char('/') => self.editing_filter = true,
            KeyCode::Esc => self.filter.clear(),
            KeyCode::Up | KeyCode::Char('k') => self.select_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.select_by(1),
            KeyCode::PageUp => self.select_by(-page),
            KeyCode::PageDown => self.select_by(page),
            KeyCode::Home | KeyCode::Char('g') => self.select_by(isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.select_by(isize::MAX / 2),
            KeyCode::Char('>') | KeyCode::Char('.') | KeyCode::Right => {
                let i = Column::ALL
                    .iter()
                    .position(|c| *c == self.sort)
                    .unwrap_or(0);
                self.sort = Column::ALL[(i + 1) % Column::ALL.len()];
                self.inverted = false;
            }
            KeyCode::Char('<') | KeyCode::Char(',') | KeyCode::Left => {
                let i = Column::ALL
                    .iter()
                    .position(|c| *c == self.sort)
                    .unwrap_or(0);
                self.sort = Column::ALL[(i + Column::ALL.len() - 1) % Column::ALL.len()];
                self.inverted = false;
            }
            KeyCode::Char('i') => self.inverted = !self.inverted,
            KeyCode::Char(c @ '0'..='9') => {
                // 1 is the first column, 0 the tenth.
                let n = c.to_digit(10).unwrap_or(0) as usize;
                let i = if n == 0 { 9 } else { n - 1 };
                if let Some(column) = Column::ALL.get(i) {
                    self.sort_by(*column);
                }
            }
            KeyCode::Char('r') => {
                return match self.selected_model() {
                    Some(m) => Action::Reset(m),
                    None => Action::None,
                }
            }
            KeyCode::Char('p') => {
                return match self.selected_model() {
                    Some(m) => Action::TogglePin(m),
                    None => Action::None,
                }
            }
            KeyCode::Char('s') if self.snapshot.server.is_none() => {
                return if self.snapshot.server_recorded {
                    self.message = Some("a server is recorded as running but does not answer; `fcm status` says more".into());
                    Action::None
                } else {
                    Action::StartServer
                };
            }
            _ => {}
        }
        Action::None
    }

    /// After the filter changed: the selection moves to the first shown model if it was
    /// filtered out.
    fn keep_selection_visible(&mut self) {
        let rows = self.rows();
        if self.selected_index(&rows).is_none() {
            self.selected = rows.first().map(|m| m.status.model.clone());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::routing::ModelStatus;

    pub(crate) fn model(key: &str, rank: Option<usize>, state: BreakerState) -> LiveModel {
        let provider = key.split('/').next().unwrap_or("").into();
        let mut status = ModelStatus::of(
            key.into(),
            provider,
            None,
            Evidence::Unknown,
            EvidenceFrom::None,
        );
        (status.rank, status.state) = (rank, state);
        LiveModel {
            status,
            tier: "A".into(),
            label: key.into(),
        }
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn board() -> Board {
        let mut b = Board::default();
        let mut slow = model("p/slow", Some(2), BreakerState::Closed);
        slow.status.ttft_ms_p50 = Some(900);
        slow.status.live_results = 4;
        slow.status.live_ok = 4;
        let mut open = model("q/broken", None, BreakerState::Open);
        open.status.cooldown_ms_left = 20_000;
        let mut fast = model("p/fast", Some(1), BreakerState::Closed);
        fast.status.ttft_ms_p50 = Some(80);
        fast.status.live_results = 4;
        fast.status.live_ok = 2;
        b.update(Snapshot {
            models: vec![fast, slow, open],
            ..Snapshot::default()
        });
        b
    }

    fn order(b: &Board) -> Vec<&str> {
        b.rows().iter().map(|m| m.status.model.as_str()).collect()
    }

    #[test]
    fn sorting_puts_the_interesting_end_first_and_inverts() {
        let mut b = board();
        assert_eq!(
            order(&b),
            ["p/fast", "p/slow", "q/broken"],
            "rank, skipped last"
        );
        b.key(key(KeyCode::Char('4')), 10);
        assert_eq!(b.sort, Column::State);
        assert_eq!(order(&b)[0], "q/broken", "worst state first");
        b.key(key(KeyCode::Char('7')), 10);
        assert_eq!(
            order(&b),
            ["p/fast", "p/slow", "q/broken"],
            "fastest first, unknown last"
        );
        b.key(key(KeyCode::Char('7')), 10);
        assert_eq!(
            order(&b),
            ["p/slow", "p/fast", "q/broken"],
            "inverted: unknown still last"
        );
        b.key(key(KeyCode::Char('8')), 10);
        assert_eq!(
            order(&b),
            ["p/slow", "p/fast", "q/broken"],
            "highest success first"
        );
        b.key(key(KeyCode::Char('>')), 10);
        assert_eq!(b.sort, Column::Budget);
    }

    #[test]
    fn the_filter_narrows_models_and_keeps_a_shown_selection() {
        let mut b = board();
        assert_eq!(b.selected.as_deref(), Some("p/fast"));
        for k in [KeyCode::Char('/'), KeyCode::Char('O'), KeyCode::Char('p')] {
            assert_eq!(b.key(key(k), 10), Action::None);
        }
        assert_eq!(order(&b), ["q/broken"], "matches the state OPEN");
        assert_eq!(b.selected.as_deref(), Some("q/broken"));
        b.key(key(KeyCode::Char('q')), 10);
        assert_eq!(b.filter, "Opq", "q is text while typing a filter");
        b.key(key(KeyCode::Esc), 10);
        assert!(b.filter.is_empty() && !b.editing_filter);
        assert_eq!(order(&b).len(), 3);
    }

    #[test]
    fn keys_ask_for_actions_on_the_selected_model() {
        let mut b = board();
        b.key(key(KeyCode::Down), 10);
        assert_eq!(
            b.key(key(KeyCode::Char('r')), 10),
            Action::Reset("p/slow".into())
        );
        assert_eq!(b.key(key(KeyCode::End), 10), Action::None);
        assert_eq!(
            b.key(key(KeyCode::Char('p')), 10),
            Action::TogglePin("q/broken".into())
        );
        assert_eq!(
            b.key(key(KeyCode::Char('s')), 10),
            Action::StartServer,
            "no server"
        );
        b.key(key(KeyCode::Char('?')), 10);
        assert!(b.help);
        assert_eq!(
            b.key(key(KeyCode::Char('r')), 10),
            Action::None,
            "a key closes help"
        );
        assert!(!b.help);
        assert_eq!(b.key(key(KeyCode::Char('q')), 10), Action::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        b.key(key(KeyCode::Char('/')), 10);
        assert_eq!(
            b.key(ctrl_c, 10),
            Action::Quit,
            "Ctrl-C quits even while typing"
        );
    }

    #[test]
    fn another_server_starts_a_new_feed() {
        let mut b = board();
        let server = |pid| ServerLine {
            version: "0".into(),
            address: "127.0.0.1:1".into(),
            pid,
            uptime_secs: 1,
            in_flight: 0,
            connections: 0,
            conversations: 0,
            affinity: true,
        };
        let decision = |seq| Decision {
            seq,
            trace: crate::state::trace::Trace::new(&format!("r{seq}"), "fcm", false),
        };
        b.update(Snapshot {
            server: Some(server(1)),
            decisions: vec![decision(1), decision(2)],
            ..Snapshot::default()
        });
        b.update(Snapshot {
            server: Some(server(1)),
            decisions: vec![decision(3)],
            ..Snapshot::default()
        });
        assert_eq!(b.feed()[0].seq, 3, "newest first");
        assert_eq!(b.feed().len(), 3);
        b.update(Snapshot {
            server: Some(server(2)),
            decisions: vec![decision(1)],
            ..Snapshot::default()
        });
        assert_eq!(b.feed().len(), 1);
    }
}
