//! What one line of a tool's output is: a passing test, build or install progress, an
//! error, a warning with its location and detail. Plain string tests, no regular
//! expressions: the common test runners' and build tools' own formats (libtest, pytest,
//! go test, jest, vitest, mocha, node's TAP, dotnet; cargo, pip, npm, make, apt, go,
//! maven, gradle, yarn).

/// A line without its `\r` of a CRLF ending.
fn bare(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

/// A test that passed (or was skipped) as a runner lists it. Told by the line's first
/// byte before any search: most lines of a long output are not tests.
pub fn passing_test(line: &str) -> bool {
    let t = bare(line);
    let s = t.trim_start();
    let by_start = match s.as_bytes().first() {
        // libtest: `test tests::parse ... ok`.
        Some(b't') => {
            s.starts_with("test ") && (t.ends_with(" ... ok") || t.contains(" ... ignored"))
        }
        // go test -v.
        Some(b'=') => ["=== RUN ", "=== PAUSE ", "=== CONT "]
            .iter()
            .any(|p| s.starts_with(p)),
        Some(b'-') => s.starts_with("--- PASS: ") || s.starts_with("--- SKIP: "),
        // jest, vitest, mocha: ✓ ✔ √.
        Some(0xe2) => ["✓ ", "✔ ", "√ "].iter().any(|p| s.starts_with(p)),
        // node --test (TAP): `ok 3 - parses`.
        Some(b'o') => s.starts_with("ok ") && s[3..].starts_with(|c: char| c.is_ascii_digit()),
        // dotnet test -v n.
        Some(b'P') => s.starts_with("Passed "),
        _ => false,
    };
    // pytest -v: `tests/test_a.py::test_x[1] PASSED     [ 10%]`.
    by_start
        || (memchr::memmem::find(t.as_bytes(), b"::").is_some()
            && [" PASSED", " SKIPPED", " XFAIL"]
                .iter()
                .any(|w| t.contains(w)))
}

/// Cargo's status verbs, right-aligned in 12 columns, so always indented.
const CARGO_VERBS: [&str; 13] = [
    "Compiling ",
    "Checking ",
    "Downloaded ",
    "Downloading ",
    "Fresh ",
    "Locking ",
    "Adding ",
    "Updating ",
    "Documenting ",
    "Blocking ",
    "Unpacking ",
    "Building ",
    "Installing ",
];

/// Other tools' progress lines, by how they start (after the indentation).
const PROGRESS_STARTS: [&str; 36] = [
    // pip.
    "Collecting ",
    "Downloading ",
    "Using cached ",
    "Requirement already satisfied: ",
    "Obtaining ",
    "Preparing metadata",
    "Installing build dependencies",
    "Getting requirements to build",
    "Building wheel for ",
    "Created wheel for ",
    "Stored in directory: ",
    "Building wheels for collected packages",
    "Installing collected packages",
    "Attempting uninstall: ",
    "Found existing installation: ",
    "Uninstalling ",
    "Successfully uninstalled ",
    "Running setup.py ",
    // npm's loglevels below warn.
    "npm http ",
    "npm timing ",
    "npm sill ",
    "npm verb ",
    "npm info ",
    // apt.
    "Get:",
    "Hit:",
    "Ign:",
    "Selecting previously unselected package",
    "Preparing to unpack ",
    "Setting up ",
    "Processing triggers for ",
    "(Reading database",
    // go.
    "go: downloading ",
    "go: finding ",
    // maven, gradle.
    "Downloading from ",
    "Downloaded from ",
    "[INFO] Download",
];

/// A build or install tool's progress: a package compiled, downloaded, unpacked.
pub fn build_progress(line: &str) -> bool {
    let t = bare(line);
    let s = t.trim_start();
    // Every progress line starts with one of these (most of a listing's lines do not).
    if !matches!(
        s.as_bytes().first(),
        Some(b'A'..=b'Z' | b'n' | b'g' | b'm' | b'(' | b'[')
    ) {
        return false;
    }
    if s.len() < t.len() && CARGO_VERBS.iter().any(|v| s.starts_with(v)) {
        return true;
    }
    if PROGRESS_STARTS.iter().any(|p| s.starts_with(p)) {
        return true;
    }
    // make: `make[1]: Entering directory '...'`; cmake: `[ 42%] Building CXX object`;
    // yarn: `[2/4] Fetching packages...`.
    if s.starts_with("make")
        && (s.contains(": Entering directory") || s.contains(": Leaving directory"))
    {
        return true;
    }
    if let Some(rest) = s.strip_prefix('[') {
        let inside = rest.split(']').next().unwrap_or("");
        let percent = inside.strip_suffix('%').is_some_and(|n| digits(n.trim()));
        let step = inside
            .split_once('/')
            .is_some_and(|(a, b)| digits(a) && digits(b));
        return rest.contains(']') && (percent || step) && !error(line);
    }
    false
}

/// A non-empty run of ASCII digits.
fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Markers of an error, a failure or a crash in any tool's words.
const ERROR_MARKS: [&str; 25] = [
    "error:",
    "error[",
    "Error:",
    "ERROR",
    "ERR!",
    "npm error",
    "FAIL",
    "failed",
    "Failed",
    "panicked",
    "Traceback",
    "Exception",
    "exception:",
    "fatal:",
    "fatal error",
    "Fatal",
    "✕",
    "✗",
    "✘",
    "Permission denied",
    "No such file",
    "not found",
    "cannot ",
    "undefined reference",
    "Segmentation fault",
];

/// A line that reports an error or a failure: never cut.
pub fn error(line: &str) -> bool {
    let t = bare(line);
    // pytest's assertion detail: `E       assert 1 == 2`.
    t.starts_with("E   ") || ERROR_MARKS.iter().any(|m| t.contains(m))
}

/// The first line of a compiler's warning: `warning: unused variable` (rustc, cargo),
/// `src/a.c:3:5: warning: ...` (gcc, clang).
pub fn warning_header(line: &str) -> bool {
    let s = bare(line).trim_start();
    s.starts_with("warning:") || s.starts_with("warning[") || s.contains(": warning:")
}

/// Where a warning is: rustc's `--> src/main.rs:2:9` and `::: path` lines.
pub fn location(line: &str) -> bool {
    let s = bare(line).trim_start();
    s.starts_with("--> ") || s.starts_with("::: ")
}

/// A warning's detail under its location: the source excerpt (`2 |     let x = 5;`,
/// `  |         ^`), and its `= note:`, `note:` and `help:` lines.
pub fn warning_detail(line: &str) -> bool {
    let s = bare(line).trim_start();
    let gutter = s
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    gutter.starts_with('|')
        || s.starts_with("= ")
        || s.starts_with("note:")
        || s.starts_with("help:")
        || s == "..."
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_tests() {
        let pass = [
            "test parse::tests::empty ... ok",
            "test slow ... ignored, needs a network",
            "tests/test_a.py::test_x[1] PASSED                        [ 10%]",
            "tests/test_a.py::test_y SKIPPED (no db)                  [ 20%]",
            "=== RUN   TestParse",
            "    --- PASS: TestParse/empty (0.00s)",
            "  ✓ adds numbers (3 ms)",
            "    √ renders",
            "ok 12 - parses a header",
            "  Passed Tests.Parse [1 ms]",
        ];
        for l in pass {
            assert!(passing_test(l), "{l}");
        }
        let other = [
            "test parse::tests::broken ... FAILED",
            "tests/test_a.py::test_z FAILED                           [ 30%]",
            "--- FAIL: TestParse (0.00s)",
            "  ✕ subtracts numbers (5 ms)",
            "not ok 13 - fails",
            "test result: ok. 3 passed; 0 failed",
            "okay then",
        ];
        for l in other {
            assert!(!passing_test(l), "{l}");
        }
    }

    #[test]
    fn progress_lines() {
        let progress = [
            "   Compiling serde v1.0.219",
            "    Checking fcm v0.1.0 (/repo)",
            "  Downloaded memchr v2.7.4",
            "Collecting requests",
            "  Downloading requests-2.32.3-py3-none-any.whl (64 kB)",
            "Requirement already satisfied: idna in ./venv (3.10)",
            "npm timing reify Completed in 120ms",
            "[ 42%] Building CXX object src/CMakeFiles/a.dir/a.cpp.o",
            "[2/4] Fetching packages...",
            "make[1]: Entering directory '/src/lib'",
            "go: downloading golang.org/x/text v0.14.0",
            "Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]",
        ];
        for l in progress {
            assert!(build_progress(l), "{l}");
        }
        let other = [
            "Compiling is done",
            "warning: unused variable: `x`",
            "error[E0425]: cannot find value `y` in this scope",
            "added 120 packages in 3s",
            "Successfully installed requests-2.32.3",
            "[1] first item",
            "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.1s",
        ];
        for l in other {
            assert!(!build_progress(l), "{l}");
        }
    }

    #[test]
    fn errors_and_warnings() {
        for l in [
            "error[E0425]: cannot find value `y` in this scope",
            "npm ERR! code ERESOLVE",
            "FAILED tests/test_a.py::test_z - assert 1 == 2",
            "E       assert 1 == 2",
            "thread 'main' panicked at src/main.rs:2:5:",
            "ls: cannot open directory './x': Permission denied",
            "test result: FAILED. 1 passed; 1 failed",
        ] {
            assert!(error(l), "{l}");
        }
        assert!(!error("warning: unused variable: `x`"));
        assert!(warning_header("warning: unused variable: `x`"));
        assert!(warning_header(
            "src/a.c:3:5: warning: unused variable 'x' [-Wunused-variable]"
        ));
        assert!(location("  --> src/main.rs:2:9"));
        for l in [
            "  |",
            "2 |     let x = 5;",
            "  = note: `#[warn(unused_variables)]` on by default",
            "    3 |   int x;",
            "help: remove it",
        ] {
            assert!(warning_detail(l), "{l}");
        }
        assert!(!warning_detail(""));
    }
}
