//! Model sets: the user's own ordered lists of models (`router.sets` in config.json).
//!
//! `fallback` tries the list in order; `round-robin` rotates the starting model, staying on
//! one for `sticky` consecutive requests; `race` sends the request to its first `width`
//! candidates at once and keeps the first good answer; `fusion` asks its `panel` and has its
//! `judge` merge their answers. A set only decides who goes first: the rest of the healthy
//! models still follow, so a set never removes a fallback. Pure: no I/O; `config` checks a
//! loaded file against these rules.

use serde::{Deserialize, Serialize};

pub(crate) const STRATEGIES: [&str; 4] = ["fallback", "round-robin", "race", "fusion"];

/// Widest race: each racer spends a request of its provider's quota.
pub(crate) const MAX_WIDTH: u32 = 8;
/// Width of a race set that does not say.
pub(crate) const DEFAULT_WIDTH: u32 = 2;

/// One set as config.json holds it (`router.sets.<name>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ModelSet {
    pub(crate) strategy: String,
    pub(crate) sticky: u32,
    pub(crate) models: Vec<String>,
    /// `race`: how many candidates get the request at once (2 to [`MAX_WIDTH`]).
    #[serde(skip_serializing_if = "is_default_width")]
    pub(crate) width: u32,
    /// `fusion`: the models asked in parallel.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) panel: Vec<String>,
    /// `fusion`: the model that merges the panel's answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) judge: Option<String>,
}

impl Default for ModelSet {
    fn default() -> Self {
        ModelSet {
            strategy: "fallback".into(),
            sticky: 1,
            models: Vec::new(),
            width: DEFAULT_WIDTH,
            panel: Vec::new(),
            judge: None,
        }
    }
}

impl ModelSet {
    /// The models the set routes to first: a fusion set's panel (its `models` when it names
    /// no panel), any other set's models.
    pub(crate) fn members(&self) -> &[String] {
        if self.strategy == "fusion" && !self.panel.is_empty() {
            &self.panel
        } else {
            &self.models
        }
    }
}

fn is_default_width(w: &u32) -> bool {
    *w == DEFAULT_WIDTH
}

/// The set's models in the order this request tries them. `counter` counts the requests the
/// set has served before this one.
pub(crate) fn order(set: &ModelSet, counter: u64) -> Vec<String> {
    let models = set.members();
    let n = models.len();
    if n == 0 || set.strategy != "round-robin" {
        return models.to_vec();
    }
    let start = ((counter / u64::from(set.sticky.max(1))) % n as u64) as usize;
    models[start..]
        .iter()
        .chain(&models[..start])
        .cloned()
        .collect()
}

/// A set name users can type after `fcm:` (never a `provider/modelId`).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('/')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(strategy: &str, sticky: u32) -> ModelSet {
        ModelSet {
            strategy: strategy.into(),
            sticky,
            models: vec!["a/1".into(), "b/2".into(), "c/3".into()],
            ..ModelSet::default()
        }
    }

    #[test]
    fn fallback_keeps_the_order() {
        for counter in 0..5 {
            assert_eq!(order(&set("fallback", 1), counter), ["a/1", "b/2", "c/3"]);
        }
    }

    #[test]
    fn round_robin_rotates_with_sticky_counts() {
        let firsts: Vec<String> = (0..6)
            .map(|c| order(&set("round-robin", 1), c)[0].clone())
            .collect();
        assert_eq!(firsts, ["a/1", "b/2", "c/3", "a/1", "b/2", "c/3"]);
        let sticky: Vec<String> = (0..6)
            .map(|c| order(&set("round-robin", 2), c)[0].clone())
            .collect();
        assert_eq!(sticky, ["a/1", "a/1", "b/2", "b/2", "c/3", "c/3"]);
        assert_eq!(
            order(&set("round-robin", 1), 1),
            ["b/2", "c/3", "a/1"],
            "the rest follow in order"
        );
        assert!(order(
            &ModelSet {
                strategy: "round-robin".into(),
                sticky: 0,
                ..ModelSet::default()
            },
            3
        )
        .is_empty());
    }

    #[test]
    fn names() {
        assert!(valid_name("coding") && valid_name("paid-then-free_2"));
        assert!(!valid_name("") && !valid_name("groq/x") && !valid_name("a b"));
    }
}
