//! Which conversation a request belongs to, so that its turns stay on one model. A
//! conversation is named, in this order, by a session id the client sent (`x-fcm-session`,
//! Claude Code's `X-Claude-Code-Session-Id`, Codex's `session-id` or its
//! `prompt_cache_key`: the edge reads them), else by its beginning: the system prompt and
//! the first user message. A request that carries no history (no assistant turn yet) and
//! no session id continues nothing: it opens a conversation under that beginning, so that
//! its next turn finds the model that answered it. Only a salted hash of the name is kept
//! (`state/affinity`).

use serde_json::Value;

use crate::state::affinity::{Affinity, Held};
use crate::state::sets::Strategy;

use super::router::{Route, Router};

/// A session id the client sent, and where it came from (`x-fcm-session`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionName {
    pub source: &'static str,
    pub value: String,
}

/// Where a client names its session, first found first: fcm's own header, Claude Code's,
/// Codex's.
const SESSION_HEADERS: [&str; 3] = ["x-fcm-session", "x-claude-code-session-id", "session-id"];

impl SessionName {
    /// The session a request names: one of [`SESSION_HEADERS`] (`header` looks one up,
    /// whatever its case), else the `prompt_cache_key` of the client's own body (Codex sends
    /// one per conversation).
    pub(crate) fn of<'h>(
        header: impl Fn(&str) -> Option<&'h str>,
        client_body: &Value,
    ) -> Option<SessionName> {
        let named = SESSION_HEADERS
            .iter()
            .find_map(|h| header(h).filter(|v| !v.trim().is_empty()).map(|v| (*h, v)));
        if let Some((source, value)) = named {
            return Some(SessionName {
                source,
                value: value.trim().to_string(),
            });
        }
        let key = client_body.get("prompt_cache_key")?.as_str()?;
        (!key.is_empty()).then(|| SessionName {
            source: "prompt_cache_key",
            value: key.to_string(),
        })
    }
}

/// A request's conversation, by its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Conversation {
    /// A turn of a conversation that may be held: look it up.
    Continues(String),
    /// The first turn of a conversation: routed afresh, then held under this hash.
    Opens(String),
}

impl Conversation {
    /// Names the conversation of chat request `body`; `None` when it has no user message
    /// to name it by and the client sent no session id.
    pub(crate) fn of(
        affinity: &Affinity,
        session: Option<&SessionName>,
        body: &Value,
    ) -> Option<Self> {
        if let Some(s) = session.filter(|s| !s.value.is_empty()) {
            return Some(Conversation::Continues(
                affinity.hash(s.source, s.value.as_bytes()),
            ));
        }
        let messages = body.get("messages")?.as_array()?;
        let first_user = messages.iter().find(|m| role(m) == "user")?;
        let mut beginning = Vec::new();
        for m in messages
            .iter()
            .filter(|m| matches!(role(m), "system" | "developer"))
        {
            named_by(&content(m), &mut beginning);
        }
        beginning.push(0);
        named_by(&content(first_user), &mut beginning);
        let id = affinity.hash("beginning", &beginning);
        let history = messages.iter().any(|m| role(m) == "assistant");
        Some(if history {
            Conversation::Continues(id)
        } else {
            Conversation::Opens(id)
        })
    }

    /// The hash it is held under.
    pub(crate) fn id(&self) -> &str {
        match self {
            Conversation::Continues(id) | Conversation::Opens(id) => id,
        }
    }
}

/// What of a text names a conversation: its length and its first [`NAMING_BYTES`] (an
/// agent's system prompt runs to tens of KiB; hashing all of it on every turn would cost
/// more than the rest of the request's routing).
fn named_by(text: &str, out: &mut Vec<u8>) {
    use std::io::Write;
    let cut = text.len().min(NAMING_BYTES);
    out.reserve(cut + 24);
    out.extend_from_slice(&text.as_bytes()[..cut]);
    // Writing to a Vec cannot fail.
    let _ = write!(out, "\0{}\0", text.len());
}

/// Bytes of each text a conversation's name is made of.
const NAMING_BYTES: usize = 2048;

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// A message's content as one text: a string as it is (not copied: a system prompt runs to
/// tens of KiB), anything else (content parts) as its JSON, which is the same on every turn
/// that resends it.
fn content(m: &Value) -> std::borrow::Cow<'_, str> {
    match m.get("content") {
        Some(Value::String(s)) => s.as_str().into(),
        Some(v) => v.to_string().into(),
        None => "".into(),
    }
}

/// A request's conversation and what was held for it.
pub(crate) struct Keeping {
    pub conversation: Conversation,
    /// What the conversation's last turn was served by, if it is still held.
    pub held: Option<Held>,
    /// The held model's candidate and key, when the catalog still has them.
    pub kept: Option<(usize, Option<usize>)>,
}

impl Keeping {
    /// The conversation of a request on `route`, and what is held for it; `None` when
    /// affinity is off or the route says its own order.
    pub(super) fn of(
        router: &Router,
        route: &Route,
        session: Option<&SessionName>,
        body: &serde_json::Value,
    ) -> Option<Keeping> {
        let affinity = router.affinity.as_ref()?;
        if let Route::Set(name) = route {
            let set = router.sets.get(name)?;
            if set.strategy != Strategy::Fallback {
                return None;
            }
        }
        if matches!(route, Route::Pinned(_)) {
            return None;
        }
        let conversation = Conversation::of(affinity, session, body)?;
        let held = match &conversation {
            Conversation::Continues(id) => affinity.get(id, crate::time::now_ms()),
            Conversation::Opens(_) => None,
        };
        let kept = held.as_ref().and_then(|h| {
            let i = router.pool.position(&h.model)?;
            let c = router.pool.get(i);
            let key = h
                .key
                .as_ref()
                .and_then(|label| c.target.keys.iter().position(|k| &k.label == label));
            Some((i, key))
        });
        Some(Keeping {
            conversation,
            held,
            kept,
        })
    }

    /// The key to send candidate `i` with, when it is the held model.
    pub(super) fn key_for(&self, i: usize) -> Option<usize> {
        self.kept.filter(|(c, _)| *c == i).and_then(|(_, k)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::affinity::AffinityFile;
    use serde_json::json;

    #[test]
    fn a_conversation_is_named_by_its_session_or_its_beginning() {
        let a = Affinity::new(AffinityFile::default(), 60_000, 0);
        let first = json!({"messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Fix the bug."}]});
        let second = json!({"messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Thanks, now the tests."}]});
        let opened = Conversation::of(&a, None, &first).unwrap();
        let continued = Conversation::of(&a, None, &second).unwrap();
        assert!(matches!(opened, Conversation::Opens(_)));
        assert!(matches!(continued, Conversation::Continues(_)));
        assert_eq!(opened.id(), continued.id(), "the next turn finds the first");
        let other = json!({"messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Write docs."}]});
        assert_ne!(
            Conversation::of(&a, None, &other).unwrap().id(),
            opened.id()
        );
        let named = SessionName {
            source: "x-claude-code-session-id",
            value: "2537d4a6".into(),
        };
        let by_session = Conversation::of(&a, Some(&named), &first).unwrap();
        assert!(matches!(by_session, Conversation::Continues(_)));
        assert_eq!(
            by_session,
            Conversation::of(&a, Some(&named), &other).unwrap()
        );
        assert_eq!(Conversation::of(&a, None, &json!({"messages": []})), None);
    }

    #[test]
    fn sessions_named_by_headers_then_the_cache_key() {
        let headers = [
            ("session-id", "codex-1"),
            ("x-claude-code-session-id", "cc-1"),
        ];
        let lookup = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| *v)
        };
        let body = json!({"prompt_cache_key": "pck"});
        let named = SessionName::of(lookup, &body).unwrap();
        assert_eq!(
            (named.source, named.value.as_str()),
            ("x-claude-code-session-id", "cc-1")
        );
        let named = SessionName::of(|_| None, &body).unwrap();
        assert_eq!(
            (named.source, named.value.as_str()),
            ("prompt_cache_key", "pck")
        );
        assert_eq!(SessionName::of(|_| Some(" "), &json!({})), None);
    }
}
