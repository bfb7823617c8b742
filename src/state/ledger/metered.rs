//! A model as the ledger sees it ([`Metered`]): the counters its catalog limits apply to,
//! where a provider's reported figures and a 429's pause go, and its provider's keys
//! ([`KeyTag`]: label and fingerprint, never the value), with each key's index names made
//! once. Built from the catalog and the keys; holds no counts.

use crate::providers::catalog::{ApiKey, ModelRef};
use crate::providers::quota::{self, Quota, Scope};

use super::book::{slot, Whose};

/// One key as the ledger knows it: its label and fingerprint, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTag {
    /// `groq#2`; `None` for a provider that takes no key.
    pub label: Option<String>,
    /// The fingerprint (empty for no key).
    pub id: String,
    /// This key's index names ([`slot`]), made once so that a lookup allocates nothing:
    /// its row and holds on the model, its holds on the provider, the provider's reported
    /// figures, and each rule's counter (in the model's rule order).
    pub(super) at_model: String,
    pub(super) at_provider: String,
    pub(super) at_reported: String,
    pub(super) at_rules: Vec<String>,
}

/// A model as the ledger sees it: its counters, the rules on them, and its provider's keys.
#[derive(Debug, Clone)]
pub struct Metered {
    pub provider: String,
    /// `provider/modelId`.
    pub model: String,
    /// Each catalog rule with the counter it limits (the model, or the provider).
    pub(super) rules: Vec<(String, Quota)>,
    /// The counter a provider's `x-ratelimit-*` figures belong to.
    pub(super) reported_scope: String,
    /// What a 429 pauses: the whole provider for one account-wide quota, else the model.
    pub(super) pause_scope: String,
    /// At least one: a provider without a key has a single tag without a label.
    pub(super) keys: Vec<KeyTag>,
}

impl Metered {
    /// `m` with its provider's `keys` (in the order they are used).
    pub fn new(m: ModelRef<'_>, keys: &[ApiKey]) -> Metered {
        let model = m.key();
        let provider = m.provider.id.clone();
        let counter = |scope: Scope| match scope {
            Scope::Provider => provider.clone(),
            Scope::Model => model.clone(),
        };
        let rules: Vec<(String, Quota)> =
            quota::rules(m.provider.quota.as_ref(), m.model.quota.as_ref())
                .into_iter()
                .map(|r| (counter(r.scope), r.quota))
                .collect();
        let provider_wide = m.provider.shared_quota
            || m.provider
                .quota
                .as_ref()
                .is_some_and(|q| q.scope_or_provider() == Scope::Provider);
        let reported_scope = counter(if provider_wide {
            Scope::Provider
        } else {
            Scope::Model
        });
        let pause_scope = counter(if m.provider.shared_quota {
            Scope::Provider
        } else {
            Scope::Model
        });
        let tag = |label: Option<String>, id: String| KeyTag {
            at_model: slot(&model, &id),
            at_provider: slot(&provider, &id),
            at_reported: slot(&reported_scope, &id),
            at_rules: rules.iter().map(|(c, _)| slot(c, &id)).collect(),
            label,
            id,
        };
        let mut tags: Vec<KeyTag> = keys
            .iter()
            .map(|k| tag(Some(k.label.clone()), k.id.clone()))
            .collect();
        if tags.is_empty() {
            tags.push(tag(None, String::new()));
        }
        Metered {
            provider,
            model,
            rules,
            reported_scope,
            pause_scope,
            keys: tags,
        }
    }

    /// Figures of `scope` (this model or its provider) with `key`.
    pub(super) fn whose(&self, scope: &str, key: &KeyTag) -> Whose {
        Whose {
            scope: scope.to_string(),
            provider: self.provider.clone(),
            key: key.label.clone(),
            key_id: key.id.clone(),
        }
    }

    /// How many keys the provider has (0 for one that takes none).
    pub fn key_count(&self) -> usize {
        self.keys.iter().filter(|k| k.label.is_some()).count()
    }
}
