//! The aggressive pass: a long output cut by its kind, each cut replaced by a note saying
//! what was left out and how many lines, so the model knows to ask again if it needs them.
//!
//! - A test run keeps its failures, their details and the summary; the passing tests go.
//! - A build or an install keeps its errors and its warnings with their locations; the
//!   progress lines (`Compiling`, `Downloading`, ...) and the source excerpts under the
//!   warnings go.
//! - Anything else long (a listing, a log, a search) keeps its head and its tail.
//!
//! A line that reports an error is never cut from a test run or a build; and an output the
//! tool reported as failed is only ever cut by kind (its passing tests, its progress),
//! never by head and tail (a successful listing's lines are its results, whatever words
//! they hold: `grep -rn error` is not an error). Outputs shorter than [`MIN_LINES`] are
//! left whole.

use std::borrow::Cow;

use super::lines;

/// Outputs shorter than this (lines) are not cut.
pub const MIN_LINES: usize = 60;
/// A long listing keeps this many lines at its start ...
pub const HEAD_LINES: usize = 40;
/// ... and this many at its end.
pub const TAIL_LINES: usize = 20;
/// A kind needs at least this many of its lines, and a fifth of the output, to be told.
const KIND_MIN: usize = 10;

/// What a long output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    TestRun,
    Build,
    Listing,
}

/// Why a line was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    PassingTest,
    Progress,
    WarningDetail,
    /// The middle of a long output (head and tail kept).
    Middle,
}

/// What `all` holds, by counting its passing tests and its progress lines (only as far
/// as needed to tell).
pub fn kind(all: &[&str]) -> Kind {
    let needed = KIND_MIN.max(all.len().div_ceil(5));
    let told = |is: fn(&str) -> bool| all.iter().filter(|l| is(l)).take(needed).count() == needed;
    if told(lines::passing_test) {
        Kind::TestRun
    } else if told(lines::build_progress) {
        Kind::Build
    } else {
        Kind::Listing
    }
}

/// `text` cut by its kind (see the module doc); borrowed when nothing was cut.
/// `failed`: the tool reported the run as failed.
pub fn cut(text: &str, failed: bool) -> Cow<'_, str> {
    let mut all: Vec<&str> = text.split('\n').collect();
    // A final newline ends the last line; it does not start another.
    let ends_with_newline = all.last() == Some(&"");
    if ends_with_newline {
        all.pop();
    }
    if all.len() < MIN_LINES {
        return Cow::Borrowed(text);
    }
    let left = match kind(&all) {
        Kind::TestRun => all
            .iter()
            .map(|l| {
                if lines::passing_test(l) {
                    Some(Left::PassingTest)
                } else {
                    (lines::build_progress(l) && !lines::error(l)).then_some(Left::Progress)
                }
            })
            .collect(),
        Kind::Build => build(&all),
        Kind::Listing if failed => return Cow::Borrowed(text),
        Kind::Listing => {
            let n = all.len();
            (0..n)
                .map(|i| (i >= HEAD_LINES && i + TAIL_LINES < n).then_some(Left::Middle))
                .collect()
        }
    };
    let out = render(&all, &left, ends_with_newline);
    if out.len() < text.len() {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// A build's cuts: progress lines, and the detail under each warning's location (an
/// error's words are checked only on lines that would go).
fn build(all: &[&str]) -> Vec<Option<Left>> {
    let mut left = Vec::with_capacity(all.len());
    // Inside a warning, past its header (and location): its detail may go.
    let mut in_warning = false;
    for l in all {
        let cut = if lines::warning_header(l) {
            in_warning = true;
            None
        } else if lines::build_progress(l) {
            in_warning = false;
            (!lines::error(l)).then_some(Left::Progress)
        } else if in_warning && lines::location(l) {
            None
        } else if in_warning && lines::warning_detail(l) && !lines::error(l) {
            Some(Left::WarningDetail)
        } else {
            in_warning = false;
            None
        };
        left.push(cut);
    }
    left
}

/// The kept lines, each run of cut lines replaced by one note.
fn render(all: &[&str], left: &[Option<Left>], ends_with_newline: bool) -> String {
    let mut out = String::with_capacity(all.iter().map(|l| l.len() + 1).sum());
    let mut i = 0;
    while i < all.len() {
        match left[i] {
            None => {
                out.push_str(all[i]);
                out.push('\n');
                i += 1;
            }
            Some(why) => {
                let start = i;
                while i < all.len() && left[i] == Some(why) {
                    i += 1;
                }
                out.push_str(&note(why, i - start, start, all.len()));
                out.push('\n');
            }
        }
    }
    if !ends_with_newline {
        out.pop();
    }
    out
}

/// What a cut left out: `[fcm: 2,870 passing test lines omitted]`.
fn note(why: Left, count: usize, start: usize, total: usize) -> String {
    let lines = if count == 1 { "line" } else { "lines" };
    let n = grouped(count as u64);
    match why {
        Left::PassingTest => format!("[fcm: {n} passing test {lines} omitted]"),
        Left::Progress => format!("[fcm: {n} build progress {lines} omitted]"),
        Left::WarningDetail => format!("[fcm: {n} {lines} of warning detail omitted]"),
        Left::Middle => format!(
            "[fcm: {n} {lines} omitted ({}-{} of {})]",
            grouped(start as u64 + 1),
            grouped((start + count) as u64),
            grouped(total as u64)
        ),
    }
}

/// `2870` as `2,870`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cargo_test(passing: usize, failing: &[&str]) -> String {
        let mut s = String::from("   Compiling demo v0.1.0 (/demo)\n    Finished `test` profile in 1.2s\n     Running unittests src/lib.rs (target/debug/deps/demo-1)\n\n");
        s.push_str(&format!("running {} tests\n", passing + failing.len()));
        for i in 0..passing {
            s.push_str(&format!("test tests::case_{i:04} ... ok\n"));
        }
        for f in failing {
            s.push_str(&format!("test tests::{f} ... FAILED\n"));
        }
        s.push_str("\nfailures:\n\n");
        for f in failing {
            s.push_str(&format!("---- tests::{f} stdout ----\nthread 'tests::{f}' panicked at src/lib.rs:9:5:\nassertion `left == right` failed\n  left: 1\n right: 2\n\n"));
        }
        s.push_str(&format!(
            "\ntest result: FAILED. {passing} passed; {} failed; 0 ignored\n",
            failing.len()
        ));
        s
    }

    #[test]
    fn a_test_run_keeps_its_failures_and_summary() {
        let text = cargo_test(2870, &["broken_one", "broken_two"]);
        let out = cut(&text, true);
        assert!(
            out.contains("[fcm: 2,870 passing test lines omitted]"),
            "{out}"
        );
        assert!(!out.contains("... ok"));
        for kept in [
            "test tests::broken_one ... FAILED",
            "---- tests::broken_two stdout ----",
            "assertion `left == right` failed",
            "  left: 1",
            "test result: FAILED. 2870 passed; 2 failed; 0 ignored",
            "running 2872 tests",
        ] {
            assert!(out.contains(kept), "{kept} missing:\n{out}");
        }
        assert!(out.len() * 20 < text.len());
    }

    #[test]
    fn a_build_keeps_errors_and_warnings_with_their_locations() {
        let mut text = String::new();
        for i in 0..80 {
            text.push_str(&format!("   Compiling dep{i} v1.0.{i}\n"));
        }
        text.push_str("warning: unused variable: `x`\n --> src/main.rs:2:9\n  |\n2 |     let x = 5;\n  |         ^ help: if this is intentional, prefix it with an underscore: `_x`\n  |\n  = note: `#[warn(unused_variables)]` on by default\n\n");
        text.push_str("error[E0425]: cannot find value `y` in this scope\n --> src/main.rs:3:5\n  |\n3 |     y\n  |     ^ not found in this scope\n\n");
        text.push_str("error: could not compile `demo` (bin \"demo\") due to 1 previous error; 1 warning emitted\n");
        let out = cut(&text, true);
        assert!(
            out.starts_with("[fcm: 80 build progress lines omitted]\n"),
            "{out}"
        );
        assert!(out.contains("warning: unused variable: `x`\n --> src/main.rs:2:9\n[fcm: 5 lines of warning detail omitted]\n\n"), "{out}");
        // The error keeps its excerpt.
        assert!(out.contains("error[E0425]: cannot find value `y` in this scope\n --> src/main.rs:3:5\n  |\n3 |     y\n  |     ^ not found in this scope\n"), "{out}");
        assert!(out.ends_with("1 warning emitted\n"));
    }

    #[test]
    fn a_long_listing_keeps_head_and_tail() {
        let text: String = (1..=300)
            .map(|i| format!("src/file_{i}.rs:{i}: let error = {i};\n"))
            .collect();
        let out = cut(&text, false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 61);
        assert_eq!(lines[0], "src/file_1.rs:1: let error = 1;");
        assert_eq!(lines[39], "src/file_40.rs:40: let error = 40;");
        assert_eq!(lines[40], "[fcm: 240 lines omitted (41-280 of 300)]");
        assert_eq!(lines[41], "src/file_281.rs:281: let error = 281;");
        assert_eq!(
            *lines.last().unwrap(),
            "src/file_300.rs:300: let error = 300;"
        );
        // A failed command's output is never cut by head and tail.
        let failed = text.replace(
            "src/file_150.rs:150: let error = 150;",
            "find: './secret': Permission denied",
        );
        assert_eq!(cut(&failed, true), failed);
    }

    #[test]
    fn short_outputs_are_whole() {
        let text: String = (1..MIN_LINES).map(|i| format!("line {i}\n")).collect();
        assert!(matches!(cut(&text, false), Cow::Borrowed(_)));
    }

    #[test]
    fn numbers_are_grouped() {
        for (n, s) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (2870, "2,870"),
            (1234567, "1,234,567"),
        ] {
            assert_eq!(grouped(n), s);
        }
    }
}
