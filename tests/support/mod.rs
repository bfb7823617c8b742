//! The shared harness: a temp `FCM_HOME`, a catalog pointing at a fake provider on
//! loopback, and the real `fcm` binary run as a user would run it.

#![allow(dead_code, unused_imports)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use fcm::fake_provider::{Behavior, FakeProvider, RecordedRequest};

mod client_answers;
pub use client_answers::*;
use serde_json::{json, Value};

pub mod scrape;

/// Every `fcm` run is killed after this, so a bug cannot hang the suite.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// A test key: long enough that a leak is easy to grep for.
pub const KEY: &str = "fake-key-SECRET-0123456789abcdef";

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A scratch world: `FCM_HOME`, a catalog file and the environment `fcm` will see.
pub struct World {
    pub dir: PathBuf,
    pub home: PathBuf,
    pub catalog: PathBuf,
    pub env: HashMap<String, String>,
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl World {
    pub fn new() -> World {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("fcm-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let home = dir.join("home");
        let catalog = dir.join("catalog.json");
        World {
            dir,
            home,
            catalog,
            env: HashMap::new(),
        }
    }

    /// Writes a catalog: one provider per entry `(id, base_url, key_env, models)`.
    /// `key_env: None` means no key is needed.
    pub fn catalog(&self, providers: &[(&str, &str, Option<&str>, &[&str])]) -> &Self {
        let doc = json!({"version": 1, "providers": providers.iter().map(|(id, url, env, models)| json!({
            "id": id, "name": format!("Fake {id}"), "baseUrl": url,
            "apiKeyEnv": env.map(|e| vec![e]).unwrap_or_default(), "keyRequired": env.is_some(),
            "models": models.iter().map(|m| json!({"id": m, "label": m, "tier": "A", "context": 131072})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>()});
        std::fs::write(&self.catalog, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        self
    }

    pub fn set_env(&mut self, k: &str, v: &str) -> &mut Self {
        self.env.insert(k.to_string(), v.to_string());
        self
    }

    pub fn write_config(&self, config: &Value) {
        std::fs::create_dir_all(&self.home).unwrap();
        std::fs::write(
            self.home.join("config.json"),
            serde_json::to_string_pretty(config).unwrap(),
        )
        .unwrap();
    }

    pub fn home_file(&self, name: &str) -> PathBuf {
        self.home.join(name)
    }

    /// `fcm ARGS` with this world's environment and nothing else of the caller's.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fcm"));
        cmd.args(args)
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("FCM_HOME", &self.home)
            .env("FCM_CATALOG", &self.catalog)
            .envs(&self.env)
            .envs(system_env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs `fcm ARGS` to completion (bounded), in the world's home folder.
    pub fn fcm(&self, args: &[&str]) -> Output {
        run_bounded(self.command(args))
    }

    /// [`fcm`](Self::fcm) run in the folder `cwd` (a project of the user's).
    pub fn fcm_in(&self, cwd: &std::path::Path, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        cmd.current_dir(cwd);
        run_bounded(cmd)
    }

    /// Starts `fcm ARGS` without waiting for it (stdout and stderr piped); [`finish`] waits.
    pub fn start(&self, args: &[&str]) -> std::process::Child {
        self.command(args).spawn().expect("fcm binary runs")
    }

    /// Runs `fcm ARGS` with `input` on its stdin (a pipe, not a terminal).
    pub fn fcm_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().expect("fcm binary runs");
        let mut stdin = child.stdin.take().unwrap();
        // fcm may exit before it reads (a usage error): the pipe is closed then.
        let _ = std::io::Write::write_all(&mut stdin, input.as_bytes());
        drop(stdin);
        wait_bounded(child)
    }
}

/// What a Windows process cannot start or open a socket without (its system folder);
/// nothing of the user's, so every world stays apart from the real profile.
fn system_env() -> Vec<(String, String)> {
    ["SystemRoot", "SYSTEMROOT", "windir", "TEMP", "TMP"]
        .iter()
        .filter(|_| cfg!(windows))
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect()
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits (bounded) for an `fcm` from [`World::start`] and takes what it printed.
pub fn finish(child: std::process::Child) -> Output {
    wait_bounded(child)
}

fn run_bounded(mut cmd: Command) -> Output {
    wait_bounded(cmd.spawn().expect("fcm binary runs"))
}

fn wait_bounded(mut child: std::process::Child) -> Output {
    let start = Instant::now();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            panic!("fcm ran longer than {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        code: status.code().unwrap_or(-1),
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

/// Starts a fake provider whose models pick their behaviour by name.
pub fn fake() -> FakeProvider {
    FakeProvider::start(0, HashMap::new()).expect("fake provider starts")
}

/// Asserts that no file under `dir` contains `needle`.
pub fn assert_not_in_files(dir: &Path, needle: &str) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            assert_not_in_files(&p, needle);
        } else if let Ok(text) = std::fs::read_to_string(&p) {
            assert!(!text.contains(needle), "{} contains a secret", p.display());
        }
    }
}

/// The mode bits of a file.
#[cfg(unix)]
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Asserts a file's mode bits where files have them (Unix); elsewhere a file in the
/// user's profile is the owner's by the profile's own access list, and nothing is checked.
pub fn assert_mode(path: &Path, want: u32) {
    #[cfg(unix)]
    assert_eq!(mode(path), want, "mode of {}", path.display());
    #[cfg(not(unix))]
    let _ = (path, want);
}

/// A running `fcm serve`, stopped (SIGTERM) when dropped.
pub struct Server {
    child: Option<std::process::Child>,
    pub base: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    agent: ureq::Agent,
    /// From `serve.json`: what `fcm stop` sends to stop it (where there is no SIGTERM).
    #[cfg_attr(unix, allow(dead_code))]
    stop_key: String,
}

/// An HTTP answer as a client sees it.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }

    pub fn decision(&self) -> &str {
        self.header("x-fcm-v2-decision")
            .unwrap_or_else(|| panic!("no decision header: {self:?}"))
    }
}

impl World {
    /// Starts `fcm serve --port 0 ARGS` and waits until it listens (via `serve.json`).
    pub fn serve(&self, args: &[&str]) -> Server {
        let info = self.home.join("serve.json");
        let _ = std::fs::remove_file(&info);
        let mut cmd = self.command(&[&["serve", "--port", "0"], args].concat());
        cmd.stdout(Stdio::null());
        let mut child = cmd.spawn().expect("fcm serve starts");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut pipe, &mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let start = Instant::now();
        let (address, stop_key) = loop {
            if let Ok(text) = std::fs::read_to_string(&info) {
                if let Ok(v) = serde_json::from_str::<Value>(&text) {
                    let field = |name: &str| v[name].as_str().unwrap_or_default().to_string();
                    break (field("address"), field("stopKey"));
                }
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("fcm serve exited with {status}: {}", stderr.lock().unwrap());
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "fcm serve did not start: {}",
                stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .proxy(None)
            .build()
            .new_agent();
        Server {
            child: Some(child),
            base: format!("http://{address}"),
            stderr,
            agent,
            stop_key,
        }
    }
}

impl Server {
    fn read(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Resp {
        let mut r = r.expect("fcm serve answers");
        let headers = r
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let status = r.status().as_u16();
        let body = r
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_string()
            .unwrap_or_default();
        Resp {
            status,
            headers,
            body,
        }
    }

    pub fn post(&self, path: &str, body: &str) -> Resp {
        Server::read(
            self.agent
                .post(&format!("{}{path}", self.base))
                .header("content-type", "application/json")
                .send(body),
        )
    }

    pub fn post_with(&self, path: &str, body: &str, headers: &[(&str, &str)]) -> Resp {
        let mut r = self
            .agent
            .post(&format!("{}{path}", self.base))
            .header("content-type", "application/json");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        Server::read(r.send(body))
    }

    pub fn get(&self, path: &str) -> Resp {
        Server::read(self.agent.get(&format!("{}{path}", self.base)).call())
    }

    /// A chat request with `model` and `stream`, as a client would send it.
    pub fn chat(&self, model: &str, stream: bool) -> Resp {
        let body = json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
        self.post("/v1/chat/completions", &body.to_string())
    }

    pub fn breakers(&self) -> Vec<Value> {
        self.get("/fcm/admin/breakers")
            .json()
            .as_array()
            .unwrap()
            .clone()
    }

    pub fn breaker(&self, model: &str) -> Option<Value> {
        self.breakers().into_iter().find(|b| b["model"] == model)
    }

    pub fn history(&self) -> Vec<Value> {
        self.get("/fcm/admin/history")
            .json()
            .as_array()
            .unwrap()
            .clone()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// SIGTERM (Windows has none: the admin endpoint's stop with the stop key, as `fcm
    /// stop` does), then waits (bounded) for the exit code.
    pub fn stop(mut self) -> i32 {
        #[cfg(not(unix))]
        self.post_with(
            "/fcm/admin/stop",
            "",
            &[("x-fcm-stop-key", &self.stop_key.clone())],
        );
        let mut child = self.child.take().unwrap();
        terminate(&mut child)
    }
}

fn terminate(child: &mut std::process::Child) -> i32 {
    #[cfg(unix)]
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        if start.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("fcm serve did not stop within 15 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A catalog of one provider (`p`, no key needed) whose models are tried best tier first
/// in the order given.
pub fn ordered(w: &World, base_url: &str, models: &[&str]) {
    let tiers = ["S+", "S", "A+", "A", "A-", "B+", "B", "C"];
    let doc = json!({"version": 1, "providers": [{
        "id": "p", "name": "Fake", "baseUrl": base_url, "keyRequired": false,
        "models": models.iter().enumerate().map(|(i, m)| json!({"id": m, "label": m, "tier": tiers[i.min(7)], "context": 131072})).collect::<Vec<_>>(),
    }]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
}

impl Server {
    /// A GET with extra headers (an access token).
    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Resp {
        let mut r = self.agent.get(&format!("{}{path}", self.base));
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        Server::read(r.call())
    }

    /// A GET whose body is kept as bytes (a compressed answer), with its headers.
    pub fn get_bytes(&self, path: &str, headers: &[(&str, &str)]) -> (Resp, Vec<u8>) {
        let mut r = self.agent.get(&format!("{}{path}", self.base));
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        let mut r = r.call().expect("fcm serve answers");
        let bytes = r
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_vec()
            .unwrap();
        let resp = Resp {
            status: r.status().as_u16(),
            headers: r
                .headers()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                .collect(),
            body: String::new(),
        };
        (resp, bytes)
    }
}

/// The recorded real provider answers, beside the checkout (`../shared/reference/realwire`).
/// Missing, a test fails, unless `FCM_REALWIRE_OPTIONAL` is set (a CI elsewhere, without
/// them): then `None`, after saying on stderr what was skipped.
pub fn realwire_dir(what: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/realwire");
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var_os("FCM_REALWIRE_OPTIONAL").is_none() {
        panic!(
            "the realwire samples are missing at {} (they sit beside the checkout; set FCM_REALWIRE_OPTIONAL=1 to skip {what})",
            dir.display()
        );
    }
    // Straight to stderr, past the test harness's capture, so the skip is seen.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("skipping {what}: no samples at {}\n", dir.display()).as_bytes(),
    );
    None
}

/// Waits (bounded, 20 s) until `done` holds: a test waits on what it can observe (a file, a
/// line of output, a counter), never on a fixed sleep.
pub fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
