//! Who may serve a request: the catalog models whose provider has a key, which of them are
//! skipped before dispatch (context too small, quota paused, circuit open) and in what
//! order the rest are tried (ranking, then the user's set, then capabilities and, for a
//! request with tools, the models whose bench proved tool calls).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::answers::classify::FailureKind;
use crate::capability::Needs;
use crate::providers::catalog::{tier_rank, Catalog, KeySource, KeyStatus, ModelRef};
use crate::providers::target::Target;
use crate::secrets::Secrets;
use crate::state::breaker::{Admission, BreakerState, Breakers, Pause};
use crate::state::ledger::{Blocked, Ledger, Metered, Why};
use crate::state::outages::{Outages, Reachable};
use crate::state::trace::{Skip, SkipReason, Trace};

use super::live::LiveEvidence;
use crate::routing::rank::{Policy, Standing};

/// A model the router can call.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub target: Target,
    pub tier: usize,
    pub swe: f64,
    /// Why it cannot be called at all (its key is not set), naming the variables.
    pub missing_key: Option<String>,
    /// The model's context window in tokens.
    pub context: u64,
    /// A 429 pauses every model of this provider (one account-wide free quota).
    pub shared_quota: bool,
    /// What the catalog says the model can do (`vision`, `tools`, ...).
    pub capabilities: Vec<String>,
    /// Its [`family`], the same model on other providers.
    pub family: String,
    /// Its counters and limits, and its provider's keys, as the usage ledger knows them.
    pub metered: Metered,
    /// Its provider's own notice phrases (`noticePatterns`).
    pub notices: Vec<String>,
}

impl Candidate {
    /// A catalog model as a candidate: its target resolved with the keys, its limits, and
    /// why it cannot be called at all when its key is not set.
    pub(crate) fn of(
        m: ModelRef<'_>,
        keys: &KeySource<'_>,
        session_id: &str,
        secrets: &Arc<Secrets>,
    ) -> Candidate {
        let missing_key = match keys.lookup(m.provider).0 {
            KeyStatus::Missing(vars) if vars.is_empty() => {
                Some(format!("add apiKeys.{} to config.json", m.provider.id))
            }
            KeyStatus::Missing(vars) => Some(format!("set {}", vars.join(" or "))),
            _ => None,
        };
        let target = Target::resolve(m, keys, session_id, secrets);
        Candidate {
            metered: Metered::new(m, &target.keys),
            target,
            tier: tier_rank(&m.model.tier),
            swe: m.model.swe_bench.unwrap_or(-1.0),
            missing_key,
            context: m.model.context,
            shared_quota: m.provider.shared_quota,
            capabilities: m.model.capabilities.clone(),
            family: family(&m.model.id),
            notices: m.provider.notice_patterns.clone(),
        }
    }

    pub(crate) fn key(&self) -> &str {
        &self.target.key
    }

    /// What a failure's `verdict` does to this model's breaker: with several keys a 429
    /// pauses that key in the ledger, not the model.
    pub(crate) fn breaker_verdict(
        &self,
        verdict: &crate::answers::classify::Verdict,
    ) -> crate::answers::classify::Verdict {
        let mut v = verdict.clone();
        if self.metered.key_count() > 1 {
            v.quota_pause = None;
        }
        v
    }

    /// Whether this failure keeps the rest of the request away from the provider: a
    /// rejected key, unless the provider has other keys to try.
    pub(crate) fn blocks_provider(&self, f: &crate::answers::failure::Failure) -> bool {
        f.verdict.blocks_provider && self.metered.key_count() < 2
    }

    /// The skip for a quota-paused model, naming the provider when the pause is account-wide.
    pub(crate) fn quota_skip(&self) -> Skip {
        if self.shared_quota {
            Skip::provider_paused(self.target.key.clone(), &self.target.provider_id)
        } else {
            Skip::new(self.target.key.clone(), SkipReason::QuotaPaused)
        }
    }

    /// The skip for a model none of whose keys may be sent a request now: a spent budget
    /// (`quota_budget`), keys paused after 429s (`quota_paused`) or rejected
    /// (`key_rejected`), with when it frees up.
    pub(crate) fn ledger_skip(&self, b: &Blocked) -> Skip {
        let mut skip = match &b.why {
            Why::Budget(what) => {
                let mut s = Skip::new(self.key(), SkipReason::QuotaBudget);
                s.limit = Some(what.clone());
                s
            }
            Why::Paused => self.quota_skip(),
            Why::Rejected => Skip::new(self.key(), SkipReason::KeyRejected),
            Why::Exhausted(signal) => {
                let mut s = Skip::new(self.key(), SkipReason::QuotaExhausted);
                s.limit = Some(signal.says().to_string());
                s
            }
        };
        skip.until = Some(crate::time::rfc3339(b.until_ms));
        skip
    }

    /// The skip for a model whose provider is down (connections refused or reset).
    pub(crate) fn down_skip(&self, until_ms: u64) -> Skip {
        let mut s = Skip::new(self.key(), SkipReason::ProviderDown);
        s.provider = Some(self.target.provider_id.clone());
        s.until = Some(crate::time::rfc3339(until_ms));
        s
    }

    /// The skip for a paused model: an overloaded model's back-off, a model gone from its
    /// provider or gone paid, or a quota pause.
    pub(crate) fn pause_skip(&self, pause: Pause) -> Skip {
        let reason = match pause.why {
            Some(FailureKind::ModelNotFound) => SkipReason::ModelNotFound,
            Some(FailureKind::ModelOverloaded) => SkipReason::OverloadPaused,
            Some(FailureKind::ProviderNotice) => SkipReason::ProviderNotice,
            _ => return self.quota_skip(),
        };
        Skip::new(self.target.key.clone(), reason)
    }
}

/// What a breaker says of a candidate for the question "may it be tried now".
#[derive(Debug, Clone, Copy)]
pub(crate) enum BreakerSays {
    /// CLOSED, DEGRADED, or HALF_OPEN with its trial slot to take.
    Tryable,
    Open,
    Paused(Pause),
}

impl BreakerSays {
    /// From a state read for planning.
    pub(crate) fn of_state(state: BreakerState, pause: Option<Pause>) -> BreakerSays {
        match (pause, state) {
            (Some(p), _) => BreakerSays::Paused(p),
            (None, BreakerState::Open) => BreakerSays::Open,
            (None, _) => BreakerSays::Tryable,
        }
    }

    /// From an admission just asked for (which may have taken a trial slot).
    pub(crate) fn of_admission(a: Admission) -> BreakerSays {
        match a {
            Admission::Yes | Admission::Trial => BreakerSays::Tryable,
            Admission::CircuitOpen { .. } => BreakerSays::Open,
            Admission::Paused(p) => BreakerSays::Paused(p),
        }
    }
}

impl Candidate {
    /// The one rule for "may this candidate be tried now", for planning and for each
    /// attempt alike: not when its provider's only key was just rejected
    /// (`provider_blocked`), its window is smaller than `needed`, or its breaker is paused
    /// or OPEN. The skip says why.
    pub(crate) fn barred(
        &self,
        needed: u64,
        provider_blocked: bool,
        breaker: BreakerSays,
    ) -> Option<Skip> {
        if provider_blocked {
            return Some(Skip::new(self.key(), SkipReason::ProviderBlocked));
        }
        if self.context < needed {
            return Some(Skip::new(self.key(), SkipReason::ContextTooSmall));
        }
        match breaker {
            BreakerSays::Tryable => None,
            BreakerSays::Paused(p) => Some(self.pause_skip(p)),
            BreakerSays::Open => Some(Skip::new(self.key(), SkipReason::CircuitOpen)),
        }
    }
}

/// What is known of every model now, for planning a request.
#[derive(Clone, Copy)]
pub(crate) struct Known<'a> {
    pub breakers: &'a Breakers,
    pub outages: &'a Outages,
    pub ledger: &'a Ledger,
    pub evidence: &'a LiveEvidence,
    pub policy: Policy,
    pub now_ms: u64,
}

/// The routable models that may be tried now, best first, with where each stands, and
/// the ones skipped.
pub(crate) struct Plan<'a> {
    pub order: Vec<usize>,
    /// `standings[n]` is `order[n]`'s.
    pub standings: Vec<Standing<'a>>,
    pub skipped: Vec<Skip>,
}

/// Every catalog model as a candidate, indexed by key.
pub(crate) struct Candidates {
    all: Vec<Candidate>,
    index: HashMap<String, usize>,
}

impl Candidates {
    pub(crate) fn new(
        catalog: &Catalog,
        keys: &KeySource<'_>,
        session_id: &str,
        secrets: &Arc<Secrets>,
    ) -> Candidates {
        let all: Vec<Candidate> = catalog
            .models()
            .map(|m| Candidate::of(m, keys, session_id, secrets))
            .collect();
        let index = all
            .iter()
            .enumerate()
            .map(|(i, c)| (c.target.key.clone(), i))
            .collect();
        Candidates { all, index }
    }

    /// How many candidates there are, routable or not.
    pub(crate) fn len(&self) -> usize {
        self.all.len()
    }

    /// Every candidate, routable or not, in catalog order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Candidate> {
        self.all.iter()
    }

    pub(crate) fn get(&self, i: usize) -> &Candidate {
        &self.all[i]
    }

    pub(crate) fn position(&self, key: &str) -> Option<usize> {
        self.index.get(key).copied()
    }

    pub(crate) fn knows(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Models that automatic routing may use (their key is set or not needed).
    pub(crate) fn routable(&self) -> impl Iterator<Item = &Candidate> {
        self.all.iter().filter(|c| c.missing_key.is_none())
    }

    /// Every model of one provider (a shared quota pauses them together).
    pub(crate) fn of_provider<'a>(
        &'a self,
        provider: &'a str,
    ) -> impl Iterator<Item = &'a Candidate> {
        self.all
            .iter()
            .filter(move |c| c.target.provider_id == provider)
    }

    /// The routable models in the order they would be tried, with the skipped ones.
    /// `needed_tokens`: the request's estimated size; smaller context windows are skipped.
    /// `prompt_tokens`: its prompt alone, against token budgets; a model whose every key's
    /// known budget is spent is skipped (`quota_budget`) with when it frees up.
    pub(crate) fn plan(
        &self,
        known: &Known<'_>,
        needed_tokens: u64,
        prompt_tokens: u64,
    ) -> Plan<'_> {
        let Known {
            breakers,
            outages,
            ledger,
            evidence,
            policy,
            now_ms,
        } = *known;
        let routable: Vec<usize> = (0..self.all.len())
            .filter(|i| self.all[*i].missing_key.is_none())
            .collect();
        let keys: Vec<&str> = routable.iter().map(|i| self.all[*i].key()).collect();
        let states = breakers.states(&keys, now_ms);
        let budgets = ledger.assess(
            routable.iter().map(|i| &self.all[*i].metered),
            prompt_tokens,
            now_ms,
        );
        let view = evidence.view();
        let mut skipped = Vec::new();
        let mut ranked: Vec<(usize, Standing<'_>)> = Vec::with_capacity(routable.len());
        for (n, i) in routable.iter().enumerate() {
            let c = &self.all[*i];
            let (state, pause) = states[n];
            let breaker = BreakerSays::of_state(state, pause);
            if let Some(skip) = c.barred(needed_tokens, false, breaker) {
                skipped.push(skip);
                continue;
            }
            if let Reachable::Down { until_ms } = outages.state(&c.target.provider_id, now_ms) {
                skipped.push(c.down_skip(until_ms));
                continue;
            }
            let room = match &budgets[n] {
                Ok(room) => *room,
                Err(b) => {
                    skipped.push(c.ledger_skip(b));
                    continue;
                }
            };
            let (evidence, ttft_ms) = view.of(c.key());
            ranked.push((
                *i,
                Standing {
                    state,
                    evidence,
                    verdict: 0,
                    success_rate: 0.0,
                    ttft_ms,
                    tier: c.tier,
                    swe: c.swe,
                    headroom: room.share,
                    room,
                    key: c.key(),
                },
            ));
        }
        ranked.sort_by(|(_, a), (_, b)| policy.compare(a, b));
        let (order, standings) = ranked.into_iter().unzip();
        Plan {
            order,
            standings,
            skipped,
        }
    }

    /// Set members first in the set's order (`preferred`), everyone else in ranking order;
    /// members fcm does not know are noted as stale skips.
    pub(crate) fn order_by_set(
        &self,
        order: &mut [usize],
        preferred: &[String],
        trace: &mut Trace,
    ) {
        for stale in preferred.iter().filter(|m| !self.knows(m)) {
            trace
                .skipped
                .push(Skip::new(stale.clone(), SkipReason::Stale));
        }
        order.sort_by_key(|i| {
            preferred
                .iter()
                .position(|m| m == self.all[*i].key())
                .unwrap_or(usize::MAX)
        });
    }

    /// Models with every capability the request needs go first; the rest keep their order
    /// behind them (none is dropped: catalogs under-report). For a request with tools, a
    /// model whose last bench proved tool calls counts as claiming `tools`, and within each
    /// group such models go first (after a set's own members, which keep the set's order).
    /// The trace says `capability_unknown` when no model has a capability,
    /// `capability_missing` when some lack it, and `tool_calls_proven` when proofs moved
    /// models ahead of where the catalog alone would have put them.
    pub(crate) fn order_by_capability(
        &self,
        order: &mut [usize],
        needs: Needs,
        set: &[String],
        evidence: &LiveEvidence,
        pools: &BTreeMap<String, Vec<String>>,
        trace: &mut Trace,
    ) {
        let names = needs.names();
        if names.is_empty() {
            return;
        }
        // Only a request with tools reads the bench's proofs.
        let view = needs.tools.then(|| evidence.view());
        let proven: Vec<bool> = order
            .iter()
            .map(|i| {
                view.as_ref()
                    .is_some_and(|v| v.proves_tool_calls(self.all[*i].key()))
            })
            .collect();
        let fit = |n: usize, calls_tools: bool| {
            let c = &self.all[order[n]];
            Fit {
                lacking: !needs.met_by_or_proven(&c.capabilities, calls_tools),
                outside_set: !set.iter().any(|m| m == c.key()),
                unproven: !calls_tools,
            }
        };
        let fits: Vec<Fit> = (0..order.len()).map(|n| fit(n, proven[n])).collect();
        let by_claims = proven.contains(&true).then(|| {
            let claims: Vec<Fit> = (0..order.len()).map(|n| fit(n, false)).collect();
            let mut without = order.to_vec();
            sort_by_fit(&mut without, &claims);
            without
        });
        let proven_ids: Vec<usize> = (0..order.len())
            .filter(|n| proven[*n])
            .map(|n| order[n])
            .collect();
        sort_by_fit(order, &fits);
        trace.notes.extend(capability_note(&names, &fits));
        self.pool_first(order, &names, pools, trace);
        if let Some(without) = by_claims {
            let moved = moved_ahead(&without, order, &proven_ids);
            if moved > 0 {
                trace
                    .notes
                    .push(format!("tool_calls_proven:{moved}_moved_ahead"));
            }
        }
    }

    /// For each hard capability (vision, PDF, audio) the request needs and no candidate
    /// claims, that capability's pool (`router.capabilityPools`) goes first: its members
    /// among the candidates move ahead in their ranking order, everyone else keeps theirs
    /// behind them (a stable partition; nothing is dropped). The trace names the pool.
    /// `needed`: the request's capability names ([`Needs::names`]).
    fn pool_first(
        &self,
        order: &mut [usize],
        needed: &[&str],
        pools: &BTreeMap<String, Vec<String>>,
        trace: &mut Trace,
    ) {
        for name in crate::capability::HARD {
            if !needed.contains(&name) {
                continue;
            }
            let claims = |i: &usize| self.all[*i].capabilities.iter().any(|c| c == name);
            if order.iter().any(claims) {
                continue;
            }
            let Some(pool) = pools.get(name).filter(|p| !p.is_empty()) else {
                continue;
            };
            let in_pool = |i: &usize| pool.iter().any(|m| m == self.all[*i].key());
            let (mut first, rest): (Vec<usize>, Vec<usize>) =
                order.iter().partition(|i| in_pool(i));
            let moved = first.len();
            if moved == 0 {
                trace
                    .notes
                    .push(format!("capability_pool:{name}:none_routable"));
                continue;
            }
            first.extend(rest);
            order.copy_from_slice(&first);
            trace
                .notes
                .push(format!("capability_pool:{name}:{moved}_first"));
        }
    }

    /// After `failed` failed: the same model family on another provider goes next, when
    /// the catalog rates it no weaker there (a gateway's lower-tier copy does not take a
    /// conversation down a tier); the rest keep their order (the closest substitute for the
    /// model that just failed).
    pub(crate) fn family_first(
        &self,
        queue: &mut std::collections::VecDeque<usize>,
        failed: usize,
    ) {
        let c = &self.all[failed];
        let (same, rest): (Vec<usize>, Vec<usize>) = queue.iter().partition(|j| {
            let o = &self.all[**j];
            o.target.provider_id != c.target.provider_id && o.family == c.family && o.tier <= c.tier
        });
        *queue = same.into_iter().chain(rest).collect();
    }
}

/// How one candidate fits what a request needs; candidates are tried in this order
/// (`false` first, field by field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Fit {
    /// It lacks a needed capability: not claimed by its catalog entry, nor (for tools)
    /// proven by its bench.
    lacking: bool,
    /// Not a member of the request's set (members keep the set's order).
    outside_set: bool,
    /// Its bench did not prove tool calls (always so without tools).
    unproven: bool,
}

/// Sorts `order` by each candidate's [`Fit`] (`fits[n]` is `order[n]`'s); stable, so equal
/// fits keep the ranking's order.
fn sort_by_fit(order: &mut [usize], fits: &[Fit]) {
    let mut paired: Vec<(Fit, usize)> = fits.iter().copied().zip(order.iter().copied()).collect();
    paired.sort_by_key(|(fit, _)| *fit);
    for (slot, (_, i)) in order.iter_mut().zip(paired) {
        *slot = i;
    }
}

/// The trace note for an ordering by fit: `capability_unknown:NAMES` when no candidate has
/// what is needed, `capability_missing:NAMES:N_tried_last` when N lack it.
fn capability_note(names: &[&str], fits: &[Fit]) -> Option<String> {
    let names = names.join(",");
    let lacking = fits.iter().filter(|f| f.lacking).count();
    if lacking == fits.len() {
        Some(format!("capability_unknown:{names}"))
    } else if lacking > 0 {
        Some(format!("capability_missing:{names}:{lacking}_tried_last"))
    } else {
        None
    }
}

/// How many of `proven` stand earlier in `with` than in `without`: the models a bench
/// proof moved ahead of where the catalog's claims alone put them.
fn moved_ahead(without: &[usize], with: &[usize], proven: &[usize]) -> usize {
    let position = |order: &[usize], i: &usize| order.iter().position(|j| j == i);
    proven
        .iter()
        .filter(|i| position(with, i) < position(without, i))
        .count()
}

/// A model's family across providers: its id without the vendor path, the `:free` tag or
/// an `-instruct`/`-it` suffix (`openai/gpt-oss-120b` and `gpt-oss-120b` are one family).
pub(crate) fn family(model_id: &str) -> String {
    crate::providers::catalog::bare_id(model_id)
        .trim_end_matches("-instruct")
        .trim_end_matches("-it")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(lacking: bool, outside_set: bool, unproven: bool) -> Fit {
        Fit {
            lacking,
            outside_set,
            unproven,
        }
    }

    #[test]
    fn order_by_fit_and_its_note() {
        let member = fit(false, false, true);
        let proven = fit(false, true, false);
        let claimed = fit(false, true, true);
        let proven_lacking = fit(true, true, false);
        let lacking = fit(true, true, true);
        let cases: Vec<(Vec<Fit>, Vec<usize>, Option<&str>)> = vec![
            // A proof goes ahead of a claim, a claim ahead of neither.
            (
                vec![lacking, claimed, proven],
                vec![2, 1, 0],
                Some("capability_missing:tools:1_tried_last"),
            ),
            // A set's members keep the head; the proof orders the rest.
            (vec![claimed, proven, member], vec![2, 1, 0], None),
            // Proven but lacking another capability: behind those that have it.
            (
                vec![proven_lacking, claimed],
                vec![1, 0],
                Some("capability_missing:tools:1_tried_last"),
            ),
            // Nobody has the capability: the proof still orders everyone.
            (
                vec![lacking, proven_lacking],
                vec![1, 0],
                Some("capability_unknown:tools"),
            ),
            (vec![proven, proven], vec![0, 1], None),
        ];
        for (fits, want, note) in cases {
            let mut order: Vec<usize> = (0..fits.len()).collect();
            sort_by_fit(&mut order, &fits);
            assert_eq!(order, want, "{fits:?}");
            assert_eq!(capability_note(&["tools"], &fits).as_deref(), note);
        }
    }

    #[test]
    fn models_moved_ahead_by_a_proof() {
        // Ranking 10, 11, 12; 12 is proven.
        assert_eq!(moved_ahead(&[10, 11, 12], &[12, 10, 11], &[12]), 1);
        assert_eq!(
            moved_ahead(&[12, 10, 11], &[12, 10, 11], &[12]),
            0,
            "first anyway"
        );
        assert_eq!(
            moved_ahead(&[10, 11, 12], &[10, 12, 11], &[12]),
            1,
            "behind a set member"
        );
        assert_eq!(moved_ahead(&[10, 11, 12], &[10, 11, 12], &[]), 0);
    }

    #[test]
    fn families_across_providers() {
        assert_eq!(family("openai/gpt-oss-120b"), family("gpt-oss-120b"));
        assert_eq!(
            family("qwen/qwen3-coder-480b-a35b-instruct"),
            "qwen3-coder-480b-a35b"
        );
        assert_eq!(family("z-ai/glm-5.2:free"), family("glm-5.2"));
        assert_ne!(family("openai/gpt-oss-120b"), family("openai/gpt-oss-20b"));
    }
}
