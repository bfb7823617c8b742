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
use doc::{Doc, DocError};
use tools::{Setting, Tool, ToolContext, LOOPBACK_BASE};

/// What fcm wrote into one tool's file, and what was there before.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Record {
    pub(crate) file: PathBuf,
    pub(crate) settings: Vec<RecordedSetting>,
    /// Objects or tables fcm created (removed again when empty on uninstall).
    pub(crate) created: Vec<Vec<String>>,
    pub(crate) installed_at: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RecordedSetting {
    pub(crate) path: Vec<String>,
    /// The user's value before fcm's (`None`: the key did not exist).
    pub(crate) previous: Option<Value>,
    pub(crate) written: Value,
}

/// `$FCM_HOME/installs.json`.
pub(crate) type Records = BTreeMap<String, Record>;

/// The outcome of planning an install or uninstall.
pub(crate) struct Plan {
    pub(crate) before: String,
    pub(crate) after: String,
    pub(crate) record: Option<Record>,
}

impl Plan {
    pub(crate) fn changes(&self) -> bool {
        self.before != self.after
    }
}

fn path_refs(p: &[String]) -> Vec<&str> {
    p.iter().map(String::as_str).collect()
}

/// Merges `settings` into `text`. `previous` is an earlier record for this file: values it
/// saved stay the ones restored on uninstall.
pub(crate) fn plan_install(
    tool: &Tool,
    text: &str,
    settings: &[Setting],
    previous: Option<&Record>,
    file: &Path,
) -> Result<Plan, DocError> {
    let mut doc = Doc::parse(tool.format, text)?;
    let mut record = previous.cloned().unwrap_or_default();
    record.file = file.to_path_buf();
    for s in settings {
        let path: Vec<&str> = s.path.iter().map(|k| &**k).collect();
        let current = doc.get(&path);
        if current.as_ref() == Some(&s.value) || (s.if_missing && current.is_some()) {
            continue;
        }
        let owned: Vec<String> = path.iter().map(|k| k.to_string()).collect();
        let before = doc.previous(&path);
        match record.settings.iter_mut().find(|r| r.path == owned) {
            Some(r) => {
                // The user changed the key since fcm wrote it: theirs is what to restore.
                if current.as_ref() != Some(&r.written) {
                    r.previous = before;
                }
                r.written = s.value.clone();
            }
            None => record.settings.push(RecordedSetting {
                path: owned,
                previous: before,
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
    Ok(plan(&doc, text, Some(record)))
}

/// The text to write: the edited document, or the untouched text when nothing changed.
fn plan(doc: &Doc, text: &str, record: Option<Record>) -> Plan {
    let after = if doc_changed(doc, text) {
        doc.render()
    } else {
        text.to_string()
    };
    Plan {
        before: text.to_string(),
        after,
        record,
    }
}

/// Whether editing changed the document. JSON is compared by value: re-rendering an
/// untouched file may reformat it, and an untouched file must stay byte for byte.
fn doc_changed(doc: &Doc, text: &str) -> bool {
    match (doc, Doc::parse(doc::Format::Json, text)) {
        (Doc::Json(a), Ok(Doc::Json(b))) => *a != b,
        _ => doc.render() != text,
    }
}

/// Removes what `record` wrote, restoring the user's earlier values. A key the user has
/// changed since is left as it is.
pub(crate) fn plan_uninstall(tool: &Tool, text: &str, record: &Record) -> Result<Plan, DocError> {
    let mut doc = Doc::parse(tool.format, text)?;
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
    Ok(plan(&doc, text, None))
}

/// A line with the value of a key-like setting (`apiKey`, `token`, `secret`, ...) cut down
/// to its last characters, so diffs never print a secret.
fn mask_secret(line: &str) -> String {
    let lower = line.to_ascii_lowercase();
    let Some(colon) = line.find([':', '=']) else {
        return line.to_string();
    };
    let name = &lower[..colon];
    if !["key", "token", "secret", "password", "auth"]
        .iter()
        .any(|w| name.contains(w))
    {
        return line.to_string();
    }
    let rest = line[colon + 1..].trim();
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
    for (s, found) in current(tool, ctx)? {
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

/// Whether fcm's settings are in the tool's file now.
pub(crate) fn installed(tool: &Tool, ctx: &ToolContext) -> Option<bool> {
    Some(
        current(tool, ctx)?
            .iter()
            .all(|(s, found)| found.as_ref() == Some(&s.value)),
    )
}

/// Each of fcm's settings for `tool` with what the tool's file holds there now; `None`
/// when the file is missing or unreadable.
fn current(tool: &Tool, ctx: &ToolContext) -> Option<Vec<(Setting, Option<Value>)>> {
    let text = std::fs::read_to_string(tool.path(ctx)).ok()?;
    let doc = Doc::parse(tool.format, &text).ok()?;
    Some(
        (tool.settings)(ctx)
            .into_iter()
            .map(|s| {
                let found = doc.get(&s.path.iter().map(|k| &**k).collect::<Vec<_>>());
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
        }
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
        let settings = (tool.settings)(&ToolContext {
            port: 19281,
            ..ctx()
        });
        let p = plan_install(tool, "{}", &settings, None, Path::new("/x")).unwrap();
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
    fn install_is_idempotent_and_uninstall_restores() {
        let tool = tools::find("claude-code").unwrap();
        let settings = (tool.settings)(&ctx());
        let original = "{\n  \"theme\": \"dark\",\n  \"env\": {\"ANTHROPIC_MODEL\": \"opus\", \"FOO\": \"bar\"}\n}\n";
        let p = plan_install(tool, original, &settings, None, Path::new("/x")).unwrap();
        assert!(p.changes());
        let after: Value = serde_json::from_str(&p.after).unwrap();
        assert_eq!(after["theme"], "dark");
        assert_eq!(after["env"]["FOO"], "bar");
        assert_eq!(after["env"]["ANTHROPIC_BASE_URL"], "http://127.0.0.1:19280");
        assert_eq!(after["env"]["ANTHROPIC_MODEL"], "fcm");
        let record = p.record.unwrap();
        let again =
            plan_install(tool, &p.after, &settings, Some(&record), Path::new("/x")).unwrap();
        assert!(!again.changes(), "a second install changes nothing");
        let undone = plan_uninstall(tool, &p.after, &again.record.unwrap()).unwrap();
        let back: Value = serde_json::from_str(&undone.after).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<Value>(original).unwrap(),
            "the user's values are back"
        );
    }

    #[test]
    fn uninstall_leaves_keys_the_user_changed_and_drops_what_fcm_created() {
        let tool = tools::find("claude-code").unwrap();
        let settings = (tool.settings)(&ctx());
        let p = plan_install(tool, "{}", &settings, None, Path::new("/x")).unwrap();
        let edited = p.after.replace(
            "\"ANTHROPIC_MODEL\": \"fcm\"",
            "\"ANTHROPIC_MODEL\": \"mine\"",
        );
        let undone = plan_uninstall(tool, &edited, p.record.as_ref().unwrap()).unwrap();
        let v: Value = serde_json::from_str(&undone.after).unwrap();
        assert_eq!(v, json!({"env": {"ANTHROPIC_MODEL": "mine"}}));
        let clean = plan_uninstall(tool, &p.after, p.record.as_ref().unwrap()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&clean.after).unwrap(),
            json!({}),
            "the env object fcm created is gone"
        );
    }

    #[test]
    fn unparsable_files_are_refused() {
        let tool = tools::find("codex").unwrap();
        let err = plan_install(
            tool,
            "model = [",
            &(tool.settings)(&ctx()),
            None,
            Path::new("/x"),
        )
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
        // The comma after a JSON value stays, masked or not.
        let masked = mask_secret("    \"ANTHROPIC_AUTH_TOKEN\": \"fcm-0123456789abcdef\",");
        assert!(masked.ends_with("cdef\","), "{masked}");
    }

    #[test]
    fn reinstall_after_a_user_change_restores_the_users_value() {
        let tool = tools::find("claude-code").unwrap();
        let settings = (tool.settings)(&ctx());
        let p = plan_install(
            tool,
            r#"{"env":{"ANTHROPIC_MODEL":"opus"}}"#,
            &settings,
            None,
            Path::new("/x"),
        )
        .unwrap();
        let changed = p.after.replace(
            "\"ANTHROPIC_MODEL\": \"fcm\"",
            "\"ANTHROPIC_MODEL\": \"sonnet-mine\"",
        );
        let again = plan_install(
            tool,
            &changed,
            &settings,
            p.record.as_ref(),
            Path::new("/x"),
        )
        .unwrap();
        let undone = plan_uninstall(tool, &again.after, again.record.as_ref().unwrap()).unwrap();
        let v: Value = serde_json::from_str(&undone.after).unwrap();
        assert_eq!(v["env"]["ANTHROPIC_MODEL"], "sonnet-mine");
    }

    #[test]
    fn diff_shows_changes_with_context() {
        let d = diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nD\ne\nf\ng\nh\n");
        assert!(d.contains("- d\n+ D\n"), "{d}");
        assert!(d.contains("+ h"), "{d}");
        assert!(!d.contains("  a"), "far context is elided: {d}");
    }
}
