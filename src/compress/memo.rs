//! Tool results compressed before, remembered. An agent resends its whole history on every
//! turn, so each tool result is compressed once and looked up on the turns after: a
//! lookup hashes a few hundred bytes (the result's length, its first and last bytes, its
//! call, the mode) and uses an entry only when its text is the same, byte for byte (one
//! comparison, the cheapest step of a request's path). Deterministic like the passes: a
//! remembered result is the one the passes would give.
//!
//! The least recently used entries go once the memo holds more than its size.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use super::mode::Mode;
use super::result::Call;

/// Results shorter than this are compressed again each time: it costs less than keeping
/// them.
const MIN_BYTES: usize = 1024;
/// Bytes of the start and of the end of a result (and of its call's arguments) that its
/// fingerprint reads.
const PRINT_BYTES: usize = 256;

/// A tool result that compression changed, and its size before and after in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub text: String,
    pub chars_before: usize,
    pub chars_after: usize,
}

impl Changed {
    /// `text` compressed by `compress`; `None` when it came back unchanged.
    pub fn of(
        text: &str,
        compress: impl FnOnce(&str) -> std::borrow::Cow<'_, str>,
    ) -> Option<Changed> {
        match compress(text) {
            std::borrow::Cow::Owned(new) => Some(Changed {
                chars_before: text.chars().count(),
                chars_after: new.chars().count(),
                text: new,
            }),
            std::borrow::Cow::Borrowed(_) => None,
        }
    }
}

/// The remembered results of one process.
pub struct Memo {
    entries: Mutex<Entries>,
    /// Bytes of text (results before and after) kept at most.
    capacity: usize,
}

#[derive(Default)]
struct Entries {
    map: HashMap<u64, Entry>,
    bytes: usize,
    /// Counts lookups: an entry's last use.
    clock: u64,
}

struct Entry {
    text: Box<str>,
    name: Box<str>,
    arguments: Box<str>,
    mode: Mode,
    changed: Option<Arc<Changed>>,
    used: u64,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.text.len() + self.arguments.len() + self.changed.as_ref().map_or(0, |c| c.text.len())
    }

    fn is(&self, text: &str, call: Option<Call<'_>>, mode: Mode) -> bool {
        let (name, arguments) = call.map_or(("", ""), |c| (c.name, c.arguments));
        self.mode == mode
            && *self.name == *name
            && *self.arguments == *arguments
            && *self.text == *text
    }
}

impl Memo {
    /// A memo keeping up to `capacity` bytes of results.
    pub fn new(capacity: usize) -> Memo {
        Memo {
            entries: Mutex::new(Entries::default()),
            capacity,
        }
    }

    /// `text` (the result of `call`) compressed in `mode`: remembered, or by `compress`
    /// and remembered from now on.
    pub fn get_or(
        &self,
        text: &str,
        call: Option<Call<'_>>,
        mode: Mode,
        compress: impl FnOnce(&str) -> Option<Changed>,
    ) -> Option<Changed> {
        if text.len() < MIN_BYTES {
            return compress(text);
        }
        let key = fingerprint(text, call, mode);
        {
            let mut e = self.lock();
            e.clock += 1;
            let now = e.clock;
            if let Some(hit) = e.map.get_mut(&key).filter(|hit| hit.is(text, call, mode)) {
                hit.used = now;
                return hit.changed.as_deref().cloned();
            }
        }
        let changed = compress(text);
        let (name, arguments) = call.map_or(("", ""), |c| (c.name, c.arguments));
        let entry = Entry {
            text: text.into(),
            name: name.into(),
            arguments: arguments.into(),
            mode,
            changed: changed.clone().map(Arc::new),
            used: 0,
        };
        let mut e = self.lock();
        e.clock += 1;
        let entry = Entry {
            used: e.clock,
            ..entry
        };
        e.bytes += entry.bytes();
        if let Some(old) = e.map.insert(key, entry) {
            e.bytes -= old.bytes();
        }
        if e.bytes > self.capacity {
            e.evict(self.capacity / 4 * 3);
        }
        changed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes of text held now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

impl Entries {
    /// Drops the least recently used entries until at most `keep` bytes are held.
    fn evict(&mut self, keep: usize) {
        let mut by_age: Vec<(u64, u64)> = self.map.iter().map(|(k, e)| (e.used, *k)).collect();
        by_age.sort_unstable();
        for (_, key) in by_age {
            if self.bytes <= keep {
                break;
            }
            if let Some(e) = self.map.remove(&key) {
                self.bytes -= e.bytes();
            }
        }
    }
}

/// A result's fingerprint: its mode, its length, its first and last bytes, and its call.
fn fingerprint(text: &str, call: Option<Call<'_>>, mode: Mode) -> u64 {
    let b = text.as_bytes();
    let mut h = DefaultHasher::new();
    mode.hash(&mut h);
    b.len().hash(&mut h);
    b[..b.len().min(PRINT_BYTES)].hash(&mut h);
    b[b.len().saturating_sub(PRINT_BYTES)..].hash(&mut h);
    if let Some(c) = call {
        c.name.hash(&mut h);
        let a = c.arguments.as_bytes();
        a[..a.len().min(PRINT_BYTES)].hash(&mut h);
        a.len().hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_result_is_compressed_once_and_only_its_own_text_is_found() {
        let memo = Memo::new(1 << 20);
        let runs = Cell::new(0);
        let shout = |t: &str| {
            runs.set(runs.get() + 1);
            Changed::of(t, |t| std::borrow::Cow::Owned(t.to_uppercase()))
        };
        let call = Some(Call {
            name: "Bash",
            arguments: "{\"command\":\"make\"}",
        });
        let text = "x".repeat(4000);
        let first = memo.get_or(&text, call, Mode::Lossless, shout).unwrap();
        let again = memo.get_or(&text, call, Mode::Lossless, shout).unwrap();
        assert_eq!((first.clone(), runs.get()), (again, 1));
        assert_eq!((first.chars_before, first.chars_after), (4000, 4000));
        // The same start, end and length, another middle: not the remembered one.
        let mut other = text.clone();
        other.replace_range(2000..2001, "y");
        assert!(memo
            .get_or(&other, call, Mode::Lossless, shout)
            .unwrap()
            .text
            .contains('Y'));
        // Another mode, another call: compressed afresh.
        memo.get_or(&text, call, Mode::Aggressive, shout);
        memo.get_or(&text, None, Mode::Lossless, shout);
        assert_eq!(runs.get(), 4);
        // Short results are not kept.
        memo.get_or("short", call, Mode::Lossless, shout);
        memo.get_or("short", call, Mode::Lossless, shout);
        assert_eq!(runs.get(), 6);
    }

    #[test]
    fn the_least_recently_used_go_past_the_size() {
        let memo = Memo::new(50_000);
        let same = |t: &str| Changed::of(t, |t| std::borrow::Cow::Owned(format!("{t}!")));
        let texts: Vec<String> = (0..20).map(|i| format!("{i:02}").repeat(1000)).collect();
        for t in &texts {
            memo.get_or(t, None, Mode::Lossless, same);
            // The first stays in use.
            memo.get_or(&texts[0], None, Mode::Lossless, same);
        }
        assert!(memo.bytes() <= 50_000, "{}", memo.bytes());
        let kept = |t: &str| {
            let hit = Cell::new(true);
            memo.get_or(t, None, Mode::Lossless, |t| {
                hit.set(false);
                same(t)
            });
            hit.get()
        };
        assert!(kept(&texts[0]) && kept(&texts[19]) && !kept(&texts[1]));
    }
}
