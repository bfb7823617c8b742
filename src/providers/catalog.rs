//! The model catalog: which providers exist, their endpoints, key variables and models.
//!
//! The default catalog (`providers.json`) is compiled into the binary; `FCM_CATALOG=path`
//! replaces it with a file of the same schema, which is how tests point fcm at fake
//! providers. Custom providers from the user's config are merged in by `config`. This module
//! also answers "which key does this provider use, and is it set?" without printing it.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::providers::quota::Quota;

/// The catalog shipped inside the binary.
pub const EMBEDDED: &str = include_str!("../../providers.json");

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    pub version: u32,
    pub providers: Vec<Provider>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// The chat URL is `baseUrl + "/chat/completions"`; `{VAR}` is filled from the environment.
    pub base_url: String,
    #[serde(default)]
    pub api_key_env: Vec<String>,
    #[serde(default = "yes")]
    pub key_required: bool,
    #[serde(default)]
    pub signup_url: String,
    #[serde(default)]
    pub limits: String,
    /// `free` (free models) or `limited` (a small free allowance or trial credits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    /// Free-tier limits (all optional); `scope` says whether they count per model or for
    /// the whole provider. A word here (`"free"`, as older catalogs had it) states none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "quota_object"
    )]
    pub quota: Option<Quota>,
    /// One 429 pauses every model of the provider (a shared account-wide quota).
    #[serde(default, skip_serializing_if = "is_false")]
    pub shared_quota: bool,
    /// Request fields this provider rejects; stripped before sending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_fields: Vec<String>,
    /// Headers sent on every request to this provider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// A header carrying one random id per process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
    /// Added from the user's config rather than the catalog.
    #[serde(default, skip_serializing_if = "is_false")]
    pub custom: bool,
    pub models: Vec<Model>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub tier: String,
    #[serde(default)]
    pub swe_bench: Option<f64>,
    pub context: u64,
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// This model's own free-tier limits, counted per model; they win over a
    /// model-scoped provider `quota`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "quota_object"
    )]
    pub quota: Option<Quota>,
}

/// A `quota` object; the word older catalogs put there (`"free"`, `"limited"`) states no
/// limit and is read as none.
fn quota_object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Quota>, D::Error> {
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::String(_)) => Ok(None),
        Some(v) => Quota::deserialize(v)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

fn yes() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Tiers from best to worst; unknown tiers sort last.
pub const TIERS: [&str; 8] = ["S+", "S", "A+", "A", "A-", "B+", "B", "C"];

pub fn tier_rank(tier: &str) -> usize {
    TIERS.iter().position(|t| *t == tier).unwrap_or(TIERS.len())
}

/// Whether and how a provider's key is available; never holds the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyStatus {
    /// Found in this environment variable.
    Env(String),
    /// Found in `config.json` `apiKeys`.
    Config,
    /// Required but absent; lists the variables that would provide it.
    Missing(Vec<String>),
    NotNeeded,
}

impl KeyStatus {
    /// `set`, `missing` or `not_needed`, as `fcm models --json` reports it.
    pub fn code(&self) -> &'static str {
        match self {
            KeyStatus::Env(_) | KeyStatus::Config => "set",
            KeyStatus::Missing(_) => "missing",
            KeyStatus::NotNeeded => "not_needed",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            KeyStatus::Env(var) => format!("{var} set"),
            KeyStatus::Config => "key in config.json".to_string(),
            KeyStatus::Missing(vars) if vars.is_empty() => "missing: apiKeys in config.json".into(),
            KeyStatus::Missing(vars) => format!("missing: {}", vars.join(" or ")),
            KeyStatus::NotNeeded => "no key needed".to_string(),
        }
    }

    pub fn usable(&self) -> bool {
        !matches!(self, KeyStatus::Missing(_))
    }
}

/// A provider's keys in `config.json` `apiKeys`: one key, or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum KeyList {
    One(String),
    Many(Vec<String>),
}

impl KeyList {
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many) = match self {
            KeyList::One(k) => (Some(k.as_str()), &[][..]),
            KeyList::Many(ks) => (None, ks.as_slice()),
        };
        one.into_iter().chain(many.iter().map(String::as_str))
    }
}

impl<'de> Deserialize<'de> for KeyList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = KeyList;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key, or a list of keys")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<KeyList, E> {
                Ok(KeyList::One(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<KeyList, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = seq.next_element::<String>()? {
                    keys.push(k);
                }
                Ok(KeyList::Many(keys))
            }
        }
        d.deserialize_any(Keys)
    }
}

/// One API key of a provider: its value, where it came from, and the only names fcm shows
/// for it (`groq#2`, and a fingerprint that tells keys apart in state files).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// `<provider>#<n>`, n counting from 1 in the order keys are read.
    pub label: String,
    /// [`key_id`] of the value.
    pub id: String,
    pub value: String,
    pub origin: KeyStatus,
}

/// Never the value, even in a debug print.
impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({}, {})", self.label, self.id)
    }
}

/// A fingerprint of a key for state files (`usage.json` rows, a rejected key): 64 bits of
/// FNV-1a, enough to tell a user's keys apart and far too few to recover one.
pub fn key_id(value: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in value.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Where keys come from: the environment (the first listed variable that is set, then the
/// same name with `_2`, `_3`, ... for more keys), then `config.json` `apiKeys.<provider>`
/// (a key or a list). Every distinct key found is used.
pub struct KeySource<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub config_keys: &'a BTreeMap<String, KeyList>,
}

/// Numbered variables read after a provider's own (`GROQ_API_KEY_2` ...), up to this one.
const MAX_NUMBERED_KEY: usize = 32;

impl KeySource<'_> {
    /// Whether the provider can be called, and its first key.
    pub fn lookup(&self, provider: &Provider) -> (KeyStatus, Option<String>) {
        match self.keys(provider).into_iter().next() {
            Some(k) => (k.origin, Some(k.value)),
            None if provider.key_required => {
                (KeyStatus::Missing(provider.api_key_env.clone()), None)
            }
            None => (KeyStatus::NotNeeded, None),
        }
    }

    /// Every key of the provider, in the order they are read, without repeats.
    pub fn keys(&self, provider: &Provider) -> Vec<ApiKey> {
        let env = |name: &str| {
            (self.env)(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mut found: Vec<(String, KeyStatus)> = Vec::new();
        if let Some(var) = provider.api_key_env.iter().find(|v| env(v).is_some()) {
            found.push((env(var).expect("found set"), KeyStatus::Env(var.clone())));
            for n in 2..=MAX_NUMBERED_KEY {
                let numbered = format!("{var}_{n}");
                match env(&numbered) {
                    Some(v) => found.push((v, KeyStatus::Env(numbered))),
                    None => break,
                }
            }
        }
        for v in self
            .config_keys
            .get(&provider.id)
            .into_iter()
            .flat_map(KeyList::iter)
        {
            let v = v.trim();
            if !v.is_empty() {
                found.push((v.to_string(), KeyStatus::Config));
            }
        }
        let mut keys: Vec<ApiKey> = Vec::new();
        for (value, origin) in found {
            if keys.iter().any(|k| k.value == value) {
                continue;
            }
            keys.push(ApiKey {
                label: format!("{}#{}", provider.id, keys.len() + 1),
                id: key_id(&value),
                value,
                origin,
            });
        }
        keys
    }
}

/// The process environment, as a [`KeySource`] wants it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The last four characters of a key, the most fcm ever shows of one.
pub fn key_hint(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "…".to_string();
    }
    format!("…{}", chars[chars.len() - 4..].iter().collect::<String>())
}

/// Why a provider's chat URL cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlError {
    /// `baseUrl` has a `{` without its `}`.
    Unclosed { provider: String },
    /// A `{VAR}` placeholder whose variable is not set.
    MissingVar { provider: String, var: String },
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlError::Unclosed { provider } => {
                write!(f, "unclosed {{ in baseUrl of provider {provider}")
            }
            UrlError::MissingVar { provider, var } => {
                write!(f, "{provider} needs {var} set (its URL contains {{{var}}})")
            }
        }
    }
}

impl std::error::Error for UrlError {}

impl Provider {
    /// The chat completions URL with `{VAR}` placeholders filled; an error names the variable.
    pub fn chat_url(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String, UrlError> {
        self.url(env, "/chat/completions")
    }

    /// The model list URL (`GET`), as [`chat_url`](Self::chat_url) builds its own.
    pub fn models_url(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String, UrlError> {
        self.url(env, "/models")
    }

    /// `baseUrl` with its placeholders filled, then `path`.
    fn url(&self, env: &dyn Fn(&str) -> Option<String>, path: &str) -> Result<String, UrlError> {
        let mut url = String::new();
        let mut rest = self.base_url.trim_end_matches('/');
        while let Some(start) = rest.find('{') {
            let end =
                rest[start..]
                    .find('}')
                    .map(|e| start + e)
                    .ok_or_else(|| UrlError::Unclosed {
                        provider: self.id.clone(),
                    })?;
            let var = &rest[start + 1..end];
            let value = env(var)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| UrlError::MissingVar {
                    provider: self.id.clone(),
                    var: var.to_string(),
                })?;
            url.push_str(&rest[..start]);
            url.push_str(&value);
            rest = &rest[end + 1..];
        }
        url.push_str(rest);
        url.push_str(path);
        Ok(url)
    }
}

/// A model together with its provider.
#[derive(Debug, Clone, Copy)]
pub struct ModelRef<'a> {
    pub provider: &'a Provider,
    pub model: &'a Model,
}

impl ModelRef<'_> {
    /// `provider/modelId`, the name of a model everywhere in fcm.
    pub fn key(&self) -> String {
        format!("{}/{}", self.provider.id, self.model.id)
    }
}

/// Why a catalog could not be used. The message names the catalog (the `FCM_CATALOG` file,
/// or where the text came from); the cause is the [`source`](std::error::Error::source).
#[derive(Debug)]
pub enum CatalogError {
    /// The `FCM_CATALOG` file cannot be read.
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not JSON of the catalog's schema. `at` is the JSON path of the value that is wrong
    /// (`providers[0].models[3].context`; empty when the text is not JSON at all); serde's
    /// error gives what is wrong, and the line and column.
    Malformed {
        origin: String,
        at: String,
        source: serde_json::Error,
    },
    /// Well-formed, but breaking one of the catalog's rules.
    Invalid {
        origin: String,
        source: InvalidCatalog,
    },
}

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CatalogError::Unreadable { path, .. } => {
                write!(f, "cannot read catalog {} (FCM_CATALOG)", path.display())
            }
            CatalogError::Malformed { origin, at, .. } if at.is_empty() => {
                write!(f, "malformed catalog {origin}")
            }
            CatalogError::Malformed { origin, at, .. } => {
                write!(f, "malformed catalog {origin}: {at}")
            }
            CatalogError::Invalid { origin, .. } => write!(f, "invalid catalog {origin}"),
        }
    }
}

impl std::error::Error for CatalogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CatalogError::Unreadable { source, .. } => Some(source),
            CatalogError::Malformed { source, .. } => Some(source),
            CatalogError::Invalid { source, .. } => Some(source),
        }
    }
}

/// A rule of the catalog that a provider or model breaks (ids are how fcm names models, so
/// they must be unique and splittable; a URL must be one fcm can call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidCatalog {
    BadProviderId(String),
    ProviderListedTwice(String),
    NotAnHttpUrl { provider: String, base_url: String },
    EmptyModelId { provider: String },
    ZeroContext { provider: String, model: String },
    ModelListedTwice { provider: String, model: String },
}

impl std::fmt::Display for InvalidCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvalidCatalog::BadProviderId(id) => {
                write!(
                    f,
                    "provider id {id:?} must be non-empty, without '/' or ':'"
                )
            }
            InvalidCatalog::ProviderListedTwice(id) => write!(f, "provider {id} is listed twice"),
            InvalidCatalog::NotAnHttpUrl { provider, base_url } => write!(
                f,
                "provider {provider}: baseUrl {base_url:?} is not an http(s) URL"
            ),
            InvalidCatalog::EmptyModelId { provider } => {
                write!(f, "provider {provider}: a model has an empty id")
            }
            InvalidCatalog::ZeroContext { provider, model } => {
                write!(f, "model {provider}/{model}: context must be > 0")
            }
            InvalidCatalog::ModelListedTwice { provider, model } => {
                write!(f, "model {provider}/{model} is listed twice")
            }
        }
    }
}

impl std::error::Error for InvalidCatalog {}

impl Catalog {
    /// The catalog in force: `FCM_CATALOG` if set, else the embedded one.
    pub fn load() -> Result<Catalog, CatalogError> {
        match std::env::var_os("FCM_CATALOG") {
            Some(path) if !path.is_empty() => Catalog::from_file(Path::new(&path)),
            _ => Catalog::parse(EMBEDDED, "embedded providers.json"),
        }
    }

    pub fn from_file(path: &Path) -> Result<Catalog, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
        Catalog::parse(&text, &path.display().to_string())
    }

    /// Parses and validates; errors name `origin`, the JSON path of the wrong value, what
    /// is wrong with it and its line and column.
    pub fn parse(text: &str, origin: &str) -> Result<Catalog, CatalogError> {
        let malformed = |at: String, source| CatalogError::Malformed {
            origin: origin.to_string(),
            at,
            source,
        };
        let de = &mut serde_json::Deserializer::from_str(text);
        let catalog: Catalog = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
            // A wrong value has a path; broken JSON has a line and column only (where the
            // text breaks off, the path is half known), and `.` is the document itself.
            let at = Some(e.path().to_string()).filter(|p| p != "." && e.inner().is_data());
            malformed(at.unwrap_or_default(), e.into_inner())
        })?;
        // Anything after the document is an error too, as `serde_json::from_str` has it.
        de.end().map_err(|e| malformed(String::new(), e))?;
        catalog.validate().map_err(|source| CatalogError::Invalid {
            origin: origin.to_string(),
            source,
        })?;
        Ok(catalog)
    }

    pub fn validate(&self) -> Result<(), InvalidCatalog> {
        let mut keys = HashSet::new();
        let mut ids = HashSet::new();
        for p in &self.providers {
            if p.id.is_empty() || p.id.contains('/') || p.id.contains(':') {
                return Err(InvalidCatalog::BadProviderId(p.id.clone()));
            }
            if !ids.insert(p.id.as_str()) {
                return Err(InvalidCatalog::ProviderListedTwice(p.id.clone()));
            }
            let url = p.base_url.to_ascii_lowercase();
            let host = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"));
            if host.is_none_or(|h| h.split('/').next().unwrap_or("").is_empty()) {
                return Err(InvalidCatalog::NotAnHttpUrl {
                    provider: p.id.clone(),
                    base_url: p.base_url.clone(),
                });
            }
            for m in &p.models {
                if m.id.is_empty() {
                    return Err(InvalidCatalog::EmptyModelId {
                        provider: p.id.clone(),
                    });
                }
                if m.context == 0 {
                    return Err(InvalidCatalog::ZeroContext {
                        provider: p.id.clone(),
                        model: m.id.clone(),
                    });
                }
                if !keys.insert(format!("{}/{}", p.id, m.id)) {
                    return Err(InvalidCatalog::ModelListedTwice {
                        provider: p.id.clone(),
                        model: m.id.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    pub fn models(&self) -> impl Iterator<Item = ModelRef<'_>> {
        self.providers.iter().flat_map(|p| {
            p.models.iter().map(move |m| ModelRef {
                provider: p,
                model: m,
            })
        })
    }

    pub fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.id == id)
    }

    /// Looks up `provider/modelId` (the model id may itself contain `/`).
    pub fn find(&self, key: &str) -> Option<ModelRef<'_>> {
        let (pid, mid) = key.split_once('/')?;
        let provider = self.provider(pid)?;
        let model = provider.models.iter().find(|m| m.id == mid)?;
        Some(ModelRef { provider, model })
    }

    #[cfg(test)]
    pub fn model_count(&self) -> usize {
        self.providers.iter().map(|p| p.models.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_is_sound() {
        let c = Catalog::parse(EMBEDDED, "embedded").unwrap();
        assert!(c.providers.len() >= 20, "{} providers", c.providers.len());
        assert!(c.model_count() >= 240, "{} models", c.model_count());
        let keys: HashSet<String> = c.models().map(|m| m.key()).collect();
        assert_eq!(keys.len(), c.model_count(), "model keys are unique");
        for m in c.models() {
            assert!(m.model.context > 0, "{}", m.key());
            assert!(!m.model.label.is_empty(), "{}", m.key());
        }
        let env = |v: &str| (v == "CLOUDFLARE_ACCOUNT_ID").then(|| "acct".to_string());
        for p in &c.providers {
            let url = p.chat_url(&env).unwrap();
            assert!(
                url.starts_with("https://") && url.ends_with("/chat/completions"),
                "{url}"
            );
            assert!(!url.contains('{'), "{url}");
        }
        assert!(
            c.provider("github-models").is_none(),
            "retired provider left out"
        );
        assert!(c.find("groq/openai/gpt-oss-120b").is_some());
        assert!(
            c.find("zai/glm-5.3-flash").is_some(),
            "zai/ prefix stripped from ids"
        );
        assert!(!c.provider("kilo").unwrap().key_required);
    }

    #[test]
    fn malformed_catalog_names_path_line_and_field() {
        let model = r#"{"id":"m","context":1}"#;
        let provider = |models: &str| {
            format!(r#"{{"id":"p","baseUrl":"http://x","models":[{model},{model},{models}]}}"#)
        };
        let cases: Vec<(String, &str, &[&str])> = vec![
            (
                "{\"version\":1,\n\"providers\":[{\"id\":\"x\"}]}".into(),
                "malformed catalog cat.json: providers[0]",
                &["missing field `baseUrl`", "line 2"],
            ),
            (
                format!(
                    "{{\"version\":1,\"providers\":[{}]}}",
                    provider(r#"{"id":"big","context":"128k"}"#)
                ),
                "malformed catalog cat.json: providers[0].models[2].context",
                &["invalid type: string \"128k\", expected u64", "line 1"],
            ),
            (
                "{\"version\":1,\"providers\":[]".into(),
                "malformed catalog cat.json",
                &["EOF while parsing"],
            ),
            (
                "{\"version\":1,\"providers\":[]} x".into(),
                "malformed catalog cat.json",
                &["trailing characters"],
            ),
        ];
        for (text, message, causes) in cases {
            let err = Catalog::parse(&text, "cat.json").unwrap_err();
            assert_eq!(err.to_string(), message, "{text}");
            let cause = std::error::Error::source(&err).unwrap().to_string();
            for c in causes {
                assert!(cause.contains(c), "{text}: {cause}");
            }
        }
    }

    #[test]
    fn quotas_parse_from_the_catalog_and_older_words_state_none() {
        use crate::providers::quota::Scope;
        let c = Catalog::parse(EMBEDDED, "embedded").unwrap();
        let openrouter = c.provider("openrouter").unwrap().quota.clone().unwrap();
        assert_eq!(
            (openrouter.requests_per_day, openrouter.scope),
            (Some(50), Some(Scope::Provider))
        );
        let llama = c.find("groq/llama-3.3-70b-versatile").unwrap().model;
        assert_eq!(
            llama.quota.as_ref().unwrap().tokens_per_minute,
            Some(12_000)
        );
        let old = r#"{"version":1,"providers":[{"id":"a","baseUrl":"http://x","quota":"free","models":[{"id":"m","context":1,"quota":null}]}]}"#;
        let c = Catalog::parse(old, "old").unwrap();
        assert!(c.providers[0].quota.is_none() && c.providers[0].models[0].quota.is_none());
        let typo = r#"{"version":1,"providers":[{"id":"a","baseUrl":"http://x","models":[{"id":"m","context":1,"quota":{"requestPerDay":5}}]}]}"#;
        let err = Catalog::parse(typo, "t").unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed catalog t: providers[0].models[0].quota"
        );
        let cause = std::error::Error::source(&err).unwrap().to_string();
        assert!(cause.contains("unknown field `requestPerDay`"), "{cause}");
    }

    #[test]
    fn invalid_catalogs_are_refused() {
        let cases = [
            (
                r#"{"version":1,"providers":[{"id":"a","baseUrl":"ftp://x","models":[]}]}"#,
                r#"provider a: baseUrl "ftp://x" is not an http(s) URL"#,
            ),
            (
                r#"{"version":1,"providers":[{"id":"a","baseUrl":"http://x","models":[{"id":"m","context":0}]}]}"#,
                "model a/m: context must be > 0",
            ),
            (
                r#"{"version":1,"providers":[{"id":"a","baseUrl":"http://x","models":[{"id":"m","context":1},{"id":"m","context":1}]}]}"#,
                "model a/m is listed twice",
            ),
        ];
        for (text, why) in cases {
            match Catalog::parse(text, "t") {
                Err(CatalogError::Invalid { origin, source }) => {
                    assert_eq!((origin.as_str(), source.to_string().as_str()), ("t", why))
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn url_placeholders_are_filled_or_named() {
        let c = Catalog::parse(EMBEDDED, "embedded").unwrap();
        let cf = c.provider("cloudflare").unwrap();
        let err = cf.chat_url(&|_| None).unwrap_err();
        assert!(err.to_string().contains("CLOUDFLARE_ACCOUNT_ID"), "{err}");
        let url = cf.chat_url(&|_| Some("abc".into())).unwrap();
        assert_eq!(
            url,
            "https://api.cloudflare.com/client/v4/accounts/abc/ai/v1/chat/completions"
        );
    }

    #[test]
    fn keys_env_first_then_config() {
        let c = Catalog::parse(EMBEDDED, "embedded").unwrap();
        let codestral = c.provider("codestral").unwrap();
        let mut cfg = BTreeMap::new();
        let env = |v: &str| (v == "CODESTRAL_API_KEY").then(|| "env-key-123456".to_string());
        let (status, key) = KeySource {
            env: &env,
            config_keys: &cfg,
        }
        .lookup(codestral);
        assert_eq!(
            (status, key.as_deref()),
            (
                KeyStatus::Env("CODESTRAL_API_KEY".into()),
                Some("env-key-123456")
            )
        );
        cfg.insert("codestral".to_string(), KeyList::One("cfg-key".into()));
        let none = |_: &str| None;
        let (status, key) = KeySource {
            env: &none,
            config_keys: &cfg,
        }
        .lookup(codestral);
        assert_eq!(
            (status, key.as_deref()),
            (KeyStatus::Config, Some("cfg-key"))
        );
        let (status, _) = KeySource {
            env: &none,
            config_keys: &BTreeMap::new(),
        }
        .lookup(codestral);
        assert_eq!(
            status.describe(),
            "missing: MISTRAL_API_KEY or CODESTRAL_API_KEY"
        );
        let (status, _) = KeySource {
            env: &none,
            config_keys: &BTreeMap::new(),
        }
        .lookup(c.provider("llm7").unwrap());
        assert_eq!(status, KeyStatus::NotNeeded);
    }

    #[test]
    fn several_keys_from_numbered_variables_and_a_list() {
        let c = Catalog::parse(EMBEDDED, "embedded").unwrap();
        let groq = c.provider("groq").unwrap();
        let env = |v: &str| match v {
            "GROQ_API_KEY" => Some("gsk-one-1234567890".to_string()),
            "GROQ_API_KEY_2" => Some(" gsk-two-1234567890\n".to_string()),
            "GROQ_API_KEY_4" => Some("gsk-after-a-gap-123".to_string()),
            _ => None,
        };
        let mut cfg = BTreeMap::new();
        let list: KeyList =
            serde_json::from_str(r#"["gsk-two-1234567890", "gsk-three-123456789", " "]"#).unwrap();
        cfg.insert("groq".to_string(), list);
        let keys = KeySource {
            env: &env,
            config_keys: &cfg,
        }
        .keys(groq);
        let seen: Vec<(&str, &str, &KeyStatus)> = keys
            .iter()
            .map(|k| (k.label.as_str(), k.value.as_str(), &k.origin))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "groq#1",
                    "gsk-one-1234567890",
                    &KeyStatus::Env("GROQ_API_KEY".into())
                ),
                (
                    "groq#2",
                    "gsk-two-1234567890",
                    &KeyStatus::Env("GROQ_API_KEY_2".into())
                ),
                ("groq#3", "gsk-three-123456789", &KeyStatus::Config),
            ]
        );
        assert_eq!(keys[0].id, key_id("gsk-one-1234567890"));
        assert_ne!(keys[0].id, keys[1].id);
        assert!(
            !format!("{keys:?}").contains("gsk-"),
            "debug prints never show a key"
        );
        let err = serde_json::from_str::<KeyList>("7").unwrap_err();
        assert!(
            err.to_string().contains("a key, or a list of keys"),
            "{err}"
        );
    }

    #[test]
    fn key_hint_shows_at_most_four_chars() {
        assert_eq!(key_hint("gsk_abcdefghijkl1234"), "…1234");
        assert_eq!(key_hint("short"), "…");
    }
}
