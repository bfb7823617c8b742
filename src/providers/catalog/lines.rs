//! Model lines: a provider's models that differ only by version (`gemini-3.5-flash`,
//! `gemini-3.8-flash` and `gemini-3-flash-preview` are the line `gemini-flash`). A free tier
//! gives the models of one line the same limits, and the catalog often states them for a
//! few members only: a member without a `quota` of its own takes the tightest figures its
//! line states on the same provider, so that fcm does not take an unstated limit for none
//! and send a conversation into it. Pure: the catalog in, the catalog with those quotas
//! filled in out.

use std::collections::HashMap;

use crate::providers::quota::{Quota, Scope};

use super::schema::Catalog;

/// Words of a model id that name a version or a release rather than the model: dropped
/// from its line.
const RELEASE_WORDS: [&str; 5] = ["preview", "latest", "exp", "experimental", "free"];

/// The line of `model_id`: its last path segment, lower case, without a `:tag`, and
/// without the dash-separated words that are versions (numbers: `3.8`, `0731`) or
/// releases (`preview`, `latest`). A size (`120b`) stays: it is another model.
pub fn line(model_id: &str) -> String {
    bare_id(model_id)
        .split('-')
        .filter(|w| !w.is_empty() && !is_version(w) && !RELEASE_WORDS.contains(w))
        .collect::<Vec<_>>()
        .join("-")
}

/// A model id as its own name, whoever serves it: its last path segment, lower case,
/// without a `:tag` (`z-ai/GLM-5.2:free` is `glm-5.2`).
pub fn bare_id(model_id: &str) -> String {
    let last = model_id.rsplit('/').next().unwrap_or(model_id);
    let base = last.split(':').next().unwrap_or(last);
    base.to_ascii_lowercase()
}

/// `3.8`, `0731`, `3`: a number, not a size (`120b`, `2.4t`: a different model).
fn is_version(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_digit()) && !word.ends_with(['b', 'm', 't', 'k'])
}

/// Each figure the tighter of `a`'s and `b`'s (one's when only it states it).
fn tightest(a: &Quota, b: &Quota) -> Quota {
    let min = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    Quota {
        requests_per_minute: min(a.requests_per_minute, b.requests_per_minute),
        requests_per_day: min(a.requests_per_day, b.requests_per_day),
        tokens_per_minute: min(a.tokens_per_minute, b.tokens_per_minute),
        tokens_per_day: min(a.tokens_per_day, b.tokens_per_day),
        scope: Some(Scope::Model),
    }
}

impl Catalog {
    /// Gives each model without a quota of its own the tightest one its line states on the
    /// same provider, noting which model it came from (`Model::quota_of_line`). Returns
    /// how many models took one.
    pub fn share_line_quotas(&mut self) -> usize {
        let mut filled = 0;
        for provider in &mut self.providers {
            let mut stated: HashMap<String, (Quota, String)> = HashMap::new();
            for m in &provider.models {
                let Some(q) = &m.quota else { continue };
                stated
                    .entry(line(&m.id))
                    .and_modify(|(t, _)| *t = tightest(t, q))
                    .or_insert_with(|| (q.clone(), m.id.clone()));
            }
            if stated.is_empty() {
                continue;
            }
            for m in provider.models.iter_mut().filter(|m| m.quota.is_none()) {
                if let Some((q, from)) = stated.get(&line(&m.id)) {
                    m.quota = Some(q.clone());
                    m.quota_of_line = Some(from.clone());
                    filled += 1;
                }
            }
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_releases_are_not_part_of_a_line() {
        for id in [
            "gemini-3.8-flash",
            "gemini-3-flash-preview",
            "gemini-2.5-flash",
        ] {
            assert_eq!(line(id), "gemini-flash", "{id}");
        }
        assert_eq!(line("gemini-3.5-flash-lite"), "gemini-flash-lite");
        assert_eq!(line("models/gemini-3.1-pro-preview"), "gemini-pro");
        assert_eq!(line("mistral-large-3-25-12"), "mistral-large");
        assert_eq!(line("openai/gpt-oss-120b"), "gpt-oss-120b");
        assert_ne!(line("gpt-oss-20b"), line("gpt-oss-120b"));
        assert_eq!(
            line("qwen3.7-max"),
            "qwen3.7-max",
            "a version inside a word stays"
        );
        assert_eq!(line("z-ai/glm-5.2:free"), "glm");
    }

    fn catalog() -> Catalog {
        Catalog::parse(
            r#"{"version": 1, "providers": [
              {"id": "g", "baseUrl": "http://127.0.0.1:1", "models": [
                {"id": "gemini-3.5-flash", "context": 1000,
                 "quota": {"requestsPerMinute": 5, "requestsPerDay": 20}},
                {"id": "gemini-3-flash-preview", "context": 1000,
                 "quota": {"requestsPerMinute": 10, "tokensPerMinute": 250000}},
                {"id": "gemini-3.8-flash", "context": 1000},
                {"id": "gemini-3.8-flash-lite", "context": 1000},
                {"id": "gemini-3.9-flash", "context": 1000, "quota": {"requestsPerDay": 100}}
              ]},
              {"id": "h", "baseUrl": "http://127.0.0.1:2", "models": [
                {"id": "gemini-3.8-flash", "context": 1000}
              ]}
            ]}"#,
            "test",
        )
        .unwrap()
    }

    #[test]
    fn a_model_without_a_quota_takes_the_tightest_of_its_line_on_its_provider() {
        let mut c = catalog();
        assert_eq!(c.share_line_quotas(), 1);
        let m = c.find("g/gemini-3.8-flash").unwrap().model;
        let q = m.quota.as_ref().unwrap();
        assert_eq!(
            (
                q.requests_per_minute,
                q.requests_per_day,
                q.tokens_per_minute
            ),
            (Some(5), Some(20), Some(250_000))
        );
        assert!(m.quota_of_line.is_some());
        assert!(
            c.find("g/gemini-3.8-flash-lite")
                .unwrap()
                .model
                .quota
                .is_none(),
            "another line"
        );
        let own = c.find("g/gemini-3.9-flash").unwrap().model;
        assert_eq!(
            own.quota.as_ref().unwrap().requests_per_day,
            Some(100),
            "its own quota stands"
        );
        assert!(own.quota_of_line.is_none());
        assert!(
            c.find("h/gemini-3.8-flash").unwrap().model.quota.is_none(),
            "another provider's line says nothing of it"
        );
    }
}
