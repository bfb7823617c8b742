//! What `fcm usage` and the dashboard show of the ledger: per provider, and per model,
//! over the last N UTC days: requests, tokens, rate-limited answers, tokens saved by
//! compression, the catalog's limits, what the provider last said is left and when that
//! resets, and keys out of use. Pure: a ledger snapshot and the catalog in, a report out.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::providers::catalog::Catalog;
use crate::providers::quota::{self, Quota, Scope, Unit, Window};
use crate::time::{rfc3339, utc_day, DAY_MS};

use super::book::{HoldReason, Reported, UsageBook, UsageRow};
use crate::answers::exhaustion::Signal;

/// `fcm usage --json`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// Today (UTC), the last day counted.
    pub day: String,
    /// The first day counted (`--days`).
    pub from: String,
    pub providers: Vec<UsageLine>,
    pub models: Vec<UsageLine>,
}

/// One provider's or one model's figures.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageLine {
    pub provider: String,
    /// `provider/modelId` on a model's line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the providers' prompt caches served.
    pub cached_tokens: u64,
    /// How many of the tokens are fcm's estimate (the answers reported no `usage`).
    pub estimated_tokens: u64,
    pub rate_limited: u64,
    /// Tokens tool-result compression kept out of the requests (estimated).
    pub saved_tokens: u64,
    /// The catalog's limits: the provider's `quota` on a provider's line (its `scope` says
    /// whether they count for the provider or for each model), the model's own with a
    /// model-scoped provider quota under it on a model's line; `null` when none is stated.
    pub limits: Option<Quota>,
    /// The model of the same line whose stated limits a model's line shows, the catalog
    /// stating none of its own (see `catalog::lines`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits_from: Option<String>,
    /// What the provider last said is left, in its tightest live window.
    pub remaining: Left,
    /// When each of those windows is full again.
    pub reset_at: Resets,
    /// Per key, when the provider has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<KeyLine>,
}

/// Requests and tokens left, as the provider said (absent when it did not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Left {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl Left {
    /// `998 requests, 11963 tokens`, or `-`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let plural = |n: u64, one: &str| {
            if n == 1 {
                format!("1 {one}")
            } else {
                format!("{n} {one}s")
            }
        };
        if let Some(n) = self.requests {
            parts.push(plural(n, "request"));
        }
        if let Some(n) = self.tokens {
            parts.push(plural(n, "token"));
        }
        if parts.is_empty() {
            "-".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// RFC 3339 times at which the windows of [`Left`] reset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Resets {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<String>,
}

impl Resets {
    /// How long until each resets, from `now`: `1m26s / 185 ms`, or `-`.
    pub fn describe(&self, now: u64) -> String {
        let when = |at: &Option<String>| {
            at.as_deref()
                .and_then(crate::time::parse_rfc3339)
                .map(|t| crate::time::human_ms(t.saturating_sub(now)))
        };
        let parts: Vec<String> = [when(&self.requests), when(&self.tokens)]
            .into_iter()
            .flatten()
            .collect();
        if parts.is_empty() {
            "-".to_string()
        } else {
            parts.join(" / ")
        }
    }
}

impl UsageLine {
    /// Whether the line's `limits` count for the line's own counter: a model's always; a
    /// provider's when they are provider-wide (a model-scoped provider quota is each
    /// model's).
    fn limits_are_its_own(&self) -> bool {
        self.model.is_some()
            || self
                .limits
                .as_ref()
                .is_some_and(|q| q.scope_or_provider() == Scope::Provider)
    }

    /// The line's figures as `fcm usage` and the dashboard show them: requests, tokens,
    /// rate-limited answers, limits, what is left, when it resets.
    pub fn cells(&self, now: u64) -> [String; 6] {
        [
            self.requests_cell(),
            self.tokens_cell(),
            self.rate_limited.to_string(),
            self.limits_cell(),
            self.remaining.describe(),
            self.reset_at.describe(now),
        ]
    }

    /// How many of its keys are held now (after 429s or a rejection).
    pub fn held_keys(&self) -> usize {
        self.keys.iter().filter(|k| k.held_until.is_some()).count()
    }

    /// `12`, or `45 of 50/day` when the catalog states a daily limit on this counter.
    pub fn requests_cell(&self) -> String {
        let daily = self.limits.as_ref().and_then(|q| q.requests_per_day);
        match daily.filter(|_| self.limits_are_its_own()) {
            Some(limit) => format!("{} of {limit}/day", self.requests),
            None => self.requests.to_string(),
        }
    }

    /// `~120 / 40` (in / out; `~` when some of it is estimated), with `(80 cached)` when
    /// the providers' prompt caches served part of the prompts.
    pub fn tokens_cell(&self) -> String {
        let approx = if self.estimated_tokens > 0 { "~" } else { "" };
        let mut cell = format!(
            "{approx}{} / {}",
            self.prompt_tokens, self.completion_tokens
        );
        if self.cached_tokens > 0 {
            cell.push_str(&format!(" ({} cached)", self.cached_tokens));
        }
        cell
    }

    /// The catalog's limits (`30/min per model` for a provider's model-scoped ones), or `-`.
    pub fn limits_cell(&self) -> String {
        match &self.limits {
            None => "-".to_string(),
            Some(q) if self.limits_are_its_own() => match &self.limits_from {
                Some(from) => format!("{} (as {from} states)", q.describe()),
                None => q.describe(),
            },
            Some(q) => format!("{} per model", q.describe()),
        }
    }
}

/// One key's figures (never its value).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyLine {
    /// `groq#2`.
    pub key: String,
    pub requests: u64,
    pub rate_limited: u64,
    pub remaining: Left,
    /// Out of use until then, and why (`rate_limited`, `retry_storm`, `key_rejected`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_until: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_for: Option<HoldReason>,
    /// For a used-up quota: what ran out (`daily_limit`, ...), and for which model when
    /// not for all of the provider's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_signal: Option<Signal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_model: Option<String>,
}

/// How a provider without keys is named where a key's label would go.
pub const NO_KEY: &str = "(no key)";

/// The tightest live window of each unit in a set of reports: (remaining, reset_at).
#[derive(Debug, Clone, Copy, Default)]
struct Tightest {
    requests: Option<(u64, u64)>,
    tokens: Option<(u64, u64)>,
}

impl Tightest {
    fn of<'a>(windows: impl IntoIterator<Item = &'a Window>, now: u64) -> Tightest {
        let mut t = Tightest::default();
        for w in windows.into_iter().filter(|w| w.reset_at > now) {
            let Some(left) = w.remaining else { continue };
            let slot = match w.unit {
                Unit::Requests => &mut t.requests,
                Unit::Tokens => &mut t.tokens,
            };
            if slot.is_none_or(|(l, _)| left < l) {
                *slot = Some((left, w.reset_at));
            }
        }
        t
    }

    /// Two keys' figures: what is left adds up; the later reset is when all of it is back.
    fn plus(self, other: Tightest) -> Tightest {
        let add = |a: Option<(u64, u64)>, b: Option<(u64, u64)>| match (a, b) {
            (Some((l1, r1)), Some((l2, r2))) => Some((l1 + l2, r1.max(r2))),
            (x, None) | (None, x) => x,
        };
        Tightest {
            requests: add(self.requests, other.requests),
            tokens: add(self.tokens, other.tokens),
        }
    }

    fn left(&self) -> Left {
        Left {
            requests: self.requests.map(|(l, _)| l),
            tokens: self.tokens.map(|(l, _)| l),
        }
    }

    fn resets(&self) -> Resets {
        Resets {
            requests: self.requests.map(|(_, r)| rfc3339(r)),
            tokens: self.tokens.map(|(_, r)| rfc3339(r)),
        }
    }
}

impl UsageLine {
    fn add(&mut self, r: &UsageRow) {
        self.requests += r.requests;
        self.prompt_tokens += r.prompt_tokens;
        self.completion_tokens += r.completion_tokens;
        self.cached_tokens += r.cached_tokens;
        self.estimated_tokens += r.estimated_tokens;
        self.rate_limited += r.rate_limited;
        self.saved_tokens += r.saved_tokens;
        if let Some(label) = &r.key {
            let k = key_line(&mut self.keys, label);
            k.requests += r.requests;
            k.rate_limited += r.rate_limited;
        }
    }
}

fn key_line<'a>(keys: &'a mut Vec<KeyLine>, label: &str) -> &'a mut KeyLine {
    match keys.iter().position(|k| k.key == label) {
        Some(i) => &mut keys[i],
        None => {
            keys.push(KeyLine {
                key: label.to_string(),
                ..KeyLine::default()
            });
            keys.last_mut().expect("just pushed")
        }
    }
}

/// The report over the last `days` UTC days up to `now`'s. Providers listed: those in
/// `configured` (with the labels of the keys set for them) and any the ledger has figures
/// for.
pub fn report(
    book: &UsageBook,
    catalog: &Catalog,
    configured: &[(&str, Vec<String>)],
    now: u64,
    days: u64,
) -> UsageReport {
    let days = days.max(1);
    let from = utc_day(now.saturating_sub((days - 1) * DAY_MS));
    let today = utc_day(now);
    let mut providers: BTreeMap<String, UsageLine> = BTreeMap::new();
    let mut models: BTreeMap<String, UsageLine> = BTreeMap::new();
    let line = |provider: &str| UsageLine {
        provider: provider.to_string(),
        ..UsageLine::default()
    };
    for (p, labels) in configured {
        let l = providers.entry(p.to_string()).or_insert_with(|| line(p));
        for label in labels {
            key_line(&mut l.keys, label);
        }
    }
    for day in book.days.iter().filter(|d| d.day >= from && d.day <= today) {
        for r in &day.rows {
            providers
                .entry(r.provider.clone())
                .or_insert_with(|| line(&r.provider))
                .add(r);
            models
                .entry(r.model.clone())
                .or_insert_with(|| UsageLine {
                    model: Some(r.model.clone()),
                    ..line(&r.provider)
                })
                .add(r);
        }
    }
    for r in &book.reported {
        let provider = &r.whose.provider;
        providers
            .entry(provider.clone())
            .or_insert_with(|| line(provider));
    }
    for (id, p) in providers.iter_mut() {
        let catalog_provider = catalog.provider(id);
        p.limits = catalog_provider.and_then(|c| c.quota.clone());
        let reports: Vec<&Reported> = book
            .reported
            .iter()
            .filter(|r| &r.whose.provider == id)
            .collect();
        fill_left(p, &reports, id, now);
        fill_holds(p, book, id, None, now);
    }
    for (key, m) in models.iter_mut() {
        let found = catalog.find(key);
        m.limits_from = found.and_then(|f| f.model.quota_of_line.clone());
        m.limits = found.and_then(|f| {
            quota::rules(f.provider.quota.as_ref(), f.model.quota.as_ref())
                .into_iter()
                .find(|r| r.scope == Scope::Model)
                .map(|r| r.quota)
        });
        let reports: Vec<&Reported> = book
            .reported
            .iter()
            .filter(|r| {
                let w = &r.whose;
                w.scope == *key || (w.scope == m.provider && w.provider == m.provider)
            })
            .collect();
        fill_left(m, &reports, key, now);
        fill_holds(m, book, &m.provider.clone(), Some(key), now);
    }
    UsageReport {
        day: today,
        from,
        providers: providers.into_values().collect(),
        models: models.into_values().collect(),
    }
}

/// What is left for a line: per key the tightest of its reports (the provider's own
/// counter if it reports one, else its tightest model), summed over keys.
fn fill_left(line: &mut UsageLine, reports: &[&Reported], own_scope: &str, now: u64) {
    let mut by_key: BTreeMap<&str, (Option<&str>, Tightest)> = BTreeMap::new();
    for r in reports {
        let t = Tightest::of(&r.windows, now);
        let entry = by_key
            .entry(r.whose.key_id.as_str())
            .or_insert((r.whose.key.as_deref(), Tightest::default()));
        // A report on this line's own counter is the answer for it; otherwise the
        // tightest of the narrower ones (a provider reporting per model).
        let own = r.whose.scope == own_scope;
        entry.1 = if own { t } else { tighter(entry.1, t) };
    }
    let mut total = Tightest::default();
    for (label, t) in by_key.values() {
        total = total.plus(*t);
        if let Some(label) = label {
            key_line(&mut line.keys, label).remaining = t.left();
        }
    }
    line.remaining = total.left();
    line.reset_at = total.resets();
}

fn tighter(a: Tightest, b: Tightest) -> Tightest {
    let pick = |x: Option<(u64, u64)>, y: Option<(u64, u64)>| match (x, y) {
        (Some(p), Some(q)) => Some(if q.0 < p.0 { q } else { p }),
        (p, None) | (None, p) => p,
    };
    Tightest {
        requests: pick(a.requests, b.requests),
        tokens: pick(a.tokens, b.tokens),
    }
}

/// Keys of the line's provider (or model) out of use now.
fn fill_holds(
    line: &mut UsageLine,
    book: &UsageBook,
    provider: &str,
    model: Option<&str>,
    now: u64,
) {
    for h in book
        .holds
        .iter()
        .filter(|h| h.until_ms > now && h.whose.provider == provider)
    {
        if model.is_some_and(|m| h.whose.scope != m && h.whose.scope != provider) {
            continue;
        }
        let label = h.whose.key.as_deref().unwrap_or(NO_KEY);
        let k = key_line(&mut line.keys, label);
        // The hold that ends last is the one that says when the key is back.
        if k.held_until.as_deref() > Some(rfc3339(h.until_ms).as_str()) {
            continue;
        }
        k.held_until = Some(rfc3339(h.until_ms));
        k.held_for = Some(h.why);
        k.held_signal = h.signal;
        k.held_model = (h.whose.scope != h.whose.provider).then(|| h.whose.scope.clone());
    }
    line.keys.sort_by(|a, b| a.key.cmp(&b.key));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ledger::book::tests::whose;
    use crate::state::ledger::book::{DayUsage, Hold};

    const NOW: u64 = 1_796_102_301_000; // 2026-12-01T05:18:21Z

    fn row(model: &str, key: Option<&str>, requests: u64, rate_limited: u64) -> UsageRow {
        UsageRow {
            provider: model.split('/').next().unwrap().into(),
            model: model.into(),
            key: key.map(str::to_string),
            key_id: key.map(|k| format!("id-{k}")).unwrap_or_default(),
            requests,
            prompt_tokens: 10 * requests,
            completion_tokens: 2 * requests,
            cached_tokens: 0,
            estimated_tokens: 0,
            rate_limited,
            saved_tokens: 100 * requests,
        }
    }

    fn window(unit: Unit, remaining: u64, reset_at: u64) -> Window {
        Window {
            name: "x".into(),
            unit,
            period: None,
            limit: None,
            remaining: Some(remaining),
            reset_at,
        }
    }

    #[test]
    fn sums_days_providers_models_and_keys() {
        let catalog = Catalog::parse(crate::providers::catalog::EMBEDDED, "embedded").unwrap();
        let book = UsageBook {
            version: 1,
            days: vec![
                DayUsage {
                    day: "2026-11-29".into(),
                    rows: vec![row("openrouter/old", Some("openrouter#1"), 9, 0)],
                },
                DayUsage {
                    day: "2026-12-01".into(),
                    rows: vec![
                        row("groq/llama-3.3-70b-versatile", Some("groq#1"), 3, 1),
                        row("groq/llama-3.3-70b-versatile", Some("groq#2"), 2, 0),
                        row("groq/openai/gpt-oss-120b", Some("groq#1"), 1, 0),
                    ],
                },
            ],
            reported: vec![
                Reported {
                    whose: whose(
                        "groq/llama-3.3-70b-versatile",
                        "groq",
                        Some("groq#1"),
                        "id-groq#1",
                    ),
                    seen_at_ms: NOW,
                    windows: vec![
                        window(Unit::Requests, 997, NOW + 86_400),
                        window(Unit::Tokens, 0, NOW + 185),
                    ],
                },
                Reported {
                    whose: whose(
                        "groq/openai/gpt-oss-120b",
                        "groq",
                        Some("groq#1"),
                        "id-groq#1",
                    ),
                    seen_at_ms: NOW,
                    windows: vec![window(Unit::Requests, 5, NOW + 9_000)],
                },
            ],
            holds: vec![Hold {
                whose: whose("groq", "groq", Some("groq#2"), "id-groq#2"),
                until_ms: NOW + 60_000,
                why: HoldReason::KeyRejected,
                signal: None,
            }],
        };
        let configured = [
            ("groq", vec!["groq#1".to_string(), "groq#2".to_string()]),
            ("cerebras", vec![]),
        ];
        let today = report(&book, &catalog, &configured, NOW, 1);
        assert_eq!(
            (today.day.as_str(), today.from.as_str()),
            ("2026-12-01", "2026-12-01")
        );
        let names: Vec<&str> = today
            .providers
            .iter()
            .map(|p| p.provider.as_str())
            .collect();
        assert_eq!(
            names,
            ["cerebras", "groq"],
            "openrouter spent nothing today"
        );
        let groq = &today.providers[1];
        assert_eq!(
            (
                groq.requests,
                groq.prompt_tokens,
                groq.rate_limited,
                groq.saved_tokens
            ),
            (6, 60, 1, 600)
        );
        assert_eq!(
            groq.limits_cell(),
            "30/min per model",
            "Groq's limits count per model"
        );
        let gemini = UsageLine {
            limits: Some(Quota {
                requests_per_minute: Some(5),
                scope: Some(crate::providers::quota::Scope::Model),
                ..Quota::default()
            }),
            limits_from: Some("gemini-3.5-flash".into()),
            model: Some("googleai/gemini-3.8-flash".into()),
            ..UsageLine::default()
        };
        assert_eq!(gemini.limits_cell(), "5/min (as gemini-3.5-flash states)");
        assert_eq!(groq.requests_cell(), "6");
        // The tightest model per key: gpt-oss has 5 requests left.
        assert_eq!(
            groq.remaining,
            Left {
                requests: Some(5),
                tokens: Some(0)
            }
        );
        assert_eq!(
            groq.reset_at.requests.as_deref(),
            Some("2026-12-01T05:18:30Z")
        );
        let keys: Vec<(&str, u64, Option<HoldReason>)> = groq
            .keys
            .iter()
            .map(|k| (k.key.as_str(), k.requests, k.held_for))
            .collect();
        assert_eq!(
            keys,
            [
                ("groq#1", 4, None),
                ("groq#2", 2, Some(HoldReason::KeyRejected))
            ]
        );
        let llama = today
            .models
            .iter()
            .find(|m| m.model.as_deref() == Some("groq/llama-3.3-70b-versatile"))
            .unwrap();
        assert_eq!(llama.requests, 5);
        assert_eq!(llama.remaining.requests, Some(997));
        assert_eq!(
            llama.limits.as_ref().unwrap().describe(),
            "30/min, 1000/day, 12k tok/min, 98k tok/day"
        );
        let week = report(&book, &catalog, &[], NOW, 7);
        assert_eq!(week.from, "2026-11-25");
        let openrouter = week
            .providers
            .iter()
            .find(|p| p.provider == "openrouter")
            .unwrap();
        assert_eq!(openrouter.requests, 9);
        assert_eq!(
            openrouter.limits.as_ref().unwrap().requests_per_day,
            Some(50)
        );
    }
}
