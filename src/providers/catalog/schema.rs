//! The catalog's schema (`providers.json`): [`Catalog`], [`Provider`] and [`Model`] as
//! serde reads them, tiers and their order, and finding a model by its key
//! (`provider/modelId`, [`ModelRef`]). Where a catalog comes from and the rules it must
//! keep are `load`'s; keys are `keys`'; URLs are `url`'s; its date is `age`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::age::CatalogDate;
use crate::providers::quota::Quota;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    pub version: u32,
    /// The day its facts were last brought up to date; a catalog of one's own may leave
    /// it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<CatalogDate>,
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
    /// Phrases of this provider's own notices (a paid plan, credits, sign-up), beside the
    /// default ones: an answer that is only such a notice is not the model's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notice_patterns: Vec<String>,
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
    /// The model of the same line whose quota it took, not having one of its own (see
    /// `lines`); not in the file.
    #[serde(skip)]
    pub quota_of_line: Option<String>,
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

impl Catalog {
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

    /// `227 models across 22 providers`, as `fcm models` and `fcm doctor` say it.
    pub fn size(&self) -> String {
        let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        format!(
            "{} across {}",
            count(self.models().count(), "model"),
            count(self.providers.len(), "provider")
        )
    }

    #[cfg(test)]
    pub fn model_count(&self) -> usize {
        self.providers.iter().map(|p| p.models.len()).sum()
    }
}
