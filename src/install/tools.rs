//! The coding tools fcm can configure: where each keeps its settings and what fcm sets.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::doc::Format;

/// How every tool is pointed at `fcm serve`: loopback, then the port.
pub(crate) const LOOPBACK_BASE: &str = "http://127.0.0.1:";

/// What a tool's settings depend on.
pub(crate) struct ToolContext {
    /// The user's home directory.
    pub(crate) home: PathBuf,
    pub(crate) port: u16,
    /// The model name the tool sends (`fcm` routes automatically).
    pub(crate) model: String,
    /// What the tool sends as its key (fcm's access token when one is set).
    pub(crate) token: String,
}

impl ToolContext {
    fn base(&self) -> String {
        format!("{}{}", LOOPBACK_BASE, self.port)
    }
}

/// One key path and the value fcm puts there.
pub(crate) struct Setting {
    pub(crate) path: Vec<&'static str>,
    pub(crate) value: Value,
    /// Only written when the key is absent (structure a file needs, stamps that must not
    /// change on every install).
    pub(crate) if_missing: bool,
}

fn set(path: &[&'static str], value: Value) -> Setting {
    Setting {
        path: path.to_vec(),
        value,
        if_missing: false,
    }
}

fn ensure(path: &[&'static str], value: Value) -> Setting {
    Setting {
        path: path.to_vec(),
        value,
        if_missing: true,
    }
}

pub(crate) struct Tool {
    pub(crate) name: &'static str,
    pub(crate) label: &'static str,
    pub(crate) format: Format,
    pub(crate) settings: fn(&ToolContext) -> Vec<Setting>,
    /// What to do after installing, besides `fcm serve`.
    pub(crate) next: &'static str,
}

impl Tool {
    /// Its settings file on this system (see [`super::paths`]).
    pub(crate) fn path(&self, ctx: &ToolContext) -> PathBuf {
        super::paths::here(self.name, &ctx.home)
    }
}

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "claude-code",
        label: "Claude Code",
        format: Format::Json,
        settings: |c| {
            // An auth token, not ANTHROPIC_API_KEY: with an API key interactive Claude Code
            // asks whether to use it and defaults to No.
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
                s.push(Setting { path: vec!["env", var], value: json!(c.model), if_missing: false });
            }
            s
        },
        next: "run `claude` as usual",
    },
    Tool {
        name: "codex",
        label: "Codex CLI",
        format: Format::Toml,
        settings: |c| {
            vec![
                set(&["model"], json!(c.model)),
                set(&["model_provider"], json!("fcm")),
                set(&["model_providers", "fcm", "name"], json!("fcm")),
                set(
                    &["model_providers", "fcm", "base_url"],
                    json!(format!("{}/v1", c.base())),
                ),
                set(&["model_providers", "fcm", "wire_api"], json!("responses")),
                // Sent as `Authorization: Bearer`, which fcm serve checks when it has a token.
                set(&["model_providers", "fcm", "experimental_bearer_token"], json!(c.token)),
            ]
        },
        next: "run `codex` as usual",
    },
    Tool {
        name: "cline",
        label: "Cline CLI",
        format: Format::Json,
        settings: |c| {
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
        },
        next: "run `cline` as usual (VS Code extension: Settings → API Provider \"OpenAI Compatible\", Base URL http://127.0.0.1:<port>/v1, any API key, model fcm)",
    },
    Tool {
        name: "opencode",
        label: "opencode",
        format: Format::Json,
        settings: |c| {
            vec![
                set(
                    &["provider", "fcm", "npm"],
                    json!("@ai-sdk/openai-compatible"),
                ),
                set(&["provider", "fcm", "name"], json!("fcm")),
                set(
                    &["provider", "fcm", "options", "baseURL"],
                    json!(format!("{}/v1", c.base())),
                ),
                set(&["provider", "fcm", "options", "apiKey"], json!(c.token)),
                set(
                    &["provider", "fcm", "models"],
                    json!({ c.model.clone(): {"name": c.model} }),
                ),
                set(&["model"], json!(format!("fcm/{}", c.model))),
            ]
        },
        next: "run `opencode` and pick the fcm model",
    },
    Tool {
        name: "crush",
        label: "Crush",
        format: Format::Json,
        settings: |c| {
            vec![
                set(&["providers", "fcm", "type"], json!("openai-compat")),
                set(
                    &["providers", "fcm", "base_url"],
                    json!(format!("{}/v1", c.base())),
                ),
                set(&["providers", "fcm", "api_key"], json!(c.token)),
                set(
                    &["providers", "fcm", "models"],
                    json!([{"id": c.model, "name": c.model, "context_window": 131072, "default_max_tokens": 8192}]),
                ),
            ]
        },
        next: "run `crush` and pick the fcm model",
    },
    Tool {
        name: "aider",
        label: "Aider",
        format: Format::Yaml,
        settings: |c| {
            vec![
                set(&["openai-api-base"], json!(format!("{}/v1", c.base()))),
                set(&["openai-api-key"], json!(c.token)),
                set(&["model"], json!(format!("openai/{}", c.model))),
            ]
        },
        next: "run `aider` as usual",
    },
];

pub(crate) fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

pub(crate) fn names() -> Vec<&'static str> {
    TOOLS.iter().map(|t| t.name).collect()
}
