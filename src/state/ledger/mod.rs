//! The usage ledger: what fcm spent per UTC day, provider, model and key (requests,
//! tokens, rate-limited answers), what each provider last said is left, which keys are out
//! of use for a while, and which key of a provider to use next. It answers one question
//! for the router, the bench, `fcm check` and probes: may this model be sent one more
//! request now, with which key, and if not, until when ([`Ledger::reserve`])?
//!
//! The limits themselves are `quota`'s; the file and how two copies combine are
//! [`book`]'s; what `fcm usage` shows of it is [`report`]'s. Several processes add to
//! `usage.json` (a server and a bench), so a ledger saves by merging what it added since
//! its last save into the file as it is then, and takes in what the others added
//! ([`Ledger::sync`]).
//!
//! This file is the [`Ledger`] itself, over `figures` (what it knows, and the check of one
//! key), `metered` (a model as it sees one), `minute` (the last minute of a counter) and
//! `grant` (the values it hands out and takes in).

pub mod book;
mod figures;
mod grant;
mod learned;
mod metered;
mod minute;
pub mod report;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::answers::exhaustion::{Exhaustion, Reach, Signal};
use crate::providers::quota::{self, Window};
use crate::state::files::StateError;

use figures::{Figures, Rotation};

pub use book::{Book, Hold, HoldReason, Reported, UsageBook};
pub use grant::{Blocked, Grant, Headroom, Room, Tokens, Why, LIMITED_LATELY_MS};
pub use metered::Metered;

/// Requests sent with one key of a provider before the next key takes over.
pub const DEFAULT_STICKY: u32 = 3;
/// Three 429s for one model and key within a minute ...
const STORM_COUNT: usize = 3;
const STORM_WINDOW_MS: u64 = 60_000;
/// ... pause it this long, whatever each `Retry-After` said: some providers' quota
/// answers are optimistic, and asking again at once only earns the next 429.
pub const STORM_PAUSE: Duration = crate::answers::classify::MAX_QUOTA_PAUSE;
/// The second 429 in a row (no answer between) of one model and key pauses at least this
/// long, each after it twice as long, up to [`STORM_PAUSE`]: a limit the provider does not
/// state (NVIDIA's hidden hourly caps answer 429 with no header at all) is not asked
/// again every minute.
pub const STREAK_PAUSE: Duration = Duration::from_secs(60);
/// How long a limit learned from a 429 that stated none is believed.
pub const LEARNED_FOR_MS: u64 = 60 * 60_000;
/// How long at most a used-up quota makes its provider a poor home for conversations.
pub const POOR_AFTER_EXHAUSTION_MS: u64 = 2 * 60 * 60_000;
/// A key the provider rejected is passed over this long (another of its keys serves);
/// a new key is a new fingerprint, so fixing it takes effect at once.
pub const KEY_REJECTED_PAUSE: Duration = Duration::from_secs(60 * 60);

/// The shared ledger of one fcm process.
pub struct Ledger {
    figures: Mutex<Figures>,
    dirty: AtomicBool,
    /// Requests on one key before the next (`router.keys.sticky`).
    sticky: u32,
}

impl Ledger {
    pub fn new(file: UsageBook, now: u64, sticky: u32) -> Ledger {
        let mut book = Book::from_file(file);
        book.prune(now);
        Ledger {
            figures: Mutex::new(Figures::new(book)),
            dirty: AtomicBool::new(false),
            sticky: sticky.max(1),
        }
    }

    /// Reads `usage.json` (missing: empty; corrupt: set aside with a warning).
    pub fn load(path: &Path, now: u64, sticky: u32) -> Result<Ledger, StateError> {
        let ledger = Ledger::new(crate::state::files::load_json(path)?, now, sticky);
        ledger.lock().synced = modified(path);
        Ok(ledger)
    }

    fn lock(&self) -> MutexGuard<'_, Figures> {
        self.figures.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one request of `m` needing `tokens` (the prompt's estimate) out of its
    /// budget, with the key to send it with: the provider's current key while it has had
    /// fewer than `sticky` requests in a row, else the next, passing over keys whose
    /// budget is spent, that are paused or were rejected. `probe`: a bench ping or
    /// background probe, which leaves the last tenth of a daily budget alone. When no key
    /// may serve, says until when and why.
    pub fn reserve(
        &self,
        m: &Metered,
        tokens: u64,
        now: u64,
        probe: bool,
    ) -> Result<Grant, Blocked> {
        let mut inner = self.lock();
        inner.roll(now);
        let n = m.keys.len();
        let (current, served) = inner
            .rotations
            .get(&m.provider)
            .map_or((0, 0), |r| (r.current, r.served));
        let start = if current < n && served < self.sticky {
            current
        } else {
            (current + 1) % n
        };
        let mut earliest: Option<Blocked> = None;
        for i in 0..n {
            let k = (start + i) % n;
            if let Err(b) = inner.key_status(m, k, tokens, now, probe) {
                b.keep_earliest(&mut earliest);
                continue;
            }
            let r = inner.rotations.entry(m.provider.clone()).or_default();
            if r.current == k && i == 0 && served < self.sticky {
                r.served += 1;
            } else {
                *r = Rotation {
                    current: k,
                    served: 1,
                };
            }
            return Ok(self.grant(&mut inner, m, k, tokens, now));
        }
        Err(earliest.expect("a model has at least one key slot"))
    }

    /// [`reserve`](Self::reserve) with the provider's `key`-th key only (checking a key
    /// just set); the rotation is left as it was.
    pub fn reserve_key(
        &self,
        m: &Metered,
        key: usize,
        tokens: u64,
        now: u64,
    ) -> Result<Grant, Blocked> {
        let mut inner = self.lock();
        inner.roll(now);
        let k = key.min(m.keys.len() - 1);
        inner.key_status(m, k, tokens, now, false)?;
        Ok(self.grant(&mut inner, m, k, tokens, now))
    }

    /// Counts the request about to go to `m` with key `k` and grants it.
    fn grant(&self, inner: &mut Figures, m: &Metered, k: usize, tokens: u64, now: u64) -> Grant {
        inner.count_request(m, k, tokens, now);
        self.dirty.store(true, Ordering::Release);
        Grant {
            key: k,
            label: m.keys[k].label.clone(),
            sent_at_ms: now,
        }
    }

    /// Planning's view of each of `models` under one lock (nothing is taken): blocked when
    /// every key is, else the headroom of its best key, the share of its tightest known
    /// limit left (1.0 when no limit is known), which breaks ties between otherwise equal
    /// models.
    pub fn assess<'m>(
        &self,
        models: impl IntoIterator<Item = &'m Metered>,
        tokens: u64,
        now: u64,
    ) -> Vec<Result<Headroom, Blocked>> {
        let mut inner = self.lock();
        inner.roll(now);
        models
            .into_iter()
            .map(|m| inner.assess(m, tokens, now))
            .collect()
    }

    /// Whether every key of `m` is blocked now (nothing is taken).
    #[cfg(test)]
    pub fn blocked(&self, m: &Metered, tokens: u64, now: u64) -> Option<Blocked> {
        self.assess([m], tokens, now).pop().and_then(Result::err)
    }

    /// The request [`reserve`](Self::reserve) granted was answered (or ended without an
    /// answer): it is no longer in flight, and the windows its answer reported replace the
    /// last ones. Without any, the last figures lose the request it may have cost. Called
    /// once per grant.
    ///
    /// Answers to requests sent together come back in any order, so figures seen while this
    /// one was out may be newer than its own: for those windows, still open, the lower
    /// figure of what is left stands (see [`Window::fresher`]).
    pub fn answered(&self, m: &Metered, grant: &Grant, windows: &[Window], now: u64) {
        let key = &m.keys[grant.key];
        let at = &key.at_reported;
        let mut guard = self.lock();
        let inner = &mut *guard;
        if let Some(n) = inner.in_flight.get_mut(at) {
            *n = n.saturating_sub(1);
        }
        if windows.is_empty() {
            if let Some(r) = inner.book.reported.get_mut(at) {
                r.windows.iter_mut().for_each(Window::spend_one);
            }
            return;
        }
        let mut windows = windows.to_vec();
        if let Some(old) = inner.book.reported.get(at) {
            if old.seen_at_ms >= grant.sent_at_ms {
                for w in &mut windows {
                    if let Some(o) = old.windows.iter().find(|o| o.same_counter(w)) {
                        w.fresher(o, now);
                    }
                }
            }
        }
        let r = Reported {
            whose: m.whose(&m.reported_scope, key),
            seen_at_ms: now,
            windows,
        };
        inner.report(r);
        self.dirty.store(true, Ordering::Release);
    }

    /// `grant`'s request never reached the provider (its address did not resolve, or no
    /// connection could be made): what [`reserve`](Self::reserve) counted is given back,
    /// the day's count and the minute's, and it is no longer in flight.
    pub fn unsent(&self, m: &Metered, grant: &Grant, tokens: u64, now: u64) {
        let mut inner = self.lock();
        inner.roll(now);
        inner.uncount_request(m, grant.key, tokens, grant.sent_at_ms);
        self.dirty.store(true, Ordering::Release);
    }

    /// `grant`'s request was answered 429 with no limit stated (no `x-ratelimit-*`
    /// figure): what the model took in the last minute becomes its limit a minute for
    /// [`LEARNED_FOR_MS`], so that it is not sent into the same wall again.
    pub fn learn_from_429(&self, m: &Metered, grant: &Grant, now: u64) {
        let key = &m.keys[grant.key];
        let mut inner = self.lock();
        let took = inner.took(key, now);
        inner
            .learned_of(key)
            .refused_at(took, now, now + LEARNED_FOR_MS);
    }

    /// Adds the tokens an answer cost. The model answered: its run of 429s is over.
    pub fn tokens(&self, m: &Metered, grant: &Grant, t: Tokens, now: u64) {
        let key = &m.keys[grant.key];
        let mut inner = self.lock();
        inner.roll(now);
        if let Some(l) = inner.learned.get_mut(&key.at_model) {
            l.streak = 0;
        }
        inner.change_row(m, key, |r| {
            r.prompt_tokens += t.prompt;
            r.completion_tokens += t.completion;
            r.cached_tokens += t.cached;
            r.estimated_tokens += t.estimated;
        });
        inner.add_minute(m, key, now, 0, t.completion);
        self.dirty.store(true, Ordering::Release);
    }

    /// Adds the tokens compression kept out of a request sent to `m` with `grant`'s key.
    pub fn saved(&self, m: &Metered, grant: &Grant, tokens: u64, now: u64) {
        if tokens == 0 {
            return;
        }
        let key = &m.keys[grant.key];
        let mut inner = self.lock();
        inner.roll(now);
        inner.change_row(m, key, |r| r.saved_tokens += tokens);
        self.dirty.store(true, Ordering::Release);
    }

    /// Counts a rate-limited answer of `m` with `grant`'s key and returns how long to
    /// pause: `pause` (from `Retry-After`) for the first of a run, at least
    /// [`STREAK_PAUSE`] doubling for each after it without an answer between, or
    /// [`STORM_PAUSE`] when this is the third 429 for the model and key within a minute. With several keys the ledger holds this key
    /// only (the others serve on); with one, the caller pauses the model in its breaker.
    pub fn rate_limited(&self, m: &Metered, grant: &Grant, pause: Duration, now: u64) -> Duration {
        let key = &m.keys[grant.key];
        let mut guard = self.lock();
        let inner = &mut *guard;
        inner.roll(now);
        inner.change_row(m, key, |r| r.rate_limited += 1);
        let recent = inner.storms.entry(key.at_model.clone()).or_default();
        recent.retain(|t| now.saturating_sub(*t) < STORM_WINDOW_MS);
        recent.push_back(now);
        let storm = recent.len() >= STORM_COUNT;
        if storm {
            recent.clear();
        }
        inner.limited(key, now + LIMITED_LATELY_MS);
        let learned = inner.learned_of(key);
        learned.streak += 1;
        let escalated = match learned.streak {
            1 => pause,
            n => pause.max(
                STREAK_PAUSE
                    .saturating_mul(1 << (n - 2).min(8))
                    .min(STORM_PAUSE),
            ),
        };
        let (pause, why) = if storm {
            (pause.max(STORM_PAUSE), HoldReason::RetryStorm)
        } else {
            (escalated, HoldReason::RateLimited)
        };
        if m.key_count() > 1 {
            let scope = if storm { &m.model } else { &m.pause_scope };
            let hold = Hold {
                whose: m.whose(scope, key),
                until_ms: now + pause.as_millis() as u64,
                why,
                signal: None,
            };
            inner.hold(hold);
        }
        self.dirty.store(true, Ordering::Release);
        pause
    }

    /// The answer to `grant`'s request said a limit is used up (`e`): the key is held at
    /// the scope it covers (the model, or every model of the provider on that key; when
    /// the answer does not say, the catalog's scope for the provider's figures) until its
    /// reset, so no request goes into that wall again and another key serves where there
    /// is one. Counted as a rate-limited answer.
    pub fn exhausted(&self, m: &Metered, grant: &Grant, e: &Exhaustion, now: u64) {
        let key = &m.keys[grant.key];
        let scope = match e.reach {
            Some(Reach::Account) => &m.provider,
            Some(Reach::Model) => &m.model,
            None => &m.reported_scope,
        };
        let hold = Hold {
            whose: m.whose(scope, key),
            until_ms: e.until_ms,
            why: HoldReason::Exhausted,
            signal: Some(e.signal),
        };
        let mut inner = self.lock();
        inner.roll(now);
        inner.change_row(m, key, |r| r.rate_limited += 1);
        // Its siblings likely have the same grant or day: poor homes while it lasts (for
        // two hours at most), ten minutes at least.
        let poor = e.until_ms.min(now + POOR_AFTER_EXHAUSTION_MS);
        inner.limited(key, poor.max(now + LIMITED_LATELY_MS));
        inner.hold(hold);
        self.dirty.store(true, Ordering::Release);
    }

    /// The provider refused `grant`'s prompt of `tokens` as larger than the model's
    /// tokens a minute, `limit` as it stated (0: it did not, and the prompt's size less one
    /// is taken): no prompt that large goes to the model with that key again.
    pub fn too_large(&self, m: &Metered, grant: &Grant, limit: u64, tokens: u64) {
        let key = &m.keys[grant.key];
        self.lock().learned_of(key).too_large(limit, tokens);
    }

    /// The provider rejected `grant`'s key: with several keys it is passed over for
    /// [`KEY_REJECTED_PAUSE`] (the others serve); a single key is left as it was (the
    /// router skips its provider for the rest of the request, and asks again next time).
    pub fn rejected(&self, m: &Metered, grant: &Grant, now: u64) {
        if m.key_count() < 2 {
            return;
        }
        let key = &m.keys[grant.key];
        let hold = Hold {
            whose: m.whose(&m.provider, key),
            until_ms: now + KEY_REJECTED_PAUSE.as_millis() as u64,
            why: HoldReason::KeyRejected,
            signal: None,
        };
        let mut inner = self.lock();
        inner.hold(hold);
        self.dirty.store(true, Ordering::Release);
    }

    /// Whether every key of `m` is held for a used-up quota now: until when the first of
    /// them comes back, what ran out, and that key's label.
    pub fn exhaustion(&self, m: &Metered, now: u64) -> Option<(u64, Signal, Option<String>)> {
        let inner = self.lock();
        let mut first: Option<(u64, Signal, Option<String>)> = None;
        for key in &m.keys {
            let hold = inner.held(key, now)?;
            if hold.why != HoldReason::Exhausted {
                return None;
            }
            let signal = hold.signal.unwrap_or(Signal::DailyLimit);
            if first
                .as_ref()
                .is_none_or(|(until, _, _)| hold.until_ms < *until)
            {
                first = Some((hold.until_ms, signal, key.label.clone()));
            }
        }
        first
    }

    /// How many more probe requests `m` may be sent today across its keys, as far as a
    /// known daily limit says (its last tenth kept back); `None` when no daily limit is
    /// known. The counter it comes from is named, since a provider-wide one is shared by
    /// all its models.
    pub fn probe_room(&self, m: &Metered, now: u64) -> Option<Room> {
        let mut inner = self.lock();
        inner.roll(now);
        let mut total: Option<Room> = None;
        for key in &m.keys {
            let mut tightest: Option<Room> = None;
            let mut consider = |counter: &str, room: u64, limit: u64| {
                if tightest.as_ref().is_none_or(|t| room < t.left) {
                    tightest = Some(Room {
                        counter: counter.to_string(),
                        left: room,
                        daily_limit: limit,
                    });
                }
            };
            for (i, (counter, q)) in m.rules.iter().enumerate() {
                if let Some(limit) = q.requests_per_day {
                    let used = inner.spent(m, i, key, now).day_requests;
                    consider(
                        counter,
                        limit
                            .saturating_sub(quota::probe_reserve(limit))
                            .saturating_sub(used),
                        limit,
                    );
                }
            }
            if let Some(r) = inner.book.reported.get(&key.at_reported) {
                for w in &r.windows {
                    let (Some(limit), Some(left)) = (w.limit, w.remaining) else {
                        continue;
                    };
                    if w.daily() && w.reset_at > now {
                        let room = left.saturating_sub(quota::probe_reserve(limit));
                        consider(&m.reported_scope, room, limit);
                    }
                }
            }
            let held = inner.held(key, now).is_some();
            if let Some(mut t) = tightest {
                if held {
                    t.left = 0;
                }
                total = Some(match total {
                    None => t,
                    Some(mut sum) => {
                        sum.left += t.left;
                        sum.daily_limit += t.daily_limit;
                        sum
                    }
                });
            }
        }
        total
    }

    /// The windows the provider last reported for `m` with its `key`-th key that have not
    /// reset yet (after a request, what is left).
    pub fn left(&self, m: &Metered, key: usize, now: u64) -> Vec<Window> {
        let inner = self.lock();
        let Some(tag) = m.keys.get(key) else {
            return Vec::new();
        };
        inner
            .book
            .reported
            .get(&tag.at_reported)
            .map(|r| {
                r.windows
                    .iter()
                    .filter(|w| w.reset_at > now)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The ledger as a file, for `fcm usage` and the dashboard.
    pub fn snapshot(&self) -> UsageBook {
        self.lock().book.to_file()
    }

    /// Saves what this process added into `path` (merged with what is there: another
    /// process may have added too) and takes in the others' additions. Does nothing when
    /// this process added nothing and the file has not changed since it last looked.
    /// A failed write keeps the additions for the next try.
    pub fn sync(&self, path: &Path, now: u64) -> Result<bool, StateError> {
        let changed_on_disk = modified(path) != self.lock().synced;
        if !self.dirty.swap(false, Ordering::AcqRel) {
            if changed_on_disk {
                // Another process saved: take its additions in, write nothing (two
                // servers on one FCM_HOME would otherwise answer each other's writes).
                let file: UsageBook = crate::state::files::load_json(path)?;
                self.lock().adopt(file, modified(path));
            }
            return Ok(false);
        }
        let pending = std::mem::take(&mut self.lock().pending);
        let written = crate::state::files::update_json(path, |file: &mut UsageBook| {
            let mut disk = Book::from_file(std::mem::take(file));
            disk.absorb(&pending);
            disk.prune(now);
            *file = disk.to_file();
        });
        let mut inner = self.lock();
        match written {
            Ok(file) => {
                // What the file holds now, plus what was added while it was written.
                inner.adopt(file, modified(path));
                Ok(true)
            }
            Err(e) => {
                let mut back = pending;
                back.absorb(&inner.pending);
                inner.pending = back;
                self.dirty.store(true, Ordering::Release);
                Err(e)
            }
        }
    }
}

/// A file's modification time, to notice another process's write.
fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests;
