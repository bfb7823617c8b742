//! fcm's files under `$FCM_HOME`: where they live, how they are written and read back.
//!
//! Every state file goes through [`write_json_atomic`] (temp file in the same directory,
//! fsync, rename, mode 0600) and [`load_json`] (a missing file is the default; a corrupt one
//! is moved aside as `NAME.corrupt-<unix-ts>` with one warning, never silently lost).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why a file under `$FCM_HOME` (or a user's file written the same way) could not be read
/// or written. The message names the file and what to check; the io or serde error that
/// caused it is the [`source`](std::error::Error::source), so commands print both.
#[derive(Debug)]
pub enum StateError {
    /// Neither `FCM_HOME` nor a platform config directory.
    NoConfigDir,
    /// A value that cannot be JSON (a map with non-string keys): a bug, not the user's.
    Serialise(serde_json::Error),
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    FollowLink {
        path: PathBuf,
        source: std::io::Error,
    },
    RestoreMode {
        path: PathBuf,
        source: std::io::Error,
    },
    #[cfg_attr(not(unix), allow(dead_code))]
    MakePrivate {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::NoConfigDir => {
                f.write_str("cannot find a config directory: set FCM_HOME to a writable directory")
            }
            StateError::Serialise(_) => f.write_str("serialising state"),
            StateError::CreateDir { dir, .. } => write!(
                f,
                "cannot create directory {} (check FCM_HOME)",
                dir.display()
            ),
            StateError::Write { path, .. } => write!(f, "cannot write {}", path.display()),
            StateError::Read { path, .. } => {
                write!(f, "cannot read {} (check FCM_HOME)", path.display())
            }
            StateError::FollowLink { path, .. } => {
                write!(f, "cannot follow the link {}", path.display())
            }
            StateError::RestoreMode { path, .. } => {
                write!(f, "cannot restore the mode of {}", path.display())
            }
            StateError::MakePrivate { path, .. } => write!(
                f,
                "cannot make {} readable by you alone (mode 0600); it holds a secret fcm wrote",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StateError::NoConfigDir => None,
            StateError::Serialise(e) => Some(e),
            StateError::CreateDir { source, .. }
            | StateError::Write { source, .. }
            | StateError::Read { source, .. }
            | StateError::FollowLink { source, .. }
            | StateError::RestoreMode { source, .. }
            | StateError::MakePrivate { source, .. } => Some(source),
        }
    }
}

/// `$FCM_HOME`, else the platform config directory + `/fcm` (e.g. `~/.config/fcm`).
pub fn fcm_home() -> Result<PathBuf, StateError> {
    if let Some(home) = std::env::var_os("FCM_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let base = dirs::config_dir().ok_or(StateError::NoConfigDir)?;
    Ok(base.join("fcm"))
}

/// The user's home directory, where the coding tools keep their settings: `HOME` when it
/// is set (on Windows too, as Git Bash and MSYS set it, and as Cline and tests rely on),
/// else the system's own idea of it (the profile folder on Windows).
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
}

/// The path of a state file such as `bench.json`.
pub fn state_file(name: &str) -> Result<PathBuf, StateError> {
    Ok(fcm_home()?.join(name))
}

/// Writes `value` as pretty JSON atomically with mode 0600, creating the directory (0700).
pub fn write_json_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), StateError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(StateError::Serialise)?;
    write_atomic(path, &bytes)
}

/// The directory a state file lives in (created 0700 if missing) and the file's name, for
/// the temp and lock files made beside it.
fn dir_and_name(path: &Path) -> Result<(&Path, &str), StateError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    Ok((dir, name))
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    write_bytes_atomic(path, bytes, b"\n")
}

/// [`write_atomic`] of `bytes` then `end`, exactly: a user's file keeps its last byte.
fn write_bytes_atomic(path: &Path, bytes: &[u8], end: &[u8]) -> Result<(), StateError> {
    let (dir, name) = dir_and_name(path)?;
    let mut tmp = None;
    let result = (|| -> std::io::Result<()> {
        let (mut f, at) = create_temp(dir, name)?;
        tmp = Some(at.clone());
        f.write_all(bytes)?;
        f.write_all(end)?;
        f.sync_all()?;
        fs::rename(&at, path)?;
        // The rename is durable only once the directory entry is on disk too.
        sync_dir(dir)
    })();
    if let Err(source) = result {
        if let Some(at) = tmp {
            let _ = fs::remove_file(at);
        }
        return Err(StateError::Write {
            path: path.to_path_buf(),
            source,
        });
    }
    Ok(())
}

/// A new temp file beside the target, created exclusively (`O_EXCL`, mode 0600): a file or
/// link someone left at that name is never written through; another name is tried instead.
fn create_temp(dir: &Path, name: &str) -> std::io::Result<(fs::File, PathBuf)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let at = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        match opts.open(&at) {
            Ok(f) => return Ok((f, at)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temp name")))
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

/// What a user's file that fcm writes holds, which decides its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// Settings only: the file keeps the mode the user gave it.
    Settings,
    /// A key or the access token: the file is made 0600, whatever its mode was, so no
    /// other user of the machine can read the secret fcm put there.
    Secret,
}

/// Writes a file that belongs to the user (a tool's config, config.json): atomically like
/// state files, but byte for byte as given (nothing added at its end) and through a symlink
/// to its target (dotfile repositories). New files get 0600; an existing file keeps its mode
/// unless it [`Holds::Secret`].
pub fn write_user_file(path: &Path, bytes: &[u8], holds: Holds) -> Result<(), StateError> {
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(path).map_err(|source| StateError::FollowLink {
                path: path.to_path_buf(),
                source,
            })?
        }
        _ => path.to_path_buf(),
    };
    // The temp file is 0600, so a secret is never readable by others, not even briefly.
    let mode = match holds {
        Holds::Settings => fs::metadata(&target).ok().map(|m| m.permissions()),
        Holds::Secret => None,
    };
    write_bytes_atomic(&target, bytes, b"")?;
    if let Some(perms) = mode {
        fs::set_permissions(&target, perms).map_err(|source| StateError::RestoreMode {
            path: target.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Makes a file fcm wrote a secret into by other means (Cursor's database) readable by
/// its owner alone, as [`Holds::Secret`] does for the files fcm writes whole.
pub fn make_private(path: &Path) -> Result<(), StateError> {
    // Elsewhere the file sits in the user's profile, which only its owner may read.
    #[cfg(not(unix))]
    let _ = path;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(|source| {
            StateError::MakePrivate {
                path: path.to_path_buf(),
                source,
            }
        })?;
    }
    Ok(())
}

pub(crate) fn create_private_dir(dir: &Path) -> Result<(), StateError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|source| StateError::CreateDir {
        dir: dir.to_path_buf(),
        source,
    })
}

/// How long [`update_json`] waits for another process's change of the same file.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);
/// A lock file older than this was left by a process that died holding it.
const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads, changes and writes back a state file that several fcm processes change (a
/// running server and a `fcm bench` both add to `usage.json`): under `NAME.lock`, created
/// exclusively, so one process's change is never lost under another's. A lock left by a
/// dead process is taken over after 30 s; one still held after 3 s makes this an error.
/// Returns the file as written.
pub fn update_json<T: Serialize + DeserializeOwned + Default>(
    path: &Path,
    change: impl FnOnce(&mut T),
) -> Result<T, StateError> {
    let (dir, name) = dir_and_name(path)?;
    let lock = dir.join(format!("{name}.lock"));
    let started = std::time::Instant::now();
    loop {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let stale = fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > STALE_LOCK);
                if stale {
                    let _ = fs::remove_file(&lock);
                    continue;
                }
                if started.elapsed() > LOCK_WAIT {
                    return Err(StateError::Write {
                        path: path.to_path_buf(),
                        source: std::io::Error::other(format!(
                            "{} is held by another fcm process (remove it if none runs)",
                            lock.display()
                        )),
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(source) => return Err(StateError::Write { path: lock, source }),
        }
    }
    let result = load_json::<T>(path).and_then(|mut value| {
        change(&mut value);
        write_json_atomic(path, &value).map(|()| value)
    });
    let _ = fs::remove_file(&lock);
    result
}

/// Largest state file fcm reads. Its own files stay far below (the history ring of 500
/// requests is well under 1 MiB); a larger one is not fcm's, or is broken, and reading it
/// whole would hold its size several times over in memory while it is parsed.
pub const MAX_STATE_FILE: u64 = 16 * 1024 * 1024;

/// Loads a JSON state file. Missing: `T::default()`. Unreadable (permissions, a directory):
/// an error naming the file. Corrupt, or larger than [`MAX_STATE_FILE`]: one warning on
/// stderr, the file moved aside as `NAME.corrupt-<unix-ts>`, and `T::default()`.
pub fn load_json<T: DeserializeOwned + Default>(path: &Path) -> Result<T, StateError> {
    let read_error = |source| StateError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(source) => return Err(read_error(source)),
    };
    let size = file.metadata().map_err(read_error)?.len();
    let mut bytes = Vec::new();
    if size <= MAX_STATE_FILE {
        // At most one byte past the limit: a file that grew meanwhile is caught too.
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_STATE_FILE + 1),
            &mut bytes,
        )
        .map_err(read_error)?;
    }
    if size > MAX_STATE_FILE || bytes.len() as u64 > MAX_STATE_FILE {
        let why = format!(
            "is larger than {} MiB ({} bytes), far more than fcm ever writes",
            MAX_STATE_FILE / (1024 * 1024),
            size.max(bytes.len() as u64)
        );
        warn_set_aside(path, &why);
        return Ok(T::default());
    }
    match serde_json::from_slice(&bytes) {
        Ok(v) => Ok(v),
        Err(e) => {
            warn_set_aside(path, &format!("is corrupt ({e})"));
            Ok(T::default())
        }
    }
}

/// Moves a state file fcm cannot use aside, saying so once on stderr.
fn warn_set_aside(path: &Path, why: &str) {
    let aside = set_aside(path);
    eprintln!(
        "fcm: warning: {} {why}; moved it to {} and started fresh",
        path.display(),
        aside
            .as_deref()
            .map_or("<could not move it>".into(), |p| p.display().to_string())
    );
}

fn set_aside(path: &Path) -> Option<PathBuf> {
    let ts = crate::time::now_ms() / 1000;
    let name = path.file_name()?.to_str()?;
    let mut aside = path.with_file_name(format!("{name}.corrupt-{ts}"));
    let mut n = 1;
    while aside.exists() {
        aside = path.with_file_name(format!("{name}.corrupt-{ts}-{n}"));
        n += 1;
    }
    fs::rename(path, &aside).ok()?;
    Some(aside)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fcm-state-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn atomic_write_is_private_and_round_trips() {
        let dir = temp_dir("write");
        let path = dir.join("nested/x.json");
        let mut v = BTreeMap::new();
        v.insert("a".to_string(), 1);
        write_json_atomic(&path, &v).unwrap();
        write_json_atomic(&path, &v).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let back: BTreeMap<String, i32> = load_json(&path).unwrap();
        assert_eq!(back, v);
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp files left");
        fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_a_temp_name_is_never_written_through() {
        let dir = temp_dir("planted");
        fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        fs::write(&victim, "keep").unwrap();
        // Every name the next writes could pick, planted as links to the victim.
        for n in 0..64 {
            let at = dir.join(format!(".x.json.tmp-{}-{n}", std::process::id()));
            std::os::unix::fs::symlink(&victim, at).unwrap();
        }
        let path = dir.join("x.json");
        let _ = write_atomic(&path, b"{}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn user_files_keep_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("user");
        fs::create_dir_all(&dir).unwrap();
        let real = dir.join("real.json");
        fs::write(&real, "{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_user_file(&link, b"{\"a\": 1}", Holds::Settings).unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link stays a link"
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\": 1}");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o644
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn user_files_holding_a_secret_become_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("secret");
        fs::create_dir_all(&dir).unwrap();
        let real = dir.join("real.json");
        fs::write(&real, "{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_user_file(&link, b"{\"token\": \"t\"}", Holds::Secret).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&real), 0o600, "through the link, on the file itself");
        let other = dir.join("other.db");
        fs::write(&other, "x").unwrap();
        fs::set_permissions(&other, fs::Permissions::from_mode(0o664)).unwrap();
        make_private(&other).unwrap();
        assert_eq!(mode(&other), 0o600);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_file_is_default() {
        let v: BTreeMap<String, i32> = load_json(&temp_dir("missing").join("none.json")).unwrap();
        assert!(v.is_empty());
    }

    #[test]
    fn unreadable_file_is_an_error_naming_it_and_its_cause() {
        let dir = temp_dir("unreadable");
        let path = dir.join("history.json");
        fs::create_dir_all(&path).unwrap();
        let err = load_json::<BTreeMap<String, i32>>(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cannot read {} (check FCM_HOME)", path.display())
        );
        let cause = std::error::Error::source(&err).expect("the io error");
        assert!(cause.is::<std::io::Error>(), "{cause}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn oversized_file_is_set_aside_unread() {
        let dir = temp_dir("oversized");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.json");
        // Valid JSON, one byte over the limit.
        let mut text = String::from("{\"a\": \"");
        text.push_str(&"x".repeat(MAX_STATE_FILE as usize + 1 - text.len() - 2));
        text.push_str("\"}");
        assert_eq!(text.len() as u64, MAX_STATE_FILE + 1);
        fs::write(&path, &text).unwrap();
        let v: BTreeMap<String, String> = load_json(&path).unwrap();
        assert!(v.is_empty());
        assert!(!path.exists());
        // At the limit, the same document is read.
        text.replace_range(8..9, "");
        fs::write(&path, &text).unwrap();
        let v: BTreeMap<String, String> = load_json(&path).unwrap();
        assert_eq!(v["a"].len(), MAX_STATE_FILE as usize - 9);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn corrupt_file_is_set_aside() {
        let dir = temp_dir("corrupt");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("breakers.json");
        fs::write(&path, "{not json").unwrap();
        let v: BTreeMap<String, i32> = load_json(&path).unwrap();
        assert!(v.is_empty());
        assert!(!path.exists());
        let aside: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(aside.len(), 1);
        assert!(aside[0].starts_with("breakers.json.corrupt-"));
        assert_eq!(
            fs::read_to_string(dir.join(&aside[0])).unwrap(),
            "{not json"
        );
        fs::remove_dir_all(dir).unwrap();
    }
}
