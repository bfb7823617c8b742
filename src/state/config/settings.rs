//! What `config.json` holds: [`Config`] and its sections (router, failover, breaker, keys,
//! reasoning, probes, context, compression, serve), each with its defaults, and the access token every
//! command agrees on. Reading the file, its clamps and its warnings are `load`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::answers::gate::ContentValidation;
use crate::providers::catalog::{KeyList, Provider};
use crate::state::sets::ModelSet;

pub(crate) const DEFAULT_PORT: u16 = 19280;
/// No timeout below one second: shorter ones cut off healthy providers mid-handshake.
pub(crate) const MIN_TIMEOUT_MS: u64 = 1000;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Config {
    pub(crate) port: u16,
    /// A key or a list of keys per provider id.
    pub(crate) api_keys: BTreeMap<String, KeyList>,
    /// Custom providers beside the catalog, or overrides of a catalog provider's `baseUrl`.
    pub(crate) providers: Vec<Provider>,
    pub(crate) router: RouterConfig,
    pub(crate) serve: ServeConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: DEFAULT_PORT,
            api_keys: BTreeMap::new(),
            providers: Vec::new(),
            router: RouterConfig::default(),
            serve: ServeConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouterConfig {
    /// What model `fcm` puts first: the strongest that works, or the fastest.
    pub(crate) prefer: Prefer,
    /// A median time to first token slower than this (ms) is too slow for an agent: such a
    /// model goes behind every responsive one.
    pub(crate) max_ttft_ms: u64,
    /// A conversation keeps the model (and key) that served it.
    pub(crate) affinity: AffinityConfig,
    pub(crate) failover: FailoverConfig,
    pub(crate) breaker: BreakerConfig,
    pub(crate) sets: BTreeMap<String, ModelSet>,
    pub(crate) active_set: Option<String>,
    pub(crate) probe: ProbeConfig,
    pub(crate) reasoning: ReasoningConfig,
    pub(crate) keys: KeysConfig,
    /// Per hard capability (`vision`, `pdf`, `audio`), the models to use first when no
    /// candidate claims it; unset, the catalog's free models that claim it.
    pub(crate) capability_pools: BTreeMap<String, Vec<String>>,
    pub(crate) context: ContextConfig,
    /// How tool results are compressed before a request goes upstream (a set may say
    /// otherwise, a request's `x-fcm-compress` header too).
    pub(crate) compress: crate::compress::Mode,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            prefer: Prefer::default(),
            max_ttft_ms: DEFAULT_MAX_TTFT_MS,
            affinity: AffinityConfig::default(),
            failover: FailoverConfig::default(),
            breaker: BreakerConfig::default(),
            sets: BTreeMap::new(),
            active_set: None,
            probe: ProbeConfig::default(),
            reasoning: ReasoningConfig::default(),
            keys: KeysConfig::default(),
            capability_pools: BTreeMap::new(),
            context: ContextConfig::default(),
            compress: crate::compress::Mode::default(),
        }
    }
}

/// `router.maxTtftMs` by default. The strong coding models on free tiers start answering
/// a short prompt in 0.5-3 s and an agent's ~20k-token turn in a few seconds more; a model
/// whose median first token takes longer than 8 s stalls every turn of a long task (40
/// turns waste over five minutes just waiting), so it is tried only after the responsive
/// ones.
pub(crate) const DEFAULT_MAX_TTFT_MS: u64 = 8_000;

/// What `fcm` routes to first (`router.prefer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Prefer {
    /// The strongest coding model that works, speed only between equals.
    #[default]
    Quality,
    /// The fastest model that works, strength only between equals.
    Speed,
}

/// Conversation affinity (`router.affinity`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct AffinityConfig {
    pub(crate) enabled: bool,
    /// A conversation idle this long is forgotten: its next turn is routed afresh.
    pub(crate) idle_minutes: u64,
}

impl Default for AffinityConfig {
    fn default() -> Self {
        AffinityConfig {
            enabled: true,
            idle_minutes: 30,
        }
    }
}

/// What happens to a request larger than the windows left.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ContextConfig {
    /// Trim the middle of the conversation to fit the largest window left, rather than
    /// refuse it.
    pub(crate) trim_history: bool,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig { trim_history: true }
    }
}

/// How a provider's several keys take turns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct KeysConfig {
    /// Requests sent with one key before the next key takes over.
    pub(crate) sticky: u32,
}

impl Default for KeysConfig {
    fn default() -> Self {
        KeysConfig {
            sticky: crate::state::ledger::DEFAULT_STICKY,
        }
    }
}

/// Where a model's reasoning goes on its way to the client.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ReasoningConfig {
    /// On `/v1/chat/completions`, a leading `<think>` block in the content moves into
    /// `reasoning_content` (Anthropic and Responses clients always get reasoning apart).
    pub(crate) split_think_tags: bool,
}

impl Default for ReasoningConfig {
    fn default() -> Self {
        ReasoningConfig {
            split_think_tags: true,
        }
    }
}

/// Background probes of models whose cooldown ended. Off by default: probes spend free quota,
/// and HALF_OPEN trials come from real traffic anyway.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ProbeConfig {
    pub(crate) interval_sec: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FailoverConfig {
    pub(crate) max_attempts: u32,
    pub(crate) total_budget_ms: u64,
    pub(crate) body_read_timeout_ms: u64,
    pub(crate) first_token_timeout_ms: u64,
    pub(crate) stream_stall_timeout_ms: u64,
    pub(crate) content_validation: ContentValidation,
    pub(crate) last_resort_model: Option<String>,
}

impl Default for FailoverConfig {
    fn default() -> Self {
        FailoverConfig {
            max_attempts: 4,
            total_budget_ms: 120_000,
            body_read_timeout_ms: 30_000,
            first_token_timeout_ms: 30_000,
            stream_stall_timeout_ms: 30_000,
            content_validation: ContentValidation::Strict,
            last_resort_model: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BreakerConfig {
    pub(crate) failure_threshold: u32,
    pub(crate) initial_cooldown_ms: u64,
    pub(crate) max_cooldown_ms: u64,
    pub(crate) trip_memory_ms: u64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failure_threshold: 3,
            initial_cooldown_ms: 30_000,
            max_cooldown_ms: 300_000,
            trip_memory_ms: 86_400_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ServeConfig {
    pub(crate) token: Option<String>,
    /// A request's head and body must arrive within this from its first byte (else 408).
    pub(crate) request_timeout_ms: u64,
    /// A keep-alive connection with no request is closed after this.
    pub(crate) idle_timeout_ms: u64,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            token: None,
            request_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
        }
    }
}

impl ServeConfig {
    /// The access token `fcm serve` requires and clients send: `flag` (`--token`, where the
    /// command has one) over `FCM_TOKEN` over `serve.token`. Every command reaches the same
    /// answer, so what `fcm install` writes into a tool is what the server checks.
    pub(crate) fn access_token(&self, flag: Option<&str>) -> Option<String> {
        let env = std::env::var("FCM_TOKEN").ok();
        first_token(&[flag, env.as_deref(), self.token.as_deref()])
    }
}

/// The first candidate with something in it, trimmed: a stray newline from `$(cat file)` or
/// an editor is not part of a token, and an empty value means "not set", not "no token".
fn first_token(candidates: &[Option<&str>]) -> Option<String> {
    candidates
        .iter()
        .flatten()
        .map(|t| t.trim())
        .find(|t| !t.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_precedence_trims_and_skips_empty_values() {
        let cases: [([Option<&str>; 3], Option<&str>); 7] = [
            ([Some("flag"), Some("env"), Some("file")], Some("flag")),
            ([None, Some("env"), Some("file")], Some("env")),
            ([None, None, Some("file")], Some("file")),
            ([Some(""), Some("env"), Some("file")], Some("env")),
            ([None, Some(" \n"), Some("file")], Some("file")),
            ([Some("  tok\n"), None, None], Some("tok")),
            ([None, Some(""), Some("  ")], None),
        ];
        for (candidates, want) in cases {
            assert_eq!(first_token(&candidates).as_deref(), want, "{candidates:?}");
        }
    }
}
