//! Where the catalog comes from and the rules it must keep: the one compiled into the
//! binary ([`EMBEDDED`]), or the file `FCM_CATALOG` names; parsed with the JSON path of a
//! wrong value (a malformed `updated` date among them), then validated (ids unique and
//! splittable, URLs fcm can call). Errors name the catalog ([`CatalogError`],
//! [`InvalidCatalog`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::schema::Catalog;

/// The catalog shipped inside the binary.
pub const EMBEDDED: &str = include_str!("../../../providers.json");

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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_is_sound() {
        let c = Catalog::parse(EMBEDDED, "embedded").unwrap();
        assert!(c.providers.len() >= 20, "{} providers", c.providers.len());
        assert!(c.model_count() >= 200, "{} models", c.model_count());
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
        for retired in ["github-models", "opencode-zen", "ovhcloud"] {
            assert!(c.provider(retired).is_none(), "retired {retired} left out");
        }
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
        // Where two sources disagree, the lower limit (Cerebras: 5 a minute, not 30).
        let cerebras = c.provider("cerebras").unwrap().quota.clone().unwrap();
        assert_eq!(
            (cerebras.requests_per_minute, cerebras.tokens_per_minute),
            (Some(5), Some(30_000))
        );
        let flash = c.find("googleai/gemini-3.5-flash").unwrap().model;
        assert_eq!(flash.quota.as_ref().unwrap().requests_per_day, Some(20));
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
    fn the_updated_date_is_optional_and_read_strictly() {
        let doc = |updated: &str| {
            format!(
                r#"{{"version":1,{updated}"providers":[{{"id":"a","baseUrl":"http://x","models":[]}}]}}"#
            )
        };
        let c = Catalog::parse(&doc(r#""updated":"2026-10-10","#), "t").unwrap();
        assert_eq!(
            c.updated.map(|d| d.to_string()).as_deref(),
            Some("2026-10-10")
        );
        assert!(Catalog::parse(&doc(""), "t").unwrap().updated.is_none());
        for (bad, cause) in [
            (r#""updated":"2026-02-30","#, "invalid date \"2026-02-30\""),
            (
                r#""updated":"10/10/2026","#,
                "expected a day of the calendar as YYYY-MM-DD",
            ),
            (r#""updated":20261010,"#, "invalid type: integer"),
        ] {
            let err = Catalog::parse(&doc(bad), "cat.json").unwrap_err();
            assert_eq!(
                err.to_string(),
                "malformed catalog cat.json: updated",
                "{bad}"
            );
            let why = std::error::Error::source(&err).unwrap().to_string();
            assert!(
                why.contains(cause) && why.contains("line 1"),
                "{bad}: {why}"
            );
        }
        let embedded = Catalog::parse(EMBEDDED, "embedded").unwrap();
        assert!(embedded.updated.is_some(), "the embedded catalog is dated");
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
}
