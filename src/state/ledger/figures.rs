//! What a ledger knows, behind its lock ([`Figures`]): the book of usage (as last read,
//! and what this process added since), the last minute per counter and key, key
//! rotations, recent 429s and requests in flight; and the one check of a key against all
//! of it ([`Figures::key_status`]): blocked until when, or the headroom it has left.

use std::collections::{HashMap, VecDeque};
use std::time::SystemTime;

use crate::providers::quota::Spent;
use crate::time::{utc_day, DAY_MS};

use super::book::{Book, Hold, HoldReason, Reported, UsageBook, UsageRow};
use super::grant::{Blocked, Headroom, Why};
use super::learned::Learned;
use super::metered::{KeyTag, Metered};
use super::minute::Minute;
use crate::providers::quota::{Period, Unit};

/// Which key of a provider is in use and how many requests it has had in a row.
#[derive(Debug, Default)]
pub(super) struct Rotation {
    pub(super) current: usize,
    pub(super) served: u32,
}

/// Everything a ledger knows, behind its lock.
#[derive(Debug, Default)]
pub(super) struct Figures {
    /// Everything known: the file as last read, and what this process added since.
    pub(super) book: Book,
    /// What this process added since its last save.
    pub(super) pending: Book,
    minutes: HashMap<String, Minute>,
    pub(super) rotations: HashMap<String, Rotation>,
    /// Recent 429s per model and key.
    pub(super) storms: HashMap<String, VecDeque<u64>>,
    /// What each model and key's answers taught of its limits (see `learned`), for the
    /// models that taught something.
    pub(super) learned: HashMap<String, Learned>,
    /// Every request of the last minute per model and key, whatever its limits: what a
    /// 429 that states no limit teaches from.
    recent: HashMap<String, Minute>,
    /// Until when each provider and key is a poor home for a conversation: one of its
    /// models answered 429 or said a quota is used up (see `Headroom`).
    poor_providers: HashMap<String, u64>,
    /// Requests sent and not answered yet, per reported counter and key: what the
    /// provider's last figures cannot have counted.
    pub(super) in_flight: HashMap<String, u64>,
    /// When this process last wrote or read the file (its modification time then).
    pub(super) synced: Option<SystemTime>,
    /// Today (UTC), as a number of days and as the book names it, kept current by
    /// [`Figures::roll`] so that lookups do not format it.
    today_n: u64,
    today: String,
}

impl Figures {
    /// What a ledger knows at first: `book`, nothing counted yet.
    pub(super) fn new(book: Book) -> Figures {
        Figures {
            book,
            ..Figures::default()
        }
    }

    /// Makes `today` the UTC day of `now` (called first by every ledger operation).
    pub(super) fn roll(&mut self, now: u64) {
        let n = now / DAY_MS;
        if n != self.today_n || self.today.is_empty() {
            self.today_n = n;
            self.today = utc_day(now);
        }
    }

    /// What `m`'s rule `rule` spent on its counter with `key`, today and in the last
    /// minute. A provider's counter sums its models' rows.
    pub(super) fn spent(&self, m: &Metered, rule: usize, key: &KeyTag, now: u64) -> Spent {
        let counter = &m.rules[rule].0;
        let (minute_requests, minute_tokens, minute_frees_at) = self
            .minutes
            .get(&key.at_rules[rule])
            .map_or((0, 0, 0), |w| w.spent(now));
        let mut spent = Spent {
            minute_requests,
            minute_tokens,
            minute_frees_at,
            ..Spent::default()
        };
        // Only a daily limit reads the day's rows.
        let daily = m.rules[rule].1.has_daily_limit();
        if let Some(rows) = self.book.days.get(&self.today).filter(|_| daily) {
            if *counter == m.provider {
                for r in rows
                    .values()
                    .filter(|r| r.provider == m.provider && r.key_id == key.id)
                {
                    spent.day_requests += r.requests;
                    spent.day_tokens += r.tokens();
                }
            } else if let Some(r) = rows.get(&key.at_model) {
                spent.day_requests = r.requests;
                spent.day_tokens = r.tokens();
            }
        }
        spent
    }

    /// The hold on `m`'s key `k` now, if any (on the model, or on its whole provider).
    pub(super) fn held(&self, key: &KeyTag, now: u64) -> Option<&Hold> {
        if self.book.holds.is_empty() {
            return None;
        }
        [&key.at_model, &key.at_provider]
            .into_iter()
            .filter_map(|at| self.book.holds.get(at))
            .filter(|h| h.until_ms > now)
            .max_by_key(|h| h.until_ms)
    }

    /// Whether one more request to `m` with its key `k` may go now: if not, the block that
    /// ends last (all of them must end before the key serves again); if so, the key's
    /// headroom, the share of its tightest known limit left (1.0 when no limit is known):
    /// the catalog's limits against what was spent, and the provider's own figures. One
    /// pass over the key's figures, since planning asks it of every candidate.
    pub(super) fn key_status(
        &self,
        m: &Metered,
        k: usize,
        tokens: u64,
        now: u64,
        probe: bool,
    ) -> Result<Headroom, Blocked> {
        let key = &m.keys[k];
        let mut last: Option<Blocked> = None;
        let mut keep = |b: Blocked| {
            if last.as_ref().is_none_or(|l| b.until_ms > l.until_ms) {
                last = Some(b);
            }
        };
        let mut least = 1.0f64;
        let mut consider = |used: u64, limit: Option<u64>| {
            if let Some(limit) = limit.filter(|l| *l > 0) {
                least = least.min(1.0 - (used as f64 / limit as f64).min(1.0));
            }
        };
        let mut day_left: Option<u64> = None;
        let mut per_minute: Option<u64> = None;
        let tighter = |slot: &mut Option<u64>, n: u64| *slot = Some(slot.map_or(n, |s| s.min(n)));
        if let Some(h) = self.held(key, now) {
            let why = match h.why {
                HoldReason::KeyRejected => Why::Rejected,
                HoldReason::RateLimited | HoldReason::RetryStorm => Why::Paused,
                HoldReason::Exhausted => Why::Exhausted(
                    h.signal
                        .unwrap_or(crate::answers::exhaustion::Signal::DailyLimit),
                ),
            };
            keep(Blocked {
                until_ms: h.until_ms,
                why,
            });
        }
        // Most models taught nothing: no lookup for them while none did.
        let learned = (!self.learned.is_empty())
            .then(|| self.learned.get(&key.at_model))
            .flatten();
        if let Some(l) = learned {
            let (stop, allows) = l.check(tokens, self.recent.get(&key.at_model), now);
            if let Some(e) = stop {
                keep(Blocked::budget(e));
            }
            if let Some(n) = allows {
                tighter(&mut per_minute, n);
            }
        }
        for (i, (_, q)) in m.rules.iter().enumerate() {
            let spent = self.spent(m, i, key, now);
            if let Some(e) = q.blocks(&spent, tokens, now, probe) {
                keep(Blocked::budget(e));
            }
            consider(spent.minute_requests, q.requests_per_minute);
            consider(spent.day_requests, q.requests_per_day);
            consider(spent.minute_tokens, q.tokens_per_minute);
            consider(spent.day_tokens, q.tokens_per_day);
            if let Some(limit) = q.requests_per_day {
                tighter(&mut day_left, limit.saturating_sub(spent.day_requests));
            }
            if let Some(limit) = q.requests_per_minute {
                tighter(&mut per_minute, limit);
            }
            if let Some(limit) = q.tokens_per_minute {
                tighter(&mut per_minute, limit / tokens.max(1));
            }
        }
        if let Some(r) = self.book.reported.get(&key.at_reported) {
            let in_flight = self.in_flight.get(&key.at_reported).copied().unwrap_or(0);
            for w in r.windows.iter().filter(|w| w.reset_at > now) {
                if let Some(e) = w.blocks(tokens, in_flight, now, probe) {
                    keep(Blocked::budget(e));
                }
                if let (Some(left), Some(limit)) = (w.remaining, w.limit) {
                    consider(limit.saturating_sub(left), Some(limit));
                }
                match (w.unit, w.period) {
                    (Unit::Requests, _) if w.daily() => {
                        if let Some(left) = w.remaining {
                            tighter(&mut day_left, left);
                        }
                    }
                    (Unit::Requests, Some(Period::Minute)) => {
                        if let Some(limit) = w.limit {
                            tighter(&mut per_minute, limit);
                        }
                    }
                    (Unit::Tokens, Some(Period::Minute) | None) => {
                        if let Some(limit) = w.limit {
                            tighter(&mut per_minute, limit / tokens.max(1));
                        }
                    }
                    _ => {}
                }
            }
        }
        match last {
            Some(b) => Err(b),
            None => Ok(Headroom {
                share: least,
                day_left,
                per_minute,
                // Its own 429 is no longer a limit of unknown size once it taught its
                // limit a minute (which `per_minute` holds now); a sibling's still is.
                limited_lately: match learned.filter(|l| l.poor_until > now) {
                    Some(l) => !l.knows_its_minute(now),
                    None => {
                        !self.poor_providers.is_empty()
                            && self
                                .poor_providers
                                .get(&key.at_provider)
                                .is_some_and(|t| *t > now)
                    }
                },
            }),
        }
    }

    /// Planning's view of `m`: blocked when every key is, else its best key's headroom.
    pub(super) fn assess(&self, m: &Metered, tokens: u64, now: u64) -> Result<Headroom, Blocked> {
        let mut earliest: Option<Blocked> = None;
        let mut best: Option<Headroom> = None;
        for k in 0..m.keys.len() {
            match self.key_status(m, k, tokens, now, false) {
                Ok(h) if best.is_none_or(|b| h.share > b.share) => best = Some(h),
                Ok(_) => {}
                Err(b) => b.keep_earliest(&mut earliest),
            }
        }
        best.ok_or_else(|| earliest.expect("a model has at least one key slot"))
    }

    /// The row of `m` with `key` today, in the book and among the additions to save, with
    /// `change` applied to both.
    pub(super) fn change_row(&mut self, m: &Metered, key: &KeyTag, change: impl Fn(&mut UsageRow)) {
        let Figures {
            book,
            pending,
            today,
            ..
        } = self;
        for b in [book, pending] {
            change(b.row_at(today, &key.at_model, || UsageRow {
                provider: m.provider.clone(),
                model: m.model.clone(),
                key: key.label.clone(),
                key_id: key.id.clone(),
                ..UsageRow::default()
            }));
        }
    }

    /// Adds to the last minute of every rule of `m` that limits minutes.
    pub(super) fn add_minute(
        &mut self,
        m: &Metered,
        key: &KeyTag,
        now: u64,
        requests: u64,
        tokens: u64,
    ) {
        for (i, (_, q)) in m.rules.iter().enumerate() {
            let limits_tokens = q.tokens_per_minute.is_some();
            if (requests > 0 && q.requests_per_minute.is_some()) || limits_tokens {
                let at = &key.at_rules[i];
                if !self.minutes.contains_key(at) {
                    self.minutes.insert(at.clone(), Minute::default());
                }
                let window = self.minutes.get_mut(at).expect("inserted above");
                window.add(now, requests, if limits_tokens { tokens } else { 0 });
            }
        }
    }

    /// Counts one request of `m` with key `k` sent now.
    pub(super) fn count_request(&mut self, m: &Metered, k: usize, tokens: u64, now: u64) {
        let key = &m.keys[k];
        self.change_row(m, key, |r| r.requests += 1);
        self.add_minute(m, key, now, 1, tokens);
        match self.recent.get_mut(&key.at_model) {
            Some(w) => w.add(now, 1, 0),
            None => {
                let mut w = Minute::default();
                w.add(now, 1, 0);
                self.recent.insert(key.at_model.clone(), w);
            }
        }
        match self.in_flight.get_mut(&key.at_reported) {
            Some(n) => *n += 1,
            None => {
                self.in_flight.insert(key.at_reported.clone(), 1);
            }
        }
    }

    /// Takes back [`count_request`](Self::count_request) of a request counted at `at` that
    /// was never sent. The day's row is the one of today: a request refused at midnight
    /// is given back to the new day, which it was not counted in (rows never go below 0).
    pub(super) fn uncount_request(&mut self, m: &Metered, k: usize, tokens: u64, at: u64) {
        let key = &m.keys[k];
        self.change_row(m, key, |r| r.requests = r.requests.saturating_sub(1));
        for (i, (_, q)) in m.rules.iter().enumerate() {
            let limits_tokens = q.tokens_per_minute.is_some();
            if q.requests_per_minute.is_some() || limits_tokens {
                if let Some(window) = self.minutes.get_mut(&key.at_rules[i]) {
                    window.take_back(at, 1, if limits_tokens { tokens } else { 0 });
                }
            }
        }
        if let Some(w) = self.recent.get_mut(&key.at_model) {
            w.take_back(at, 1, 0);
        }
        if let Some(n) = self.in_flight.get_mut(&key.at_reported) {
            *n = n.saturating_sub(1);
        }
    }

    /// What `key`'s model took in the last minute.
    pub(super) fn took(&self, key: &KeyTag, now: u64) -> u64 {
        self.recent.get(&key.at_model).map_or(0, |w| w.spent(now).0)
    }

    /// What `key`'s model has taught so far, made empty the first time.
    pub(super) fn learned_of(&mut self, key: &KeyTag) -> &mut Learned {
        if !self.learned.contains_key(&key.at_model) {
            self.learned
                .insert(key.at_model.clone(), Learned::default());
        }
        self.learned.get_mut(&key.at_model).expect("inserted above")
    }

    /// A model answered 429 or said a quota is used up: it and its provider are poor
    /// homes for a conversation until `until` (see `Headroom`).
    pub(super) fn limited(&mut self, key: &KeyTag, until: u64) {
        let model = self.learned_of(key);
        model.poor_until = model.poor_until.max(until);
        let provider = self
            .poor_providers
            .entry(key.at_provider.clone())
            .or_default();
        *provider = (*provider).max(until);
    }

    /// Holds a key, in the book and among the additions to save.
    pub(super) fn hold(&mut self, hold: Hold) {
        self.pending.hold(hold.clone());
        self.book.hold(hold);
    }

    /// What a provider reported, in the book and among the additions to save.
    pub(super) fn report(&mut self, r: Reported) {
        self.pending.report(r.clone());
        self.book.report(r);
    }

    /// Takes `file` (`usage.json` as it is now, last modified at `synced`) as the book,
    /// with what this process added and has not saved yet laid over it.
    pub(super) fn adopt(&mut self, file: UsageBook, synced: Option<SystemTime>) {
        let mut book = Book::from_file(file);
        book.absorb(&self.pending);
        self.book = book;
        self.synced = synced;
    }
}
