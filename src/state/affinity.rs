//! Conversation affinity, as fcm keeps it: which model (and which of its provider's keys)
//! last served each conversation, so the next turn goes there again. A bounded table of
//! conversations seen within `router.affinity.idleMinutes`, saved to `affinity.json` like
//! the breakers (debounced, 0600, a corrupt file set aside).
//!
//! A conversation is known only by a hash: the session id a client sent, or the beginning
//! of its conversation, hashed with a salt kept in the file. Neither the id nor any of the
//! conversation's words are stored. Which conversation a request continues, and what the
//! router does with the answer, is `routing`'s business.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Conversations kept at most: enough for many agents at once, a few hundred KiB on disk.
/// The one idle longest goes first.
pub const MAX_CONVERSATIONS: usize = 4096;
/// A conversation with a turn this recent is one an agent is working in: an agent's turns
/// come seconds apart while it works, and a finished conversation drops out of the count
/// within two minutes rather than at the end of the idle time (it keeps its model if it
/// comes back).
pub const LIVE_MS: u64 = 2 * 60_000;

/// What fcm remembers of one conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    /// `provider/modelId` that served its last turn.
    pub model: String,
    /// The key's label (`groq#2`) it was served with; `None` for a provider without keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// When its last turn was served (ms since epoch).
    pub last_ms: u64,
    /// Turns served.
    pub turns: u64,
}

/// `affinity.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AffinityFile {
    pub version: u32,
    /// Mixed into every conversation's hash: the hashes mean nothing without this file.
    pub salt: String,
    /// By conversation hash.
    pub conversations: HashMap<String, Held>,
}

/// The table, shared by every request.
pub struct Affinity {
    salt: String,
    table: Mutex<HashMap<String, Held>>,
    /// Conversations idle longer than this are forgotten (ms).
    idle_ms: u64,
    dirty: AtomicBool,
}

impl Affinity {
    /// The table from its file (forgetting conversations idle past `idle_ms`); a file
    /// without a salt gets a fresh one.
    pub fn new(mut file: AffinityFile, idle_ms: u64, now: u64) -> Affinity {
        if file.salt.is_empty() {
            file.salt = fresh_salt();
        }
        file.conversations
            .retain(|_, h| now.saturating_sub(h.last_ms) < idle_ms);
        Affinity {
            salt: file.salt,
            table: Mutex::new(file.conversations),
            idle_ms,
            dirty: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The hash that names a conversation: `kind` (where the name came from) and `name`,
    /// with the table's salt, SHA-256, 128 bits in hex.
    pub fn hash(&self, kind: &str, name: &[u8]) -> String {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [self.salt.as_bytes(), b"\0", kind.as_bytes(), b"\0", name] {
            ctx.update(part);
        }
        crate::hex::hex(&ctx.finish().as_ref()[..16])
    }

    /// What is held for conversation `id`, unless it has been idle too long.
    pub fn get(&self, id: &str, now: u64) -> Option<Held> {
        self.lock()
            .get(id)
            .filter(|h| now.saturating_sub(h.last_ms) < self.idle_ms)
            .cloned()
    }

    /// Conversation `id` was served by `model` with `key`: held for its next turn. Past
    /// [`MAX_CONVERSATIONS`] the one idle longest is forgotten.
    pub fn hold(&self, id: &str, model: &str, key: Option<&str>, now: u64) {
        self.update(id, model, Some(key), now, 1);
    }

    /// Conversation `id` is about to be sent to `model`: it counts there from now on,
    /// before its answer comes (requests arriving meanwhile are spread around it). Not a
    /// turn: [`hold`](Self::hold) counts that once a model served it.
    pub fn place(&self, id: &str, model: &str, now: u64) {
        self.update(id, model, None, now, 0);
    }

    /// Puts conversation `id` on `model` at `now` with `turns` more turns; `key` is set when
    /// given, kept while the model stays the same, forgotten when it changes. A
    /// conversation held already (most turns) is updated in place, its strings kept when
    /// they are the same.
    fn update(&self, id: &str, model: &str, key: Option<Option<&str>>, now: u64, turns: u64) {
        let mut t = self.lock();
        match t.get_mut(id) {
            Some(h) => {
                if h.model != model {
                    h.model = model.to_string();
                    h.key = None;
                }
                if let Some(key) = key.filter(|k| h.key.as_deref() != *k) {
                    h.key = key.map(str::to_string);
                }
                h.last_ms = now;
                h.turns += turns;
            }
            None => {
                let held = Held {
                    model: model.to_string(),
                    key: key.flatten().map(str::to_string),
                    last_ms: now,
                    turns,
                };
                t.insert(id.to_string(), held);
                self.bound(&mut t, now);
            }
        }
        self.dirty.store(true, Ordering::Release);
    }

    /// Past [`MAX_CONVERSATIONS`], forgets the idle ones, then the one idle longest.
    fn bound(&self, t: &mut HashMap<String, Held>, now: u64) {
        if t.len() <= MAX_CONVERSATIONS {
            return;
        }
        let idle = now.saturating_sub(self.idle_ms);
        t.retain(|_, h| h.last_ms > idle);
        while t.len() > MAX_CONVERSATIONS {
            let oldest = t
                .iter()
                .min_by_key(|(k, h)| (h.last_ms, (*k).clone()))
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => t.remove(&k),
                None => break,
            };
        }
    }

    /// Conversations whose last turn was within [`LIVE_MS`], per model: the ones an agent
    /// is working in now, which new and moving conversations are spread around. `except`:
    /// a conversation not to count (the one being placed).
    pub fn live(&self, now: u64, except: Option<&str>) -> HashMap<String, usize> {
        let mut out: HashMap<String, usize> = HashMap::new();
        for (id, h) in self.lock().iter() {
            if now.saturating_sub(h.last_ms) < LIVE_MS && except != Some(id.as_str()) {
                *out.entry(h.model.clone()).or_default() += 1;
            }
        }
        out
    }

    /// Active conversations (not idle too long) per model.
    pub fn active(&self, now: u64) -> HashMap<String, usize> {
        let mut out: HashMap<String, usize> = HashMap::new();
        for h in self.lock().values() {
            if now.saturating_sub(h.last_ms) < self.idle_ms {
                *out.entry(h.model.clone()).or_default() += 1;
            }
        }
        out
    }

    /// A copy to save when something changed since the last one.
    pub fn take_dirty(&self) -> Option<AffinityFile> {
        self.dirty
            .swap(false, Ordering::AcqRel)
            .then(|| self.file())
    }

    /// The whole table as its file holds it.
    pub fn file(&self) -> AffinityFile {
        AffinityFile {
            version: 1,
            salt: self.salt.clone(),
            conversations: self.lock().clone(),
        }
    }

    /// A save failed: try again next time.
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }
}

/// 16 random bytes in hex; the clock's nanoseconds if the system's random source fails
/// (the salt only keeps the hashes from being guessed from the words of a conversation).
fn fresh_salt() -> String {
    let mut buf = [0u8; 16];
    if getrandom::getrandom(&mut buf).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        buf = nanos.to_le_bytes();
    }
    crate::hex::hex(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    #[test]
    fn a_conversation_is_held_until_it_idles_out() {
        let a = Affinity::new(AffinityFile::default(), 30 * MIN, 0);
        let id = a.hash("session", b"my-session");
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert!(!id.contains("session"));
        assert_eq!(a.get(&id, 0), None);
        a.hold(&id, "p/a", Some("p#2"), 1_000);
        a.hold(&id, "p/a", Some("p#2"), 2_000);
        let held = a.get(&id, 2_000 + 29 * MIN).unwrap();
        assert_eq!(
            (held.model.as_str(), held.key.as_deref(), held.turns),
            ("p/a", Some("p#2"), 2)
        );
        assert_eq!(a.get(&id, 2_000 + 30 * MIN), None, "idle too long");
        assert_eq!(a.active(2_000).get("p/a"), Some(&1));
    }

    #[test]
    fn hashes_depend_on_the_salt_and_the_kind() {
        let a = Affinity::new(AffinityFile::default(), MIN, 0);
        let b = Affinity::new(AffinityFile::default(), MIN, 0);
        assert_ne!(
            a.hash("session", b"x"),
            b.hash("session", b"x"),
            "fresh salts"
        );
        assert_ne!(a.hash("session", b"x"), a.hash("start", b"x"));
        let saved = a.file();
        let again = Affinity::new(saved, MIN, 0);
        assert_eq!(
            a.hash("session", b"x"),
            again.hash("session", b"x"),
            "kept across restarts"
        );
    }

    #[test]
    fn the_table_is_bounded_and_forgets_the_longest_idle() {
        let a = Affinity::new(AffinityFile::default(), 1_000 * MIN, 0);
        for n in 0..(MAX_CONVERSATIONS as u64 + 10) {
            a.hold(&format!("c{n}"), "p/a", None, n);
        }
        let t = a.lock();
        assert_eq!(t.len(), MAX_CONVERSATIONS);
        assert!(!t.contains_key("c0") && t.contains_key("c4105"));
    }

    #[test]
    fn a_loaded_file_drops_idle_conversations() {
        let mut file = AffinityFile::default();
        file.conversations.insert(
            "old".into(),
            Held {
                model: "p/a".into(),
                key: None,
                last_ms: 0,
                turns: 3,
            },
        );
        file.conversations.insert(
            "new".into(),
            Held {
                model: "p/b".into(),
                key: None,
                last_ms: 50 * MIN,
                turns: 1,
            },
        );
        let a = Affinity::new(file, 30 * MIN, 60 * MIN);
        assert_eq!(a.get("old", 60 * MIN), None);
        assert_eq!(a.get("new", 60 * MIN).unwrap().model, "p/b");
        assert!(a.take_dirty().is_none(), "loading is not a change");
    }
}
