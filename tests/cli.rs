//! The command line's habits, as a user meets them: `-h` everywhere, `-V` and `-v`, "did you
//! mean" for a mistyped command or flag, shell completions that a real shell loads and
//! completes with, and the man page.

mod support;

use std::process::Command;

use support::*;

#[test]
fn dash_h_prints_the_usage_of_fcm_and_of_each_command() {
    let w = World::new();
    for args in [
        &["-h"][..],
        &["bench", "-h"],
        &["keys", "set", "-h"],
        &["help"],
    ] {
        let out = w.fcm(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        let usage = format!(
            "Usage: fcm {}",
            args.iter()
                .filter(|a| !matches!(**a, "-h" | "help"))
                .copied()
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert!(
            out.stdout.starts_with(usage.trim_end()),
            "{args:?}: {out:?}"
        );
        assert!(out.stderr.is_empty(), "{out:?}");
    }
    let top = w.fcm(&["-h"]);
    assert!(top.stdout.contains("-V, --version"), "{top:?}");
    assert!(top.stdout.contains("-v, --verbose"), "{top:?}");
}

#[test]
fn dash_v_and_dash_cap_v_print_the_version_as_the_help_says() {
    let w = World::new();
    let short = w.fcm(&["-V"]);
    assert_eq!(
        (short.code, short.stdout.trim()),
        (0, concat!("fcm ", env!("CARGO_PKG_VERSION"))),
        "{short:?}"
    );
    for args in [&["-v"][..], &["-V", "-v"]] {
        let out = w.fcm(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines[0], concat!("fcm ", env!("CARGO_PKG_VERSION")));
        assert!(lines[1].starts_with("commit: "), "{out:?}");
        assert!(lines[2].starts_with("target: "), "{out:?}");
    }
    let out = w.fcm(&["-V", "status"]);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn a_mistyped_command_or_flag_gets_the_nearest_one() {
    let w = World::new();
    let cases: &[(&[&str], &str)] = &[
        (&["benhc"], "did you mean `fcm bench`?"),
        (&["stauts", "--json"], "did you mean `fcm status`?"),
        (&["keys", "lsit"], "did you mean `fcm keys list`?"),
        (&["bench", "--jsn"], "did you mean --json?"),
        (&["history", "--jsno"], "did you mean --json?"),
    ];
    for (args, said) in cases {
        let out = w.fcm(args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(said), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    let out = w.fcm(&["frobnicate"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("unknown command \"frobnicate\"")
            && !out.stderr.contains("did you mean"),
        "nothing is close: {out:?}"
    );
}

/// `fcm completions SHELL`, checked: exit 0, nothing on stderr.
fn completions(w: &World, shell: &str) -> String {
    let out = w.fcm(&["completions", shell]);
    assert_eq!(out.code, 0, "{shell}: {out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    out.stdout
}

/// Whether `shell` is installed (CI installs zsh and fish; elsewhere they may be missing,
/// and the scripts are then checked by their text only).
fn has(shell: &str) -> bool {
    let found = Command::new(shell).arg("-c").arg("true").output().is_ok();
    if !found {
        eprintln!("{shell} is not installed: its completion script is checked as text only");
    }
    found
}

/// Runs `script` in `shell` and returns its stdout.
fn run_in(shell: &str, script: &str) -> String {
    let out = Command::new(shell)
        .arg("-c")
        .arg(script)
        .output()
        .expect("the shell runs");
    assert!(
        out.status.success(),
        "{shell}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completes_commands_subcommands_and_flags() {
    let w = World::new();
    let script = completions(&w, "bash");
    assert!(
        script.contains("complete -o default -F _fcm fcm"),
        "{script}"
    );
    if !has("bash") {
        return;
    }
    let file = w.dir.join("fcm.bash");
    std::fs::write(&file, &script).unwrap();
    let line = |words: &str| {
        format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _fcm; echo \"${{COMPREPLY[*]}}\"",
            file.display()
        )
    };
    assert_eq!(run_in("bash", &line("fcm be")).trim(), "bench");
    assert_eq!(run_in("bash", &line("fcm keys s")).trim(), "set");
    assert_eq!(run_in("bash", &line("fcm bench --jso")).trim(), "--json");
    assert_eq!(
        run_in("bash", &line("fcm bench --provider groq --pin")).trim(),
        "--pings",
        "an option's value is stepped over"
    );
    assert_eq!(run_in("bash", &line("fcm comp")).trim(), "completions");
}

#[test]
fn zsh_completes_commands_subcommands_and_flags() {
    let w = World::new();
    let script = completions(&w, "zsh");
    assert!(script.starts_with("#compdef fcm\n"), "{script}");
    if !has("zsh") {
        return;
    }
    let file = w.dir.join("_fcm");
    std::fs::write(&file, &script).unwrap();
    // Outside a completion widget: `_describe` and `_files` stand in, printing what would
    // be offered.
    let offered = |words: &str| {
        run_in(
            "zsh",
            &format!(
                "compdef() {{ :; }}; _describe() {{ print -l -- \"${{(@P)4}}\"; }}; _files() {{ print FILES; }}; source '{}'; words=({words}); CURRENT=${{#words}}; _fcm",
                file.display()
            ),
        )
    };
    let top = offered("fcm ''");
    assert!(
        top.lines().any(|l| l.starts_with("bench:Probe models")),
        "{top}"
    );
    assert!(top.lines().any(|l| l == "-V:print the version"), "{top}");
    let keys = offered("fcm keys ''");
    assert!(keys.lines().any(|l| l.starts_with("set:")), "{keys}");
    assert!(!keys.lines().any(|l| l.starts_with("bench:")), "{keys}");
    assert_eq!(offered("fcm bench --provider ''").trim(), "FILES");
}

#[test]
fn fish_completes_commands_subcommands_and_flags() {
    let w = World::new();
    let script = completions(&w, "fish");
    assert!(script.contains("complete -c fcm "), "{script}");
    if !has("fish") {
        return;
    }
    let file = w.dir.join("fcm.fish");
    std::fs::write(&file, &script).unwrap();
    let offered = |line: &str| {
        run_in(
            "fish",
            &format!("source '{}'; complete -C '{line}'", file.display()),
        )
    };
    let bench = offered("fcm be");
    assert!(bench.starts_with("bench\tProbe models"), "{bench}");
    let keys = offered("fcm keys ");
    let names: Vec<&str> = keys.lines().filter_map(|l| l.split('\t').next()).collect();
    assert!(names.contains(&"set") && names.contains(&"rm"), "{keys}");
    let flags = offered("fcm bench --provider groq --pi");
    assert!(flags.starts_with("--pings\t"), "{flags}");
}

#[test]
fn completions_for_an_unknown_shell_is_a_usage_error() {
    let w = World::new();
    let out = w.fcm(&["completions", "tcsh"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("bash, zsh and fish"), "{out:?}");
}

#[test]
fn the_man_page_has_every_command_and_renders_cleanly() {
    let w = World::new();
    let out = w.fcm(&["man"]);
    assert_eq!(out.code, 0, "{out:?}");
    let page = out.stdout;
    assert!(page.starts_with(".TH FCM 1 "), "{page}");
    let help = w.fcm(&["--help"]).stdout;
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.len() > 15, "{help}");
    for c in commands {
        assert!(
            page.contains(&format!(".SS \"fcm {c}\"")),
            "{c} is not in the page"
        );
    }
    let file = w.dir.join("fcm.1");
    std::fs::write(&file, &page).unwrap();
    // groff, where there is one, reads it without a warning.
    if let Ok(rendered) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&file)
        .output()
    {
        assert!(
            rendered.status.success() && rendered.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&rendered.stderr)
        );
    }
}
