//! Where each tool keeps the settings fcm writes, on Linux, macOS and Windows: one table,
//! from each tool's own documentation (docs/tools.md's "Where each tool's settings live" is
//! made from it, and a test keeps the two the same). Pure: the environment and the home
//! directory come in as arguments.

use std::path::PathBuf;

/// The systems the table knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
    Windows,
}

impl Os {
    /// The system fcm was built for (other Unixes read as Linux).
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }

    #[cfg(test)]
    fn label(self) -> &'static str {
        match self {
            Os::Linux => "Linux",
            Os::MacOs => "macOS",
            Os::Windows => "Windows",
        }
    }
}

/// One place a tool may keep its file: on `os` (`None`: every system), under the directory
/// an environment variable names when it is set (`var`), else under the home directory;
/// `rel` is the file below that directory ("" when the variable names the file itself).
#[derive(Debug, Clone, Copy)]
pub struct Place {
    pub os: Option<Os>,
    pub var: Option<&'static str>,
    pub rel: &'static str,
}

const fn any(var: Option<&'static str>, rel: &'static str) -> Place {
    Place { os: None, var, rel }
}

const fn on(os: Os, var: Option<&'static str>, rel: &'static str) -> Place {
    Place {
        os: Some(os),
        var,
        rel,
    }
}

/// Per tool (as `fcm install` names it), its places in the order the tool looks: the first
/// whose system matches and whose variable is set (or that has none) is the file.
pub const TABLE: &[(&str, &[Place])] = &[
    (
        "claude-code",
        &[
            any(Some("CLAUDE_CONFIG_DIR"), "settings.json"),
            any(None, ".claude/settings.json"),
        ],
    ),
    (
        "codex",
        &[
            any(Some("CODEX_HOME"), "config.toml"),
            any(None, ".codex/config.toml"),
        ],
    ),
    (
        "cline",
        &[
            any(Some("CLINE_PROVIDER_SETTINGS_PATH"), ""),
            any(Some("CLINE_DATA_DIR"), "settings/providers.json"),
            any(Some("CLINE_DIR"), "data/settings/providers.json"),
            any(None, ".cline/data/settings/providers.json"),
        ],
    ),
    (
        "opencode",
        &[
            any(Some("XDG_CONFIG_HOME"), "opencode/opencode.json"),
            any(None, ".config/opencode/opencode.json"),
        ],
    ),
    (
        "crush",
        &[
            any(Some("CRUSH_GLOBAL_CONFIG"), "crushrc"),
            any(Some("XDG_CONFIG_HOME"), "crush/crushrc"),
            any(None, ".config/crush/crushrc"),
        ],
    ),
    (
        "crush-state",
        &[
            any(Some("CRUSH_GLOBAL_DATA"), "crush.json"),
            on(Os::Linux, Some("XDG_DATA_HOME"), "crush/crush.json"),
            on(Os::MacOs, Some("XDG_DATA_HOME"), "crush/crush.json"),
            on(Os::Windows, Some("LOCALAPPDATA"), "crush/crush.json"),
            on(Os::Windows, None, "AppData/Local/crush/crush.json"),
            on(Os::Linux, None, ".local/share/crush/crush.json"),
            on(Os::MacOs, None, ".local/share/crush/crush.json"),
        ],
    ),
    ("aider", &[any(None, ".aider.conf.yml")]),
    (
        "cursor",
        &[
            on(
                Os::Linux,
                Some("XDG_CONFIG_HOME"),
                "Cursor/User/globalStorage/state.vscdb",
            ),
            on(
                Os::Linux,
                None,
                ".config/Cursor/User/globalStorage/state.vscdb",
            ),
            on(
                Os::MacOs,
                None,
                "Library/Application Support/Cursor/User/globalStorage/state.vscdb",
            ),
            on(
                Os::Windows,
                Some("APPDATA"),
                "Cursor/User/globalStorage/state.vscdb",
            ),
            on(
                Os::Windows,
                None,
                "AppData/Roaming/Cursor/User/globalStorage/state.vscdb",
            ),
        ],
    ),
];

fn places(tool: &str) -> &'static [Place] {
    TABLE
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, places)| *places)
        .unwrap_or_else(|| panic!("{tool} is not in the table of settings paths"))
}

/// The file `tool` reads on `os`, for a user whose home is `home` and whose environment
/// `env` reads (an empty variable counts as unset).
pub fn resolve(
    tool: &str,
    os: Os,
    home: &std::path::Path,
    env: impl Fn(&str) -> Option<String>,
) -> PathBuf {
    for place in places(tool).iter().filter(|p| p.os.is_none_or(|o| o == os)) {
        let base = match place.var {
            Some(var) => match env(var).filter(|v| !v.is_empty()) {
                Some(dir) => PathBuf::from(dir),
                None => continue,
            },
            None => home.to_path_buf(),
        };
        return join(base, place.rel);
    }
    unreachable!("every tool has a place without a variable on every system")
}

/// `base` joined with a `/`-separated relative path, one component at a time (so Windows
/// paths get its own separator).
fn join(base: PathBuf, rel: &str) -> PathBuf {
    rel.split('/')
        .filter(|c| !c.is_empty())
        .fold(base, |p, c| p.join(c))
}

/// The file `tool` reads on this system, for this user.
pub fn here(tool: &str, home: &std::path::Path) -> PathBuf {
    resolve(tool, Os::current(), home, |v| std::env::var(v).ok())
}

/// A place as docs/tools.md shows it: `~/.codex/config.toml`, `$CODEX_HOME/config.toml` (Windows
/// variables as `%APPDATA%`).
#[cfg(test)]
fn shown(place: &Place, os: Os) -> String {
    let rel = if os == Os::Windows {
        place.rel.replace('/', "\\")
    } else {
        place.rel.to_string()
    };
    let sep = if os == Os::Windows { "\\" } else { "/" };
    let base = match (place.var, os) {
        (Some(v), Os::Windows) => format!("%{v}%"),
        (Some(v), _) => format!("${v}"),
        (None, Os::Windows) => "%USERPROFILE%".to_string(),
        (None, _) => "~".to_string(),
    };
    if rel.is_empty() {
        base
    } else {
        format!("{base}{sep}{rel}")
    }
}

/// The table as docs/tools.md shows it: per tool and system, the places in the order they win
/// (the test that keeps that copy the same is its only reader).
#[cfg(test)]
fn markdown() -> String {
    let systems = [Os::Linux, Os::MacOs, Os::Windows];
    let mut out = String::from("| tool |");
    for os in systems {
        out.push_str(&format!(" {} |", os.label()));
    }
    out.push_str("\n| --- | --- | --- | --- |\n");
    for (tool, places) in TABLE {
        out.push_str(&format!("| `{tool}` |"));
        for os in systems {
            let cell: Vec<String> = places
                .iter()
                .filter(|p| p.os.is_none_or(|o| o == os))
                .map(|p| format!("`{}`", shown(p, os)))
                .collect();
            out.push_str(&format!(" {} |", cell.join(", else ")));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn each_tool_on_each_system() {
        let home = Path::new("/home/u");
        let none = env(&[]);
        assert_eq!(
            resolve("claude-code", Os::Linux, home, &none),
            Path::new("/home/u/.claude/settings.json")
        );
        assert_eq!(
            resolve("cursor", Os::Linux, home, &none),
            Path::new("/home/u/.config/Cursor/User/globalStorage/state.vscdb")
        );
        assert_eq!(
            resolve("cursor", Os::MacOs, home, &none),
            Path::new("/home/u/Library/Application Support/Cursor/User/globalStorage/state.vscdb")
        );
        assert_eq!(
            resolve("cursor", Os::Windows, home, &none),
            Path::new("/home/u/AppData/Roaming/Cursor/User/globalStorage/state.vscdb")
        );
        assert_eq!(
            resolve(
                "cursor",
                Os::Windows,
                home,
                env(&[("APPDATA", "/r"), ("XDG_CONFIG_HOME", "/x")])
            ),
            Path::new("/r/Cursor/User/globalStorage/state.vscdb"),
            "XDG_CONFIG_HOME is Linux's only"
        );
        assert_eq!(
            resolve("cursor", Os::Linux, home, env(&[("XDG_CONFIG_HOME", "/x")])),
            Path::new("/x/Cursor/User/globalStorage/state.vscdb")
        );
        assert_eq!(
            resolve("opencode", Os::Windows, home, &none),
            Path::new("/home/u/.config/opencode/opencode.json")
        );
        assert_eq!(
            resolve(
                "crush",
                Os::MacOs,
                home,
                env(&[("CRUSH_GLOBAL_CONFIG", "/c"), ("XDG_CONFIG_HOME", "/x")])
            ),
            Path::new("/c/crushrc")
        );
        assert_eq!(
            resolve("crush-state", Os::Linux, home, &none),
            Path::new("/home/u/.local/share/crush/crush.json")
        );
        assert_eq!(
            resolve(
                "crush-state",
                Os::Windows,
                home,
                env(&[("LOCALAPPDATA", "/l")])
            ),
            Path::new("/l/crush/crush.json")
        );
        assert_eq!(
            resolve(
                "cline",
                Os::Linux,
                home,
                env(&[("CLINE_DIR", "/d"), ("CLINE_DATA_DIR", "/dd")])
            ),
            Path::new("/dd/settings/providers.json"),
            "the data directory wins over CLINE_DIR"
        );
        assert_eq!(
            resolve(
                "cline",
                Os::Linux,
                home,
                env(&[("CLINE_PROVIDER_SETTINGS_PATH", "/p.json")])
            ),
            Path::new("/p.json")
        );
        assert_eq!(
            resolve("codex", Os::Linux, home, env(&[("CODEX_HOME", "")])),
            Path::new("/home/u/.codex/config.toml"),
            "an empty variable is unset"
        );
        assert_eq!(
            resolve("aider", Os::Windows, home, &none),
            Path::new("/home/u/.aider.conf.yml")
        );
    }

    #[test]
    fn every_installable_tool_is_in_the_table_with_a_place_on_every_system() {
        let mut names = crate::install::tools::names();
        names.extend(["cursor", "crush-state"]);
        for name in names {
            for os in [Os::Linux, Os::MacOs, Os::Windows] {
                assert!(
                    places(name)
                        .iter()
                        .any(|p| p.var.is_none() && p.os.is_none_or(|o| o == os)),
                    "{name} on {os:?}"
                );
            }
        }
        // Every tool, Cursor, and the state file Crush keeps a model choice in.
        assert_eq!(TABLE.len(), crate::install::tools::names().len() + 2);
    }

    #[test]
    fn the_tools_page_shows_the_table() {
        let page = include_str!("../../docs/tools.md");
        let table = markdown();
        assert!(
            page.contains(&table),
            "docs/tools.md's table of settings paths differs from the code's; it should read:\n{table}"
        );
        assert!(table.contains(
            "| `cursor` | `$XDG_CONFIG_HOME/Cursor/User/globalStorage/state.vscdb`, else `~/.config/Cursor/User/globalStorage/state.vscdb` |"
        ));
        assert!(table.contains("`%APPDATA%\\Cursor\\User\\globalStorage\\state.vscdb`"));
    }
}
