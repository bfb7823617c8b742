//! Each routable model as the router sees it now ([`ModelStatus`]): where model `fcm` would
//! try it (its rank in the order of the moment, or why it is skipped), its breaker, the
//! evidence ranking it, its live figures, today's budget and the conversations it holds.
//! What `fcm top` shows (through `/fcm/admin/live`) and `/metrics` exports as gauges; read
//! when asked, never on a request's path.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::answers::classify::FailureKind;
use crate::providers::catalog::Catalog;
use crate::providers::quota::{self, Scope};
use crate::state::breaker::{Answering, BreakerRow, BreakerState};
use crate::state::ledger::report::{UsageLine, UsageReport};
use crate::state::trace::{SkipReason, Trace};

use super::live::LIVE_MIN;
use super::Router;

/// What ranks a model now (the ranking's own type).
pub(crate) use super::rank::Evidence;

/// Where that evidence comes from: this server's recent traffic, the last bench, or
/// nowhere yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EvidenceFrom {
    Live,
    Bench,
    None,
}

/// Today's budget of a model, as far as fcm knows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Budget {
    /// Requests left: the tighter of what the provider last said and the catalog's daily
    /// limit less today's requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) requests: Option<u64>,
    /// Tokens left, as the provider last said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<u64>,
    /// The catalog's daily request limit on the counter this model uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) requests_per_day: Option<u64>,
}

/// One routable model now.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelStatus {
    pub(crate) model: String,
    pub(crate) provider: String,
    /// Its place (1 first) in the order model `fcm` would try now; `None` when skipped.
    #[serde(default)]
    pub(crate) rank: Option<usize>,
    /// Why model `fcm` would pass it over now.
    #[serde(default)]
    pub(crate) skipped: Option<SkipReason>,
    pub(crate) state: BreakerState,
    pub(crate) consecutive_failures: u32,
    pub(crate) trip_count: u32,
    pub(crate) cooldown_ms_left: u64,
    /// Left of a pause (a quota, an overloaded model's back-off, a notice, a missing model).
    pub(crate) pause_ms_left: u64,
    /// What set the pause; `None` for a quota (or no pause). `quota_exhausted` for a
    /// used-up free quota, `network_error` for a provider that is down.
    #[serde(default)]
    pub(crate) paused_for: Option<FailureKind>,
    /// For a used-up quota or a provider down: what was said, and when it is back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) held_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) held_until: Option<String>,
    #[serde(default)]
    pub(crate) last_failure_kind: Option<FailureKind>,
    pub(crate) evidence: Evidence,
    pub(crate) evidence_from: EvidenceFrom,
    /// Results in the live window (the last [`super::LIVE_WINDOW`] requests) and how many
    /// of them succeeded.
    pub(crate) live_results: usize,
    pub(crate) live_ok: usize,
    /// Median time to first token of the live window's successes.
    #[serde(default)]
    pub(crate) ttft_ms_p50: Option<u64>,
    /// The time to first token ranking uses: the live median, else the last bench's.
    #[serde(default)]
    pub(crate) ranked_ttft_ms: Option<u64>,
    #[serde(default)]
    pub(crate) budget: Budget,
    /// Conversations that last went to this model and are not idle too long.
    pub(crate) conversations: usize,
    /// A member of the set model `fcm` uses first (`router.activeSet`) on this server.
    #[serde(default)]
    pub(crate) in_active_set: bool,
}

impl ModelStatus {
    /// A model as its breaker row (`None`: never failed) and evidence say, with nothing
    /// known yet of its rank, live window, budget or conversations.
    pub(crate) fn of(
        model: String,
        provider: String,
        row: Option<&BreakerRow>,
        evidence: Evidence,
        evidence_from: EvidenceFrom,
    ) -> ModelStatus {
        ModelStatus {
            model,
            provider,
            rank: None,
            skipped: None,
            state: row.map_or(BreakerState::Closed, |r| r.state),
            consecutive_failures: row.map_or(0, |r| r.consecutive_failures),
            trip_count: row.map_or(0, |r| r.trip_count),
            cooldown_ms_left: row.map_or(0, |r| r.cooldown_ms_left),
            pause_ms_left: row.map_or(0, |r| r.quota_pause_ms_left.max(r.held_ms_left)),
            paused_for: row.and_then(|r| match r.held_for.as_deref() {
                Some("quota_exhausted") if r.held_ms_left > r.quota_pause_ms_left => {
                    Some(FailureKind::QuotaExhausted)
                }
                Some("provider_down") if r.held_ms_left > r.quota_pause_ms_left => {
                    Some(FailureKind::NetworkError)
                }
                _ => r.paused_for,
            }),
            held_reason: row.and_then(|r| r.held_reason.clone()),
            held_until: row.and_then(|r| r.held_until.clone()),
            last_failure_kind: row.and_then(|r| r.last_failure_kind),
            evidence,
            evidence_from,
            live_results: 0,
            live_ok: 0,
            ttft_ms_p50: None,
            ranked_ttft_ms: None,
            budget: Budget::default(),
            conversations: 0,
            in_active_set: false,
        }
    }
}

impl Router {
    /// Every breaker row, with the models kept out by a used-up quota (every key's) or
    /// their provider being down marked so, with why and until when (a row is made for a
    /// model whose breaker has seen nothing): what `fcm breakers`, `/health` and the
    /// dashboard show.
    pub(crate) fn breaker_rows(&self, now: u64) -> Vec<BreakerRow> {
        let mut rows = self.breakers.rows(now);
        let down: HashMap<String, u64> = self.outages.down(now).into_iter().collect();
        for c in self.routable() {
            let held = match (
                self.ledger.exhaustion(&c.metered, now),
                down.get(&c.target.provider_id),
            ) {
                (Some((until, signal, key)), _) => {
                    let whose = key.map(|k| format!(" ({k})")).unwrap_or_default();
                    let reason = format!("{}{whose}", signal.says());
                    Some((SkipReason::QuotaExhausted, reason, until))
                }
                (None, Some(&until)) => Some((
                    SkipReason::ProviderDown,
                    format!("{} refuses or resets connections", c.target.provider_id),
                    until,
                )),
                (None, None) => None,
            };
            let Some((why, reason, until)) = held else {
                continue;
            };
            let at = match rows.iter().position(|r| r.model == c.key()) {
                Some(at) => at,
                None => {
                    rows.push(BreakerRow::closed(c.key(), now));
                    rows.len() - 1
                }
            };
            rows[at].hold(why.as_str(), reason, until, now);
        }
        rows
    }

    /// Today's usage report of the routable models' providers (as the dashboard shows it).
    pub(crate) fn usage_today(&self, catalog: &Catalog, now: u64) -> UsageReport {
        let mut configured: Vec<(&str, Vec<String>)> = self
            .routable()
            .filter(|c| !c.target.keys.is_empty())
            .map(|c| {
                let labels = c.target.keys.iter().map(|k| k.label.clone()).collect();
                (c.target.provider_id.as_str(), labels)
            })
            .collect();
        configured.dedup_by(|a, b| a.0 == b.0);
        crate::state::ledger::report::report(&self.ledger.snapshot(), catalog, &configured, now, 1)
    }

    /// The set model `fcm` uses first on this server, and its models.
    pub(crate) fn active_set(&self) -> Option<(&str, Vec<String>)> {
        let name = self.active_set.as_deref()?;
        let set = self.sets.get(name)?;
        Some((name, set.members().to_vec()))
    }

    /// Each routable model and whether it has shown that it answers: its evidence now (the
    /// live window once it holds enough results, else the last bench), or a success among
    /// its few live results. What `/health` counts a CLOSED model healthy by.
    pub(crate) fn answering(&self) -> Vec<(&str, Answering)> {
        let view = self.evidence.view();
        self.routable()
            .map(|c| {
                let key = c.key();
                let answering = match view.of(key).0 {
                    Evidence::Proven => Answering::Proven,
                    Evidence::Failing => Answering::Failing,
                    _ if self.evidence.has_answered(key) => Answering::Proven,
                    _ => Answering::Untried,
                };
                (key, answering)
            })
            .collect()
    }

    /// Every routable model's status now, in the order model `fcm` would try them, the
    /// skipped ones after.
    pub(crate) fn statuses(
        &self,
        catalog: &Catalog,
        usage: &UsageReport,
        now: u64,
    ) -> Vec<ModelStatus> {
        let known = self.known();
        let plan = self.pool.plan(&known, 0, 0);
        let mut order = plan.order.clone();
        let set = self.active_set();
        if let Some((_, members)) = &set {
            let mut scratch = Trace::new("", "", false);
            self.pool.order_by_set(&mut order, members, &mut scratch);
        }
        let rank: HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(n, i)| (self.pool.get(*i).key(), n + 1))
            .collect();
        let skipped: HashMap<&str, SkipReason> = plan
            .skipped
            .iter()
            .map(|s| (s.model.as_str(), s.reason))
            .collect();
        let rows: HashMap<String, BreakerRow> = self
            .breaker_rows(now)
            .into_iter()
            .map(|r| (r.model.clone(), r))
            .collect();
        let conversations = self
            .affinity
            .as_ref()
            .map(|a| a.active(now))
            .unwrap_or_default();
        let view = self.evidence.view();
        let mut out: Vec<ModelStatus> = self
            .routable()
            .map(|c| {
                let key = c.key();
                let row = rows.get(key);
                let recent = self.evidence.recent(key);
                let mut ok: Vec<u64> = recent.iter().flatten().copied().collect();
                ok.sort_unstable();
                let (evidence, ranked_ttft_ms) = view.of(key);
                // A bench entry is proven or failing, never unknown: unknown without enough
                // live results means nothing is known yet.
                let evidence_from = if recent.len() >= LIVE_MIN {
                    EvidenceFrom::Live
                } else if evidence == Evidence::Unknown {
                    EvidenceFrom::None
                } else {
                    EvidenceFrom::Bench
                };
                ModelStatus {
                    rank: rank.get(key).copied(),
                    skipped: skipped.get(key).copied(),
                    live_results: recent.len(),
                    live_ok: ok.len(),
                    ttft_ms_p50: ok.get(ok.len().saturating_sub(1) / 2).copied(),
                    ranked_ttft_ms,
                    budget: budget(catalog, usage, key, &c.target.provider_id),
                    conversations: conversations.get(key).copied().unwrap_or(0),
                    in_active_set: set
                        .as_ref()
                        .is_some_and(|(_, m)| m.iter().any(|m| m == key)),
                    ..ModelStatus::of(
                        key.to_string(),
                        c.target.provider_id.clone(),
                        row,
                        evidence,
                        evidence_from,
                    )
                }
            })
            .collect();
        out.sort_by_key(|s| (s.rank.is_none(), s.rank, s.model.clone()));
        out
    }
}

/// A model's budget from today's report: its own line when it has been used today, with
/// its provider's line for what the provider said and for a provider-wide daily limit.
fn budget(catalog: &Catalog, usage: &UsageReport, model: &str, provider: &str) -> Budget {
    let own = usage
        .models
        .iter()
        .find(|l| l.model.as_deref() == Some(model));
    let whole = usage.providers.iter().find(|l| l.provider == provider);
    let said = |f: fn(&UsageLine) -> Option<u64>| own.and_then(f).or_else(|| whole.and_then(f));
    let said_requests = said(|l| l.remaining.requests);
    let tokens = said(|l| l.remaining.tokens);
    // The model's own daily limit (counted on its line; none used when it has none yet),
    // else a provider-wide one counted on the provider's line.
    let model_limit = catalog.find(model).and_then(|f| {
        quota::rules(f.provider.quota.as_ref(), f.model.quota.as_ref())
            .into_iter()
            .find(|r| r.scope == Scope::Model)?
            .quota
            .requests_per_day
    });
    let daily = match model_limit {
        Some(limit) => Some((limit, own.map_or(0, |l| l.requests))),
        None => whole.and_then(|l| {
            let q = l.limits.as_ref()?;
            (q.scope_or_provider() == Scope::Provider)
                .then_some(q.requests_per_day)
                .flatten()
                .map(|limit| (limit, l.requests))
        }),
    };
    let by_limit = daily.map(|(limit, used)| limit.saturating_sub(used));
    let requests = match (said_requests, by_limit) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Budget {
        requests,
        tokens,
        requests_per_day: daily.map(|(limit, _)| limit),
    }
}
