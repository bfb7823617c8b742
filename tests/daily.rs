//! Living with fcm every day: its version, a background server and how to stop it.

mod support;

use support::*;

#[test]
fn version_short_and_long() {
    let w = World::new();
    for flag in ["--version", "-V"] {
        let out = w.fcm(&[flag]);
        assert_eq!(
            (out.code, out.stdout.trim()),
            (0, concat!("fcm ", env!("CARGO_PKG_VERSION"))),
            "{out:?}"
        );
    }
    let out = w.fcm(&["--version", "-v"]);
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], concat!("fcm ", env!("CARGO_PKG_VERSION")));
    assert!(
        lines[1].starts_with("commit: ") && lines[1].len() > "commit: ".len(),
        "{out:?}"
    );
    assert!(
        lines[2].starts_with("target: ") && lines[2].contains('-'),
        "{out:?}"
    );
    assert_eq!(w.fcm(&["--version", "extra"]).code, 2);
}
