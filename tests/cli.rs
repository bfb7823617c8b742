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

/// Box-drawing characters a bordered table would have.
const BORDERS: &[char] = &['│', '┆', '─', '┌', '└', '╞', '═'];

#[test]
fn tables_are_tab_separated_rows_when_stdout_is_not_a_terminal() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[("fake", &fake.base_url(), None, &["ok#a", "empty_choices#b"])]);
    // The tests' stdout is a pipe, as in `fcm models | cut -f2`.
    let models = w.fcm(&["models"]);
    assert_eq!(models.code, 0, "{models:?}");
    // The table's rows, then the summary lines under it (no tab in those).
    let lines: Vec<Vec<&str>> = models
        .stdout
        .lines()
        .take_while(|l| l.contains('\t'))
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(lines.len(), 3, "a header and two rows: {models:?}");
    assert_eq!(lines[0][..2], ["Provider", "Model"], "{models:?}");
    assert!(
        lines.iter().any(|cells| cells[1] == "fake/ok#a"),
        "{models:?}"
    );
    assert!(
        lines.iter().all(|cells| cells.len() == lines[0].len()),
        "{models:?}"
    );
    let bench = w.fcm(&["bench", "--pings", "1", "--no-save"]);
    assert_eq!(bench.code, 0, "{bench:?}");
    for out in [&models, &bench] {
        assert!(!out.stdout.contains(BORDERS), "{out:?}");
    }
    let row = bench
        .stdout
        .lines()
        .find(|l| l.contains("fake/ok#a"))
        .unwrap_or_else(|| panic!("{bench:?}"));
    assert!(row.starts_with("1\tfake/ok#a\tPerfect\t1/1\t"), "{bench:?}");
}

#[test]
fn listing_commands_print_json() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[("fake", &fake.base_url(), None, &["ok#a", "ok#b"])]);
    let add = w.fcm(&["sets", "add", "pair", "fake/ok#b", "fake/ok#a"]);
    assert_eq!(add.code, 0, "{add:?}");
    let sets = w.fcm(&["sets", "--json"]).json();
    assert_eq!(sets[0]["name"], "pair", "{sets}");
    assert_eq!(sets[0]["strategy"], "fallback", "{sets}");
    assert_eq!(sets[0]["members"][0]["model"], "fake/ok#b", "{sets}");
    assert_eq!(sets[0]["members"][0]["status"], "ok", "{sets}");
    let doctor = w.fcm(&["doctor", "--json"]);
    let report = doctor.json();
    let checks = report["checks"].as_array().expect("checks");
    assert!(checks.iter().any(|c| c["what"]
        .as_str()
        .is_some_and(|w| w.starts_with("catalog:"))));
    assert!(checks
        .iter()
        .all(|c| ["pass", "note", "fail"].contains(&c["outcome"].as_str().unwrap_or_default())));
    assert_eq!(report["ok"], doctor.code == 0, "{doctor:?}");
    let tools = w.fcm(&["install", "--list", "--json"]).json();
    let tools = tools.as_array().expect("an array");
    assert!(
        tools
            .iter()
            .any(|t| t["tool"] == "claude-code" && t["status"] == "no_config_file"),
        "{tools:?}"
    );
    assert!(tools.iter().any(|t| t["tool"] == "cursor"), "{tools:?}");
    if cfg!(any(target_os = "linux", target_os = "macos")) {
        let service = w.fcm(&["service", "status", "--json"]).json();
        assert_eq!(service["fileState"], "not_installed", "{service}");
        assert_eq!(service["serverRunning"], false, "{service}");
    }
}
