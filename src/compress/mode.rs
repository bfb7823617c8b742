//! How much tool-result compression does: `router.compress`, a set's `compress`, and a
//! request's `x-fcm-compress` header all name one of these.

use serde::{Deserialize, Serialize};

/// How tool results are compressed before a request goes upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Tool results go upstream byte for byte.
    Off,
    /// Terminal noise goes; every line a person would see stays.
    #[default]
    Lossless,
    /// Lossless, and long outputs are cut by kind, each cut saying what it left out.
    Aggressive,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Off, Mode::Lossless, Mode::Aggressive];

    /// Its name in config.json and in the `x-fcm-compress` header.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Lossless => "lossless",
            Mode::Aggressive => "aggressive",
        }
    }

    /// A name as a user may write it (any case, spaces around).
    pub fn parse(name: &str) -> Option<Mode> {
        let name = name.trim();
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert_eq!(Mode::parse(" OFF "), Some(Mode::Off));
        assert_eq!(Mode::parse("none"), None);
        assert_eq!(Mode::default(), Mode::Lossless);
    }
}
