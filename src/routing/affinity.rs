//! Conversation affinity on a request's path: a conversation keeps the model, and the key,
//! that served its last turn while that model can take the request; a new conversation is
//! spread over the equally strong candidates; the conversation moves, for good, to whichever
//! model serves it. For model `fcm` and fallback sets only: a pinned model, a round-robin,
//! race or fusion set says its own order.
//!
//! What it says goes on the trace: `new`, `kept` or `moved:<why>` (the skip or failure that
//! took the held model out of this turn).

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::capability::Needs;
use crate::state::config::Prefer;

use super::attempt::Turn;
use super::rank::Standing;
use super::router::Router;

/// Conversations an agent is working in now, per model and per provider (an account's
/// limits are shared by its models), not counting the one being placed.
pub(super) struct Load {
    by_model: HashMap<String, usize>,
    by_provider: HashMap<String, usize>,
}

impl Load {
    pub(super) fn now(router: &Router, except: Option<&str>) -> Load {
        let by_model = router
            .affinity
            .as_ref()
            .map(|a| a.live(crate::time::now_ms(), except))
            .unwrap_or_default();
        let mut by_provider: HashMap<String, usize> = HashMap::new();
        for (model, n) in &by_model {
            let provider = model.split('/').next().unwrap_or(model);
            *by_provider.entry(provider.to_string()).or_default() += n;
        }
        Load {
            by_model,
            by_provider,
        }
    }

    fn of_model(&self, key: &str) -> usize {
        self.by_model.get(key).copied().unwrap_or(0)
    }

    fn of_provider(&self, key: &str) -> usize {
        let provider = key.split('/').next().unwrap_or(key);
        self.by_provider.get(provider).copied().unwrap_or(0)
    }
}

/// Where conversations go within each group of equally strong candidates (same health and
/// tier, [`Policy::placement_class`](super::rank::Policy::placement_class)): the model with
/// the fewest conversations now, then the account (provider) with the fewest, then one
/// with room for a conversation (a day's requests, a per-minute pace), then the most
/// headroom, the fastest first token and the best score. So N agents use N models on as
/// many accounts, and none lands where it would soon run out. `standings[n]` is
/// `order[n]`'s; only `quality` has equally strong candidates.
pub(super) fn spread(
    router: &Router,
    order: &mut [usize],
    standings: &[Standing<'_>],
    load: &Load,
) {
    if router.policy.prefer != Prefer::Quality || order.len() < 2 {
        return;
    }
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len()
            && router
                .policy
                .placement_class(&standings[start], &standings[end])
                == Ordering::Equal
        {
            end += 1;
        }
        let mut group: Vec<(usize, &Standing<'_>)> = order[start..end]
            .iter()
            .copied()
            .zip(&standings[start..end])
            .collect();
        group.sort_by(|(_, a), (_, b)| {
            load.of_model(a.key)
                .cmp(&load.of_model(b.key))
                .then(load.of_provider(a.key).cmp(&load.of_provider(b.key)))
                .then(b.roomy.cmp(&a.roomy))
                .then(b.headroom.total_cmp(&a.headroom))
                .then(
                    a.ttft_ms
                        .unwrap_or(u64::MAX)
                        .cmp(&b.ttft_ms.unwrap_or(u64::MAX)),
                )
                .then(b.swe.total_cmp(&a.swe))
        });
        for (slot, (i, _)) in order[start..end].iter_mut().zip(group) {
            *slot = i;
        }
        start = end;
    }
}

/// A conversation on a weaker tier goes back up when a model of the strongest tier in
/// the plan has room and at most this many conversations already.
const UPGRADE_LOAD: usize = 1;

/// Puts the held model first when it may serve this turn: routable now (not OPEN, paused,
/// out of budget or too small: it is in `order`), not missing a capability the request
/// needs that another candidate has, and not on a weaker tier than a model with room that
/// leads the plan (the conversation moves back up, once). When it may not, the trace says
/// why it moves.
pub(super) fn keep_first(
    router: &Router,
    order: &mut Vec<usize>,
    needs: Needs,
    load: &Load,
    turn: &mut Turn<'_>,
) {
    let Some(k) = &turn.keeping else { return };
    let Some((held, _)) = k.kept else { return };
    let Some(at) = order.iter().position(|i| *i == held) else {
        return;
    };
    let view = needs.tools.then(|| router.evidence.view());
    let meets = |i: usize| {
        let c = router.pool.get(i);
        let proven = view.as_ref().is_some_and(|v| v.proves_tool_calls(c.key()));
        needs.met_by_or_proven(&c.capabilities, proven)
    };
    // Lacking what the turn needs matters only when another candidate has it.
    if !meets(held) && order.iter().any(|i| *i != held && meets(*i)) {
        turn.affinity_note = Some("capability".into());
        return;
    }
    let lead = router.pool.get(order[0]);
    if order[0] != held
        && lead.tier < router.pool.get(held).tier
        && load.of_model(lead.key()) <= UPGRADE_LOAD
        && meets(order[0])
    {
        turn.affinity_note = Some("stronger_tier".into());
        return;
    }
    let i = order.remove(at);
    order.insert(0, i);
}

/// A conversation about to be sent to a model other than the one it holds (a new one, or
/// one moving) counts there at once, so that requests arriving before its answer are
/// spread around it.
pub(super) fn place(router: &Router, order: &[usize], turn: &Turn<'_>) {
    let (Some(k), Some(affinity), Some(&first)) = (&turn.keeping, &router.affinity, order.first())
    else {
        return;
    };
    if k.kept.is_some_and(|(held, _)| held == first) {
        return;
    }
    let model = router.pool.get(first).key();
    affinity.place(k.conversation.id(), model, crate::time::now_ms());
}

/// What affinity came to, for the trace: `new`, `kept` or `moved:<why>`; and holds the
/// conversation for its next turn when a model served it.
pub(super) fn settle(router: &Router, turn: &mut Turn<'_>, served: Option<(usize, Option<&str>)>) {
    let Some(k) = &turn.keeping else { return };
    let word = match (&k.held, k.kept) {
        (None, _) => "new".to_string(),
        (Some(_), None) => "moved:gone".to_string(),
        (Some(_), Some((held, _))) if served.map(|s| s.0) == Some(held) => "kept".to_string(),
        (Some(h), Some(_)) => format!("moved:{}", why_moved(turn, &h.model)),
    };
    turn.trace.session = Some(k.conversation.id().to_string());
    turn.trace.affinity = Some(word);
    if let (Some((i, key)), Some(affinity)) = (served, &router.affinity) {
        let model = router.pool.get(i).key();
        affinity.hold(k.conversation.id(), model, key, crate::time::now_ms());
    }
}

/// Why the held model did not serve: its failed attempt, its skip, or a missing
/// capability.
fn why_moved(turn: &Turn<'_>, model: &str) -> String {
    if let Some(a) = turn.trace.attempts.iter().find(|a| a.model == model) {
        return a.label();
    }
    if let Some(s) = turn.trace.skipped.iter().find(|s| s.model == model) {
        return s.reason.as_str().to_string();
    }
    turn.affinity_note
        .clone()
        .unwrap_or_else(|| "not_tried".to_string())
}
