//! One model to call, resolved once from the catalog and the keys: its URL, key, headers
//! and the fields it refuses, the body it is sent (the client's, adapted without copying
//! it).

use std::sync::Arc;

use serde_json::Value;

use crate::providers::catalog::{ApiKey, KeySource, ModelRef};
use crate::secrets::Secrets;

/// Everything needed to call one model, resolved once.
#[derive(Debug, Clone)]
pub struct Target {
    /// `provider/modelId`.
    pub key: String,
    pub provider_id: String,
    /// The model id sent on the wire.
    pub wire_model: String,
    /// The chat URL, or why it cannot be built (a missing URL variable).
    pub url: Result<String, crate::providers::catalog::UrlError>,
    /// The provider's keys in the order they are used (none for a provider without one);
    /// each attempt is sent with one of them.
    pub keys: Vec<ApiKey>,
    pub headers: Vec<(String, String)>,
    pub drop_fields: Vec<String>,
    /// The provider's own notice phrases (`noticePatterns`), beside the default ones.
    pub notices: Vec<String>,
    /// Every secret fcm knows (one set shared by all targets): removed from what this
    /// target's provider says before fcm shows or stores it.
    pub secrets: Arc<Secrets>,
}

impl Target {
    pub fn resolve(
        m: ModelRef<'_>,
        keys: &KeySource<'_>,
        session_id: &str,
        secrets: &Arc<Secrets>,
    ) -> Target {
        let mut headers: Vec<(String, String)> = m
            .provider
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(h) = &m.provider.session_header {
            headers.push((h.clone(), session_id.to_string()));
        }
        Target {
            key: m.key(),
            provider_id: m.provider.id.clone(),
            wire_model: m.model.id.clone(),
            url: m.provider.chat_url(keys.env),
            keys: keys.keys(m.provider),
            headers,
            drop_fields: m.provider.drop_fields.clone(),
            notices: m.provider.notice_patterns.clone(),
            secrets: secrets.clone(),
        }
    }

    /// The client's request made this target's: `model` replaced, rejected fields dropped,
    /// orphan tool results left out. Written straight from the client's body, without
    /// copying it (a long history is megabytes, and every attempt sends it).
    pub fn request_body(&self, client: &Value) -> Vec<u8> {
        let Some(obj) = client.as_object() else {
            return serde_json::to_vec(client).expect("JSON values serialise");
        };
        let outgoing = TargetBody {
            body: obj,
            model: &self.wire_model,
            drop_fields: &self.drop_fields,
            messages: obj
                .get("messages")
                .and_then(Value::as_array)
                .map(|m| answered_messages(m)),
        };
        serde_json::to_vec(&outgoing).expect("JSON values serialise")
    }

    /// Removes every secret, whole or masked, from a text that might echo one (provider
    /// error messages do).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.secrets.redact(text).into_owned()
    }
}

/// One target's view of the client's body, serialised in the body's key order.
struct TargetBody<'a> {
    body: &'a serde_json::Map<String, Value>,
    model: &'a str,
    drop_fields: &'a [String],
    messages: Option<Vec<&'a Value>>,
}

impl serde::Serialize for TargetBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.body {
            if self.drop_fields.iter().any(|f| f == key) {
                continue;
            }
            match (key.as_str(), &self.messages) {
                ("model", _) => map.serialize_entry(key, self.model)?,
                ("messages", Some(messages)) => map.serialize_entry(key, messages)?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        if !self.body.contains_key("model") {
            map.serialize_entry("model", self.model)?;
        }
        map.end()
    }
}

/// The messages without `tool` results that answer no earlier assistant tool call: strict
/// providers reject the whole request for one (clients trimming long histories leave them
/// behind).
fn answered_messages(messages: &[Value]) -> Vec<&Value> {
    let mut calls = std::collections::HashSet::new();
    messages
        .iter()
        .filter(|m| {
            for call in m
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    calls.insert(id);
                }
            }
            m.get("role").and_then(Value::as_str) != Some("tool")
                || m.get("tool_call_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| calls.contains(id))
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::providers::catalog::Catalog;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// A catalog model resolved with a known key (`k-123456789012`) for Z.ai and OpenCode Zen.
    pub(crate) fn target(key: &str) -> Target {
        let catalog = Catalog::parse(crate::providers::catalog::EMBEDDED, "embedded").unwrap();
        resolve(&catalog, key)
    }

    fn resolve(catalog: &Catalog, key: &str) -> Target {
        let env = |v: &str| {
            (v == "ZAI_API_KEY" || v == "OPENCODE_ZEN_API_KEY")
                .then(|| "k-123456789012".to_string())
        };
        let keys = KeySource {
            env: &env,
            config_keys: &BTreeMap::new(),
        };
        let secrets = Arc::new(Secrets::new(["k-123456789012"]));
        Target::resolve(catalog.find(key).unwrap(), &keys, "session-1", &secrets)
    }

    #[test]
    fn request_body_replaces_model_and_drops_rejected_fields() {
        let t = target("zai/glm-5.3-flash");
        let client = json!({"model": "fcm", "messages": [], "stream": true, "parallel_tool_calls": true, "user": "u"});
        let sent: Value = serde_json::from_slice(&t.request_body(&client)).unwrap();
        assert_eq!(
            sent,
            json!({"model": "glm-5.3-flash", "messages": [], "stream": true})
        );
        assert_eq!(t.keys[0].value, "k-123456789012");
        assert_eq!(t.keys[0].label, "zai#1");
    }

    #[test]
    fn orphan_tool_results_are_dropped() {
        let t = target("zai/glm-5.3-flash");
        let client = json!({"messages": [
            {"role": "tool", "tool_call_id": "gone", "content": "old"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "tool", "tool_call_id": "c9", "content": "stray"}
        ]});
        let sent: Value = serde_json::from_slice(&t.request_body(&client)).unwrap();
        let roles: Vec<&str> = sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool"]);
        assert_eq!(sent["messages"][2]["tool_call_id"], "c1");
    }

    #[test]
    fn provider_headers_and_session_id_are_sent() {
        // OpenCode Zen left the embedded catalog (its free models refuse API clients); its
        // session header is what a catalog of one's own may still ask for.
        let zen = r#"{"version":1,"providers":[{"id":"opencode-zen","baseUrl":"https://opencode.ai/zen/v1",
            "apiKeyEnv":["OPENCODE_ZEN_API_KEY"],"sessionHeader":"x-opencode-session",
            "models":[{"id":"big-pickle","context":204800}]}]}"#;
        let t = resolve(
            &Catalog::parse(zen, "zen").unwrap(),
            "opencode-zen/big-pickle",
        );
        assert!(t
            .headers
            .contains(&("x-opencode-session".to_string(), "session-1".to_string())));
        let t = target("zai/glm-5.3-flash");
        assert!(t.headers.is_empty());
    }

    #[test]
    fn redaction_hides_the_key_whole_and_masked() {
        let t = target("zai/glm-5.3-flash");
        assert_eq!(
            t.redact("bad key k-123456789012 given"),
            "bad key [redacted] given"
        );
        assert_eq!(t.redact("bad key k-1234**9012"), "bad key [redacted]**9012");
    }
}
