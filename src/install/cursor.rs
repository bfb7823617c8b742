//! `fcm install cursor`: Cursor keeps its model settings in an SQLite database
//! (`state.vscdb`, table `ItemTable`), not in a text file. Cursor calls custom endpoints
//! from its own servers, so the base URL must be a public HTTPS tunnel to `fcm serve`,
//! and fcm's access token becomes Cursor's API key.
//!
//! Cursor rewrites the database when it exits, so fcm refuses to edit it while Cursor runs.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};
use serde_json::{json, Value};

use super::{Record, RecordedSetting};

/// Why Cursor's settings could not be read or written. Every refusal happens before the
/// database is changed; the SQLite, serde or io error behind it is the
/// [`source`](std::error::Error::source).
#[derive(Debug)]
pub enum CursorError {
    /// Cursor creates `state.vscdb` on its first start.
    NoDatabase(PathBuf),
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The file opens but is not Cursor's database (or not a database at all).
    NoItemTable {
        path: PathBuf,
        source: rusqlite::Error,
    },
    ReadSettings(rusqlite::Error),
    SettingsNotJson(serde_json::Error),
    SettingsNotObject,
    /// Reading the key row or writing failed; SQLite's own message says why.
    Database(rusqlite::Error),
    /// No random source for a new access token.
    NoRandomness(getrandom::Error),
    /// Cursor is running: it rewrites its database when it exits.
    Running(PathBuf),
    /// Whether Cursor runs cannot be told (the process list cannot be read): fcm does not
    /// touch the database then, unless told Cursor is closed.
    CannotTell {
        db: PathBuf,
        why: String,
    },
}

impl std::fmt::Display for CursorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CursorError::NoDatabase(db) => write!(
                f,
                "Cursor's settings database {} does not exist; start Cursor once, quit it, and run this again",
                db.display()
            ),
            CursorError::Open { path, .. } => write!(f, "cannot open {}", path.display()),
            CursorError::NoItemTable { path, .. } => write!(
                f,
                "{} has no ItemTable; is it Cursor's state.vscdb?",
                path.display()
            ),
            CursorError::ReadSettings(_) => f.write_str("reading Cursor's settings row"),
            CursorError::SettingsNotJson(_) => {
                f.write_str("Cursor's settings row is not JSON; nothing was changed")
            }
            CursorError::SettingsNotObject => {
                f.write_str("Cursor's settings row is not a JSON object; nothing was changed")
            }
            CursorError::Database(e) => std::fmt::Display::fmt(e, f),
            CursorError::NoRandomness(_) => {
                f.write_str("the system's random source failed to make an access token")
            }
            CursorError::Running(db) => write!(
                f,
                "Cursor is running: quit it first (it rewrites {} when it exits); nothing was changed",
                db.display()
            ),
            CursorError::CannotTell { db, why } => write!(
                f,
                "cannot tell whether Cursor is running ({why}), and it rewrites {} when it exits; \
                 quit Cursor and run this again with --cursor-closed; nothing was changed",
                db.display()
            ),
        }
    }
}

impl std::error::Error for CursorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CursorError::NoDatabase(_)
            | CursorError::SettingsNotObject
            | CursorError::Running(_)
            | CursorError::CannotTell { .. } => None,
            CursorError::Open { source, .. }
            | CursorError::NoItemTable { source, .. }
            | CursorError::ReadSettings(source) => Some(source),
            CursorError::SettingsNotJson(e) => Some(e),
            // Its message is SQLite's own, so what lies under it is what comes next.
            CursorError::Database(e) => e.source(),
            CursorError::NoRandomness(e) => Some(e),
        }
    }
}

impl From<rusqlite::Error> for CursorError {
    fn from(e: rusqlite::Error) -> Self {
        CursorError::Database(e)
    }
}

/// The row holding Cursor's user settings as one JSON object.
pub const APPLICATION_USER_KEY: &str = "src.vs.platform.reactivestorage.browser.reactiveStorageServiceImpl.persistentStorage.applicationUser";
/// The row holding the OpenAI API key Cursor sends.
pub(crate) const OPENAI_KEY: &str = "cursorAuth/openAIKey";

/// `state.vscdb` in the platform's Cursor config directory (see [`super::paths`]).
pub(crate) fn db_path(home: &Path) -> PathBuf {
    super::paths::here("cursor", home)
}

/// Whether a process name is Cursor's (`Cursor`, `cursor`, `Cursor.exe`, a path to one).
fn is_cursor(name: &str) -> bool {
    let name = name.trim();
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let base = base.strip_suffix(".exe").unwrap_or(base);
    base.eq_ignore_ascii_case("cursor")
}

/// Fails closed: Ok only when `lookup` (a process list, [`crate::process::running`]) says
/// no Cursor runs, or the user said Cursor is closed (`closed`). A lookup that fails is
/// an error, never "not running": Cursor overwrites its database when it exits.
pub(crate) fn ensure_closed(
    db: &Path,
    closed: bool,
    lookup: impl FnOnce(&dyn Fn(&str) -> bool) -> Result<bool, String>,
) -> Result<(), CursorError> {
    match lookup(&is_cursor) {
        Ok(true) => Err(CursorError::Running(db.to_path_buf())),
        Ok(false) => Ok(()),
        Err(_) if closed => Ok(()),
        Err(why) => Err(CursorError::CannotTell {
            db: db.to_path_buf(),
            why,
        }),
    }
}

/// What fcm writes: (path inside the settings object or the key row, value).
fn wanted(url: &str, model: &str, token: &str) -> Vec<(Vec<String>, Value)> {
    let p = |s: &[&str]| s.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    vec![
        (p(&["applicationUser", "openAIBaseUrl"]), json!(url)),
        (p(&["applicationUser", "useOpenAIKey"]), json!(true)),
        (
            p(&["applicationUser", "aiSettings", "userAddedModels"]),
            json!([model]),
        ),
        (
            p(&["applicationUser", "aiSettings", "modelOverrideEnabled"]),
            json!([model]),
        ),
        (p(&["openAIKey"]), json!(token)),
    ]
}

/// The current value at a path: in the settings JSON or the key row.
fn get(settings: &Value, key: Option<&str>, path: &[String]) -> Option<Value> {
    match path[0].as_str() {
        "openAIKey" => key.map(|k| json!(k)),
        _ => path[1..]
            .iter()
            .try_fold(settings, |v, k| v.get(k))
            .cloned(),
    }
}

/// Sets (or with `None` removes) a value; returns the objects it had to create.
fn set(settings: &mut Value, path: &[String], value: Option<&Value>) -> Vec<Vec<String>> {
    let mut created = Vec::new();
    let mut v = settings;
    for (i, k) in path[1..path.len() - 1].iter().enumerate() {
        match v.get(k) {
            Some(Value::Object(_)) => {}
            // A non-object value here is the user's: it is kept (fcm's key goes nowhere).
            Some(_) => return created,
            None => {
                v[k.as_str()] = json!({});
                created.push(path[..i + 2].to_vec());
            }
        }
        v = v.get_mut(k).expect("just inserted");
    }
    let last = path[path.len() - 1].as_str();
    match value {
        Some(val) => v[last] = val.clone(),
        None => {
            if let Some(o) = v.as_object_mut() {
                o.shift_remove(last);
            }
        }
    }
    created
}

/// Lists get fcm's model added rather than replaced.
fn merged(current: Option<&Value>, want: &Value) -> Value {
    match (current.and_then(Value::as_array), want.as_array()) {
        (Some(have), Some(add)) => {
            let mut out = have.clone();
            for m in add {
                if !out.contains(m) {
                    out.push(m.clone());
                }
            }
            Value::Array(out)
        }
        _ => want.clone(),
    }
}

fn read(conn: &Connection) -> Result<(Value, Option<String>), CursorError> {
    let raw: Option<String> = conn
        .query_row(
            "SELECT value FROM ItemTable WHERE key = ?1",
            [APPLICATION_USER_KEY],
            |r| r.get(0),
        )
        .optional()
        .map_err(CursorError::ReadSettings)?;
    let settings: Value = match raw {
        Some(text) => serde_json::from_str(&text).map_err(CursorError::SettingsNotJson)?,
        None => json!({}),
    };
    if !settings.is_object() {
        return Err(CursorError::SettingsNotObject);
    }
    let key: Option<String> = conn
        .query_row(
            "SELECT value FROM ItemTable WHERE key = ?1",
            [OPENAI_KEY],
            |r| r.get(0),
        )
        .optional()?;
    Ok((settings, key))
}

fn write(conn: &Connection, settings: &Value, key: Option<&str>) -> Result<(), CursorError> {
    conn.execute(
        "INSERT OR REPLACE INTO ItemTable (key, value) VALUES (?1, ?2)",
        [APPLICATION_USER_KEY, &settings.to_string()],
    )?;
    match key {
        Some(k) => conn.execute(
            "INSERT OR REPLACE INTO ItemTable (key, value) VALUES (?1, ?2)",
            [OPENAI_KEY, k],
        )?,
        None => conn.execute("DELETE FROM ItemTable WHERE key = ?1", [OPENAI_KEY])?,
    };
    Ok(())
}

fn open(db: &Path) -> Result<Connection, CursorError> {
    if !db.exists() {
        return Err(CursorError::NoDatabase(db.to_path_buf()));
    }
    let conn = Connection::open(db).map_err(|source| CursorError::Open {
        path: db.to_path_buf(),
        source,
    })?;
    conn.query_row("SELECT count(*) FROM ItemTable", [], |_| Ok(()))
        .map_err(|source| CursorError::NoItemTable {
            path: db.to_path_buf(),
            source,
        })?;
    Ok(conn)
}

/// Applies fcm's settings; returns the record for uninstall (merged with an earlier one)
/// and a description of the changes. `dry_run` writes nothing.
pub(crate) fn install(
    db: &Path,
    url: &str,
    model: &str,
    token: &str,
    previous: Option<&Record>,
    dry_run: bool,
) -> Result<(Record, Vec<String>), CursorError> {
    let conn = open(db)?;
    let (mut settings, mut key) = read(&conn)?;
    let mut record = previous.cloned().unwrap_or_default();
    record.file = db.to_path_buf();
    let mut changes = Vec::new();
    for (path, want) in wanted(url, model, token) {
        let current = get(&settings, key.as_deref(), &path);
        let value = merged(current.as_ref(), &want);
        if current.as_ref() == Some(&value) {
            continue;
        }
        let shown = if path[0] == "openAIKey" {
            json!(crate::providers::catalog::key_hint(token))
        } else {
            value.clone()
        };
        changes.push(format!("{} = {shown}", path.join(".")));
        if !record.settings.iter().any(|r| r.path == path) {
            record.settings.push(RecordedSetting {
                path: path.clone(),
                previous: current,
                written: value.clone(),
            });
        } else if let Some(r) = record.settings.iter_mut().find(|r| r.path == path) {
            r.written = value.clone();
        }
        match path[0].as_str() {
            "openAIKey" => key = value.as_str().map(str::to_string),
            _ => {
                for c in set(&mut settings, &path, Some(&value)) {
                    if !record.created.contains(&c) {
                        record.created.push(c);
                    }
                }
            }
        }
    }
    if !dry_run && !changes.is_empty() {
        write(&conn, &settings, key.as_deref())?;
    }
    record.installed_at = crate::time::rfc3339(crate::time::now_ms());
    Ok((record, changes))
}

/// Puts back what `record` says was there before fcm (keys changed since are left alone).
pub(crate) fn uninstall(db: &Path, record: &Record) -> Result<usize, CursorError> {
    let conn = open(db)?;
    let (mut settings, mut key) = read(&conn)?;
    let mut restored = 0;
    for r in &record.settings {
        if get(&settings, key.as_deref(), &r.path).as_ref() != Some(&r.written) {
            continue;
        }
        restored += 1;
        match r.path[0].as_str() {
            "openAIKey" => {
                key = r
                    .previous
                    .as_ref()
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }
            _ => {
                set(&mut settings, &r.path, r.previous.as_ref());
            }
        }
    }
    for c in record.created.iter().rev() {
        if get(&settings, None, c).is_some_and(|v| v.as_object().is_some_and(|o| o.is_empty())) {
            set(&mut settings, c, None);
        }
    }
    write(&conn, &settings, key.as_deref())?;
    Ok(restored)
}

/// A new random access token (from the system's random source).
pub(crate) fn new_token() -> Result<String, CursorError> {
    crate::edge::access::random_token("fcm-", 24).map_err(CursorError::NoRandomness)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_must_be_known_closed() {
        let db = Path::new("/home/u/.config/Cursor/User/globalStorage/state.vscdb");
        let names = |list: &'static [&'static str]| {
            move |is: &dyn Fn(&str) -> bool| Ok::<bool, String>(list.iter().any(|n| is(n)))
        };
        assert!(ensure_closed(db, false, names(&["bash", "fcm"])).is_ok());
        for running in ["cursor", "Cursor", "Cursor.exe", "/opt/cursor/cursor"] {
            let list: &'static [&'static str] = Box::leak(Box::new([running]));
            let e = ensure_closed(db, false, names(list)).unwrap_err();
            assert!(matches!(e, CursorError::Running(_)), "{running}");
            // Saying it is closed does not outvote a Cursor that is seen running.
            assert!(ensure_closed(db, true, names(list)).is_err());
        }
        assert!(ensure_closed(db, false, names(&["cursor-agent", "notcursor"])).is_ok());
        // The process list cannot be read: refused, never taken as "not running".
        let fails = |_: &dyn Fn(&str) -> bool| Err::<bool, String>("no process list".into());
        let e = ensure_closed(db, false, fails).unwrap_err();
        assert!(matches!(e, CursorError::CannotTell { .. }));
        let message = e.to_string();
        assert!(
            message.contains("cannot tell whether Cursor is running (no process list)")
                && message.contains("--cursor-closed")
                && message.contains("nothing was changed"),
            "{message}"
        );
        assert!(
            ensure_closed(db, true, fails).is_ok(),
            "the user said it is closed"
        );
    }

    fn db(dir: &Path, settings: &Value) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join("state.vscdb");
        let _ = std::fs::remove_file(&path);
        let c = Connection::open(&path).unwrap();
        c.execute(
            "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
            [],
        )
        .unwrap();
        c.execute(
            "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
            [APPLICATION_USER_KEY, &settings.to_string()],
        )
        .unwrap();
        c.execute(
            "INSERT INTO ItemTable (key, value) VALUES ('other', 'kept')",
            [],
        )
        .unwrap();
        path
    }

    #[test]
    fn install_merges_and_uninstall_restores() {
        let dir = std::env::temp_dir().join(format!("fcm-cursor-{}", std::process::id()));
        let original = json!({"theme": "dark", "openAIBaseUrl": "https://old", "aiSettings": {"userAddedModels": ["gpt-x"]}});
        let path = db(&dir, &original);
        let (record, changes) = install(
            &path,
            "https://t.example/v1",
            "fcm",
            "fcm-tok-123456789",
            None,
            false,
        )
        .unwrap();
        assert_eq!(changes.len(), 5, "{changes:?}");
        assert!(
            changes.iter().any(|c| c.contains("…6789"))
                && !changes.iter().any(|c| c.contains("fcm-tok-123456789"))
        );
        let conn = Connection::open(&path).unwrap();
        let (s, key) = read(&conn).unwrap();
        assert_eq!(s["openAIBaseUrl"], "https://t.example/v1");
        assert_eq!(s["useOpenAIKey"], true);
        assert_eq!(s["aiSettings"]["userAddedModels"], json!(["gpt-x", "fcm"]));
        assert_eq!(s["theme"], "dark");
        assert_eq!(key.as_deref(), Some("fcm-tok-123456789"));
        let (_, again) = install(
            &path,
            "https://t.example/v1",
            "fcm",
            "fcm-tok-123456789",
            Some(&record),
            false,
        )
        .unwrap();
        assert!(again.is_empty(), "idempotent: {again:?}");
        uninstall(&path, &record).unwrap();
        let (s, key) = read(&conn).unwrap();
        assert_eq!(s, original);
        assert_eq!(key, None);
        let other: String = conn
            .query_row("SELECT value FROM ItemTable WHERE key='other'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(other, "kept");
        // An open database cannot be removed on Windows.
        drop(conn);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn databases_fcm_cannot_read_are_refused() {
        let dir = std::env::temp_dir().join(format!("fcm-cursor-bad-{}", std::process::id()));
        let missing = dir.join("none.vscdb");
        let err = install(&missing, "https://t/v1", "fcm", "tok", None, true).unwrap_err();
        assert!(matches!(err, CursorError::NoDatabase(_)), "{err}");
        let path = db(&dir, &json!([1, 2]));
        let err = install(&path, "https://t/v1", "fcm", "tok", None, false).unwrap_err();
        assert!(matches!(err, CursorError::SettingsNotObject), "{err}");
        let empty = dir.join("empty.vscdb");
        Connection::open(&empty)
            .unwrap()
            .execute("CREATE TABLE Other (k)", [])
            .unwrap();
        let err = uninstall(&empty, &Record::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} has no ItemTable; is it Cursor's state.vscdb?",
                empty.display()
            )
        );
        assert!(std::error::Error::source(&err).is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn tokens_are_random() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 4 + 48);
    }
}
