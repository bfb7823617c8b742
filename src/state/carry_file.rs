//! `carry.json`: the provider state later turns need (see `routing::carry`), as it is saved
//! so a conversation keeps it across a restart of `fcm serve`. Written by the flusher like
//! `affinity.json` (debounced, 0600, a corrupt file set aside); what goes in and when it
//! expires is the store's business, not this file's.
//!
//! The values are opaque provider data (Gemini's thought signatures, OpenRouter's
//! `reasoning_details`); any secret fcm knows is taken out of their strings before they
//! are written, as from every other state file.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call's kept state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptCall {
    /// The call id the client was given.
    pub id: String,
    /// The provider that made the call, the only one it goes back to.
    pub provider: String,
    /// The call's `extra_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
    /// Its message's `reasoning_details`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Value>,
    /// When it was last given or put back (ms since epoch).
    pub used_ms: u64,
}

/// `carry.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CarryFile {
    pub version: u32,
    /// Oldest first.
    pub calls: Vec<KeptCall>,
}

impl CarryFile {
    /// The file with every string of its values passed through `redact` (a secret fcm
    /// knows replaced), ids and providers included.
    pub fn redacted(mut self, redact: &dyn Fn(&str) -> Option<String>) -> CarryFile {
        for call in &mut self.calls {
            if let Some(clean) = redact(&call.id) {
                call.id = clean;
            }
            for v in [&mut call.extra, &mut call.reasoning].into_iter().flatten() {
                redact_strings(v, redact);
            }
        }
        self
    }
}

fn redact_strings(v: &mut Value, redact: &dyn Fn(&str) -> Option<String>) {
    match v {
        Value::String(s) => {
            if let Some(clean) = redact(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact_strings(i, redact)),
        Value::Object(map) => map.values_mut().for_each(|i| redact_strings(i, redact)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_leave_every_string_and_the_rest_stays() {
        let file = CarryFile {
            version: 1,
            calls: vec![KeptCall {
                id: "call_1".into(),
                provider: "gemini".into(),
                extra: Some(json!({"google": {"thought_signature": "abc-SECRET-def"}})),
                reasoning: Some(json!([{"text": "SECRET", "index": 0}])),
                used_ms: 5,
            }],
        };
        let redact = |s: &str| {
            s.contains("SECRET")
                .then(|| s.replace("SECRET", "[redacted]"))
        };
        let clean = file.redacted(&redact);
        let text = serde_json::to_string(&clean).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        assert_eq!(
            clean.calls[0].extra,
            Some(json!({"google": {"thought_signature": "abc-[redacted]-def"}}))
        );
        let back: CarryFile = serde_json::from_str(&text).unwrap();
        assert_eq!(back, clean);
    }
}
