//! Catalog drift: what `fcm models --refresh` found when it asked each provider which
//! models it serves (`GET /models`), kept in `$FCM_HOME/catalog-overlay.json` and laid over
//! the catalog wherever fcm loads it: models a provider no longer serves leave rotation,
//! models it serves that the catalog lacks join it (tier `?` until benched). Pure: a
//! listing and the catalog in, the differences out; the command does the asking.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::providers::catalog::{Catalog, Model, Provider};

/// The window assumed for a model whose listing does not say (the catalog generator's).
pub const UNKNOWN_CONTEXT: u64 = 32_768;
/// The tier of a model found by a refresh and not benched yet: ranked after every known one.
pub const NEW_TIER: &str = "?";

/// `catalog-overlay.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Overlay {
    pub version: u32,
    /// Per provider id, what its last refresh found.
    pub providers: BTreeMap<String, Drift>,
}

/// One provider's differences from the catalog.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Drift {
    pub checked_at: String,
    /// Catalog models the provider no longer lists.
    pub retired: Vec<String>,
    /// Models it lists that the catalog lacks (only the free ones where it marks prices).
    pub added: Vec<Listed>,
}

/// A model a provider lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    pub id: String,
    pub context: u64,
}

/// What a provider's `GET /models` answer lists: OpenAI's `{"data": [{"id": …}]}` (or a
/// bare array). Where the provider marks prices (OpenRouter's `pricing`), or free ids
/// (`:free`), only free models count as served for adding; every listed id counts as
/// still served.
pub struct Listing {
    pub served: Vec<String>,
    pub free: Vec<Listed>,
}

impl Listing {
    pub fn parse(body: &Value) -> Option<Listing> {
        let items = body
            .get("data")
            .or_else(|| body.get("models"))
            .unwrap_or(body)
            .as_array()?;
        let priced = items.iter().any(|m| m.get("pricing").is_some());
        let mut served = Vec::new();
        let mut free = Vec::new();
        for m in items {
            let Some(id) = m.get("id").and_then(Value::as_str) else {
                continue;
            };
            served.push(id.to_string());
            let zero = |k: &str| {
                m.pointer(&format!("/pricing/{k}")).is_some_and(|p| {
                    p.as_str()
                        .and_then(|s| s.parse::<f64>().ok())
                        .or_else(|| p.as_f64())
                        == Some(0.0)
                })
            };
            let is_free = if priced {
                zero("prompt") && zero("completion")
            } else {
                true
            } || id.ends_with(":free");
            if is_free {
                let context = ["context_length", "context_window", "max_model_len"]
                    .iter()
                    .find_map(|k| m.get(*k).and_then(Value::as_u64))
                    .unwrap_or(UNKNOWN_CONTEXT);
                free.push(Listed {
                    id: id.to_string(),
                    context,
                });
            }
        }
        Some(Listing { served, free })
    }

    /// How `provider`'s catalog entry differs from this listing.
    pub fn drift(&self, provider: &Provider, checked_at: &str) -> Drift {
        let retired = provider
            .models
            .iter()
            .filter(|m| !self.served.contains(&m.id))
            .map(|m| m.id.clone())
            .collect();
        let added = self
            .free
            .iter()
            .filter(|l| !provider.models.iter().any(|m| m.id == l.id))
            .cloned()
            .collect();
        Drift {
            checked_at: checked_at.to_string(),
            retired,
            added,
        }
    }
}

impl Overlay {
    /// Lays the overlay over `catalog`: retired models removed, added ones appended with
    /// tier [`NEW_TIER`]. A provider the catalog no longer has is passed over.
    pub fn apply(&self, catalog: &mut Catalog) {
        for (id, drift) in &self.providers {
            let Some(p) = catalog.providers.iter_mut().find(|p| &p.id == id) else {
                continue;
            };
            p.models.retain(|m| !drift.retired.contains(&m.id));
            for l in &drift.added {
                if p.models.iter().any(|m| m.id == l.id) {
                    continue;
                }
                p.models.push(Model {
                    id: l.id.clone(),
                    label: l.id.clone(),
                    tier: NEW_TIER.to_string(),
                    swe_bench: None,
                    context: l.context.max(1),
                    capabilities: Vec::new(),
                    quota: None,
                    quota_of_line: None,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> Catalog {
        Catalog::parse(
            r#"{"version":1,"providers":[{"id":"p","baseUrl":"http://x","models":[{"id":"kept","context":8},{"id":"gone","context":8}]}]}"#,
            "t",
        )
        .unwrap()
    }

    #[test]
    fn a_listing_shows_what_left_and_what_came() {
        let body = json!({"object": "list", "data": [
            {"id": "kept"}, {"id": "newcomer", "context_window": 131072}, {"id": "other"}]});
        let listing = Listing::parse(&body).unwrap();
        let c = catalog();
        let drift = listing.drift(&c.providers[0], "t0");
        assert_eq!(drift.retired, ["gone"]);
        assert_eq!(
            drift.added,
            [
                Listed {
                    id: "newcomer".into(),
                    context: 131_072
                },
                Listed {
                    id: "other".into(),
                    context: UNKNOWN_CONTEXT
                },
            ]
        );
    }

    #[test]
    fn where_prices_are_marked_only_free_models_are_added() {
        let body = json!({"data": [
            {"id": "paid", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
            {"id": "zero", "pricing": {"prompt": "0", "completion": "0"}, "context_length": 65536},
            {"id": "tagged:free", "pricing": {"prompt": "0.1", "completion": "0"}}]});
        let listing = Listing::parse(&body).unwrap();
        let ids: Vec<&str> = listing.free.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids, ["zero", "tagged:free"]);
        assert_eq!(listing.served.len(), 3, "a paid model is still served");
        assert!(Listing::parse(&json!({"error": "nope"})).is_none());
    }

    #[test]
    fn the_overlay_takes_retired_models_out_and_adds_new_ones_last() {
        let mut c = catalog();
        let mut overlay = Overlay::default();
        overlay.providers.insert(
            "p".into(),
            Drift {
                checked_at: "t0".into(),
                retired: vec!["gone".into()],
                added: vec![Listed {
                    id: "newcomer".into(),
                    context: 4096,
                }],
            },
        );
        overlay
            .providers
            .insert("vanished".into(), Drift::default());
        overlay.apply(&mut c);
        let ids: Vec<(&str, &str)> = c.providers[0]
            .models
            .iter()
            .map(|m| (m.id.as_str(), m.tier.as_str()))
            .collect();
        assert_eq!(ids, [("kept", ""), ("newcomer", "?")]);
        c.validate().unwrap();
        overlay.apply(&mut c);
        assert_eq!(
            c.providers[0].models.len(),
            2,
            "applying twice adds nothing twice"
        );
    }
}
