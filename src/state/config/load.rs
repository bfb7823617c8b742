//! Reading `config.json`: a missing file is the defaults, a file that is not a config is an
//! error naming it ([`ConfigError`], [`InvalidConfig`]); values out of range are clamped
//! and unknown keys reported, both as warnings for the command to print. Also merging the
//! user's custom providers into the catalog ([`Config::merge_into`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::settings::{Config, DEFAULT_PORT, MIN_TIMEOUT_MS};
use crate::providers::catalog::{Catalog, InvalidCatalog};
use crate::state::sets::{self, Strategy};

/// Why the user's config cannot be used. The message names the file (or the part of it at
/// fault); the cause is the [`source`](std::error::Error::source).
#[derive(Debug)]
pub(crate) enum ConfigError {
    /// The file exists but cannot be read (a directory, permissions).
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is there, but its text is not a config.
    Invalid {
        path: PathBuf,
        source: InvalidConfig,
    },
    /// The custom providers break a catalog rule once merged in.
    Providers(InvalidCatalog),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Unreadable { path, .. } => write!(f, "cannot read {}", path.display()),
            ConfigError::Invalid { path, .. } => write!(f, "config {}", path.display()),
            ConfigError::Providers(_) => f.write_str("config.json providers"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Unreadable { source, .. } => Some(source),
            ConfigError::Invalid { source, .. } => Some(source),
            ConfigError::Providers(e) => Some(e),
        }
    }
}

/// Config text that is not a config; serde's error (the source) gives the line, column and
/// the offending value.
#[derive(Debug)]
pub(crate) enum InvalidConfig {
    NotJson(serde_json::Error),
    /// JSON, but the setting at `path` (`router.failover.maxAttempts`) holds a value of the
    /// wrong type or an unknown choice.
    WrongValueType {
        path: String,
        source: serde_json::Error,
    },
}

impl std::fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvalidConfig::NotJson(_) => f.write_str("not valid JSON"),
            InvalidConfig::WrongValueType { path, .. } => write!(f, "wrong value for {path}"),
        }
    }
}

impl std::error::Error for InvalidConfig {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InvalidConfig::NotJson(source) | InvalidConfig::WrongValueType { source, .. } => {
                Some(source)
            }
        }
    }
}

/// A loaded config and what was wrong with it.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub(crate) config: Config,
    pub(crate) warnings: Vec<String>,
}

impl Config {
    /// Loads `$FCM_HOME/config.json`. A missing file is the defaults. A file that is not
    /// valid config is an error naming it (it is the user's own file: never moved aside).
    pub(crate) fn load(path: &Path) -> Result<Loaded, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(source) => {
                return Err(ConfigError::Unreadable {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        Config::parse(&text).map_err(|source| ConfigError::Invalid {
            path: path.to_path_buf(),
            source,
        })
    }

    pub(crate) fn parse(text: &str) -> Result<Loaded, InvalidConfig> {
        let raw: Value = serde_json::from_str(text).map_err(InvalidConfig::NotJson)?;
        let mut warnings = Vec::new();
        unknown_keys(&raw, &Config::default_json(), "", &mut warnings);
        // Typed from the text rather than from `raw`, so the error keeps its line and column;
        // the path names the setting.
        let mut config: Config =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
                .map_err(|e| InvalidConfig::WrongValueType {
                    path: e.path().to_string(),
                    source: e.into_inner(),
                })?;
        config.clamp(&mut warnings);
        Ok(Loaded { config, warnings })
    }

    fn default_json() -> Value {
        let mut v = serde_json::to_value(Config::default()).expect("config serialises");
        // Fields that are null or empty by default still have known sub-keys.
        v["router"]["failover"]["lastResortModel"] = Value::String(String::new());
        v["router"]["activeSet"] = Value::String(String::new());
        v["router"]["probe"]["intervalSec"] = Value::from(0);
        v["serve"]["token"] = Value::String(String::new());
        v
    }

    fn clamp(&mut self, warnings: &mut Vec<String>) {
        let f = &mut self.router.failover;
        clamp_u64(
            &mut f.total_budget_ms,
            MIN_TIMEOUT_MS,
            600_000,
            "router.failover.totalBudgetMs",
            warnings,
        );
        for (v, name) in [
            (
                &mut f.body_read_timeout_ms,
                "router.failover.bodyReadTimeoutMs",
            ),
            (
                &mut f.first_token_timeout_ms,
                "router.failover.firstTokenTimeoutMs",
            ),
            (
                &mut f.stream_stall_timeout_ms,
                "router.failover.streamStallTimeoutMs",
            ),
        ] {
            clamp_u64(v, MIN_TIMEOUT_MS, 600_000, name, warnings);
        }
        clamp_u32(
            &mut f.max_attempts,
            1,
            20,
            "router.failover.maxAttempts",
            warnings,
        );
        let b = &mut self.router.breaker;
        clamp_u32(
            &mut b.failure_threshold,
            1,
            100,
            "router.breaker.failureThreshold",
            warnings,
        );
        clamp_u64(
            &mut b.initial_cooldown_ms,
            MIN_TIMEOUT_MS,
            86_400_000,
            "router.breaker.initialCooldownMs",
            warnings,
        );
        let min_max = b.initial_cooldown_ms;
        clamp_u64(
            &mut b.max_cooldown_ms,
            min_max,
            86_400_000,
            "router.breaker.maxCooldownMs",
            warnings,
        );
        clamp_u64(
            &mut b.trip_memory_ms,
            60_000,
            30 * 86_400_000,
            "router.breaker.tripMemoryMs",
            warnings,
        );
        for (name, set) in &mut self.router.sets {
            if !sets::valid_name(name) {
                warnings.push(format!("router.sets.{name}: a set name uses letters, digits, '-', '_' or '.', and never '/'"));
            }
            if let Some(unknown) = set.unknown_strategy.take() {
                warnings.push(format!("router.sets.{name}.strategy {unknown:?} is not fallback, round-robin, race or fusion; using fallback"));
            }
            if set.strategy == Strategy::Race {
                let path = format!("router.sets.{name}.width");
                clamp_u32(&mut set.width, 2, sets::MAX_WIDTH, &path, warnings);
            }
            if set.strategy == Strategy::Fusion {
                if set.judge.is_none() {
                    warnings.push(format!("router.sets.{name}: a fusion set needs a \"judge\" model to merge the panel's answers; using fallback over its panel"));
                    set.strategy = Strategy::Fallback;
                } else if set.members().is_empty() {
                    warnings.push(format!("router.sets.{name}: a fusion set needs a \"panel\" of models; using fallback"));
                    set.strategy = Strategy::Fallback;
                }
            }
            if set.sticky == 0 {
                warnings.push(format!(
                    "router.sets.{name}.sticky must be at least 1; using 1"
                ));
                set.sticky = 1;
            }
        }
        clamp_u32(
            &mut self.router.keys.sticky,
            1,
            1000,
            "router.keys.sticky",
            warnings,
        );
        clamp_u64(
            &mut self.router.max_ttft_ms,
            MIN_TIMEOUT_MS,
            600_000,
            "router.maxTtftMs",
            warnings,
        );
        clamp_u64(
            &mut self.router.affinity.idle_minutes,
            1,
            7 * 24 * 60,
            "router.affinity.idleMinutes",
            warnings,
        );
        if let Some(secs) = self.router.probe.interval_sec {
            let mut s = secs;
            clamp_u64(&mut s, 1, 86_400, "router.probe.intervalSec", warnings);
            self.router.probe.interval_sec = Some(s);
        }
        if let Some(active) = &self.router.active_set {
            if !self.router.sets.contains_key(active) {
                warnings.push(format!("router.activeSet {active:?} names no set in router.sets; routing over all models"));
                self.router.active_set = None;
            }
        }
        let s = &mut self.serve;
        clamp_u64(
            &mut s.request_timeout_ms,
            MIN_TIMEOUT_MS,
            600_000,
            "serve.requestTimeoutMs",
            warnings,
        );
        clamp_u64(
            &mut s.idle_timeout_ms,
            MIN_TIMEOUT_MS,
            3_600_000,
            "serve.idleTimeoutMs",
            warnings,
        );
        if self.port == 0 {
            warnings.push(format!("port 0 is not usable; using {DEFAULT_PORT}"));
            self.port = DEFAULT_PORT;
        }
    }

    /// The catalog with the user's custom providers merged in: a provider with a new id is
    /// added (marked custom); one with a catalog id replaces that provider's `baseUrl`, and
    /// its `quota` and models when it gives them (an OpenRouter account with credits has
    /// 1,000 requests a day, not 50).
    pub(crate) fn merge_into(&self, catalog: &mut Catalog) -> Result<(), ConfigError> {
        for custom in &self.providers {
            match catalog.providers.iter_mut().find(|p| p.id == custom.id) {
                Some(existing) => {
                    existing.base_url = custom.base_url.clone();
                    if custom.quota.is_some() {
                        existing.quota = custom.quota.clone();
                    }
                    if !custom.models.is_empty() {
                        existing.models = custom.models.clone();
                    }
                }
                None => {
                    let mut p = custom.clone();
                    p.custom = true;
                    catalog.providers.push(p);
                }
            }
        }
        catalog.validate().map_err(ConfigError::Providers)
    }
}

/// Brings `v` into `min..=max`, with a warning naming the setting when it was outside.
fn clamp_u64(v: &mut u64, min: u64, max: u64, name: &str, warnings: &mut Vec<String>) {
    let clamped = (*v).clamp(min, max);
    if clamped != *v {
        warnings.push(format!(
            "{name} = {} is out of range {min}..={max}; using {clamped}",
            *v
        ));
        *v = clamped;
    }
}

/// [`clamp_u64`] for a setting held as a `u32`.
fn clamp_u32(v: &mut u32, min: u32, max: u32, name: &str, warnings: &mut Vec<String>) {
    let mut wide = u64::from(*v);
    clamp_u64(&mut wide, u64::from(min), u64::from(max), name, warnings);
    *v = wide as u32;
}

/// Reports keys of `raw` that the config does not know, as dotted paths. Maps whose keys
/// are the user's own names (`apiKeys`, `sets`) and lists are not checked key by key.
fn unknown_keys(raw: &Value, known: &Value, prefix: &str, warnings: &mut Vec<String>) {
    let (Some(raw), Some(known)) = (raw.as_object(), known.as_object()) else {
        return;
    };
    for (key, value) in raw {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match known.get(key) {
            None => warnings.push(format!("unknown setting {path} (ignored)")),
            Some(_) if matches!(path.as_str(), "apiKeys" | "router.sets") => {}
            Some(_) if path == "router.capabilityPools" => {
                for name in value.as_object().into_iter().flat_map(|o| o.keys()) {
                    if !crate::capability::HARD.contains(&name.as_str()) {
                        warnings.push(format!(
                            "router.capabilityPools.{name}: pools are for {} (ignored)",
                            crate::capability::HARD.join(", ")
                        ));
                    }
                }
            }
            Some(k) => unknown_keys(value, k, &path, warnings),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_is_defaults() {
        let l = Config::parse("{}").unwrap();
        assert!(l.warnings.is_empty());
        assert_eq!(l.config.port, DEFAULT_PORT);
        assert_eq!(l.config.router.failover.max_attempts, 4);
        assert_eq!(l.config.router.breaker.failure_threshold, 3);
    }

    #[test]
    fn values_are_clamped_with_warnings() {
        let l =
            Config::parse(r#"{"router":{"failover":{"firstTokenTimeoutMs":5,"maxAttempts":0}}}"#)
                .unwrap();
        assert_eq!(
            l.config.router.failover.first_token_timeout_ms,
            MIN_TIMEOUT_MS
        );
        assert_eq!(l.config.router.failover.max_attempts, 1);
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
        assert!(l.warnings[0].contains("firstTokenTimeoutMs"));
    }

    #[test]
    fn serve_timeouts_default_and_clamp() {
        let l = Config::parse("{}").unwrap();
        assert_eq!(
            (
                l.config.serve.request_timeout_ms,
                l.config.serve.idle_timeout_ms
            ),
            (30_000, 60_000)
        );
        let l = Config::parse(r#"{"serve":{"requestTimeoutMs":1000,"idleTimeoutMs":5}}"#).unwrap();
        assert_eq!(
            (
                l.config.serve.request_timeout_ms,
                l.config.serve.idle_timeout_ms
            ),
            (1000, MIN_TIMEOUT_MS)
        );
        assert_eq!(
            l.warnings,
            vec!["serve.idleTimeoutMs = 5 is out of range 1000..=3600000; using 1000"]
        );
    }

    #[test]
    fn unknown_keys_are_reported() {
        let l = Config::parse(
            r#"{"prot":1,"apiKeys":{"groq":"k"},"router":{"failover":{"maxAtempts":2},"sets":{"mine":{"models":[]}}}}"#,
        )
        .unwrap();
        assert_eq!(
            l.warnings,
            vec![
                "unknown setting prot (ignored)",
                "unknown setting router.failover.maxAtempts (ignored)"
            ]
        );
    }

    #[test]
    fn compression_defaults_to_lossless_and_sets_may_say_otherwise() {
        use crate::compress::Mode;
        let l = Config::parse("{}").unwrap();
        assert_eq!(l.config.router.compress, Mode::Lossless);
        let l = Config::parse(
            r#"{"router":{"compress":"aggressive","sets":{"quiet":{"models":[],"compress":"off"},"plain":{"models":[]}}}}"#,
        )
        .unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.config.router.compress, Mode::Aggressive);
        assert_eq!(l.config.router.sets["quiet"].compress, Some(Mode::Off));
        assert_eq!(l.config.router.sets["plain"].compress, None);
        let err = Config::parse(r#"{"router":{"compress":"max"}}"#).unwrap_err();
        assert_eq!(err.to_string(), "wrong value for router.compress");
    }

    #[test]
    fn bad_values_are_errors() {
        let err =
            Config::parse(r#"{"router":{"failover":{"contentValidation":"loose"}}}"#).unwrap_err();
        assert!(
            matches!(&err, InvalidConfig::WrongValueType { path, source } if path == "router.failover.contentValidation" && source.to_string().contains("loose")),
            "{err:?}"
        );
        let err = Config::parse("{\n  \"router\": {\"failover\": {\"maxAttempts\": \"lots\"}}\n}")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "wrong value for router.failover.maxAttempts"
        );
        let cause = std::error::Error::source(&err).unwrap().to_string();
        assert!(
            cause.contains("\"lots\"") && cause.contains("line 2"),
            "{cause}"
        );
        let err = Config::parse(r#"{"providers":[{"id":"a","baseUrl":7}]}"#).unwrap_err();
        assert_eq!(err.to_string(), "wrong value for providers[0].baseUrl");
        assert!(matches!(
            Config::parse("{oops"),
            Err(InvalidConfig::NotJson(_))
        ));
    }

    #[test]
    fn custom_providers_merge() {
        let mut cat = Catalog::parse(crate::providers::catalog::EMBEDDED, "embedded").unwrap();
        let l = Config::parse(
            r#"{"providers":[{"id":"local","name":"Ollama","baseUrl":"http://127.0.0.1:11434/v1","keyRequired":false,"models":[{"id":"qwen3-coder","context":32768}]},
                {"id":"groq","baseUrl":"http://127.0.0.1:9/v1","models":[]}]}"#,
        )
        .unwrap();
        l.config.merge_into(&mut cat).unwrap();
        assert!(cat.find("local/qwen3-coder").unwrap().provider.custom);
        assert_eq!(
            cat.provider("groq").unwrap().base_url,
            "http://127.0.0.1:9/v1"
        );
        assert!(
            cat.find("groq/openai/gpt-oss-120b").is_some(),
            "models kept"
        );
    }

    #[test]
    fn custom_providers_carry_quotas_and_key_lists() {
        let mut cat = Catalog::parse(crate::providers::catalog::EMBEDDED, "embedded").unwrap();
        let l = Config::parse(
            r#"{"apiKeys":{"groq":["k1","k2"],"mistral":"k3"},"router":{"keys":{"sticky":0}},
                "providers":[{"id":"local","baseUrl":"http://127.0.0.1:11434/v1","quota":{"requestsPerDay":100},"models":[{"id":"m","context":8192,"quota":{"tokensPerMinute":5000}}]},
                {"id":"openrouter","baseUrl":"https://openrouter.ai/api/v1","quota":{"requestsPerDay":1000,"scope":"provider"},"models":[]}]}"#,
        )
        .unwrap();
        assert_eq!(
            l.warnings,
            vec!["router.keys.sticky = 0 is out of range 1..=1000; using 1"]
        );
        let groq: Vec<&str> = l.config.api_keys["groq"].iter().collect();
        assert_eq!(groq, ["k1", "k2"]);
        l.config.merge_into(&mut cat).unwrap();
        let local = cat.find("local/m").unwrap();
        assert_eq!(
            local.provider.quota.as_ref().unwrap().requests_per_day,
            Some(100)
        );
        assert_eq!(
            local.model.quota.as_ref().unwrap().tokens_per_minute,
            Some(5000)
        );
        let openrouter = cat.provider("openrouter").unwrap();
        assert_eq!(
            openrouter.quota.as_ref().unwrap().requests_per_day,
            Some(1000),
            "an account with credits"
        );
        assert!(!openrouter.models.is_empty(), "models kept");
        let err = Config::parse(r#"{"apiKeys":{"groq":7}}"#).unwrap_err();
        assert_eq!(err.to_string(), "wrong value for apiKeys.groq");
    }

    #[test]
    fn custom_providers_follow_the_catalog_rules() {
        let mut cat = Catalog::parse(crate::providers::catalog::EMBEDDED, "embedded").unwrap();
        let l = Config::parse(r#"{"providers":[{"id":"b","baseUrl":"gopher://x","models":[]}]}"#)
            .unwrap();
        let err = l.config.merge_into(&mut cat).unwrap_err();
        assert_eq!(err.to_string(), "config.json providers");
        assert!(
            matches!(&err, ConfigError::Providers(InvalidCatalog::NotAnHttpUrl { provider, .. }) if provider == "b"),
            "{err:?}"
        );
    }
}
