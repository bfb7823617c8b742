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
/// limits are shared by its models), not counting the one being placed; and the provider
/// that one is leaving, if it holds a model.
pub(super) struct Load {
    by_model: HashMap<String, usize>,
    by_provider: HashMap<String, usize>,
    leaving: Option<String>,
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
            *by_provider
                .entry(provider_of(model).to_string())
                .or_default() += n;
        }
        Load {
            by_model,
            by_provider,
            leaving: None,
        }
    }

    /// The conversation being placed holds a model of `provider`: when it moves, another
    /// account goes first among those that hold it as long (a refusal there often speaks
    /// for the provider's other models too).
    pub(super) fn leaving(mut self, held_model: Option<&str>) -> Load {
        self.leaving = held_model.map(|m| provider_of(m).to_string());
        self
    }

    fn beside_leaving(&self, key: &str) -> bool {
        self.leaving.as_deref() == Some(provider_of(key))
    }

    fn of_model(&self, key: &str) -> usize {
        if self.by_model.is_empty() {
            return 0;
        }
        self.by_model.get(key).copied().unwrap_or(0)
    }

    fn of_provider(&self, key: &str) -> usize {
        if self.by_provider.is_empty() {
            return 0;
        }
        self.by_provider.get(provider_of(key)).copied().unwrap_or(0)
    }
}

/// The provider of `provider/modelId`.
fn provider_of(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

/// How fast a model starts, coarsely, for placing conversations: its median first token
/// under 1 s, 2 s, 4 s, 8 s or later (a model not measured yet counts as 2-4 s). An agent
/// waits for every turn's first token; small differences are left to headroom.
fn pace(s: &Standing<'_>) -> u8 {
    match s.ttft_ms {
        None => 2,
        Some(t) if t < 1_000 => 0,
        Some(t) if t < 2_000 => 1,
        Some(t) if t < 4_000 => 2,
        Some(t) if t < 8_000 => 3,
        Some(_) => 4,
    }
}

/// Conversations a model may share before any other equally strong model, even one with
/// less room, is preferred to it: two agents' pace fits most free tiers, more crowd one.
const SHARED_BY: usize = 2;

/// How much a conversation may grow: twice its prompt, at least this many tokens (an
/// agent's history grows several times over in a long task).
const GROWTH_TOKENS: u64 = 65_536;
/// How much a conversation grows a turn, about: a tool's output and the answer to it.
const TURN_TOKENS: u64 = 2_000;

/// What a conversation needs of its home: the window it needs now (`needed`, the prompt
/// and the answer's room) and its prompt alone.
#[derive(Debug, Clone, Copy)]
pub(super) struct Size {
    pub needed: u64,
    pub prompt: u64,
}

impl Size {
    /// Whether a window of `context` tokens leaves the conversation room to grow.
    fn fits_growing(&self, context: u64) -> bool {
        context
            >= self
                .needed
                .saturating_add(self.prompt.saturating_mul(2).max(GROWTH_TOKENS))
    }

    /// Turns the conversation can grow for in a window of `context` tokens: as many as
    /// any limit allows when it [fits growing](Self::fits_growing).
    fn turns_in(&self, context: u64) -> u64 {
        if self.fits_growing(context) {
            return u64::MAX;
        }
        context.saturating_sub(self.needed) / TURN_TOKENS
    }
}

/// Where conversations go within each group of equally strong candidates (same health and
/// tier, [`Policy::placement_class`](super::rank::Policy::placement_class)): a model that
/// does not hold [`SHARED_BY`] conversations already, then the one that can hold the
/// conversation longest ([`holds`]: a day's requests and a per-minute pace left, no limit
/// of unknown size met lately, a window it can grow in; any with room for a whole
/// conversation are equal), then one on another account than the conversation leaves,
/// then the one with the fewest conversations now, then the account (provider) with the
/// fewest, then the faster start ([`pace`]), the most headroom, the
/// fastest first token and the best score. So N agents use N models on as many accounts,
/// and none lands where it would soon run out. `standings[n]` is `order[n]`'s; only
/// `quality` has equally strong candidates.
pub(super) fn spread(
    router: &Router,
    order: &mut [usize],
    standings: &[Standing<'_>],
    load: &Load,
    size: Size,
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
        // Each candidate's loads and room are looked up once, not at every comparison.
        let mut group: Vec<(usize, &Standing<'_>, Place)> = order[start..end]
            .iter()
            .zip(&standings[start..end])
            .map(|(&i, s)| (i, s, Place::of(router, i, s, load, size)))
            .collect();
        group.sort_by(|(_, a, a_place), (_, b, b_place)| {
            a_place
                .cmp(b_place)
                .then(pace(a).cmp(&pace(b)))
                .then(b.headroom.total_cmp(&a.headroom))
                .then(
                    a.ttft_ms
                        .unwrap_or(u64::MAX)
                        .cmp(&b.ttft_ms.unwrap_or(u64::MAX)),
                )
                .then(b.swe.total_cmp(&a.swe))
        });
        for (slot, (i, _, _)) in order[start..end].iter_mut().zip(group) {
            *slot = i;
        }
        start = end;
    }
}

/// Where a candidate stands for a conversation's placement, best first: not holding
/// [`SHARED_BY`] conversations, the most turns it can hold the conversation for (see
/// [`holds`]), not on the account the conversation is leaving, the fewest conversations on
/// the model, then on its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    full: bool,
    holds: u64,
    beside: bool,
    on_model: usize,
    on_provider: usize,
}

impl Ord for Place {
    fn cmp(&self, other: &Self) -> Ordering {
        self.full
            .cmp(&other.full)
            .then(other.holds.cmp(&self.holds))
            .then(self.beside.cmp(&other.beside))
            .then(self.on_model.cmp(&other.on_model))
            .then(self.on_provider.cmp(&other.on_provider))
    }
}

impl PartialOrd for Place {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Place {
    fn of(router: &Router, i: usize, s: &Standing<'_>, load: &Load, size: Size) -> Place {
        let on_model = load.of_model(s.key);
        let on_provider = load.of_provider(s.key);
        Place {
            full: on_model >= SHARED_BY,
            holds: holds(
                &s.room,
                on_provider,
                size.turns_in(router.pool.get(i).context),
            ),
            beside: load.beside_leaving(s.key),
            on_model,
            on_provider,
        }
    }
}

/// Turns a candidate can be expected to keep a conversation before it must move (see
/// `Headroom::holds_for`): its limits shared with the `on_provider` conversations on
/// its account and this one, and the turns its window leaves it to grow (`grows`). At
/// most `ROOMY_DAY_LEFT`, which is room for a whole conversation: those are told apart
/// by load and pace.
fn holds(room: &crate::state::ledger::Headroom, on_provider: usize, grows: u64) -> u64 {
    room.holds_for(on_provider as u64 + 1).min(grows)
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

/// A conversation about to be sent to candidate `i`, other than the model it holds (a new
/// one, or one moving), counts there at once, so that requests arriving before its answer
/// are spread around it.
pub(super) fn place(router: &Router, i: usize, turn: &Turn<'_>) {
    let (Some(k), Some(affinity)) = (&turn.keeping, &router.affinity) else {
        return;
    };
    if k.kept.is_some_and(|(held, _)| held == i) {
        return;
    }
    let model = router.pool.get(i).key();
    affinity.place(k.conversation.id(), model, crate::time::now_ms());
}

/// What placing a conversation knows of each candidate of a plan, by candidate index: its
/// placement class (health, tier) in the plan, whether it has what the request needs (the
/// two say which candidates may stand in for one another), and the turns its window lets
/// the conversation grow for; and the prompt's size, to weigh their limits again after a
/// failure.
#[derive(Debug, Default)]
pub(super) struct Peers {
    by_index: Vec<Option<Peer>>,
    prompt: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Peer {
    class: usize,
    meets: bool,
    grows: u64,
}

impl Peers {
    fn peer(&self, i: usize) -> Option<Peer> {
        self.by_index.get(i).copied().flatten()
    }

    /// The peers of a plan's `order` (ranked, `standings[n]` being `order[n]`'s).
    pub(super) fn of(
        router: &Router,
        order: &[usize],
        standings: &[Standing<'_>],
        size: Size,
        needs: Needs,
    ) -> Peers {
        let mut class = 0;
        let mut by_index = vec![None; router.pool.len()];
        for (n, &i) in order.iter().enumerate() {
            if n > 0
                && router
                    .policy
                    .placement_class(&standings[n - 1], &standings[n])
                    != Ordering::Equal
            {
                class += 1;
            }
            let c = router.pool.get(i);
            by_index[i] = Some(Peer {
                class,
                meets: needs.met_by_or_proven(&c.capabilities, false),
                grows: size.turns_in(c.context),
            });
        }
        Peers {
            by_index,
            prompt: size.prompt,
        }
    }
}

/// After a failure, the candidate to try instead of `i`: of `i` and the candidates that
/// follow it in `queue` without a break and may stand in for it (the same placement class
/// and fit), the one whose limits do not block it now, that does not hold [`SHARED_BY`]
/// conversations, that can hold the conversation longest ([`holds`]), not on an account
/// that failed this turn, with the fewest live conversations on the model, then on its
/// provider. Loads and limits are read again now, not taken from the plan: the failure
/// that led here (a 429, a quota used up) may have told of its provider's other models,
/// and others' requests failing over meanwhile have moved conversations. `i` goes back to
/// the queue when another is chosen.
pub(super) fn least_loaded_peer(
    router: &Router,
    i: usize,
    queue: &mut std::collections::VecDeque<usize>,
    peers: &Peers,
    turn: &Turn<'_>,
) -> usize {
    let Some(k) = &turn.keeping else { return i };
    let Some(first) = peers.peer(i) else {
        return i;
    };
    // The same model again (with its other key): not a placement.
    let key = router.pool.get(i).key();
    if turn.trace.attempts.iter().any(|a| a.model == key) {
        return i;
    }
    let stands_in = |j: &usize| {
        peers
            .peer(*j)
            .is_some_and(|p| (p.class, p.meets) == (first.class, first.meets))
    };
    let rivals = queue.iter().take_while(|j| stands_in(j)).count();
    if rivals == 0 {
        return i;
    }
    let members: Vec<usize> = std::iter::once(i)
        .chain(queue.iter().take(rivals).copied())
        .collect();
    let rooms = router.ledger.assess(
        members.iter().map(|&j| &router.pool.get(j).metered),
        peers.prompt,
        crate::time::now_ms(),
    );
    let load = Load::now(router, Some(k.conversation.id()));
    let weight = |at: usize| {
        let j = members[at];
        let key = router.pool.get(j).key();
        let (on_model, on_provider) = (load.of_model(key), load.of_provider(key));
        let grows = peers.peer(j).map_or(0, |p| p.grows);
        let turns = rooms[at]
            .as_ref()
            .map_or(0, |h| holds(h, on_provider, grows));
        let failed_here = turn
            .trace
            .attempts
            .iter()
            .any(|a| provider_of(&a.model) == provider_of(key));
        (
            rooms[at].is_err(),
            on_model >= SHARED_BY,
            std::cmp::Reverse(turns),
            failed_here,
            on_model,
            on_provider,
        )
    };
    let best = (0..members.len()).min_by_key(|&at| weight(at)).unwrap_or(0);
    if best == 0 {
        return i;
    }
    let chosen = queue.remove(best - 1).expect("a position in the queue");
    queue.push_front(i);
    chosen
}

/// What affinity came to, for the trace: `new`, `kept` or `moved:<why>`; and holds the
/// conversation for its next turn. Only for an answer a model served: when none did, the
/// conversation stays where it was and no answer says it moved (the trace keeps what an
/// earlier part of the answer said, when a continuation of it found no model).
pub(super) fn settle(router: &Router, turn: &mut Turn<'_>, served: Option<(usize, Option<&str>)>) {
    let Some(k) = &turn.keeping else { return };
    turn.trace.session = Some(k.conversation.id().to_string());
    let Some((i, key)) = served else { return };
    let word = match (&k.held, k.kept) {
        (None, _) => "new".to_string(),
        (Some(_), None) => "moved:gone".to_string(),
        (Some(_), Some((held, _))) if held == i => "kept".to_string(),
        (Some(h), Some(_)) => format!("moved:{}", why_moved(turn, &h.model)),
    };
    turn.trace.affinity = Some(word);
    if let Some(affinity) = &router.affinity {
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
