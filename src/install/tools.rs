//! The coding tools fcm can configure: the files each reads, what fcm sets in them for every
//! model slot the tool has, and what would win over those settings (project files, the
//! environment), so that "installed" means the tool will really call fcm.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::doc::{Doc, Format, COMMANDS_BLOCK};

/// How every tool is pointed at `fcm serve`: loopback, then the port.
pub(crate) const LOOPBACK_BASE: &str = "http://127.0.0.1:";

/// The window and answer budget fcm declares for its model where a tool asks for them (OpenCode's
/// `limit`, Crush's `context_window`, Aider's model metadata). The window is the one most strong
/// free models have; fcm routes a request to a model with room for it, trims history when none
/// has, and lowers an answer budget no model has room for.
pub(crate) const CONTEXT: u64 = 131_072;
/// The answer budget a tool asks for by default: enough for any one coding turn, where
/// OpenCode asks 32,000 without a declared limit.
pub(crate) const OUTPUT: u64 = 16_384;

/// What a tool's settings depend on.
pub(crate) struct ToolContext {
    /// The user's home directory.
    pub(crate) home: PathBuf,
    pub(crate) port: u16,
    /// The model name the tool sends (`fcm` routes automatically).
    pub(crate) model: String,
    /// What the tool sends as its key (fcm's access token when one is set).
    pub(crate) token: String,
    /// The folder the tool runs in: its project files (up to the git root) win over the
    /// global ones fcm writes.
    pub(crate) cwd: PathBuf,
    /// The environment the tool runs in (a snapshot).
    pub(crate) env: BTreeMap<String, String>,
}

impl ToolContext {
    fn base(&self) -> String {
        format!("{}{}", LOOPBACK_BASE, self.port)
    }

    /// A variable of the environment, when set and not empty.
    pub(crate) fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The folders from the working folder up to its git root (the working folder alone
    /// outside a repository), innermost first.
    fn project_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        for dir in self.cwd.ancestors() {
            if dir == self.home {
                break;
            }
            dirs.push(dir.to_path_buf());
            if dir.join(".git").exists() {
                return dirs;
            }
        }
        dirs.truncate(1);
        dirs
    }
}

/// One key path and the value fcm puts there.
pub(crate) struct Setting {
    pub(crate) path: Vec<String>,
    pub(crate) value: Value,
    /// Only written when the key is absent (structure a file needs, stamps that must not
    /// change on every install).
    pub(crate) if_missing: bool,
}

fn set(path: &[&str], value: Value) -> Setting {
    Setting {
        path: path.iter().map(|k| k.to_string()).collect(),
        value,
        if_missing: false,
    }
}

fn ensure(path: &[&str], value: Value) -> Setting {
    Setting {
        if_missing: true,
        ..set(path, value)
    }
}

/// One file of a tool's that fcm writes, and what it sets there.
pub(crate) struct Part {
    /// Its key in `installs.json`: the tool's name for its main file, `tool:name` for others.
    pub(crate) key: String,
    pub(crate) path: PathBuf,
    pub(crate) format: Format,
    /// What fcm sets, given what the file holds now.
    pub(crate) settings: fn(&ToolContext, &Doc) -> Vec<Setting>,
}

impl Part {
    fn main(
        tool: &str,
        path: PathBuf,
        format: Format,
        settings: fn(&ToolContext, &Doc) -> Vec<Setting>,
    ) -> Part {
        Part {
            key: tool.to_string(),
            path,
            format,
            settings,
        }
    }
}

pub(crate) struct Tool {
    pub(crate) name: &'static str,
    pub(crate) label: &'static str,
    /// The files fcm writes, the tool's main settings file first.
    pub(crate) parts: fn(&ToolContext) -> Vec<Part>,
    /// Settings that win over the ones fcm writes and send the tool elsewhere (project
    /// files, the environment), each as a sentence naming where and what. While there is
    /// one, the tool will not use fcm: an install refuses and `--list` says why.
    pub(crate) overrides: fn(&ToolContext) -> Vec<String>,
    /// What to do after installing, besides `fcm serve`.
    pub(crate) next: &'static str,
}

impl Tool {
    /// Its main settings file on this system (see [`super::paths`]).
    pub(crate) fn path(&self, ctx: &ToolContext) -> PathBuf {
        (self.parts)(ctx).swap_remove(0).path
    }
}

/// The file at `path` parsed as `format`; `None` when it is missing or unreadable.
fn read(path: &Path, format: Format) -> Option<Doc> {
    let text = std::fs::read_to_string(path).ok()?;
    Doc::parse(format, &text).ok()
}

/// `doc`'s string at `path`, and where it is, when it is set to something other than `want`.
fn differs(doc: &Doc, path: &[&str], want: &str) -> Option<String> {
    match doc.get(path) {
        Some(Value::String(s)) if s == want => None,
        Some(v) => Some(format!("{} {v}", path.join("."))),
        None => None,
    }
}

/// OpenCode's `provider/model` for fcm's model.
fn opencode_model(c: &ToolContext) -> String {
    format!("fcm/{}", c.model)
}

/// Aider's name for fcm's model (an OpenAI-compatible endpoint, through litellm).
fn aider_model(c: &ToolContext) -> String {
    format!("openai/{}", c.model)
}

/// OpenCode's global settings: `opencode.jsonc` when there is one (it is read after
/// `opencode.json` and wins), else `opencode.json`.
fn opencode_file(c: &ToolContext) -> PathBuf {
    let json = super::paths::resolve("opencode", super::paths::Os::current(), &c.home, |v| {
        c.var(v).map(str::to_string)
    });
    let jsonc = json.with_extension("jsonc");
    if jsonc.exists() {
        jsonc
    } else {
        json
    }
}

/// OpenCode settings that win over the global file and send it elsewhere: the file
/// `OPENCODE_CONFIG` names, the folder `OPENCODE_CONFIG_DIR` names, `OPENCODE_CONFIG_CONTENT`,
/// and the project's `opencode.json(c)` and `.opencode/opencode.json(c)` from the working
/// folder up to the git root.
fn opencode_overrides(c: &ToolContext) -> Vec<String> {
    let want = opencode_model(c);
    let mut docs: Vec<(String, Doc)> = Vec::new();
    if let Some(file) = c.var("OPENCODE_CONFIG") {
        if let Some(d) = read(Path::new(file), Format::Json) {
            docs.push((format!("{file} (OPENCODE_CONFIG)"), d));
        }
    }
    if let Some(dir) = c.var("OPENCODE_CONFIG_DIR") {
        for name in ["opencode.json", "opencode.jsonc"] {
            let file = Path::new(dir).join(name);
            if let Some(d) = read(&file, Format::Json) {
                docs.push((format!("{} (OPENCODE_CONFIG_DIR)", file.display()), d));
            }
        }
    }
    if let Some(text) = c.var("OPENCODE_CONFIG_CONTENT") {
        if let Ok(d) = Doc::parse(Format::Json, text) {
            docs.push(("OPENCODE_CONFIG_CONTENT".into(), d));
        }
    }
    if c.var("OPENCODE_DISABLE_PROJECT_CONFIG").is_none() {
        for dir in c.project_dirs() {
            for rel in [
                "opencode.json",
                "opencode.jsonc",
                ".opencode/opencode.json",
                ".opencode/opencode.jsonc",
            ] {
                let file = dir.join(rel);
                if let Some(d) = read(&file, Format::Json) {
                    docs.push((file.display().to_string(), d));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (place, d) in &docs {
        let mut said: Vec<String> = ["model", "small_model"]
            .iter()
            .filter_map(|k| differs(d, &[k], &want))
            .collect();
        for section in ["agent", "mode"] {
            for name in d.keys(&[section]) {
                said.extend(differs(d, &[section, name.as_str(), "model"], &want));
            }
        }
        if let Some(Value::Array(allowed)) = d.get(&["enabled_providers"]) {
            if !allowed.contains(&json!("fcm")) {
                said.push(format!("enabled_providers {}", Value::Array(allowed)));
            }
        }
        if let Some(Value::Array(off)) = d.get(&["disabled_providers"]) {
            if off.contains(&json!("fcm")) {
                said.push(format!("disabled_providers {}", Value::Array(off)));
            }
        }
        if !said.is_empty() {
            out.push(format!("{place} sets {}", said.join(", ")));
        }
    }
    out
}

/// `text` as one word of a shell command line: single-quoted unless it is plainly safe.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Crush settings that win over the global `crushrc` and its state file and choose another
/// model: the project's `.crushrc`, `crushrc`, `.crush.json` and `crush.json` from the
/// working folder up to the git root, and the project's own state (`.crush/crush.json`).
fn crush_overrides(c: &ToolContext) -> Vec<String> {
    let want = format!("fcm/{}", c.model);
    let mut out = Vec::new();
    let mut files = vec![c.cwd.join(".crush").join("crush.json")];
    for dir in c.project_dirs() {
        for name in [".crushrc", "crushrc", ".crush.json", "crush.json"] {
            files.push(dir.join(name));
        }
    }
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let mut said = Vec::new();
        if name.ends_with("rc") {
            // Commands are not run here: a line that picks a model is enough to say.
            for line in text.lines().map(str::trim) {
                for slot in ["large", "small"] {
                    let Some(rest) = line.strip_prefix(&format!("model {slot} ")) else {
                        continue;
                    };
                    let chosen = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .trim_matches(['\'', '"']);
                    if !chosen.is_empty() && !chosen.starts_with('-') && chosen != want {
                        said.push(format!("model {slot} {chosen}"));
                    }
                }
            }
        } else if let Ok(d) = Doc::parse(Format::Json, &text) {
            for slot in ["large", "small"] {
                if let Some(p) = d.get(&["models", slot, "provider"]).filter(|p| p != "fcm") {
                    said.push(format!("models.{slot}.provider {p}"));
                }
            }
        }
        if !said.is_empty() {
            out.push(format!("{} sets {}", file.display(), said.join(", ")));
        }
    }
    out
}

/// The keys Aider reads for its endpoint and its three model slots, with fcm's values.
fn aider_settings(c: &ToolContext) -> Vec<(&'static str, String)> {
    vec![
        ("openai-api-base", format!("{}/v1", c.base())),
        ("openai-api-key", c.token.clone()),
        ("model", aider_model(c)),
        ("weak-model", aider_model(c)),
        ("editor-model", aider_model(c)),
    ]
}

/// Aider settings that win over `~/.aider.conf.yml`: the `.aider.conf.yml` of the git root
/// and of the working folder, and `AIDER_*` variables (the environment, or a `.env` file in
/// the home, git root or working folder).
fn aider_overrides(c: &ToolContext) -> Vec<String> {
    let mut out = Vec::new();
    let wanted = aider_settings(c);
    for dir in c.project_dirs() {
        let file = dir.join(".aider.conf.yml");
        if let Some(d) = read(&file, Format::Yaml) {
            let said: Vec<String> = wanted
                .iter()
                .filter_map(|(k, v)| differs(&d, &[k], v))
                .collect();
            if !said.is_empty() {
                out.push(format!("{} sets {}", file.display(), said.join(", ")));
            }
        }
    }
    let var_of = |key: &str| format!("AIDER_{}", key.to_uppercase().replace('-', "_"));
    for (key, want) in &wanted {
        let var = var_of(key);
        if let Some(v) = c.var(&var).filter(|v| v != want) {
            let shown = if key.ends_with("key") {
                "…".to_string()
            } else {
                v.to_string()
            };
            out.push(format!("the environment sets {var}={shown}"));
        }
    }
    let mut env_files = vec![c.home.join(".env")];
    env_files.extend(c.project_dirs().into_iter().map(|d| d.join(".env")));
    for file in env_files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (key, want) in &wanted {
            let var = var_of(key);
            let set_there = text.lines().any(|l| {
                l.trim_start()
                    .trim_start_matches("export ")
                    .strip_prefix(&var)
                    .and_then(|rest| rest.trim_start().strip_prefix('='))
                    .is_some_and(|v| v.trim().trim_matches(['"', '\'']) != want)
            });
            if set_there {
                out.push(format!("{} sets {var}", file.display()));
            }
        }
    }
    out
}

/// The main file of `tool` from the table of places (`super::paths`).
fn main_file(tool: &str, c: &ToolContext) -> PathBuf {
    super::paths::resolve(tool, super::paths::Os::current(), &c.home, |v| {
        c.var(v).map(str::to_string)
    })
}

fn no_overrides(_: &ToolContext) -> Vec<String> {
    Vec::new()
}

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "claude-code",
        label: "Claude Code",
        parts: |c| {
            vec![Part::main("claude-code", main_file("claude-code", c), Format::Json, |c, _| {
                // An auth token, not ANTHROPIC_API_KEY: with an API key interactive Claude
                // Code asks whether to use it and defaults to No.
                let mut s = vec![
                    set(&["env", "ANTHROPIC_BASE_URL"], json!(c.base())),
                    set(&["env", "ANTHROPIC_AUTH_TOKEN"], json!(c.token)),
                    set(&["env", "ANTHROPIC_MODEL"], json!(c.model)),
                ];
                for var in [
                    "ANTHROPIC_DEFAULT_OPUS_MODEL",
                    "ANTHROPIC_DEFAULT_SONNET_MODEL",
                    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
                ] {
                    s.push(set(&["env", var], json!(c.model)));
                }
                s
            })]
        },
        overrides: no_overrides,
        next: "run `claude` as usual",
    },
    Tool {
        name: "codex",
        label: "Codex CLI",
        parts: |c| {
            vec![Part::main("codex", main_file("codex", c), Format::Toml, |c, _| {
                vec![
                    set(&["model"], json!(c.model)),
                    set(&["model_provider"], json!("fcm")),
                    set(&["model_providers", "fcm", "name"], json!("fcm")),
                    set(
                        &["model_providers", "fcm", "base_url"],
                        json!(format!("{}/v1", c.base())),
                    ),
                    set(&["model_providers", "fcm", "wire_api"], json!("responses")),
                    // Sent as `Authorization: Bearer`, which fcm serve checks when it has a
                    // token.
                    set(&["model_providers", "fcm", "experimental_bearer_token"], json!(c.token)),
                ]
            })]
        },
        overrides: no_overrides,
        next: "run `codex` as usual",
    },
    Tool {
        name: "cline",
        label: "Cline CLI",
        parts: |c| {
            vec![Part::main("cline", main_file("cline", c), Format::Json, |c, _| {
                let p = "openai-compatible";
                vec![
                    ensure(&["version"], json!(1)),
                    ensure(&["modes"], json!({})),
                    set(&["providers", p, "settings"], json!({"provider": p, "apiKey": c.token, "model": c.model, "baseUrl": format!("{}/v1", c.base())})),
                    // Without `updatedAt` Cline silently ignores the entry.
                    ensure(&["providers", p, "updatedAt"], json!(crate::time::rfc3339(crate::time::now_ms()))),
                    set(&["providers", p, "tokenSource"], json!("manual")),
                    set(&["lastUsedProvider"], json!(p)),
                ]
            })]
        },
        overrides: no_overrides,
        next: "run `cline` as usual (VS Code extension: Settings → API Provider \"OpenAI Compatible\", Base URL http://127.0.0.1:<port>/v1, any API key, model fcm)",
    },
    Tool {
        name: "opencode",
        label: "OpenCode",
        parts: |c| {
            vec![Part::main("opencode", opencode_file(c), Format::Json, |c, doc| {
                let model = opencode_model(c);
                let mut s = vec![
                    // OpenCode adds it to a file without it when it starts: with it there, the
                    // file stays as fcm wrote it, and an uninstall gives the user's bytes back.
                    ensure(&["$schema"], json!("https://opencode.ai/config.json")),
                    set(&["provider", "fcm", "npm"], json!("@ai-sdk/openai-compatible")),
                    set(&["provider", "fcm", "name"], json!("fcm")),
                    set(
                        &["provider", "fcm", "options", "baseURL"],
                        json!(format!("{}/v1", c.base())),
                    ),
                    set(&["provider", "fcm", "options", "apiKey"], json!(c.token)),
                    // Without a `limit` OpenCode asks for 32,000 tokens of answer.
                    set(
                        &["provider", "fcm", "models", c.model.as_str()],
                        json!({"name": c.model, "limit": {"context": CONTEXT, "output": OUTPUT}}),
                    ),
                    set(&["model"], json!(model)),
                    // Titles and summaries: they carry the first prompt.
                    set(&["small_model"], json!(model)),
                ];
                // Agents (and the older modes) given a model of their own.
                for section in ["agent", "mode"] {
                    for name in doc.keys(&[section]) {
                        if doc.get(&[section, name.as_str(), "model"]).is_some() {
                            s.push(set(&[section, name.as_str(), "model"], json!(model)));
                        }
                    }
                }
                // An allowlist of providers without fcm would hide it.
                if let Some(Value::Array(mut allowed)) = doc.get(&["enabled_providers"]) {
                    if !allowed.contains(&json!("fcm")) {
                        allowed.push(json!("fcm"));
                        s.push(set(&["enabled_providers"], Value::Array(allowed)));
                    }
                }
                if let Some(Value::Array(mut off)) = doc.get(&["disabled_providers"]) {
                    if off.contains(&json!("fcm")) {
                        off.retain(|p| p != "fcm");
                        s.push(set(&["disabled_providers"], Value::Array(off)));
                    }
                }
                s
            })]
        },
        overrides: opencode_overrides,
        next: "run `opencode` as usual",
    },
    Tool {
        name: "crush",
        label: "Crush",
        parts: |c| {
            vec![
                // Crush's `crushrc` (its JSON file is deprecated): a provider, its model, and
                // both model slots, so no built-in provider whose key is in the environment
                // is picked instead.
                Part::main("crush", main_file("crush", c), Format::Commands, |c, _| {
                    let model = shell_word(&format!("fcm/{}", c.model));
                    let lines = [
                        format!(
                            "provider add fcm --type openai-compat --name fcm --base-url {} --api-key {}",
                            shell_word(&format!("{}/v1", c.base())),
                            shell_word(&c.token)
                        ),
                        format!(
                            "model add {model} --name {} --context-window {CONTEXT} --default-max-tokens {OUTPUT}",
                            shell_word(&c.model)
                        ),
                        format!("model large {model} --max-tokens {OUTPUT}"),
                        format!("model small {model} --max-tokens {OUTPUT}"),
                    ];
                    vec![set(&[COMMANDS_BLOCK], json!(lines.join("\n")))]
                }),
                // A model chosen in Crush's own screen is kept in its state file, which wins
                // over `crushrc`: where it holds a choice, fcm's replaces it.
                Part {
                    key: "crush:state".into(),
                    path: main_file("crush-state", c),
                    format: Format::Json,
                    settings: |c, doc| {
                        let chosen = doc.get(&["models"]).is_some_and(|m| m.as_object().is_some_and(|o| !o.is_empty()));
                        if !chosen {
                            return Vec::new();
                        }
                        let model = json!({"model": c.model, "provider": "fcm", "max_tokens": OUTPUT});
                        vec![set(&["models", "large"], model.clone()), set(&["models", "small"], model)]
                    },
                },
            ]
        },
        overrides: crush_overrides,
        next: "run `crush` as usual",
    },
    Tool {
        name: "aider",
        label: "Aider",
        parts: |c| {
            vec![
                Part::main("aider", main_file("aider", c), Format::Yaml, |c, _| {
                    aider_settings(c)
                        .into_iter()
                        .map(|(k, v)| set(&[k], json!(v)))
                        .collect()
                }),
                // The window and answer budget of fcm's model, which litellm does not know.
                Part {
                    key: "aider:models".into(),
                    path: c.home.join(".aider.model.metadata.json"),
                    format: Format::Json,
                    settings: |c, _| {
                        vec![set(
                            &[aider_model(c).as_str()],
                            json!({"max_input_tokens": CONTEXT, "max_output_tokens": OUTPUT, "max_tokens": OUTPUT,
                                   "input_cost_per_token": 0, "output_cost_per_token": 0,
                                   "litellm_provider": "openai", "mode": "chat"}),
                        )]
                    },
                },
            ]
        },
        overrides: aider_overrides,
        next: "run `aider` as usual",
    },
];

pub(crate) fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

pub(crate) fn names() -> Vec<&'static str> {
    TOOLS.iter().map(|t| t.name).collect()
}
