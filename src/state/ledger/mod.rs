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

pub mod book;
pub mod report;

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::answers::gate::AnswerStats;
use crate::providers::catalog::{ApiKey, ModelRef};
use crate::providers::quota::{self, Exhausted, Quota, Scope, Spent, Window, MINUTE_MS};
use crate::state::files::StateError;
use crate::time::{utc_day, DAY_MS};

use book::{slot, UsageRow};
pub use book::{Book, Hold, HoldReason, Reported, UsageBook, Whose};

/// Requests sent with one key of a provider before the next key takes over.
pub const DEFAULT_STICKY: u32 = 3;
/// Three 429s for one model and key within a minute ...
const STORM_COUNT: usize = 3;
const STORM_WINDOW_MS: u64 = 60_000;
/// ... pause it this long, whatever each `Retry-After` said: some providers' quota
/// answers are optimistic, and asking again at once only earns the next 429.
pub const STORM_PAUSE: Duration = crate::answers::classify::MAX_QUOTA_PAUSE;
/// A key the provider rejected is passed over this long (another of its keys serves);
/// a new key is a new fingerprint, so fixing it takes effect at once.
pub const KEY_REJECTED_PAUSE: Duration = Duration::from_secs(60 * 60);

/// One key as the ledger knows it: its label and fingerprint, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTag {
    /// `groq#2`; `None` for a provider that takes no key.
    pub label: Option<String>,
    /// The fingerprint (empty for no key).
    pub id: String,
    /// This key's index names ([`slot`]), made once so that a lookup allocates nothing:
    /// its row and holds on the model, its holds on the provider, the provider's reported
    /// figures, and each rule's counter (in the model's rule order).
    at_model: String,
    at_provider: String,
    at_reported: String,
    at_rules: Vec<String>,
}

/// A model as the ledger sees it: its counters, the rules on them, and its provider's keys.
#[derive(Debug, Clone)]
pub struct Metered {
    pub provider: String,
    /// `provider/modelId`.
    pub model: String,
    /// Each catalog rule with the counter it limits (the model, or the provider).
    rules: Vec<(String, Quota)>,
    /// The counter a provider's `x-ratelimit-*` figures belong to.
    reported_scope: String,
    /// What a 429 pauses: the whole provider for one account-wide quota, else the model.
    pause_scope: String,
    /// At least one: a provider without a key has a single tag without a label.
    keys: Vec<KeyTag>,
}

impl Metered {
    /// `m` with its provider's `keys` (in the order they are used).
    pub fn new(m: ModelRef<'_>, keys: &[ApiKey]) -> Metered {
        let model = m.key();
        let provider = m.provider.id.clone();
        let counter = |scope: Scope| match scope {
            Scope::Provider => provider.clone(),
            Scope::Model => model.clone(),
        };
        let rules: Vec<(String, Quota)> =
            quota::rules(m.provider.quota.as_ref(), m.model.quota.as_ref())
                .into_iter()
                .map(|r| (counter(r.scope), r.quota))
                .collect();
        let provider_wide = m.provider.shared_quota
            || m.provider
                .quota
                .as_ref()
                .is_some_and(|q| q.scope_or_provider() == Scope::Provider);
        let reported_scope = counter(if provider_wide {
            Scope::Provider
        } else {
            Scope::Model
        });
        let pause_scope = counter(if m.provider.shared_quota {
            Scope::Provider
        } else {
            Scope::Model
        });
        let tag = |label: Option<String>, id: String| KeyTag {
            at_model: slot(&model, &id),
            at_provider: slot(&provider, &id),
            at_reported: slot(&reported_scope, &id),
            at_rules: rules.iter().map(|(c, _)| slot(c, &id)).collect(),
            label,
            id,
        };
        let mut tags: Vec<KeyTag> = keys
            .iter()
            .map(|k| tag(Some(k.label.clone()), k.id.clone()))
            .collect();
        if tags.is_empty() {
            tags.push(tag(None, String::new()));
        }
        Metered {
            provider,
            model,
            rules,
            reported_scope,
            pause_scope,
            keys: tags,
        }
    }

    /// Figures of `scope` (this model or its provider) with `key`.
    fn whose(&self, scope: &str, key: &KeyTag) -> Whose {
        Whose {
            scope: scope.to_string(),
            provider: self.provider.clone(),
            key: key.label.clone(),
            key_id: key.id.clone(),
        }
    }

    /// How many keys the provider has (0 for one that takes none).
    pub fn key_count(&self) -> usize {
        self.keys.iter().filter(|k| k.label.is_some()).count()
    }
}

/// Permission to send one request, with the key to send it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Index into the provider's keys (0 for a provider without one).
    pub key: usize,
    /// `groq#2`, for traces; `None` without a key.
    pub label: Option<String>,
    /// When it was granted (ms since epoch): figures seen since then may be newer than
    /// the ones its own answer brings.
    pub sent_at_ms: u64,
}

impl Grant {
    /// The key to send, out of the target's keys.
    pub fn api_key<'a>(&self, keys: &'a [ApiKey]) -> Option<&'a ApiKey> {
        keys.get(self.key)
    }
}

/// Why no key of a model may be sent a request now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// A known budget is spent (the catalog's limit, or what the provider said is left).
    Budget(String),
    /// Paused after 429s.
    Paused,
    /// The provider rejected the key.
    Rejected,
}

/// No key of a model may be sent a request before `until_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub until_ms: u64,
    pub why: Why,
}

/// Tokens one answer cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    /// How many of them are fcm's estimate.
    pub estimated: u64,
}

impl Tokens {
    /// From the answer's `usage`, else estimated: the prompt as the router estimated it,
    /// the completion from the characters that came back.
    pub fn of(stats: &AnswerStats, prompt_estimate: u64) -> Tokens {
        let (prompt, prompt_estimated) = match stats.prompt_tokens {
            Some(n) => (n, 0),
            None => (prompt_estimate, prompt_estimate),
        };
        let completion = stats.output_tokens();
        let completion_estimated = if stats.completion_tokens.is_some() {
            0
        } else {
            completion
        };
        Tokens {
            prompt,
            completion,
            estimated: prompt_estimated + completion_estimated,
        }
    }
}

/// Requests and tokens of one counter and key per second, for the last minute.
#[derive(Debug, Default)]
struct Minute {
    /// (second, requests, tokens), oldest first.
    seconds: VecDeque<(u64, u64, u64)>,
}

impl Minute {
    fn add(&mut self, now: u64, requests: u64, tokens: u64) {
        let sec = now / 1000;
        self.forget(now);
        match self.seconds.back_mut() {
            Some(last) if last.0 == sec => {
                last.1 += requests;
                last.2 += tokens;
            }
            _ => self.seconds.push_back((sec, requests, tokens)),
        }
    }

    fn forget(&mut self, now: u64) {
        while self
            .seconds
            .front()
            .is_some_and(|(s, _, _)| s * 1000 + MINUTE_MS <= now)
        {
            self.seconds.pop_front();
        }
    }

    /// (requests, tokens, when the oldest of them leaves the window).
    fn spent(&self, now: u64) -> (u64, u64, u64) {
        let live = self
            .seconds
            .iter()
            .filter(|(s, _, _)| s * 1000 + MINUTE_MS > now);
        let (mut requests, mut tokens, mut oldest) = (0, 0, None);
        for (s, r, t) in live {
            requests += r;
            tokens += t;
            oldest = oldest.or(Some(*s));
        }
        // The whole second counts: a request late in it leaves the window late too.
        (
            requests,
            tokens,
            oldest.map_or(0, |s| (s + 1) * 1000 + MINUTE_MS),
        )
    }
}

/// Which key of a provider is in use and how many requests it has had in a row.
#[derive(Debug, Default)]
struct Rotation {
    current: usize,
    served: u32,
}

#[derive(Debug, Default)]
struct Inner {
    /// Everything known: the file as last read, and what this process added since.
    book: Book,
    /// What this process added since its last save.
    pending: Book,
    minutes: HashMap<String, Minute>,
    rotations: HashMap<String, Rotation>,
    /// Recent 429s per model and key.
    storms: HashMap<String, VecDeque<u64>>,
    /// Requests sent and not answered yet, per reported counter and key: what the
    /// provider's last figures cannot have counted.
    in_flight: HashMap<String, u64>,
    /// When this process last wrote or read the file (its modification time then).
    synced: Option<SystemTime>,
    /// Today (UTC), as a number of days and as the book names it, kept current by
    /// [`Inner::roll`] so that lookups do not format it.
    today_n: u64,
    today: String,
}

impl Inner {
    /// Makes `today` the UTC day of `now` (called first by every ledger operation).
    fn roll(&mut self, now: u64) {
        let n = now / DAY_MS;
        if n != self.today_n || self.today.is_empty() {
            self.today_n = n;
            self.today = utc_day(now);
        }
    }

    /// What `m`'s rule `rule` spent on its counter with `key`, today and in the last
    /// minute. A provider's counter sums its models' rows.
    fn spent(&self, m: &Metered, rule: usize, key: &KeyTag, now: u64) -> Spent {
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
    fn held(&self, key: &KeyTag, now: u64) -> Option<&Hold> {
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
    fn key_status(
        &self,
        m: &Metered,
        k: usize,
        tokens: u64,
        now: u64,
        probe: bool,
    ) -> Result<f64, Blocked> {
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
        if let Some(h) = self.held(key, now) {
            let why = match h.why {
                HoldReason::KeyRejected => Why::Rejected,
                HoldReason::RateLimited | HoldReason::RetryStorm => Why::Paused,
            };
            keep(Blocked {
                until_ms: h.until_ms,
                why,
            });
        }
        for (i, (_, q)) in m.rules.iter().enumerate() {
            let spent = self.spent(m, i, key, now);
            if let Some(e) = q.blocks(&spent, tokens, now, probe) {
                keep(budget(e));
            }
            consider(spent.minute_requests, q.requests_per_minute);
            consider(spent.day_requests, q.requests_per_day);
            consider(spent.minute_tokens, q.tokens_per_minute);
            consider(spent.day_tokens, q.tokens_per_day);
        }
        if let Some(r) = self.book.reported.get(&key.at_reported) {
            let in_flight = self.in_flight.get(&key.at_reported).copied().unwrap_or(0);
            for w in r.windows.iter().filter(|w| w.reset_at > now) {
                if let Some(e) = w.blocks(tokens, in_flight, now, probe) {
                    keep(budget(e));
                }
                if let (Some(left), Some(limit)) = (w.remaining, w.limit) {
                    consider(limit.saturating_sub(left), Some(limit));
                }
            }
        }
        match last {
            Some(b) => Err(b),
            None => Ok(least),
        }
    }

    /// Planning's view of `m`: blocked when every key is, else its best key's headroom.
    fn assess(&self, m: &Metered, tokens: u64, now: u64) -> Result<f64, Blocked> {
        let mut earliest: Option<Blocked> = None;
        let mut best: Option<f64> = None;
        for k in 0..m.keys.len() {
            match self.key_status(m, k, tokens, now, false) {
                Ok(h) => best = Some(best.map_or(h, |b: f64| b.max(h))),
                Err(b) if earliest.as_ref().is_none_or(|e| b.until_ms < e.until_ms) => {
                    earliest = Some(b)
                }
                Err(_) => {}
            }
        }
        best.ok_or_else(|| earliest.expect("a model has at least one key slot"))
    }

    /// The row of `m` with `key` today, in the book and among the additions to save, with
    /// `change` applied to both.
    fn change_row(&mut self, m: &Metered, key: &KeyTag, change: impl Fn(&mut UsageRow)) {
        let Inner {
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
    fn add_minute(&mut self, m: &Metered, key: &KeyTag, now: u64, requests: u64, tokens: u64) {
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
    fn count_request(&mut self, m: &Metered, k: usize, tokens: u64, now: u64) {
        let key = &m.keys[k];
        self.change_row(m, key, |r| r.requests += 1);
        self.add_minute(m, key, now, 1, tokens);
        match self.in_flight.get_mut(&key.at_reported) {
            Some(n) => *n += 1,
            None => {
                self.in_flight.insert(key.at_reported.clone(), 1);
            }
        }
    }
}

fn budget(e: Exhausted) -> Blocked {
    Blocked {
        until_ms: e.until_ms,
        why: Why::Budget(e.what),
    }
}

/// The shared ledger of one fcm process.
pub struct Ledger {
    inner: Mutex<Inner>,
    dirty: AtomicBool,
    /// Requests on one key before the next (`router.keys.sticky`).
    sticky: u32,
}

impl Ledger {
    pub fn new(file: UsageBook, now: u64, sticky: u32) -> Ledger {
        let mut book = Book::from_file(file);
        book.prune(now);
        Ledger {
            inner: Mutex::new(Inner {
                book,
                ..Inner::default()
            }),
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
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
                if earliest.as_ref().is_none_or(|e| b.until_ms < e.until_ms) {
                    earliest = Some(b);
                }
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
    fn grant(&self, inner: &mut Inner, m: &Metered, k: usize, tokens: u64, now: u64) -> Grant {
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
    ) -> Vec<Result<f64, Blocked>> {
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
        inner.pending.report(r.clone());
        inner.book.report(r);
        self.dirty.store(true, Ordering::Release);
    }

    /// Adds the tokens an answer cost.
    pub fn tokens(&self, m: &Metered, grant: &Grant, t: Tokens, now: u64) {
        let key = &m.keys[grant.key];
        let mut inner = self.lock();
        inner.roll(now);
        inner.change_row(m, key, |r| {
            r.prompt_tokens += t.prompt;
            r.completion_tokens += t.completion;
            r.estimated_tokens += t.estimated;
        });
        inner.add_minute(m, key, now, 0, t.completion);
        self.dirty.store(true, Ordering::Release);
    }

    /// Counts a rate-limited answer of `m` with `grant`'s key and returns how long to
    /// pause: `pause` (from `Retry-After`), or [`STORM_PAUSE`] when this is the third 429
    /// for the model and key within a minute. With several keys the ledger holds this key
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
        let (pause, why) = if storm {
            (pause.max(STORM_PAUSE), HoldReason::RetryStorm)
        } else {
            (pause, HoldReason::RateLimited)
        };
        if m.key_count() > 1 {
            let scope = if storm { &m.model } else { &m.pause_scope };
            let hold = Hold {
                whose: m.whose(scope, key),
                until_ms: now + pause.as_millis() as u64,
                why,
            };
            inner.pending.hold(hold.clone());
            inner.book.hold(hold);
        }
        self.dirty.store(true, Ordering::Release);
        pause
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
        };
        let mut inner = self.lock();
        inner.pending.hold(hold.clone());
        inner.book.hold(hold);
        self.dirty.store(true, Ordering::Release);
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
                let mut inner = self.lock();
                let mut book = Book::from_file(file);
                book.absorb(&inner.pending);
                inner.book = book;
                inner.synced = modified(path);
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
                let mut book = Book::from_file(file);
                book.absorb(&inner.pending);
                inner.book = book;
                inner.synced = modified(path);
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

/// How many more probe requests a model may be sent today, from the tightest known daily
/// limit (summed over its provider's keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// The counter that limits it: the model, or its provider for a provider-wide limit.
    pub counter: String,
    pub left: u64,
    pub daily_limit: u64,
}

#[cfg(test)]
mod tests;
