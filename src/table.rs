//! Tables and number formats for people at a terminal. `--json` output never comes here.

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};

/// A table with fcm's look, sized to the terminal when there is one.
pub fn new(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    t
}

/// `131072` → `128k`, `1048576` → `1M`, `1363149` → `1.3M`.
pub fn tokens(n: u64) -> String {
    const K: u64 = 1024;
    const M: u64 = 1024 * 1024;
    if n >= M {
        let m = n as f64 / M as f64;
        if (m - m.round()).abs() < 0.05 {
            format!("{}M", m.round())
        } else {
            format!("{m:.1}M")
        }
    } else if n >= K {
        format!("{}k", (n as f64 / K as f64).round())
    } else {
        n.to_string()
    }
}

/// Milliseconds or `-` when unknown.
pub fn ms(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v} ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts() {
        assert_eq!(tokens(131_072), "128k");
        assert_eq!(tokens(1_048_576), "1M");
        assert_eq!(tokens(1_363_149), "1.3M");
        assert_eq!(tokens(500), "500");
    }
}
