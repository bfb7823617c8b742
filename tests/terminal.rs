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
