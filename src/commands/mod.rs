//! One module per command: each declares its flags, loads what it needs, does its job and
//! prints the result. This file holds what several of them share: the usage error, the
//! catalog and config they start from, editing config.json, and provider lookup; `exit`
//! holds the exit codes every command returns.

pub(crate) mod admin;
pub(crate) mod bench;
pub(crate) mod breakers;
pub(crate) mod check;
pub(crate) mod completions;
pub(crate) mod demo;
pub(crate) mod did_you_mean;
pub(crate) mod doctor;
pub(crate) mod exit;
pub(crate) mod fake_provider;
pub(crate) mod history;
pub(crate) mod install;
pub(crate) mod keys;
pub(crate) mod man;
pub(crate) mod models;
pub(crate) mod serve;
pub(crate) mod service;
pub(crate) mod sets;
pub(crate) mod status;
pub(crate) mod stop;
pub(crate) mod top;
pub(crate) mod usage;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::install::doc::{Doc, DocError, Format};
use crate::providers::catalog::{self, Catalog, KeySource, Provider};
use crate::secrets::{self, Secrets};
use crate::state::config::Config;
use crate::state::files;

/// A mistake in how fcm was called; `cli` exits 2 on it.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for returning a usage error.
pub(crate) fn usage<T>(msg: impl Into<String>) -> anyhow::Result<T> {
    Err(UsageError(msg.into()).into())
}

/// What most commands start from: the catalog (with the user's custom providers) and config.
pub(crate) struct Setup {
    pub(crate) catalog: Catalog,
    pub(crate) config: Config,
}

impl Setup {
    /// Loads the catalog and `$FCM_HOME/config.json`, printing config warnings to stderr.
    pub(crate) fn load() -> Result<Setup> {
        let mut setup = Setup::load_without_overlay()?;
        // What the last `fcm models --refresh` found: retired models out, new ones in.
        let overlay: crate::providers::overlay::Overlay =
            files::load_json(&files::state_file("catalog-overlay.json")?)?;
        overlay.apply(&mut setup.catalog);
        setup.catalog.share_line_quotas();
        Ok(setup)
    }

    /// [`load`](Self::load) without the last `fcm models --refresh` laid over the catalog
    /// (what the next refresh compares against).
    pub(crate) fn load_without_overlay() -> Result<Setup> {
        let mut catalog = Catalog::load()?;
        let path = files::state_file("config.json")?;
        let loaded = Config::load(&path)?;
        for w in &loaded.warnings {
            eprintln!("fcm: {}: {w}", path.display());
        }
        loaded.config.merge_into(&mut catalog)?;
        Ok(Setup {
            catalog,
            config: loaded.config,
        })
    }

    pub(crate) fn keys(&self) -> KeySource<'_> {
        KeySource {
            env: &catalog::process_env,
            config_keys: &self.config.api_keys,
        }
    }

    /// Every secret this setup knows, built once per command and shared by everything it
    /// writes: each provider's key (environment or `apiKeys`, every `apiKeys` entry too),
    /// the credential headers of providers, and the access tokens (`token`, the `--token`
    /// flag's value if any, `FCM_TOKEN` and `serve.token`, whichever is in force).
    pub(crate) fn secrets(&self, token: Option<&str>) -> Arc<Secrets> {
        let keys = self.keys();
        let mut values: Vec<String> = self
            .config
            .api_keys
            .values()
            .flat_map(|list| list.iter().map(str::to_string))
            .collect();
        for p in &self.catalog.providers {
            values.extend(keys.keys(p).into_iter().map(|k| k.value));
            values.extend(
                p.headers
                    .iter()
                    .filter(|(name, _)| secrets::is_credential_header(name))
                    .map(|(_, value)| secrets::credential(value).to_string()),
            );
        }
        values.extend(token.map(str::to_string));
        values.extend(std::env::var("FCM_TOKEN").ok());
        values.extend(self.config.serve.token.clone());
        Arc::new(Secrets::new(values))
    }
}

/// Applies `change` to `$FCM_HOME/config.json` in place and returns the file's path. Every
/// other setting and the key order are kept (serde_json's `preserve_order`), the write is
/// atomic and leaves the file 0600 (it is where fcm keeps keys and the access token), and a
/// file that cannot be parsed or changed is left as it was.
pub(crate) fn edit_config(
    change: impl FnOnce(&mut Doc) -> Result<(), DocError>,
) -> Result<PathBuf> {
    let path = files::state_file("config.json")?;
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut doc = Doc::parse(Format::Json, &text).map_err(|e| {
        anyhow::anyhow!("cannot parse {}: {e}; nothing was changed", path.display())
    })?;
    change(&mut doc).map_err(|e| {
        anyhow::anyhow!("cannot change {}: {e}; nothing was changed", path.display())
    })?;
    let mut after = doc.render();
    // A file fcm writes from nothing ends its last line like any other.
    if text.trim().is_empty() && !after.ends_with('\n') {
        after.push('\n');
    }
    files::write_user_file(&path, after.as_bytes(), files::Holds::Secret)?;
    Ok(path)
}

/// The provider named `id`, or a usage error listing the valid ones.
pub(crate) fn require_provider<'a>(catalog: &'a Catalog, id: &str) -> Result<&'a Provider> {
    match catalog.provider(id) {
        Some(p) => Ok(p),
        None => {
            let ids: Vec<&str> = catalog.providers.iter().map(|p| p.id.as_str()).collect();
            usage(format!(
                "unknown provider {id:?}; valid providers: {}",
                ids.join(", ")
            ))
        }
    }
}

/// A random-enough id for this process (session headers), without a random crate.
pub(crate) fn process_id_token() -> String {
    let t = crate::time::now_ms();
    let mix = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(std::process::id()).rotate_left(32);
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        mix >> 32,
        (mix >> 16) & 0xffff,
        mix & 0xfff,
        (t >> 4) & 0xfff,
        mix.rotate_left(17) & 0xffff_ffff_ffff
    )
}
