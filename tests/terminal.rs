//! fcm on a real terminal: a tmux pane runs the command, and the test reads the screen as a
//! user would. Needs tmux (`.ci/run` installs it); `FCM_TMUX_OPTIONAL=1` skips these tests
//! where it cannot be had.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

/// A tmux session running one command in a 160x40 pane; killed when dropped.
struct Pane {
    name: String,
}

impl Pane {
    /// Runs `command` (a shell line) in a new pane, or `None` when tmux is missing and that
    /// is allowed.
    fn run(name: &str, command: &str) -> Option<Pane> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("FCM_TMUX_OPTIONAL").is_some(),
                "tmux is needed for the terminal tests (Debian: apt-get install tmux)"
            );
            return None;
        }
        let name = format!("{name}-{}", std::process::id());
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &name, "-x", "160", "-y", "40"])
            .arg(format!("{command}; sleep 60"))
            .status()
            .expect("tmux runs")
            .success();
        assert!(ok, "tmux new-session failed");
        Some(Pane { name })
    }

    /// What the pane shows now.
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `keys` (tmux key names: `q`, `C-c`, `Down`) into the pane.
    fn keys(&self, keys: &[&str]) {
        let ok = Command::new("tmux")
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .expect("tmux send-keys")
            .success();
        assert!(ok, "tmux send-keys failed");
    }

    /// Waits (bounded) until the screen satisfies `done`; returns the screen.
    fn until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.within(Duration::from_secs(30), what, done)
    }

    /// Waits until the screen satisfies `done`, failing when that takes longer than
    /// `limit`; returns the screen.
    fn within(&self, limit: Duration, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(
                start.elapsed() < limit,
                "{what} did not show within {limit:?}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the pane shows its cursor and whether it is on the alternate screen (tmux's
    /// `cursor_flag` and `alternate_on`).
    fn cursor_and_alternate(&self) -> (bool, bool) {
        let out = Command::new("tmux")
            .args([
                "display-message",
                "-p",
                "-t",
                &self.name,
                "#{cursor_flag} #{alternate_on}",
            ])
            .output()
            .expect("tmux display-message");
        let flags = String::from_utf8_lossy(&out.stdout);
        match flags.split_whitespace().collect::<Vec<_>>()[..] {
            [cursor, alternate] => (cursor == "1", alternate == "1"),
            _ => panic!("tmux display-message said {flags:?}"),
        }
    }

    /// Resizes the pane's window.
    fn resize(&self, width: u16, height: u16) {
        let ok = Command::new("tmux")
            .args(["resize-window", "-t", &self.name])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .status()
            .expect("tmux resize-window")
            .success();
        assert!(ok, "tmux resize-window failed");
    }

    /// After `fcm top` ended in a line made by [`top_line`]: its exit code is 0, and the
    /// terminal is as it was (tty modes, cursor shown, the alternate screen left).
    fn assert_top_quit_cleanly(&self) {
        let last = self.until("the exit code", |s| s.contains("top exit="));
        assert!(last.contains("top exit=0"), "{last}");
        assert!(
            last.contains("tty modes as before"),
            "raw mode is left: {last}"
        );
        assert!(
            !last.contains("Decisions"),
            "the screen is given back: {last}"
        );
        assert_eq!(
            self.cursor_and_alternate(),
            (true, false),
            "the cursor is shown and the alternate screen left"
        );
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

/// The shell line that runs `fcm ARGS` in world `w`, as `World::fcm` would.
fn fcm_line(w: &World, args: &str) -> String {
    format!(
        "env -i PATH=\"$PATH\" HOME={home} FCM_HOME={fcm_home} FCM_CATALOG={catalog} TERM=xterm-256color {bin} {args}",
        home = w.dir.display(),
        fcm_home = w.home.display(),
        catalog = w.catalog.display(),
        bin = env!("CARGO_BIN_EXE_fcm"),
    )
}

#[test]
fn the_bench_table_fills_in_as_models_finish() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[(
        "f",
        &fake.base_url(),
        None,
        &["ok#quick", "slow:1500#later", "wrong_sum", "slow:3000#last"],
    )]);
    let Some(pane) = Pane::run("bench", &fcm_line(&w, "bench --pings 1 --no-save")) else {
        return;
    };
    // First the fast ones, the slow ones still probing.
    let early = pane.until("a finished row beside pending ones", |s| {
        s.contains("f/ok#quick") && s.contains("Perfect") && s.contains("probing")
    });
    assert!(early.contains("f/slow:3000#last"), "{early}");
    assert!(early.contains("models done"), "{early}");
    // Then the final table, in place of the live one.
    let last = pane.until("the final table", |s| s.contains("models probed"));
    assert!(!last.contains("probing"), "{last}");
    assert!(last.contains("Wrong answer"), "{last}");
    assert_eq!(
        last.matches("f/slow:3000#last").count(),
        1,
        "one table: {last}"
    );
    // Piped, the same run prints only the final table, with no escape code.
    let piped = w.fcm(&["bench", "--pings", "1", "--no-save"]);
    assert!(!piped.stdout.contains('\u{1b}'), "{piped:?}");
    assert!(!piped.stdout.contains("probing"), "{piped:?}");
}

#[test]
fn ctrl_c_in_the_live_bench_leaves_the_table_of_what_was_measured() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[("f", &fake.base_url(), None, &["ok#a", "ok#b", "hang#c"])]);
    let line = format!(
        "{}; echo \"bench exit=$?\"",
        fcm_line(&w, "bench --pings 1")
    );
    let Some(pane) = Pane::run("bench-int", &line) else {
        return;
    };
    // The live table's own count, drawn while the hanging model keeps the bench going.
    pane.until("two of three models done", |s| {
        s.contains("2 of 3 models done")
    });
    pane.keys(&["C-c"]);
    let last = pane.until("the exit code", |s| s.contains("bench exit="));
    assert!(last.contains("bench exit=130"), "{last}");
    assert!(
        last.contains("interrupted: 2 models measured, 1 not finished"),
        "{last}"
    );
    assert!(!last.contains("probing"), "the live table is gone: {last}");
    assert!(
        line_with(&last, &["1", "f/ok#", "Perfect"]).is_some(),
        "{last}"
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("bench.json")).unwrap()).unwrap();
    assert_eq!(saved["partial"], true, "{saved}");
    assert_eq!(saved["models"].as_array().unwrap().len(), 2, "{saved}");
}

/// The shell line that runs `fcm top ARGS` in world `w`, then says whether the tty's modes
/// are as they were before it and prints its exit code.
fn top_line(w: &World, args: &str) -> String {
    format!(
        "before=$(stty -g); {}; rc=$?; [ \"$(stty -g)\" = \"$before\" ] && echo 'tty modes as before'; echo \"top exit=$rc\"",
        fcm_line(w, &format!("top {args}"))
    )
}

/// A line of the screen that holds all of `parts`.
fn line_with<'s>(screen: &'s str, parts: &[&str]) -> Option<&'s str> {
    screen.lines().find(|l| parts.iter().all(|p| l.contains(p)))
}

#[test]
fn top_follows_a_live_server_and_quits_cleanly() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["server_500", "ok"]);
    let server = w.serve(&[]);
    assert_eq!(server.chat("fcm", false).status, 200);
    let Some(pane) = Pane::run("top", &top_line(&w, "--interval 300")) else {
        return;
    };
    let first = pane.until("both models, live", |s| {
        s.contains("Models (live)") && s.contains("p/ok") && s.contains("p/server_500")
    });
    assert!(first.contains("Decisions"), "{first}");

    // A request made now shows up in the feed within a few seconds, with its attempt chain
    // (the view polls every second; the bound leaves room for a loaded machine).
    let body = r#"{"model":"fcm","messages":[{"role":"user","content":"watch me"}]}"#;
    let r = server.post_with(
        "/v1/chat/completions",
        body,
        &[("x-request-id", "watch-me-1")],
    );
    assert_eq!(r.status, 200);
    let s = pane.within(Duration::from_secs(10), "the new decision", |s| {
        s.contains("watch-me-1")
    });
    let decision = line_with(&s, &["watch-me-1"]).unwrap();
    assert!(decision.contains("served"), "{decision}");
    assert!(
        decision.contains("p/ok:200]"),
        "the attempt chain: {decision}"
    );

    // Its third failure opens p/server_500's breaker: the row says OPEN.
    for _ in 0..3 {
        server.chat("fcm:p/server_500", false);
    }
    pane.within(Duration::from_secs(10), "p/server_500 OPEN", |s| {
        line_with(s, &["p/server_500", "OPEN"]).is_some()
    });

    // A smaller terminal gets a narrower table at once.
    pane.resize(80, 24);
    pane.until("the table redrawn at 80 columns", |s| {
        s.lines().all(|l| l.chars().count() <= 80)
            && line_with(s, &["p/server_500", "OPEN"]).is_some()
            && !s.contains("Evidence")
    });
    pane.resize(160, 40);
    pane.until("the table redrawn at 160 columns", |s| {
        s.contains("Evidence")
    });

    // A filter shows only what matches; the selection moves onto what is shown.
    pane.keys(&["/", "5", "0", "0", "Enter"]);
    let s = pane.until("the filtered table", |s| s.contains("filter: 500"));
    assert!(s.contains("(1 shown)"), "{s}");
    assert!(line_with(&s, &["p/ok", "CLOSED"]).is_none(), "{s}");

    // r resets the selected model's breaker, on the server.
    pane.keys(&["r"]);
    pane.until("the breaker reset", |s| {
        s.contains("breaker reset to CLOSED on the running server")
            && line_with(s, &["p/server_500", "CLOSED"]).is_some()
    });
    let breaker = server.breaker("p/server_500");
    assert!(
        breaker.as_ref().is_none_or(|b| b["state"] == "CLOSED"),
        "the server's breaker: {breaker:?}"
    );

    // p pins it: set "top" in config.json, the active set, applied at the next start.
    pane.keys(&["p"]);
    pane.until("the pin", |s| {
        s.contains("p/server_500 pinned") && s.contains("restart fcm serve to apply")
    });
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["router"]["activeSet"], "top", "{config}");
    assert_eq!(
        config["router"]["sets"]["top"]["models"],
        serde_json::json!(["p/server_500"]),
        "{config}"
    );
    pane.keys(&["Escape"]);
    pane.until("the filter cleared", |s| {
        !s.contains("filter:") && line_with(s, &["p/ok", "CLOSED"]).is_some()
    });

    // Help opens on ?, any key closes it; q quits with 0 and gives the terminal back.
    pane.keys(&["?"]);
    pane.until("the help", |s| s.contains("pin/unpin the selected model"));
    pane.keys(&["x"]);
    pane.until("help closed", |s| {
        !s.contains("pin/unpin the selected model")
    });
    pane.keys(&["q"]);
    pane.assert_top_quit_cleanly();
    server.stop();
}

/// A server started in the background by `fcm top`'s `s`: killed if the test ends before
/// `fcm stop` stopped it.
struct Detached(std::path::PathBuf);

impl Drop for Detached {
    fn drop(&mut self) {
        let Ok(info) = std::fs::read_to_string(&self.0) else {
            return;
        };
        let info: serde_json::Value = serde_json::from_str(&info).unwrap_or_default();
        if let Some(pid) = info["pid"].as_u64() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

#[test]
fn top_without_a_server_shows_the_catalog_and_the_bench_and_starts_one() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok", "slow:100"]);
    let bench = w.fcm(&["bench", "--pings", "1"]);
    assert_eq!(bench.code, 0, "{bench:?}");
    // The server `s` starts listens on a free port of its own, not the default one.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    w.write_config(&serde_json::json!({ "port": port }));
    let Some(pane) = Pane::run("top-offline", &top_line(&w, "--interval 300")) else {
        return;
    };
    let s = pane.until("the catalog", |s| {
        s.contains("p/slow:100") && s.contains("p/ok")
    });
    assert!(s.contains("no fcm serve is running"), "{s}");
    assert!(s.contains("Models (catalog, last bench)"), "{s}");
    assert!(s.contains("catalog and last bench 20"), "{s}");
    assert!(s.contains("press s to start fcm serve"), "{s}");
    // The bench's figures, marked as the bench's: p/slow:100 answered in 100 ms or more.
    let slow = line_with(&s, &["p/slow:100", "proven bench"]).unwrap_or_else(|| panic!("{s}"));
    assert!(slow.contains(" ms b") && slow.contains("100% b"), "{slow}");

    // s starts `fcm serve --detach`, and the view turns live.
    let _server = Detached(w.home_file("serve.json"));
    pane.keys(&["s"]);
    let s = pane.until("the live view", |s| s.contains("Models (live)"));
    assert!(s.contains(&format!("http://127.0.0.1:{port}/v1")), "{s}");

    pane.keys(&["C-c"]);
    pane.assert_top_quit_cleanly();
    let stop = w.fcm(&["stop"]);
    assert_eq!(stop.code, 0, "{stop:?}");
}
