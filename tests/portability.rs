//! The portability check: the sources pass it, and planted platform calls do not.

#[path = "../examples/portability.rs"]
#[allow(dead_code)]
mod portability;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_sources_use_no_platform_api_outside_a_gate() {
    let r = root();
    let findings = portability::check(&[
        r.join("src"),
        r.join("tests"),
        r.join("examples"),
        r.join("build.rs"),
    ])
    .unwrap();
    let lines: Vec<String> = findings.iter().map(ToString::to_string).collect();
    assert!(lines.is_empty(), "{}", lines.join("\n"));
}

/// Linux's process file system, spelt so that this file does not name it: the planted
/// sources say `PROCFS`.
const PROC: &str = concat!("/", "proc");

/// A scratch crate layout with `files` (relative path, text; `PROCFS` for [`PROC`]).
fn planted(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fcm-portability-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let at = dir.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text.replace("PROCFS", PROC)).unwrap();
    }
    dir
}

fn found(dir: &Path) -> Vec<(String, usize, String)> {
    let out = portability::check(&[dir.to_path_buf()]).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    out.into_iter()
        .map(|f| {
            // Compared as `/`-separated on every system.
            let parts: Vec<String> = f
                .file
                .strip_prefix(dir)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let file = parts.join("/");
            (file, f.line, f.what)
        })
        .collect()
}

#[test]
fn planted_linux_only_calls_are_caught() {
    let dir = planted(
        "caught",
        &[(
            "src/main.rs",
            r#"// libc::getpid() in a comment does not count.
/// Nor in a doc comment: std::os::unix.
fn main() {
    let pid = unsafe { libc::getpid() };
    let stat = std::fs::read_to_string("PROCFS/self/stat");
    println!("{}", libc::EPERM);
    use std::os::fd::AsRawFd;
}
use std::os::{unix::fs::PermissionsExt, raw};
#[cfg(test)]
fn not_a_platform_gate() { let _ = unsafe { libc::getuid() }; }
"#,
        )],
    );
    assert_eq!(
        found(&dir),
        [
            ("src/main.rs".to_string(), 4, "`libc::`".to_string()),
            ("src/main.rs".to_string(), 5, format!("\"{PROC}\"")),
            ("src/main.rs".to_string(), 6, "`libc`".to_string()),
            (
                "src/main.rs".to_string(),
                7,
                "`use std::os::fd`".to_string()
            ),
            (
                "src/main.rs".to_string(),
                9,
                "`use std::os::unix`".to_string()
            ),
            ("src/main.rs".to_string(), 11, "`libc::`".to_string()),
        ]
    );
}

#[test]
fn calls_behind_a_platform_gate_pass() {
    let dir = planted(
        "gated",
        &[
            (
                "src/lib.rs",
                r#"#[cfg(unix)]
mod unix_only;
mod portable;
#[cfg(target_os = "linux")]
fn pid() -> i32 { unsafe { libc::getpid() } }
pub fn stat() -> Option<String> {
    #[cfg(target_os = "linux")]
    return std::fs::read_to_string("PROCFS/self/stat").ok();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe { libc::malloc_trim(0); }
    None
}
#[cfg(not(windows))]
impl S { fn f() { let _ = libc::EPERM; } }
"#,
            ),
            // Gated where it is declared, and so is the module inside it.
            (
                "src/unix_only.rs",
                "mod deeper;\npub fn f() -> i32 { unsafe { libc::getpid() } }\n",
            ),
            (
                "src/unix_only/deeper.rs",
                "pub fn g() { let _ = std::os::fd::RawFd::default(); }\n",
            ),
            // A file gated by its own inner attribute.
            (
                "src/portable/linux.rs",
                "#![cfg(target_os = \"linux\")]\npub fn h() { let _ = \"PROCFS/self\"; }\n",
            ),
            ("src/portable.rs", "mod linux;\npub fn ok() {}\n"),
        ],
    );
    assert_eq!(found(&dir), []);
}
