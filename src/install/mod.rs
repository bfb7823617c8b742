//! `fcm install <tool>`: point a coding tool at `fcm serve` by editing the tool's own config.
//!
//! Every tool is a file and a list of settings (key path → value). Installing merges them
//! into the file (every other setting kept), backs the original up once as
//! `<file>.fcm-backup-<ts>`, writes atomically, and records in `$FCM_HOME/installs.json` what
//! each key held before; uninstalling puts exactly those values back. Running it twice
//! changes nothing; `--dry-run` prints the diff; an unparsable file is never touched.

pub mod cursor;
pub(crate) mod doc;
pub mod paths;
pub(crate) mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::state::files::{self, StateError};
use doc::{Doc, DocError, Format};
use tools::{Part, Setting, Tool, ToolContext, LOOPBACK_BASE};

/// What fcm wrote into one tool's file, and what was there before.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Record {
    pub(crate) file: PathBuf,
    pub(crate) settings: Vec<RecordedSetting>,
    /// Objects or tables fcm created (removed again when empty on uninstall).
    pub(crate) created: Vec<Vec<String>>,
    pub(crate) installed_at: String,
    /// The file's text before fcm wrote it (the user's own bytes, given back on uninstall
    /// while the file still holds what fcm wrote); `None` when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) original: Option<String>,
    /// fcm created the file: uninstall removes it (and the folders made for it).
    pub(crate) created_file: bool,
    /// Folders fcm made for the file, outermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) created_dirs: Vec<PathBuf>,
    /// SHA-256 (hex) of the text fcm last wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) wrote: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RecordedSetting {
    pub(crate) path: Vec<String>,
    /// The user's value before fcm's (`None`: the key did not exist).
    pub(crate) previous: Option<Value>,
    pub(crate) written: Value,
}

/// `$FCM_HOME/installs.json`: a record per file, under the tool's name for its main file
/// and `tool:part` for the others (see `tools::Part`).
pub(crate) type Records = BTreeMap<String, Record>;

/// The outcome of planning an install or uninstall.
pub(crate) struct Plan {
    pub(crate) before: String,
    pub(crate) after: String,
    pub(crate) record: Option<Record>,
    /// Uninstall: the file is fcm's own and goes (with the folders fcm made for it).
    pub(crate) remove_file: bool,
}

impl Plan {
    pub(crate) fn changes(&self) -> bool {
        self.before != self.after || self.remove_file
    }
}

fn path_refs(p: &[String]) -> Vec<&str> {
    p.iter().map(String::as_str).collect()
}

/// SHA-256 of `text`, in hex: how a record knows whether a file still holds what fcm wrote.
fn digest(text: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, text.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The file as it was before fcm: what `existed` says of it, and its text.
pub(crate) struct Found<'a> {
    pub(crate) text: &'a str,
    pub(crate) existed: bool,
}

/// Merges `settings` into the file. `previous` is an earlier record for this file: values
/// it saved stay the ones restored on uninstall.
pub(crate) fn plan_install(
    format: Format,
    found: Found<'_>,
    settings: &[Setting],
    previous: Option<&Record>,
    file: &Path,
) -> Result<Plan, DocError> {
    let text = found.text;
    let mut doc = Doc::parse(format, text)?;
    let mut record = previous.cloned().unwrap_or_default();
    record.file = file.to_path_buf();
    match previous {
        // The file as fcm left it: what was there before fcm stays known.
        Some(p) if p.wrote.as_deref() == Some(digest(text).as_str()) => {}
        // Changed since: the user's file is this one without fcm's settings.
        Some(p) => {
            let without = plan_uninstall(format, text, p)?;
            record.created_file = without.remove_file || !found.existed;
            record.original = (!record.created_file).then_some(without.after);
        }
        None => {
            record.original = found.existed.then(|| text.to_string());
            record.created_file = !found.existed;
        }
    }
    for s in settings {
        let path: Vec<&str> = s.path.iter().map(|k| &**k).collect();
        let current = doc.get(&path);
        if current.as_ref() == Some(&s.value) || (s.if_missing && current.is_some()) {
            continue;
        }
        let owned: Vec<String> = path.iter().map(|k| k.to_string()).collect();
        match record.settings.iter_mut().find(|r| r.path == owned) {
            Some(r) => {
                // The user changed the key since fcm wrote it: theirs is what to restore.
                if current.as_ref() != Some(&r.written) {
                    r.previous = current;
                }
                r.written = s.value.clone();
            }
            None => record.settings.push(RecordedSetting {
                path: owned,
                previous: current,
                written: s.value.clone(),
            }),
        }
        for c in doc.set(&path, &s.value)? {
            if !record.created.contains(&c) {
                record.created.push(c);
            }
        }
    }
    record.installed_at = crate::time::rfc3339(crate::time::now_ms());
    let mut after = doc.render();
    // A file fcm writes from nothing ends its last line like any other.
    if text.trim().is_empty() && !after.is_empty() && !after.ends_with('\n') {
        after.push('\n');
    }
    if after == text {
        // Nothing to change: the record stays as it was.
        return Ok(Plan {
            before: text.to_string(),
            after,
            record: previous.cloned(),
            remove_file: false,
        });
    }
    record.wrote = Some(digest(&after));
    Ok(Plan {
        before: text.to_string(),
        after,
        record: Some(record),
        remove_file: false,
    })
}

/// Removes what `record` wrote. While the file holds exactly what fcm wrote, the user's
/// own text comes back byte for byte (and a file fcm created goes); after the user changed
/// it, each of fcm's settings is undone where it still holds fcm's value, the rest kept.
pub(crate) fn plan_uninstall(
    format: Format,
    text: &str,
    record: &Record,
) -> Result<Plan, DocError> {
    let untouched = record.wrote.as_deref() == Some(digest(text).as_str());
    if untouched && (record.original.is_some() || record.created_file) {
        return Ok(Plan {
            before: text.to_string(),
            after: record.original.clone().unwrap_or_default(),
            record: None,
            remove_file: record.original.is_none(),
        });
    }
    let mut doc = Doc::parse(format, text)?;
    for s in &record.settings {
        let path = path_refs(&s.path);
        if doc.get(&path).as_ref() != Some(&s.written) {
            continue;
        }
        match &s.previous {
            Some(v) => {
                doc.set(&path, v)?;
            }
            None => doc.remove(&path),
        }
    }
    for c in record.created.iter().rev() {
        let path = path_refs(c);
        if doc.is_empty_at(&path) {
            doc.remove(&path);
        }
    }
    let remove_file = record.created_file && doc.is_empty();
    Ok(Plan {
        before: text.to_string(),
        after: if remove_file {
            String::new()
        } else {
            doc.render()
        },
        record: None,
        remove_file,
    })
}

/// A line with the value of a key-like setting (`apiKey`, `token`, `secret`, ...) cut down
/// to its last characters, so diffs never print a secret.
fn mask_secret(line: &str) -> String {
    // A command's flag: `--api-key VALUE`.
    if let Some(at) = line.find("--api-key ") {
        let start = at + "--api-key ".len();
        let end = line[start..].find(' ').map_or(line.len(), |i| start + i);
        let value = line[start..end].trim_matches(['\'', '"']);
        let hint = crate::providers::catalog::key_hint(value);
        return format!("{}\"{hint}\"{}", &line[..start], &line[end..]);
    }
    let lower = line.to_ascii_lowercase();
    let Some(colon) = line.find([':', '=']) else {
        return line.to_string();
    };
    let rest = line[colon + 1..].trim();
    // Secrets are strings: a count or a price named "…_per_token" is not one.
    let plain = serde_json::from_str::<Value>(rest.trim_end_matches(','))
        .is_ok_and(|v| v.is_number() || v.is_boolean() || v.is_null());
    if plain || !names_a_secret(&lower[..colon]) {
        return line.to_string();
    }
    // A JSON line's separating comma stays, as the file has it.
    let comma = if rest.ends_with(',') { "," } else { "" };
    let value = rest
        .trim_end_matches(',')
        .trim_matches('"')
        .trim_matches('\'');
    format!(
        "{}{} \"{}\"{comma}",
        &line[..colon],
        &line[colon..=colon],
        crate::providers::catalog::key_hint(value)
    )
}

/// Whether a setting's name (lower case) is a secret's: a word of it is, or ends in, `key`,
/// `token`, `secret`, `password` or `auth` (`apiKey`, `ANTHROPIC_AUTH_TOKEN`,
/// `experimental_bearer_token`); `default_max_tokens` and `keybindings` are not.
fn names_a_secret(name: &str) -> bool {
    name.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        ["key", "token", "secret", "password", "auth"]
            .iter()
            .any(|s| w.ends_with(s))
    })
}

/// A line diff for `--dry-run` and installs (`-` removed, `+` added, two lines of context;
/// secret values masked).
pub(crate) fn diff(before: &str, after: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    // Longest common subsequence table; config files are small.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut lines: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] > lcs[i + 1][j]) {
            lines.push(('+', b[j]));
            j += 1;
        } else {
            lines.push(('-', a[i]));
            i += 1;
        }
    }
    let near = |k: usize| {
        lines[k.saturating_sub(2)..(k + 3).min(lines.len())]
            .iter()
            .any(|(c, _)| *c != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, l)) in lines.iter().enumerate() {
        if *c != ' ' || near(k) {
            if skipped {
                out.push_str("  ...\n");
                skipped = false;
            }
            out.push_str(&format!("{c} {}\n", mask_secret(l)));
        } else {
            skipped = true;
        }
    }
    out
}

/// The original of a tool's file could not be copied aside, so fcm does not edit it.
#[derive(Debug)]
pub(crate) struct BackupError {
    pub(crate) file: PathBuf,
    pub(crate) backup: PathBuf,
    pub(crate) source: std::io::Error,
}

impl std::fmt::Display for BackupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot back up {} to {}",
            self.file.display(),
            self.backup.display()
        )
    }
}

impl std::error::Error for BackupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Backs up `file` once (the first time fcm touches it); returns the backup's path.
pub(crate) fn backup_once(file: &Path) -> Result<Option<PathBuf>, BackupError> {
    if !file.exists() {
        return Ok(None);
    }
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("config");
    let dir = file.parent().unwrap_or(Path::new("."));
    let prefix = format!("{name}.fcm-backup-");
    let exists = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        })
        .unwrap_or(false);
    if exists {
        return Ok(None);
    }
    let backup = dir.join(format!("{prefix}{}", crate::time::now_ms() / 1000));
    match std::fs::copy(file, &backup) {
        Ok(_) => Ok(Some(backup)),
        Err(source) => Err(BackupError {
            file: file.to_path_buf(),
            backup,
            source,
        }),
    }
}

pub(crate) fn records_path() -> Result<PathBuf, StateError> {
    files::state_file("installs.json")
}

pub(crate) fn load_records() -> Result<Records, StateError> {
    files::load_json(&records_path()?)
}

pub(crate) fn save_records(r: &Records) -> Result<(), StateError> {
    files::write_json_atomic(&records_path()?, r)
}

/// Where a tool's own config sends it: the loopback port of the fcm base URL it holds, and
/// whether the key it sends is the access token fcm expects (`ctx.token`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pointing {
    pub(crate) port: u16,
    pub(crate) token_matches: bool,
}

/// Where the tool's config file points, read from the file itself: `None` when it holds no
/// fcm base URL (not set up, or no file).
pub(crate) fn pointing(tool: &Tool, ctx: &ToolContext) -> Option<Pointing> {
    let mut port = None;
    let mut token_matches = true;
    let main = (tool.parts)(ctx).swap_remove(0);
    for (s, found) in current(&main, ctx)? {
        match s.value.as_str() {
            Some(v) if v.starts_with(LOOPBACK_BASE) => {
                port = port.or_else(|| found.as_ref()?.as_str().and_then(loopback_port));
            }
            Some(v) if v == ctx.token => {
                token_matches &= found.as_ref().and_then(Value::as_str) == Some(v);
            }
            _ => {}
        }
    }
    Some(Pointing {
        port: port?,
        token_matches,
    })
}

/// The port of an `http://127.0.0.1:PORT...` URL.
pub(crate) fn loopback_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix(LOOPBACK_BASE)?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Whether fcm's settings are in every file of the tool's now: the values an install
/// recorded (whatever model or port it was given), else the ones it would write for `ctx`;
/// `None` when its main file is missing or unreadable.
pub(crate) fn installed(tool: &Tool, ctx: &ToolContext, records: &Records) -> Option<bool> {
    let parts = (tool.parts)(ctx);
    let mut all = true;
    for (n, part) in parts.iter().enumerate() {
        let recorded = records.get(&part.key).filter(|r| !r.settings.is_empty());
        let found = match recorded {
            Some(r) => read_doc(&r.file, part.format).map(|doc| {
                r.settings
                    .iter()
                    .all(|s| doc.get(&path_refs(&s.path)).as_ref() == Some(&s.written))
            }),
            None => current(part, ctx).map(|f| f.iter().all(|(s, v)| v.as_ref() == Some(&s.value))),
        };
        match found {
            Some(ok) => all &= ok,
            None if n == 0 => return None,
            None => all = false,
        }
    }
    Some(all)
}

fn read_doc(path: &Path, format: Format) -> Option<Doc> {
    Doc::parse(format, &std::fs::read_to_string(path).ok()?).ok()
}

/// Each of fcm's settings for a tool's file with what the file holds there now; `None`
/// when the file is missing or unreadable.
fn current(part: &Part, ctx: &ToolContext) -> Option<Vec<(Setting, Option<Value>)>> {
    let doc = read_doc(&part.path, part.format)?;
    Some(
        (part.settings)(ctx, &doc)
            .into_iter()
            .map(|s| {
                let found = doc.get(&path_refs(&s.path));
                (s, found)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> ToolContext {
        ToolContext {
            home: PathBuf::from("/home/u"),
            port: 19280,
            model: "fcm".into(),
            token: "fcm-local".into(),
            cwd: PathBuf::from("/home/u"),
            env: Default::default(),
        }
    }

    /// Plans an install of `tool`'s main file over `text` (`None`: no file).
    fn install(tool: &str, c: &ToolContext, text: Option<&str>, record: Option<&Record>) -> Plan {
        let tool = tools::find(tool).unwrap();
        let part = (tool.parts)(c).swap_remove(0);
        let doc = Doc::parse(part.format, text.unwrap_or("")).unwrap();
        let settings = (part.settings)(c, &doc);
        let found = Found {
            text: text.unwrap_or(""),
            existed: text.is_some(),
        };
        plan_install(part.format, found, &settings, record, Path::new("/x")).unwrap()
    }

    fn uninstall(text: &str, record: &Record) -> Plan {
        plan_uninstall(Format::Json, text, record).unwrap()
    }

    #[test]
    fn where_a_tools_config_points() {
        let dir = std::env::temp_dir().join(format!("fcm-pointing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let c = ToolContext {
            home: dir.clone(),
            ..ctx()
        };
        let tool = tools::find("claude-code").unwrap();
        assert_eq!(pointing(tool, &c), None, "no file");
        let file = tool.path(&c);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let p = install(
            "claude-code",
            &ToolContext {
                port: 19281,
                ..ctx()
            },
            Some("{}"),
            None,
        );
        std::fs::write(&file, &p.after).unwrap();
        assert_eq!(
            pointing(tool, &c),
            Some(Pointing {
                port: 19281,
                token_matches: true
            })
        );
        let other_token = ToolContext {
            token: "another".into(),
            ..ToolContext {
                home: dir.clone(),
                ..ctx()
            }
        };
        assert!(!pointing(tool, &other_token).unwrap().token_matches);
        std::fs::write(&file, r#"{"env": {"FOO": "bar"}}"#).unwrap();
        assert_eq!(pointing(tool, &c), None, "not set up");
        assert_eq!(loopback_port("http://127.0.0.1:19280/v1"), Some(19280));
        assert_eq!(loopback_port("https://api.example.com"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn install_is_idempotent_and_uninstall_gives_the_bytes_back() {
        let original = "{\n  \"theme\": \"dark\",\n  \"env\": {\"ANTHROPIC_MODEL\": \"opus\", \"FOO\": \"bar\"}\n}\n";
        let p = install("claude-code", &ctx(), Some(original), None);
        assert!(p.changes());
        let after: Value = serde_json::from_str(&p.after).unwrap();
        assert_eq!(after["theme"], "dark");
        assert_eq!(after["env"]["FOO"], "bar");
        assert_eq!(after["env"]["ANTHROPIC_BASE_URL"], "http://127.0.0.1:19280");
        assert_eq!(after["env"]["ANTHROPIC_MODEL"], "fcm");
        let record = p.record.unwrap();
        let again = install("claude-code", &ctx(), Some(&p.after), Some(&record));
        assert!(!again.changes(), "a second install changes nothing");
        let undone = uninstall(&p.after, &again.record.unwrap());
        assert_eq!(undone.after, original, "the user's bytes are back");
        assert!(!undone.remove_file);
    }

    #[test]
    fn uninstall_leaves_keys_the_user_changed_and_drops_what_fcm_created() {
        let p = install("claude-code", &ctx(), None, None);
        let record = p.record.as_ref().unwrap();
        assert!(record.created_file && record.original.is_none());
        let clean = uninstall(&p.after, record);
        assert!(clean.remove_file, "the file fcm created goes");
        let edited = p.after.replace(
            "\"ANTHROPIC_MODEL\": \"fcm\"",
            "\"ANTHROPIC_MODEL\": \"mine\"",
        );
        let undone = uninstall(&edited, record);
        assert!(!undone.remove_file, "it holds the user's setting now");
        let v: Value = serde_json::from_str(&undone.after).unwrap();
        assert_eq!(v, json!({"env": {"ANTHROPIC_MODEL": "mine"}}));
    }

    #[test]
    fn unparsable_files_are_refused() {
        let part = (tools::find("codex").unwrap().parts)(&ctx()).swap_remove(0);
        let found = Found {
            text: "model = [",
            existed: true,
        };
        let err = plan_install(part.format, found, &[], None, Path::new("/x"))
            .err()
            .unwrap();
        assert!(matches!(err, DocError::Toml(_)), "{err}");
    }

    #[test]
    fn diffs_never_show_secrets() {
        let d = diff(
            "openai-api-key: sk-REALSECRET123\n",
            "openai-api-key: \"fcm-local\"\n",
        );
        assert!(!d.contains("REALSECRET") && d.contains("…T123"), "{d}");
        let d = diff(
            "{}",
            "{\n  \"ANTHROPIC_AUTH_TOKEN\": \"fcm-0123456789abcdef\"\n}",
        );
        assert!(
            !d.contains("0123456789abcdef") && d.contains("…cdef"),
            "{d}"
        );
        assert_eq!(
            mask_secret("  \"model\": \"fcm\","),
            "  \"model\": \"fcm\","
        );
        for plain in [
            "  \"default_max_tokens\": 8192,",
            "  \"keybindings\": \"vim\",",
            "    \"input_cost_per_token\": 0,",
        ] {
            assert_eq!(mask_secret(plain), plain);
        }
        for secret in [
            "  \"apiKey\": \"sk-0123456789\",",
            "  \"api_key\": \"sk-0123456789\",",
        ] {
            assert!(!mask_secret(secret).contains("0123456789"), "{secret}");
        }
        let d = mask_secret("provider add fcm --base-url http://127.0.0.1:1/v1 --api-key 'tok-0123456789abcdef' --x y");
        assert!(
            !d.contains("0123456789ab") && d.ends_with("cdef\" --x y"),
            "{d}"
        );
        // The comma after a JSON value stays, masked or not.
        let masked = mask_secret("    \"ANTHROPIC_AUTH_TOKEN\": \"fcm-0123456789abcdef\",");
        assert!(masked.ends_with("cdef\","), "{masked}");
    }

    #[test]
    fn reinstall_after_a_user_change_restores_the_users_value() {
        let p = install(
            "claude-code",
            &ctx(),
            Some(r#"{"env": {"ANTHROPIC_MODEL": "opus"}}"#),
            None,
        );
        let changed = p.after.replace(
            "\"ANTHROPIC_MODEL\": \"fcm\"",
            "\"ANTHROPIC_MODEL\": \"sonnet-mine\"",
        );
        let again = install("claude-code", &ctx(), Some(&changed), p.record.as_ref());
        let undone = uninstall(&again.after, again.record.as_ref().unwrap());
        let v: Value = serde_json::from_str(&undone.after).unwrap();
        assert_eq!(v["env"]["ANTHROPIC_MODEL"], "sonnet-mine");
        // A user's other change made between installs survives the uninstall too.
        let with_theme = again.after.replacen('{', "{\n  \"theme\": \"light\",", 1);
        let third = install(
            "claude-code",
            &ctx(),
            Some(&with_theme),
            again.record.as_ref(),
        );
        let undone = uninstall(&third.after, third.record.as_ref().unwrap());
        let v: Value = serde_json::from_str(&undone.after).unwrap();
        assert_eq!(v["theme"], "light");
        assert_eq!(v["env"]["ANTHROPIC_MODEL"], "sonnet-mine");
        assert!(v["env"].get("ANTHROPIC_BASE_URL").is_none());
    }

    #[test]
    fn opencode_gets_every_slot_and_its_allowlist() {
        let text = "{\n  // mine\n  \"enabled_providers\": [\"anthropic\"],\n  \"disabled_providers\": [\"fcm\", \"groq\"],\n  \"agent\": {\"plan\": {\"model\": \"anthropic/x\"}, \"build\": {\"temperature\": 0.1}},\n}\n";
        let p = install("opencode", &ctx(), Some(text), None);
        let doc = Doc::parse(Format::Json, &p.after).unwrap();
        for slot in [
            &["model"][..],
            &["small_model"],
            &["agent", "plan", "model"],
        ] {
            assert_eq!(doc.get(slot), Some(json!("fcm/fcm")), "{slot:?}");
        }
        assert_eq!(
            doc.get(&["agent", "build", "model"]),
            None,
            "an agent without a model keeps the default"
        );
        assert_eq!(
            doc.get(&["enabled_providers"]),
            Some(json!(["anthropic", "fcm"]))
        );
        assert_eq!(doc.get(&["disabled_providers"]), Some(json!(["groq"])));
        assert_eq!(
            doc.get(&["provider", "fcm", "models", "fcm", "limit"]),
            Some(json!({"context": tools::CONTEXT, "output": tools::OUTPUT}))
        );
        assert!(p.after.starts_with("{\n  // mine\n"), "{}", p.after);
        assert_eq!(uninstall(&p.after, p.record.as_ref().unwrap()).after, text);
    }

    #[test]
    fn diff_shows_changes_with_context() {
        let d = diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nD\ne\nf\ng\nh\n");
        assert!(d.contains("- d\n+ D\n"), "{d}");
        assert!(d.contains("+ h"), "{d}");
        assert!(!d.contains("  a"), "far context is elided: {d}");
    }
}
