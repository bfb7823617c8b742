//! `usage.json`: the ledger's file ([`UsageBook`]) and the same facts indexed for lookups
//! ([`Book`]), with the one way two of them combine ([`Book::absorb`]): counts add up,
//! the latest report and the longest hold win. That is how a process saves without losing
//! what another added meanwhile.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::answers::exhaustion::Signal;
use crate::providers::quota::Window;
use crate::time::{utc_day, DAY_MS};

/// Days of usage kept in the file.
pub const KEEP_DAYS: u64 = 35;

/// The file format of `usage.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageBook {
    pub version: u32,
    /// Oldest first.
    pub days: Vec<DayUsage>,
    /// What each provider last said is left, per counter and key.
    pub reported: Vec<Reported>,
    /// Keys (or keyless models) out of use until a moment.
    pub holds: Vec<Hold>,
}

/// One UTC day of usage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DayUsage {
    /// `2026-12-02`.
    pub day: String,
    pub rows: Vec<UsageRow>,
}

/// What one model spent with one key in one day.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageRow {
    pub provider: String,
    /// `provider/modelId`.
    pub model: String,
    /// `<provider>#<n>`; absent for a provider that takes no key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The key's fingerprint (`catalog::key_id`), which keeps its rows apart from another
    /// key's when the keys are reordered.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key_id: String,
    /// Requests sent (counted when sent, whatever came back).
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the provider's prompt cache served (as it reported).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// How many of the tokens above are fcm's estimate (the answer reported no `usage`).
    pub estimated_tokens: u64,
    /// Answers that said the limit was reached (429, or a quota error).
    pub rate_limited: u64,
    /// Tokens tool-result compression kept out of the requests sent (estimated).
    #[serde(skip_serializing_if = "is_zero")]
    pub saved_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl UsageRow {
    fn add(&mut self, other: &UsageRow) {
        self.requests += other.requests;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.estimated_tokens += other.estimated_tokens;
        self.rate_limited += other.rate_limited;
        self.saved_tokens += other.saved_tokens;
        if other.key.is_some() {
            self.key.clone_from(&other.key);
        }
    }

    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// Whose figures these are: a counter (a model, or a whole provider) and one key of its
/// provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Whose {
    /// A model (`groq/llama-3.3-70b-versatile`), or a provider for all its models.
    pub scope: String,
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_id: String,
}

impl Whose {
    /// The index name of these figures ([`slot`]).
    fn slot(&self) -> String {
        slot(&self.scope, &self.key_id)
    }
}

/// The rate-limit windows one answer reported for a counter and key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reported {
    #[serde(flatten)]
    pub whose: Whose,
    pub seen_at_ms: u64,
    pub windows: Vec<Window>,
}

/// Why a key (or a keyless model) is out of use for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldReason {
    /// It answered 429 (a provider with several keys: the others go on serving).
    RateLimited,
    /// Three 429s within a minute: paused 15 min, whatever `Retry-After` said.
    RetryStorm,
    /// The provider rejected the key (401/403).
    KeyRejected,
    /// The answer said a free quota, grant, credit or balance is used up: held until its
    /// reset (the provider's day, a session), at the scope it covers.
    Exhausted,
}

impl HoldReason {
    /// For people: why a key is passed over.
    pub fn says(self) -> &'static str {
        match self {
            HoldReason::KeyRejected => "rejected by the provider",
            HoldReason::RetryStorm => "three 429s within a minute",
            HoldReason::RateLimited => "rate limited",
            HoldReason::Exhausted => "free quota used up",
        }
    }
}

/// A key of a provider (or a keyless model) out of use until a moment; a provider-wide
/// scope holds the key for all the provider's models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    #[serde(flatten)]
    pub whose: Whose,
    pub until_ms: u64,
    pub why: HoldReason,
    /// For an exhaustion, what the answer said ran out (`daily_limit`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<Signal>,
}

/// The name of one counter's figures for one key in the indexes: `scope` and key id.
pub fn slot(scope: &str, key_id: &str) -> String {
    format!("{scope}\n{key_id}")
}

/// The ledger's facts, indexed: rows by day and (model, key), reports and holds by
/// (scope, key).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Book {
    pub days: BTreeMap<String, BTreeMap<String, UsageRow>>,
    pub reported: HashMap<String, Reported>,
    pub holds: HashMap<String, Hold>,
}

impl Book {
    pub fn from_file(file: UsageBook) -> Book {
        let mut book = Book::default();
        for day in file.days {
            let rows = book.days.entry(day.day).or_default();
            for row in day.rows {
                rows.entry(slot(&row.model, &row.key_id))
                    .or_default()
                    .merge_in(row);
            }
        }
        for r in file.reported {
            book.report(r);
        }
        for h in file.holds {
            book.hold(h);
        }
        book
    }

    /// The file form: days oldest first, rows, reports and holds in a stable order.
    pub fn to_file(&self) -> UsageBook {
        let mut reported: Vec<Reported> = self.reported.values().cloned().collect();
        reported.sort_by_cached_key(|r| r.whose.slot());
        let mut holds: Vec<Hold> = self.holds.values().cloned().collect();
        holds.sort_by_cached_key(|h| h.whose.slot());
        UsageBook {
            version: 1,
            days: self
                .days
                .iter()
                .map(|(day, rows)| DayUsage {
                    day: day.clone(),
                    rows: rows.values().cloned().collect(),
                })
                .collect(),
            reported,
            holds,
        }
    }

    /// The row of `model` with key `key_id` on `day`, created empty.
    #[cfg(test)]
    pub fn row(
        &mut self,
        day: &str,
        provider: &str,
        model: &str,
        key: Option<&str>,
        key_id: &str,
    ) -> &mut UsageRow {
        self.row_at(day, &slot(model, key_id), || UsageRow {
            provider: provider.to_string(),
            model: model.to_string(),
            key: key.map(str::to_string),
            key_id: key_id.to_string(),
            ..UsageRow::default()
        })
    }

    /// The row at index name `at` ([`slot`] of its model and key) on `day`, made by
    /// `new` when there is none yet; found without allocating.
    pub fn row_at(&mut self, day: &str, at: &str, new: impl FnOnce() -> UsageRow) -> &mut UsageRow {
        if !self.days.contains_key(day) {
            self.days.insert(day.to_string(), BTreeMap::new());
        }
        let rows = self.days.get_mut(day).expect("inserted above");
        if !rows.contains_key(at) {
            rows.insert(at.to_string(), new());
        }
        rows.get_mut(at).expect("inserted above")
    }

    /// Keeps the newer of two reports for the same counter and key.
    pub fn report(&mut self, r: Reported) {
        let at = r.whose.slot();
        match self.reported.get(&at) {
            Some(old) if old.seen_at_ms > r.seen_at_ms => {}
            _ => {
                self.reported.insert(at, r);
            }
        }
    }

    /// Keeps the longer of two holds on the same counter and key.
    pub fn hold(&mut self, h: Hold) {
        let at = h.whose.slot();
        match self.holds.get(&at) {
            Some(old) if old.until_ms >= h.until_ms => {}
            _ => {
                self.holds.insert(at, h);
            }
        }
    }

    /// Forgets what was counted of `provider` on `day`, what it last said is left and why
    /// its keys or models are held (`fcm usage --reset`): requests the user knows it did
    /// not charge. Returns the requests forgotten.
    pub fn forget(&mut self, provider: &str, day: &str) -> u64 {
        let mut forgotten = 0;
        if let Some(rows) = self.days.get_mut(day) {
            rows.retain(|_, r| {
                let keep = r.provider != provider;
                if !keep {
                    forgotten += r.requests;
                }
                keep
            });
        }
        self.reported.retain(|_, r| r.whose.provider != provider);
        self.holds.retain(|_, h| h.whose.provider != provider);
        forgotten
    }

    /// Adds `other` in: its counts to this book's, its reports and holds where newer.
    pub fn absorb(&mut self, other: &Book) {
        for (day, rows) in &other.days {
            let mine = self.days.entry(day.clone()).or_default();
            for (at, row) in rows {
                match mine.get_mut(at) {
                    Some(r) => r.add(row),
                    None => {
                        mine.insert(at.clone(), row.clone());
                    }
                }
            }
        }
        for r in other.reported.values() {
            self.report(r.clone());
        }
        for h in other.holds.values() {
            self.hold(h.clone());
        }
    }

    /// Forgets days older than [`KEEP_DAYS`], holds that ended and reports whose every
    /// window reset (they say nothing any more).
    pub fn prune(&mut self, now: u64) {
        let oldest = utc_day(now.saturating_sub((KEEP_DAYS - 1) * DAY_MS));
        self.days.retain(|day, _| *day >= oldest);
        self.holds.retain(|_, h| h.until_ms > now);
        self.reported
            .retain(|_, r| r.windows.iter().any(|w| w.reset_at > now));
    }
}

impl UsageRow {
    /// A row read from a file into an empty or existing one (a file may list a row twice).
    fn merge_in(&mut self, row: UsageRow) {
        if self.model.is_empty() {
            *self = row;
        } else {
            self.add(&row);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::providers::quota::Unit;

    const NOW: u64 = 1_796_102_301_000; // 2026-12-01

    pub(crate) fn whose(scope: &str, provider: &str, key: Option<&str>, key_id: &str) -> Whose {
        Whose {
            scope: scope.into(),
            provider: provider.into(),
            key: key.map(str::to_string),
            key_id: key_id.into(),
        }
    }

    fn window(remaining: u64, reset_at: u64) -> Window {
        Window {
            name: "requests".into(),
            unit: Unit::Requests,
            period: None,
            limit: Some(10),
            remaining: Some(remaining),
            reset_at,
        }
    }

    fn reported(seen: u64, remaining: u64) -> Reported {
        Reported {
            whose: whose("p/m", "p", Some("p#1"), "k1"),
            seen_at_ms: seen,
            windows: vec![window(remaining, NOW + 60_000)],
        }
    }

    #[test]
    fn two_processes_additions_add_up_and_the_latest_report_wins() {
        let mut server = Book::default();
        server
            .row("2026-12-01", "p", "p/m", Some("p#1"), "k1")
            .requests += 3;
        server.report(reported(NOW, 7));
        let mut bench = Book::default();
        let row = bench.row("2026-12-01", "p", "p/m", Some("p#1"), "k1");
        row.requests += 2;
        row.prompt_tokens += 40;
        bench
            .row("2026-12-01", "p", "p/other", Some("p#1"), "k1")
            .requests += 1;
        bench.report(reported(NOW + 5, 4));
        let mut disk = Book::from_file(server.to_file());
        disk.absorb(&bench);
        let rows = &disk.days["2026-12-01"];
        assert_eq!(rows[&slot("p/m", "k1")].requests, 5);
        assert_eq!(rows[&slot("p/m", "k1")].prompt_tokens, 40);
        assert_eq!(rows[&slot("p/other", "k1")].requests, 1);
        assert_eq!(
            disk.reported[&slot("p/m", "k1")].windows[0].remaining,
            Some(4)
        );
        // An older report does not replace a newer one.
        disk.report(reported(NOW - 1, 9));
        assert_eq!(
            disk.reported[&slot("p/m", "k1")].windows[0].remaining,
            Some(4)
        );
        // The file round-trips.
        assert_eq!(Book::from_file(disk.to_file()), disk);
    }

    #[test]
    fn pruning_keeps_35_days_running_holds_and_live_reports() {
        let mut b = Book::default();
        for days_ago in [0, 34, 35, 60] {
            let day = utc_day(NOW - days_ago * DAY_MS);
            b.row(&day, "p", "p/m", None, "").requests += 1;
        }
        b.hold(Hold {
            whose: whose("p", "p", None, ""),
            until_ms: NOW - 1,
            why: HoldReason::KeyRejected,
            signal: None,
        });
        b.report(reported(NOW - 120_000, 0));
        let mut stale = reported(NOW - 120_000, 0);
        stale.whose.scope = "p/old".into();
        stale.windows[0].reset_at = NOW - 1;
        b.report(stale);
        b.prune(NOW);
        assert_eq!(b.days.len(), 2, "{:?}", b.days.keys());
        assert!(b.holds.is_empty());
        assert_eq!(b.reported.len(), 1);
    }

    #[test]
    fn the_longer_hold_wins() {
        let hold = |until_ms, why| Hold {
            whose: whose("p/m", "p", Some("p#2"), "k2"),
            until_ms,
            why,
            signal: None,
        };
        let mut b = Book::default();
        b.hold(hold(NOW + 900_000, HoldReason::RetryStorm));
        b.hold(hold(NOW + 30_000, HoldReason::RateLimited));
        assert_eq!(b.holds[&slot("p/m", "k2")].why, HoldReason::RetryStorm);
    }
}
