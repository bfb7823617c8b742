//! A provider's API keys: where they come from ([`KeySource`]: environment variables,
//! numbered ones for more keys, then `config.json` `apiKeys`), whether one is set
//! ([`KeyStatus`]), and the only names fcm shows for one ([`ApiKey`]: a label and a
//! fingerprint; [`key_hint`]: its last four characters).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::schema::Provider;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::catalog::{Catalog, EMBEDDED};
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
