//! fcm's files under `$FCM_HOME`: where they live, how they are written and read back.
//!
//! Every state file goes through [`write_json_atomic`] (temp file in the same directory,
//! fsync, rename, mode 0600) and [`load_json`] (a missing file is the default; a corrupt one
//! is moved aside as `NAME.corrupt-<unix-ts>` with one warning, never silently lost).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// `$FCM_HOME`, else the platform config directory + `/fcm` (e.g. `~/.config/fcm`).
pub fn fcm_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("FCM_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let base = dirs::config_dir()
        .context("cannot find a config directory: set FCM_HOME to a writable directory")?;
    Ok(base.join("fcm"))
}

/// The path of a state file such as `bench.json`.
pub fn state_file(name: &str) -> Result<PathBuf> {
    Ok(fcm_home()?.join(name))
}

/// Writes `value` as pretty JSON atomically with mode 0600, creating the directory (0700).
pub fn write_json_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).context("serialising state")?;
    write_atomic(path, &bytes)
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = open_private(&tmp)?;
        f.write_all(bytes)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// Writes a file that belongs to the user (a tool's config, config.json): atomically like
/// state files, but through a symlink to its target (dotfile repositories) and keeping the
/// file's mode (new files get 0600).
pub fn write_user_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path)
            .with_context(|| format!("cannot follow the link {}", path.display()))?,
        _ => path.to_path_buf(),
    };
    let mode = fs::metadata(&target).ok().map(|m| m.permissions());
    write_atomic(&target, bytes)?;
    if let Some(perms) = mode {
        fs::set_permissions(&target, perms)
            .with_context(|| format!("cannot restore the mode of {}", target.display()))?;
    }
    Ok(())
}

fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("cannot create directory {} (check FCM_HOME)", dir.display()))
}

fn open_private(path: &Path) -> std::io::Result<fs::File> {
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let f = opts.open(path)?;
    // A pre-existing file keeps its mode through open(): set it explicitly.
    #[cfg(unix)]
    fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(f)
}

/// Loads a JSON state file. Missing: `T::default()`. Unreadable (permissions, a directory):
/// an error naming the file. Corrupt: one warning on stderr, the file moved aside as
/// `NAME.corrupt-<unix-ts>`, and `T::default()`.
pub fn load_json<T: DeserializeOwned + Default>(path: &Path) -> Result<T> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot read {} (check FCM_HOME)", path.display()))
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Ok(v),
        Err(e) => {
            let aside = set_aside(path);
            eprintln!(
                "fcm: warning: {} is corrupt ({e}); moved it to {} and started fresh",
                path.display(),
                aside
                    .as_deref()
                    .map_or("<could not move it>".into(), |p| p.display().to_string())
            );
            Ok(T::default())
        }
    }
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
    fn user_files_keep_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("user");
        fs::create_dir_all(&dir).unwrap();
        let real = dir.join("real.json");
        fs::write(&real, "{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_user_file(&link, b"{\"a\": 1}").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link stays a link"
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\": 1}\n");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o644
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_file_is_default() {
        let v: BTreeMap<String, i32> = load_json(&temp_dir("missing").join("none.json")).unwrap();
        assert!(v.is_empty());
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
