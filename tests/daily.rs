//! Living with fcm every day: its version, a background server and how to stop it, one
//! screen on the whole setup.

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

/// A detached server started by a test, killed if the test ends without stopping it.
struct Detached(u32);

impl Drop for Detached {
    fn drop(&mut self) {
        let pid = self.0.to_string();
        #[cfg(unix)]
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
        #[cfg(windows)]
        let _ = std::process::Command::new("taskkill")
            .args(["/F", "/PID", &pid])
            .status();
    }
}

fn served_pid(w: &World) -> u32 {
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("serve.json")).unwrap()).unwrap();
    info["pid"].as_u64().unwrap() as u32
}

#[test]
fn a_detached_server_runs_in_the_background_until_fcm_stop() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let out = w.fcm(&[
        "serve",
        "--detach",
        "--port",
        "0",
        "--token",
        "detach-token-0123456789",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let _guard = Detached(served_pid(&w));
    let line = out.stdout.trim();
    assert!(
        line.starts_with("fcm serve: running in the background at http://127.0.0.1:"),
        "{out:?}"
    );
    assert!(
        line.contains(&format!("(pid {})", served_pid(&w))),
        "{out:?}"
    );
    assert!(
        !line.contains("detach-token"),
        "the token is never printed: {out:?}"
    );
    let address = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split("/v1")
        .next()
        .unwrap()
        .to_string();
    // It serves, with the token it was given (through its environment, not argv).
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent();
    let body = r#"{"model":"fcm","messages":[{"role":"user","content":"hi"}]}"#;
    let url = format!("http://{address}/v1/chat/completions");
    let refused = agent
        .post(&url)
        .header("content-type", "application/json")
        .send(body)
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let served = agent
        .post(&url)
        .header("content-type", "application/json")
        .header("authorization", "Bearer detach-token-0123456789")
        .send(body)
        .unwrap();
    assert_eq!(served.status().as_u16(), 200);
    #[cfg(target_os = "linux")]
    {
        let cmdline =
            std::fs::read(format!("/proc/{}/cmdline", served_pid(&w))).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains("detach-token"),
            "the token is not on the command line"
        );
    }
    // A second one is refused while it runs.
    let again = w.fcm(&["serve", "--detach", "--port", "0"]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again
            .stderr
            .contains("fcm serve already runs at http://127.0.0.1:"),
        "{again:?}"
    );
    assert!(again.stderr.contains("`fcm stop` stops it"), "{again:?}");
    // fcm stop, in a shell without the token: graceful through the stop key in serve.json
    // (no signal needed, so the same on Windows), state saved, and the server is gone.
    let info = std::fs::read_to_string(w.home_file("serve.json")).unwrap();
    let stop_key: serde_json::Value = serde_json::from_str(&info).unwrap();
    let stop_key = stop_key["stopKey"].as_str().unwrap().to_string();
    assert!(
        stop_key.starts_with("stop-") && stop_key.len() == 37,
        "{info}"
    );
    let refused = agent
        .post(&format!("http://{address}/fcm/admin/stop"))
        .header("x-fcm-stop-key", "stop-not-the-key")
        .send_empty()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401, "a wrong stop key");
    let status = w.fcm(&["status", "--json"]);
    assert!(!status.stdout.contains(&stop_key), "{status:?}");
    let pid = served_pid(&w);
    let out = w.fcm(&["stop"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "stopped fcm serve at http://{address}/v1 (pid {pid})"
        )),
        "{out:?}"
    );
    #[cfg(target_os = "linux")]
    assert!(!alive(pid), "still running");
    assert!(!w.home_file("serve.json").exists());
    let history = std::fs::read_to_string(w.home_file("history.json")).unwrap();
    assert!(
        history.contains("\"servedModel\": \"p/ok\""),
        "state flushed: {history}"
    );
    let log = std::fs::read_to_string(w.home_file("serve.log")).unwrap();
    assert!(
        log.contains("listening on") && log.contains("stopped; state saved"),
        "{log}"
    );
    assert_mode(&w.home_file("serve.log"), 0o600);
    // Nothing left to stop.
    let out = w.fcm(&["stop"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("no fcm serve is running"), "{out:?}");
}

#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.split(") ").nth(1).unwrap_or("").starts_with('Z'))
}

#[test]
fn a_detached_server_that_cannot_start_says_why() {
    let w = World::new();
    std::fs::write(&w.catalog, "{ not json").unwrap();
    let out = w.fcm(&["serve", "--detach", "--port", "0"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("fcm serve did not start: it exited"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("malformed catalog"),
        "the log's end is shown: {out:?}"
    );
}

#[test]
fn status_shows_the_server_models_keys_tools_and_last_failures() {
    let fake = fake();
    let mut w = World::new();
    let doc = serde_json::json!({"version": 1, "providers": [
        {"id": "p", "baseUrl": fake.base_url(), "keyRequired": false, "models": [
            {"id": "empty_choices", "tier": "S", "context": 131072}, {"id": "ok", "tier": "A", "context": 131072}]},
        {"id": "keyed", "baseUrl": fake.base_url(), "apiKeyEnv": ["KEYED_KEY"], "models": [{"id": "ok#k", "tier": "B", "context": 131072}]},
        {"id": "nokey", "baseUrl": fake.base_url(), "apiKeyEnv": ["NOKEY_KEY"], "models": [{"id": "ok#n", "tier": "B", "context": 131072}]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    w.set_env("KEYED_KEY", "fake-key-K1-0123456789")
        .set_env("KEYED_KEY_2", "fake-key-K2-0123456789");
    // Not running.
    let out = w.fcm(&["status", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let s = out.json();
    assert_eq!(s["server"]["running"], false);
    assert_eq!(s["models"]["routable"], 3);
    assert_eq!(
        s["providers"]["withKeys"],
        serde_json::json!([{"provider": "keyed", "keys": 2}])
    );
    assert_eq!(s["providers"]["missing"], serde_json::json!(["nokey"]));
    assert!(
        s["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["port"].is_null()),
        "{s}"
    );
    // Running, with a tool pointed at it and a failure behind it.
    let server = w.serve(&[]);
    let port = server.base.rsplit(':').next().unwrap().to_string();
    assert_eq!(w.fcm(&["install", "claude-code", "--port", &port]).code, 0);
    assert_eq!(w.fcm(&["install", "codex", "--port", "1"]).code, 0);
    assert_eq!(server.chat("fcm", false).status, 200);
    let s = w.fcm(&["status", "--json"]).json();
    assert_eq!(s["server"]["running"], true);
    assert_eq!(s["server"]["pid"], server.pid());
    assert_eq!(s["models"]["routable"], 3);
    let tool = |name: &str| {
        s["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (
            tool("claude-code")["thisServer"].clone(),
            tool("claude-code")["tokenMatches"].clone()
        ),
        (serde_json::json!(true), serde_json::json!(true))
    );
    assert_eq!(
        (
            tool("codex")["port"].clone(),
            tool("codex")["thisServer"].clone()
        ),
        (serde_json::json!(1), serde_json::json!(false))
    );
    assert!(tool("cline")["port"].is_null());
    assert_eq!(s["lastFailures"][0]["model"], "p/empty_choices");
    assert_eq!(s["lastFailures"][0]["kind"], "empty_choices");
    let out = w.fcm(&["status"]);
    let text = out.stdout;
    assert!(
        text.contains(&format!(
            "server:    running at {}/v1 (pid {}",
            server.base,
            server.pid()
        )),
        "{text}"
    );
    assert!(
        text.contains("keys:      keyed (2 keys) (1 provider); no key needed: p; missing: 1"),
        "{text}"
    );
    assert!(
        text.contains("claude-code (this server)")
            && text.contains("codex (port 1, not this server)"),
        "{text}"
    );
    assert!(text.contains("p/empty_choices  empty_choices"), "{text}");
    assert!(!text.contains("fake-key-K"), "never a key");
}

#[test]
fn keys_are_set_listed_and_removed_without_ever_being_shown() {
    let fake = fake();
    let w = World::new();
    let doc = serde_json::json!({"version": 1, "providers": [
        {"id": "echo", "baseUrl": fake.base_url(), "apiKeyEnv": ["ECHO_KEY"], "signupUrl": "https://example.test/keys",
         "models": [{"id": "rejects_revoked", "tier": "S", "context": 131072}]},
        {"id": "free", "baseUrl": fake.base_url(), "keyRequired": false, "models": [{"id": "ok", "context": 131072}]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    w.write_config(&serde_json::json!({"port": 19999, "router": {"failover": {"maxAttempts": 2}}}));
    #[cfg(unix)]
    std::fs::set_permissions(
        w.home_file("config.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let out = w.fcm(&["keys", "list"]);
    assert!(
        out.stdout.contains("missing") && out.stdout.contains("https://example.test/keys"),
        "{out:?}"
    );
    assert!(
        out.stdout.contains("`fcm keys set echo` or ECHO_KEY"),
        "{out:?}"
    );
    // A good key: saved, the rest of config.json kept, checked with one completion.
    let out = w.fcm_stdin(&["keys", "set", "echo"], "fake-key-GOOD-0123456789\n");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Saved 1 key for echo in"), "{out:?}");
    assert!(
        out.stdout
            .contains("ok   echo/rejects_revoked: answered in"),
        "{out:?}"
    );
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["apiKeys"]["echo"], "fake-key-GOOD-0123456789");
    assert_eq!(
        (
            config["port"].clone(),
            config["router"]["failover"]["maxAttempts"].clone()
        ),
        (serde_json::json!(19999), serde_json::json!(2))
    );
    assert_mode(&w.home_file("config.json"), 0o600);
    // A second, revoked key added beside it: the check says what fcm check would (exit 4).
    let out = w.fcm_stdin(
        &["keys", "set", "echo", "--add"],
        "fake-key-REVOKED-0123456789",
    );
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stdout.contains("Saved 2 keys for echo"), "{out:?}");
    assert!(
        out.stdout
            .contains("FAIL echo/rejects_revoked: key rejected (HTTP 401, auth_error)"),
        "{out:?}"
    );
    let sent: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect();
    assert_eq!(
        sent,
        [
            "Bearer fake-key-GOOD-0123456789",
            "Bearer fake-key-REVOKED-0123456789"
        ],
        "each check used the key just set"
    );
    let out = w.fcm(&["keys", "list", "--json"]);
    let list = out.json();
    let echo = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == "echo")
        .unwrap();
    assert_eq!(
        echo["keys"],
        serde_json::json!(["echo#1 (config.json)", "echo#2 (config.json)"])
    );
    assert_eq!(
        list.as_array()
            .unwrap()
            .iter()
            .find(|p| p["provider"] == "free")
            .unwrap()["status"],
        "not_needed"
    );
    // Bad input changes nothing.
    let out = w.fcm_stdin(&["keys", "set", "echo"], "two words\n");
    assert_eq!(out.code, 2, "{out:?}");
    let out = w.fcm_stdin(&["keys", "set", "nope"], "k");
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("unknown provider \"nope\""), "{out:?}");
    // Removed; the environment's key is mentioned when there is one.
    let mut w2 = w;
    w2.set_env("ECHO_KEY", "fake-key-ENV-0123456789");
    let out = w2.fcm(&["keys", "rm", "echo"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Removed echo's keys from"), "{out:?}");
    assert!(
        out.stdout
            .contains("ECHO_KEY still set in your environment"),
        "{out:?}"
    );
    let config = std::fs::read_to_string(w2.home_file("config.json")).unwrap();
    assert!(
        !config.contains("apiKeys") && config.contains("19999"),
        "{config}"
    );
    // No key was ever printed.
    for out in [w2.fcm(&["keys", "list"]), w2.fcm(&["status"])] {
        assert!(
            !out.stdout.contains("fake-key-") && !out.stderr.contains("fake-key-"),
            "{out:?}"
        );
    }
}

// File modes are among what it checks and breaks.
#[cfg(unix)]
#[test]
fn doctor_passes_a_good_setup_and_names_the_fix_for_a_bad_one() {
    let fake = fake();
    let mut w = World::new();
    let doc = serde_json::json!({"version": 1, "providers": [
        {"id": "good", "baseUrl": fake.base_url(), "apiKeyEnv": ["GOOD_KEY"], "models": [{"id": "ok", "tier": "S", "context": 131072}]},
        {"id": "bad", "baseUrl": fake.base_url(), "apiKeyEnv": ["BAD_KEY"], "signupUrl": "https://bad.test/keys",
         "models": [{"id": "auth_401", "tier": "S", "context": 131072}]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    w.set_env("GOOD_KEY", "fake-key-GOOD-0123456789");
    // A free port of its own, so that the check does not meet another test's server.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    w.write_config(&serde_json::json!({"port": port}));
    std::fs::set_permissions(&w.home, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::fs::set_permissions(
        w.home_file("config.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let out = w.fcm(&["doctor"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("ok   keys: 1 provider with keys (good), 0 need none"),
        "{out:?}"
    );
    assert!(
        out.stdout.contains(&format!("ok   port {port}: free")),
        "{out:?}"
    );
    assert!(out.stdout.contains("fcm doctor: all"), "{out:?}");
    // Online: each keyed provider gets one completion.
    w.set_env("BAD_KEY", "fake-key-BAD-0123456789");
    let out = w.fcm(&["doctor", "--online"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("ok   key good: good/ok: answered in"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("FAIL key bad: bad/auth_401: key rejected (HTTP 401, auth_error)"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("fix: `fcm keys set bad` with a working key (https://bad.test/keys)"),
        "{out:?}"
    );
    // Broken things, each with its fix.
    std::fs::write(w.home_file("history.json"), "{ cut off").unwrap();
    let blocker = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    assert_eq!(w.fcm(&["install", "claude-code", "--port", "1"]).code, 0);
    std::fs::set_permissions(
        w.home_file("config.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let out = w.fcm(&["doctor"]);
    assert_eq!(out.code, 1, "{out:?}");
    let text = &out.stdout;
    assert!(text.contains("FAIL history.json: corrupt"), "{text}");
    assert!(
        text.contains(&format!("FAIL port {port}: in use by another program")),
        "{text}"
    );
    assert!(
        text.contains("FAIL claude-code:")
            && text.contains(&format!("points at port 1, fcm serves on {port}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("fix: `fcm install claude-code --port {port}`")),
        "{text}"
    );
    assert!(
        text.contains("config.json: mode 644: other users can read it")
            && text.contains("fix: chmod 600"),
        "{text}"
    );
    assert!(
        std::fs::read_to_string(w.home_file("history.json"))
            .unwrap()
            .starts_with("{ cut"),
        "doctor changes nothing"
    );
    drop(blocker);
    // A config that does not parse is named, with its fix.
    std::fs::write(w.home_file("config.json"), "{\"port\": \"lots\"}").unwrap();
    let out = w.fcm(&["doctor"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("FAIL config: config") && out.stdout.contains("wrong value for port"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("fake-key-"), "never a key");
}

// A stand-in systemctl, as a shell script.
#[cfg(target_os = "linux")]
#[test]
fn service_install_is_idempotent_and_uninstall_removes_exactly_what_it_wrote() {
    let mut w = World::new();
    w.catalog(&[]);
    // A fake systemctl that answers for the user instance and logs what it is asked.
    let bin = w.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = w.dir.join("systemctl.log");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> {}\n[ \"$2\" = is-active ] && echo active\nexit 0\n",
        log.display()
    );
    std::fs::write(bin.join("systemctl"), script).unwrap();
    std::fs::set_permissions(
        bin.join("systemctl"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    w.set_env("PATH", &path);
    let unit = w.dir.join(".config/systemd/user/fcm.service");
    let out = w.fcm(&["service", "install", "--port", "19333"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(
        text.starts_with("# Written by `fcm service install`"),
        "{text}"
    );
    assert!(
        text.contains(" serve --port 19333\n")
            && text.contains(&format!("Environment=FCM_HOME={}", w.home.display())),
        "{text}"
    );
    assert!(
        out.stdout
            .contains("$ systemctl --user enable --now fcm.service  (ok)"),
        "{out:?}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("--user daemon-reload\n--user enable --now fcm.service"),
        "{logged}"
    );
    // Where systemd is present, the unit is one it accepts.
    if std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let verify = std::process::Command::new("systemd-analyze")
            .arg("verify")
            .arg(&unit)
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stderr)
        );
    }
    // Again: nothing changes.
    let out = w.fcm(&["service", "install", "--port", "19333"]);
    assert!(
        out.stdout.contains("is already installed, unchanged"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&unit).unwrap(), text);
    let out = w.fcm(&["service", "status"]);
    assert!(
        out.stdout.contains("(installed by fcm at") && out.stdout.contains("unchanged)"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("systemctl --user is-active fcm.service: active"),
        "{out:?}"
    );
    // A unit the user changed is theirs: not removed.
    std::fs::write(&unit, format!("{text}# mine\n")).unwrap();
    let out = w.fcm(&["service", "uninstall"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("changed since `fcm service install` wrote it"),
        "{out:?}"
    );
    assert!(unit.exists());
    // fcm's own unit is stopped and removed, and nothing else.
    std::fs::write(&unit, &text).unwrap();
    let sibling = unit.with_file_name("other.service");
    std::fs::write(&sibling, "[Unit]\n").unwrap();
    let out = w.fcm(&["service", "uninstall"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!unit.exists() && sibling.exists());
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("--user disable --now fcm.service"));
    let out = w.fcm(&["service", "uninstall"]);
    assert!(
        out.stdout.contains("No fcm service is installed"),
        "{out:?}"
    );
    // Someone else's file in its place is refused.
    std::fs::write(&unit, "[Unit]\nDescription=mine\n").unwrap();
    let out = w.fcm(&["service", "install"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("is not fcm's"), "{out:?}");
}

#[test]
fn a_model_the_provider_does_not_serve_leaves_rotation_for_a_day() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["model_not_found", "ok"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(
        r.decision(),
        "p/ok!served|p/model_not_found:404->p/ok:200|skips=0"
    );
    let r = s.chat("fcm", true);
    assert_eq!(r.decision(), "p/ok!served|p/ok:200|skips=1");
    assert_eq!(s.history()[1]["skipped"][0]["reason"], "model_not_found");
    let b = s.breaker("p/model_not_found").unwrap();
    assert_eq!(
        (
            b["state"].clone(),
            b["pausedFor"].clone(),
            b["lastFailureKind"].clone()
        ),
        (
            serde_json::json!("CLOSED"),
            serde_json::json!("model_not_found"),
            serde_json::json!("model_not_found")
        )
    );
    assert!(
        b["quotaPauseMsLeft"].as_u64().unwrap() > 23 * 3_600_000,
        "{b}"
    );
    assert_eq!(fake.requests_for("model_not_found").len(), 1);
    // fcm check says what it means.
    let out = w.fcm(&["check", "p/model_not_found"]);
    assert_eq!(out.code, 6, "{out:?}");
    assert!(out.stdout.contains("the provider does not serve this model (retired? `fcm models --refresh`) (HTTP 404, model_not_found)"), "{out:?}");
}

#[test]
fn a_refresh_finds_retired_and_new_models_and_every_command_sees_them() {
    let fake = fake();
    let w = World::new();
    let doc = serde_json::json!({"version": 1, "providers": [
        {"id": "p", "baseUrl": fake.base_url(), "keyRequired": false, "models": [
            {"id": "retired-one", "tier": "S", "context": 131072}, {"id": "ok", "tier": "A", "context": 131072}]},
        {"id": "down", "baseUrl": "http://127.0.0.1:9/v1", "keyRequired": false, "models": [{"id": "x", "context": 8192}]},
        {"id": "nokey", "baseUrl": fake.base_url(), "apiKeyEnv": ["NOKEY_KEY"], "models": [{"id": "y", "context": 8192}]},
    ]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
    let out = w.fcm(&["models", "--refresh"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("p: 2 in the catalog, 5 served; retired: retired-one; new: calls_offered_tool, newcomer-coder, ok_stream, slow"), "{out:?}");
    assert!(
        out.stdout.contains("down: cannot list its models:"),
        "{out:?}"
    );
    assert!(
        !out.stdout.contains("nokey"),
        "a provider without its key is not asked: {out:?}"
    );
    assert!(
        out.stdout
            .contains("1 models leave rotation, 4 join it with tier ?"),
        "{out:?}"
    );
    // Every command lays it over the catalog: `fcm models`, the router.
    let models = w.fcm(&["models", "--json", "--provider", "p"]).json();
    let listed: Vec<(String, String, u64)> = models
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["model"].as_str().unwrap().to_string(),
                m["tier"].as_str().unwrap().to_string(),
                m["context"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        !listed.iter().any(|(m, _, _)| m == "p/retired-one"),
        "{listed:?}"
    );
    assert!(
        listed.contains(&("p/newcomer-coder".to_string(), "?".to_string(), 262144)),
        "{listed:?}"
    );
    let s = w.serve(&[]);
    let r = s.chat("fcm", false);
    assert_eq!(
        r.header("x-fcm-v2-model"),
        Some("p/ok"),
        "known tiers first: {r:?}"
    );
    assert_eq!(s.chat("fcm:p/newcomer-coder", false).status, 200);
    assert_eq!(
        s.chat("fcm:p/retired-one", false).status,
        404,
        "no longer in the catalog"
    );
    assert!(fake.requests_for("retired-one").is_empty());
    let overlay: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(w.home_file("catalog-overlay.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        overlay["providers"]["p"]["retired"],
        serde_json::json!(["retired-one"])
    );
    assert_mode(&w.home_file("catalog-overlay.json"), 0o600);
    // --provider limits the asking; an unknown one is a usage error.
    let out = w.fcm(&["models", "--refresh", "--provider", "p", "--json"]);
    assert_eq!(out.json()["providers"].as_array().unwrap().len(), 1);
    assert_eq!(
        w.fcm(&["models", "--refresh", "--provider", "nope"]).code,
        2
    );
}
