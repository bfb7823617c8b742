//! The secrets fcm knows (provider keys, the server's access token, credential headers of
//! providers) and their removal from every text fcm writes that came from a provider or a
//! request: answers, stream events, failure details, history, bench results, check lines.
//!
//! Providers echo keys masked (`Incorrect API key provided: sk-SECRE****7890`), so a
//! secret is removed whole and also wherever a run of [`PREFIX_CHARS`] or more of its
//! leading characters appears: that run is replaced, as far as it matches the secret.
//! Values shorter than [`PREFIX_CHARS`] cannot leave such a run; they are removed only
//! where they appear whole, and values under [`MIN_SECRET_CHARS`] are no secret to speak
//! of (removing every `abc` would shred ordinary text), so they are not kept at all.
//!
//! Pure: a [`Secrets`] is built once from values and searched with `memchr::memmem`, one
//! finder per secret; a text in which nothing matches is returned as it came, without a
//! copy. It sees one text at a time: a secret a provider splits across two stream events
//! reaches the client in two parts that neither matches. Where it is applied:
//! `routing::attempt` (answer bodies, error details), `providers::target` (failure details),
//! `protocol::redacted` (every streamed event), the router (history, the log line) and
//! `commands` (bench and check output).

use std::borrow::Cow;
use std::ops::Range;

use memchr::memmem::Finder;

/// What a removed secret (or the run of it found) becomes.
pub const REDACTED: &str = "[redacted]";
/// A run of this many leading characters of a secret is treated as the secret: masked
/// echoes keep the first 3 to 8 characters (`sk-SECRE****7890`), and six characters of a
/// random key are as good as unique in a provider's error message.
pub const PREFIX_CHARS: usize = 6;
/// Values shorter than this are not kept as secrets.
pub const MIN_SECRET_CHARS: usize = 4;

/// Header names whose values are credentials (`Authorization`, `x-api-key`,
/// `X-Auth-Token`, ...); other provider headers (`X-Title: fcm`) are not secrets.
const CREDENTIAL_HEADER_WORDS: [&str; 7] = [
    "auth",
    "key",
    "token",
    "secret",
    "password",
    "cookie",
    "credential",
];

/// One secret: its bytes, and a finder for the run that starts every match.
struct Needle {
    value: Box<[u8]>,
    finder: Finder<'static>,
}

/// Every secret fcm knows, ready to be searched for.
#[derive(Default)]
pub struct Secrets {
    needles: Vec<Needle>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values themselves.
        write!(f, "Secrets({} values)", self.needles.len())
    }
}

impl Secrets {
    /// The secrets among `values` (trimmed; short and repeated ones dropped).
    pub fn new<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> Secrets {
        let mut kept: Vec<String> = values
            .into_iter()
            .map(|v| v.as_ref().trim().to_string())
            .filter(|v| v.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        kept.sort_unstable();
        kept.dedup();
        let needles = kept
            .into_iter()
            .map(|value| {
                let run = value
                    .char_indices()
                    .nth(PREFIX_CHARS)
                    .map_or(value.len(), |(i, _)| i);
                Needle {
                    finder: Finder::new(&value.as_bytes()[..run]).into_owned(),
                    value: value.into_bytes().into_boxed_slice(),
                }
            })
            .collect();
        Secrets { needles }
    }

    /// `text` with every secret, and every run of its leading characters, replaced by
    /// [`REDACTED`]; borrowed when nothing matched.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Matches start and end on character boundaries: see `matches`.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// [`redact`](Self::redact) for bytes (stream events, answer bodies).
    pub fn redact_bytes<'t>(&self, bytes: &'t [u8]) -> Cow<'t, [u8]> {
        let found = self.matches(bytes);
        if found.is_empty() {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut at = 0;
        for r in found {
            out.extend_from_slice(&bytes[at..r.start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = r.end;
        }
        out.extend_from_slice(&bytes[at..]);
        Cow::Owned(out)
    }

    /// The ranges to replace, sorted, overlapping and touching ones merged. A run starts
    /// with a secret's first characters (found by its finder) and goes on as long as the
    /// text goes on like the secret. In UTF-8 text a run found this way starts on a
    /// character boundary; its end is moved back to one if the text and the secret part
    /// inside a character.
    fn matches(&self, hay: &[u8]) -> Vec<Range<usize>> {
        let mut found: Vec<Range<usize>> = Vec::new();
        for needle in &self.needles {
            let run = needle.finder.needle().len();
            for start in needle.finder.find_iter(hay) {
                let same = hay[start..]
                    .iter()
                    .zip(needle.value.iter())
                    .take_while(|(a, b)| a == b)
                    .count();
                let mut end = start + same;
                while end > start + run && end < hay.len() && is_continuation(hay[end]) {
                    end -= 1;
                }
                found.push(start..end);
            }
        }
        if found.len() > 1 {
            found.sort_unstable_by_key(|r| (r.start, r.end));
            let mut merged: Vec<Range<usize>> = Vec::with_capacity(found.len());
            for r in found {
                match merged.last_mut() {
                    Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                    _ => merged.push(r),
                }
            }
            found = merged;
        }
        found
    }
}

/// A UTF-8 continuation byte (`10xxxxxx`): not the start of a character.
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Whether a header with this name carries a credential.
pub fn is_credential_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_HEADER_WORDS.iter().any(|w| name.contains(w))
}

/// The secret part of a credential header's value: `Bearer abc123` → `abc123` (the scheme
/// is a public word; keeping it would remove every `Bearer` from every text).
pub fn credential(value: &str) -> &str {
    let value = value.trim();
    match value.split_once(' ') {
        Some((scheme, rest)) if scheme.chars().all(|c| c.is_ascii_alphabetic()) => rest.trim(),
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-SECRET-1234567890";

    #[test]
    fn whole_values_and_leading_runs_are_removed() {
        let s = Secrets::new([KEY, "tok-ABCDEFGHIJ", "k123"]);
        let cases: &[(&str, &str)] = &[
            // Whole, and the masked echoes providers send.
            ("key sk-SECRET-1234567890 given", "key [redacted] given"),
            (
                "Incorrect API key provided: sk-SECRE****7890",
                "Incorrect API key provided: [redacted]****7890",
            ),
            ("sk-SECR...", "[redacted]..."),
            // Five leading characters are not enough.
            ("sk-SE****7890", "sk-SE****7890"),
            // The run goes as far as the text goes on like the key, no further.
            ("sk-SECRET-12XY", "[redacted]XY"),
            // A run at the very end of the text, and at its very start.
            ("it was sk-SECR", "it was [redacted]"),
            ("tok-ABCxyz", "[redacted]xyz"),
            // A short secret: only where it stands whole.
            ("k123 and k12", "[redacted] and k12"),
            ("nothing here", "nothing here"),
            ("", ""),
            // Twice in a row: one marker per run, runs that touch merge.
            ("sk-SECRET-1234567890sk-SECRET-1234567890", "[redacted]"),
            ("a sk-SECRE b sk-SECRE c", "a [redacted] b [redacted] c"),
        ];
        for (text, want) in cases {
            assert_eq!(s.redact(text), *want, "{text:?}");
            assert_eq!(
                s.redact_bytes(text.as_bytes()).as_ref(),
                want.as_bytes(),
                "{text:?} as bytes"
            );
        }
    }

    #[test]
    fn overlapping_secrets_are_removed_as_one_run() {
        // One secret is the start of another; a third shares its first six characters.
        let s = Secrets::new(["abcdef-long-secret", "abcdef-long", "abcdefXYZ123"]);
        let cases: &[(&str, &str)] = &[
            ("x abcdef-long-secret y", "x [redacted] y"),
            ("x abcdef-long y", "x [redacted] y"),
            ("x abcdefXYZ1 y", "x [redacted] y"),
            ("x abcdef-lo", "x [redacted]"),
            // A run of one secret right before another: one marker.
            ("abcdefabcdef-long", "[redacted]"),
        ];
        for (text, want) in cases {
            assert_eq!(s.redact(text), *want, "{text:?}");
        }
        // One secret's run going on into the start of another's.
        let s = Secrets::new(["abcdefgh12", "gh12345678"]);
        assert_eq!(s.redact("<abcdefgh12345678>"), "<[redacted]>");
    }

    #[test]
    fn runs_end_on_character_boundaries() {
        // Six characters, some of them two or three bytes long.
        let s = Secrets::new(["clé-sécrète-ü€"]);
        let cases: &[(&str, &str)] = &[
            ("→ clé-sécrète-ü€ ←", "→ [redacted] ←"),
            ("clé-sé****", "[redacted]****"),
            // The text leaves the secret inside a character (é is C3 A9, è is C3 A8).
            ("clé-sè", "clé-sè"),
            // After the first six, the text parts from the secret inside a character
            // (ê is C3 AA, the secret's è C3 A8): the run ends before that character.
            ("clé-sécrête", "[redacted]ête"),
            ("clé-sécrète-ü£", "[redacted]£"),
            ("clé-s", "clé-s"),
        ];
        for (text, want) in cases {
            assert_eq!(s.redact(text), *want, "{text:?}");
        }
        // A text cut in the middle of a character still redacts what matched.
        let cut = "clé-sécrète-ü€".as_bytes();
        let cut = &cut[..cut.len() - 1];
        assert_eq!(s.redact_bytes(cut).as_ref(), b"[redacted]");
    }

    #[test]
    fn nothing_matched_means_no_copy() {
        let s = Secrets::new([KEY]);
        assert!(matches!(s.redact("a clean answer"), Cow::Borrowed(_)));
        assert!(matches!(s.redact_bytes(b"data: {}\n\n"), Cow::Borrowed(_)));
        assert!(matches!(Secrets::default().redact(KEY), Cow::Borrowed(_)));
    }

    #[test]
    fn short_blank_and_repeated_values_are_not_kept() {
        let s = Secrets::new(["", "   ", "abc", KEY, KEY, " k123 "]);
        assert_eq!(
            format!("{s:?}"),
            "Secrets(2 values)",
            "counted, never shown"
        );
        assert_eq!(s.redact("abc k123"), "abc [redacted]");
    }

    #[test]
    fn credential_headers_and_their_values() {
        for (name, is) in [
            ("Authorization", true),
            ("x-api-key", true),
            ("X-Auth-Token", true),
            ("cf-aig-authorization", true),
            ("X-Title", false),
            ("HTTP-Referer", false),
            ("x-opencode-session", false),
        ] {
            assert_eq!(is_credential_header(name), is, "{name}");
        }
        assert_eq!(credential("Bearer abc123456"), "abc123456");
        assert_eq!(credential(" Basic Zm9vOmJhcg== "), "Zm9vOmJhcg==");
        assert_eq!(credential("plain-token-value"), "plain-token-value");
        assert_eq!(credential("key=a b"), "key=a b");
    }
}
