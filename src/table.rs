//! Tables and number formats for people. At a terminal a table is drawn with borders and
//! sized to the screen; when stdout is not a terminal (a pipe, a file) it is plain
//! tab-separated rows, the header first, as `gh` prints them for `cut` and `awk`. `--json`
//! output never comes here.

use std::fmt;
use std::io::IsTerminal;
use std::ops::{Deref, DerefMut};

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement};

/// A table with fcm's look: the comfy-table underneath takes the rows (and their cells'
/// colours); printing it decides between borders and tab-separated rows.
pub struct Table {
    inner: comfy_table::Table,
}

/// A table with fcm's look, sized to the terminal when there is one.
pub fn new(header: &[&str]) -> Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    Table { inner: t }
}

impl Deref for Table {
    type Target = comfy_table::Table;
    fn deref(&self) -> &comfy_table::Table {
        &self.inner
    }
}

impl DerefMut for Table {
    fn deref_mut(&mut self) -> &mut comfy_table::Table {
        &mut self.inner
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if std::io::stdout().is_terminal() {
            self.inner.fmt(f)
        } else {
            f.write_str(self.plain().trim_end_matches('\n'))
        }
    }
}

impl Table {
    /// The header and each row on a line of their own, cells separated by tabs (a tab or
    /// line break inside a cell becomes a space), no borders, no colours.
    pub fn plain(&self) -> String {
        let mut out = String::new();
        for row in self.inner.header().into_iter().chain(self.inner.row_iter()) {
            let cells: Vec<String> = row
                .cell_iter()
                .map(|c| {
                    c.content()
                        .split(['\t', '\n', '\r'])
                        .filter(|part| !part.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            out.push_str(&cells.join("\t"));
            out.push('\n');
        }
        out
    }
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
    fn plain_rows_are_tab_separated_with_the_header_first() {
        let mut t = new(&["#", "Model", "Last failure"]);
        t.add_row(vec!["1", "groq/a", ""]);
        t.add_row(vec!["2", "groq/b", "line one\nline\ttwo"]);
        assert_eq!(
            t.plain(),
            "#\tModel\tLast failure\n1\tgroq/a\t\n2\tgroq/b\tline one line two\n"
        );
    }

    #[test]
    fn token_counts() {
        assert_eq!(tokens(131_072), "128k");
        assert_eq!(tokens(1_048_576), "1M");
        assert_eq!(tokens(1_363_149), "1.3M");
        assert_eq!(tokens(500), "500");
    }
}
