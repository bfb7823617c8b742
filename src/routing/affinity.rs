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

/// A new conversation goes to the equally strong candidate (same health, tier and score)
/// with the fewest active conversations, then the most budget headroom, then the fastest:
/// N agents use N models' limits. `standings[n]` is `order[n]`'s; only `quality` has
/// equally strong candidates.
pub(super) fn spread(
    router: &Router,
    order: &mut [usize],
    standings: &[Standing<'_>],
    active: &HashMap<String, usize>,
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
                .strength_class(&standings[start], &standings[end])
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
            let load = |s: &Standing<'_>| active.get(s.key).copied().unwrap_or(0);
            load(a)
                .cmp(&load(b))
                .then(b.headroom.total_cmp(&a.headroom))
                .then(
                    a.ttft_ms
                        .unwrap_or(u64::MAX)
                        .cmp(&b.ttft_ms.unwrap_or(u64::MAX)),
                )
        });
        for (slot, (i, _)) in order[start..end].iter_mut().zip(group) {
            *slot = i;
        }
        start = end;
    }
}

/// Puts the held model first when it may serve this turn: routable now (not OPEN, paused,
/// out of budget or too small: it is in `order`) and not missing a capability the request
/// needs that another candidate has. When it may not, the trace says why it moves.
pub(super) fn keep_first(
    router: &Router,
    order: &mut Vec<usize>,
    needs: Needs,
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
    let i = order.remove(at);
    order.insert(0, i);
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
