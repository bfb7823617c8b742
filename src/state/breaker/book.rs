//! `breakers.json`: every model's [`Health`] by model key ([`BreakerBook`]), with what
//! loading it does: entries not updated for a month are dropped, and times written under a
//! clock that was ahead are cut ([`Health::clamp`]).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::health::Health;
use crate::state::config::BreakerConfig;

/// Entries not updated for this long are dropped when the file is loaded.
pub const FORGET_AFTER_MS: u64 = 30 * 86_400_000;

/// The file format of `breakers.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BreakerBook {
    pub version: u32,
    pub models: HashMap<String, Health>,
}

impl BreakerBook {
    /// Drops entries not updated for 30 days.
    pub fn forget_stale(&mut self, now: u64) {
        self.models
            .retain(|_, h| now.saturating_sub(h.updated_at_ms) < FORGET_AFTER_MS);
    }

    /// [`Health::clamp`] for every model: a book written under a clock that was ahead.
    pub fn clamp(&mut self, now: u64, cfg: &BreakerConfig) {
        for h in self.models.values_mut() {
            h.clamp(now, cfg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn book_round_trips_without_trial_slot() {
        let mut book = BreakerBook::default();
        book.models.insert(
            "a/b".into(),
            Health {
                trip_count: 2,
                trial_since_ms: Some(5),
                open_until_ms: Some(9),
                ..Default::default()
            },
        );
        let text = serde_json::to_string(&book).unwrap();
        assert!(text.contains("openUntilMs") && !text.contains("trial"));
        let back: BreakerBook = serde_json::from_str(&text).unwrap();
        assert_eq!(back.models["a/b"].trip_count, 2);
        assert_eq!(back.models["a/b"].trial_since_ms, None);
    }
}
