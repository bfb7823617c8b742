//! What the ledger hands out and is told: a reservation's answer (a [`Grant`] with its key,
//! or [`Blocked`] until when and [`Why`]), the [`Room`] a model has left for probes today,
//! and what an answer cost ([`Tokens`]). Plain values.

use crate::answers::exhaustion::Signal;
use crate::answers::gate::AnswerStats;
use crate::providers::catalog::ApiKey;
use crate::providers::quota::Exhausted;

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
    /// The answer said a free quota, grant, credit or balance is used up.
    Exhausted(Signal),
}

impl Why {
    /// For people: `its known budget is spent (requestsPerDay 20 reached)`.
    pub fn says(&self) -> String {
        match self {
            Why::Budget(what) => format!("its known budget is spent ({what})"),
            Why::Paused => "its keys are paused after rate limits".to_string(),
            Why::Rejected => "the provider rejected its keys within the hour".to_string(),
            Why::Exhausted(signal) => format!("{} (the provider said so)", signal.says()),
        }
    }
}

/// No key of a model may be sent a request before `until_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub until_ms: u64,
    pub why: Why,
}

impl Blocked {
    /// A spent budget, as a block.
    pub(super) fn budget(e: Exhausted) -> Blocked {
        Blocked {
            until_ms: e.until_ms,
            why: Why::Budget(e.what),
        }
    }

    /// Keeps in `earliest` whichever of it and this block ends first (the first of equals).
    pub(super) fn keep_earliest(self, earliest: &mut Option<Blocked>) {
        if earliest.as_ref().is_none_or(|e| self.until_ms < e.until_ms) {
            *earliest = Some(self);
        }
    }
}

/// What one model has left, as planning sees it (nothing is taken).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headroom {
    /// The share of its tightest known limit left (1.0 when no limit is known): of two
    /// otherwise equal models, the one further from a 429.
    pub share: f64,
    /// Requests left today by its tightest known daily limit (the catalog's, or what the
    /// provider said); `None` when no daily limit is known.
    pub day_left: Option<u64>,
    /// Requests a minute its tightest known per-minute limit allows, a token limit counted
    /// in requests of this prompt's size; `None` when none is known.
    pub per_minute: Option<u64>,
    /// It, or another model of its provider, answered 429 or said a quota is used up within
    /// [`LIMITED_LATELY_MS`]: a limit fcm does not know the size of was reached, and may
    /// be again soon (a provider's models often share one, or are given the same).
    pub limited_lately: bool,
}

/// How long after a 429 a model is no home for a new conversation (it may be tried).
pub const LIMITED_LATELY_MS: u64 = 10 * 60_000;

/// Requests left today below which a model is no home for a conversation: an agent's
/// conversation runs to dozens of turns, and moving it costs its prompt cache. Also the
/// most turns [`Headroom::holds_for`] counts: more is enough for any conversation.
pub const ROOMY_DAY_LEFT: u64 = 60;
/// Requests a minute below which a model cannot keep up with one agent (a turn every four
/// seconds while it works).
pub const ROOMY_PER_MINUTE: u64 = 15;
/// Turns a conversation is expected to get from a model limited lately by a limit fcm
/// does not know the size of: its provider's models often share that limit, or are given
/// the same, and it comes back within minutes. Fewer than a known limit gives one that
/// fcm can keep it under.
pub const LATELY_TURNS: u64 = 10;

impl Headroom {
    /// Turns one more conversation, beside `sharing - 1` others on the same limits, can
    /// expect here before a limit moves it, up to [`ROOMY_DAY_LEFT`]: its share of the
    /// day's requests left; of a per-minute pace slower than an agent's, about a
    /// minute's worth; [`LATELY_TURNS`] after a limit of unknown size.
    pub fn holds_for(&self, sharing: u64) -> u64 {
        let n = sharing.max(1);
        let mut turns = ROOMY_DAY_LEFT;
        if let Some(d) = self.day_left {
            turns = turns.min(d / n);
        }
        if let Some(m) = self.per_minute.map(|m| m / n) {
            if m < ROOMY_PER_MINUTE {
                turns = turns.min(m);
            }
        }
        if self.limited_lately {
            turns = turns.min(LATELY_TURNS);
        }
        turns
    }

    /// Nothing known: no limit, no 429.
    pub const OPEN: Headroom = Headroom {
        share: 1.0,
        day_left: None,
        per_minute: None,
        limited_lately: false,
    };
}

/// Tokens one answer cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    /// Of the prompt, what the provider's cache served (as it reported).
    pub cached: u64,
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
            cached: stats.cached_tokens.unwrap_or(0).min(prompt),
            estimated: prompt_estimated + completion_estimated,
        }
    }
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
