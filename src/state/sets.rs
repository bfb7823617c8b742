//! Model sets: the user's own ordered lists of models (`router.sets` in config.json).
//!
//! `fallback` tries the list in order; `round-robin` rotates the starting model, staying on
//! one for `sticky` consecutive requests; `race` sends the request to its first `width`
//! candidates at once and keeps the first good answer; `fusion` asks its `panel` and has its
//! `judge` merge their answers. A set may also say how its requests' tool results are
//! compressed (`compress`). A set only decides who goes first: the rest of the healthy
//! models still follow, so a set never removes a fallback. Pure: no I/O; `config` checks a
//! loaded file against these rules, `routing` reads them per request.

use serde::{Deserialize, Serialize};

/// How a set orders its models (`strategy` in config.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Strategy {
    /// The list in order.
    #[default]
    Fallback,
    /// The starting model rotates per request, `sticky` requests each.
    RoundRobin,
    /// The first `width` candidates get the request at once.
    Race,
    /// The panel answers in parallel, the judge merges.
    Fusion,
}

impl Strategy {
    pub(crate) const ALL: [Strategy; 4] = [
        Strategy::Fallback,
        Strategy::RoundRobin,
        Strategy::Race,
        Strategy::Fusion,
    ];

    /// The name config.json and `fcm sets add --strategy` use.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Strategy::Fallback => "fallback",
            Strategy::RoundRobin => "round-robin",
            Strategy::Race => "race",
            Strategy::Fusion => "fusion",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Widest race: each racer spends a request of its provider's quota.
pub(crate) const MAX_WIDTH: u32 = 8;
/// Width of a race set that does not say.
pub(crate) const DEFAULT_WIDTH: u32 = 2;

/// One set as config.json holds it (`router.sets.<name>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, from = "SetFile")]
pub(crate) struct ModelSet {
    pub(crate) strategy: Strategy,
    /// A strategy name fcm does not know, read as `fallback`: `config` reports it.
    #[serde(skip)]
    pub(crate) unknown_strategy: Option<String>,
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
    /// Tool-result compression for requests to this set (`router.compress` when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) compress: Option<crate::compress::Mode>,
}

impl Default for ModelSet {
    fn default() -> Self {
        ModelSet {
            strategy: Strategy::Fallback,
            unknown_strategy: None,
            sticky: 1,
            models: Vec::new(),
            width: DEFAULT_WIDTH,
            panel: Vec::new(),
            judge: None,
            compress: None,
        }
    }
}

impl ModelSet {
    /// The models the set routes to first: a fusion set's panel (its `models` when it names
    /// no panel), any other set's models.
    pub(crate) fn members(&self) -> &[String] {
        if self.strategy == Strategy::Fusion && !self.panel.is_empty() {
            &self.panel
        } else {
            &self.models
        }
    }
}

/// A set as the file holds it: any strategy name is read, so that one fcm does not know is
/// reported rather than failing the whole file.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct SetFile {
    strategy: String,
    sticky: u32,
    models: Vec<String>,
    width: u32,
    panel: Vec<String>,
    judge: Option<String>,
    compress: Option<crate::compress::Mode>,
}

impl Default for SetFile {
    fn default() -> Self {
        let d = ModelSet::default();
        SetFile {
            strategy: d.strategy.as_str().to_string(),
            sticky: d.sticky,
            models: d.models,
            width: d.width,
            panel: d.panel,
            judge: d.judge,
            compress: d.compress,
        }
    }
}

impl From<SetFile> for ModelSet {
    fn from(f: SetFile) -> ModelSet {
        let strategy = Strategy::parse(&f.strategy);
        ModelSet {
            strategy: strategy.unwrap_or_default(),
            unknown_strategy: strategy.is_none().then_some(f.strategy),
            sticky: f.sticky,
            models: f.models,
            width: f.width,
            panel: f.panel,
            judge: f.judge,
            compress: f.compress,
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
    if n == 0 || set.strategy != Strategy::RoundRobin {
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
            strategy: Strategy::parse(strategy).unwrap(),
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
                strategy: Strategy::RoundRobin,
                sticky: 0,
                ..ModelSet::default()
            },
            3
        )
        .is_empty());
    }

    #[test]
    fn unknown_strategies_are_read_as_fallback_and_kept_for_the_report() {
        let set: ModelSet =
            serde_json::from_str(r#"{"strategy": "random", "models": ["a/1"]}"#).unwrap();
        assert_eq!(set.strategy, Strategy::Fallback);
        assert_eq!(set.unknown_strategy.as_deref(), Some("random"));
        let set: ModelSet = serde_json::from_str(r#"{"strategy": "round-robin"}"#).unwrap();
        assert_eq!(
            (set.strategy, set.unknown_strategy),
            (Strategy::RoundRobin, None)
        );
        for s in Strategy::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }

    #[test]
    fn names() {
        assert!(valid_name("coding") && valid_name("paid-then-free_2"));
        assert!(!valid_name("") && !valid_name("groq/x") && !valid_name("a b"));
    }
}
