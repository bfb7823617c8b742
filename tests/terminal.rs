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
        let start = Instant::now();
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{what} never showed; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
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
    let line = format!(
        "{}; echo \"top exit=$?\"",
        fcm_line(&w, "top --interval 300")
    );
    let Some(pane) = Pane::run("top", &line) else {
        return;
    };
    let first = pane.until("both models, live", |s| {
        s.contains("Models (live)") && s.contains("p/ok") && s.contains("p/server_500")
    });
    assert!(first.contains("Decisions"), "{first}");

    // A request made now shows up in the feed, with its attempt chain.
    let body = r#"{"model":"fcm","messages":[{"role":"user","content":"watch me"}]}"#;
    let r = server.post_with(
        "/v1/chat/completions",
        body,
        &[("x-request-id", "watch-me-1")],
    );
    assert_eq!(r.status, 200);
    let s = pane.until("the new decision", |s| s.contains("watch-me-1"));
    let decision = line_with(&s, &["watch-me-1"]).unwrap();
    assert!(decision.contains("served"), "{decision}");

    // Its third failure opens p/server_500's breaker: the row says OPEN.
    for _ in 0..3 {
        server.chat("fcm:p/server_500", false);
    }
    pane.until("p/server_500 OPEN", |s| {
        line_with(s, &["p/server_500", "OPEN"]).is_some()
    });

    // A smaller terminal gets a narrower table at once.
    let ok = Command::new("tmux")
        .args(["resize-window", "-t", &pane.name, "-x", "80", "-y", "24"])
        .status()
        .expect("tmux resize-window")
        .success();
    assert!(ok, "tmux resize-window failed");
    pane.until("the table redrawn at 80 columns", |s| {
        s.lines().all(|l| l.chars().count() <= 80)
            && line_with(s, &["p/server_500", "OPEN"]).is_some()
            && !s.contains("Evidence")
    });

    // Help opens on ?, any key closes it; q quits with 0 and gives the terminal back.
    pane.keys(&["?"]);
    pane.until("the help", |s| s.contains("pin/unpin the selected model"));
    pane.keys(&["x"]);
    pane.until("help closed", |s| {
        !s.contains("pin/unpin the selected model")
    });
    pane.keys(&["q"]);
    let last = pane.until("the exit code", |s| s.contains("top exit="));
    assert!(last.contains("top exit=0"), "{last}");
    assert!(
        !last.contains("Models (live)"),
        "the screen is given back: {last}"
    );
    server.stop();
}

#[test]
fn top_without_a_server_shows_the_catalog_and_ctrl_c_quits() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok", "slow:100"]);
    let line = format!("{}; echo \"top exit=$?\"", fcm_line(&w, "top"));
    let Some(pane) = Pane::run("top-offline", &line) else {
        return;
    };
    let s = pane.until("the catalog", |s| {
        s.contains("p/slow:100") && s.contains("p/ok")
    });
    assert!(s.contains("no fcm serve is running"), "{s}");
    assert!(s.contains("press s to start fcm serve"), "{s}");
    pane.keys(&["C-c"]);
    let last = pane.until("the exit code", |s| s.contains("top exit="));
    assert!(last.contains("top exit=0"), "{last}");
}
