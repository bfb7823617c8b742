//! The shared harness: a temp `FCM_HOME`, a catalog pointing at a fake provider on
//! loopback, and the real `fcm` binary run as a user would run it.

#![allow(dead_code, unused_imports)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use fcm::fake_provider::{Behavior, FakeProvider, RecordedRequest};
use serde_json::{json, Value};

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

    /// Runs `fcm ARGS` with this world's environment and nothing else of the caller's.
    pub fn fcm(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fcm"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("FCM_HOME", &self.home)
            .env("FCM_CATALOG", &self.catalog)
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        run_bounded(cmd)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run_bounded(mut cmd: Command) -> Output {
    let mut child = cmd.spawn().expect("fcm binary runs");
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
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
