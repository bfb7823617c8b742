//! `fcm serve` as a login service: the systemd user unit (Linux) or launchd agent (macOS)
//! that runs it, where that file goes, and the commands that load it. Pure: paths and text
//! in, the file's text and the commands out; `commands/service` writes, runs and records.

use std::path::{Path, PathBuf};

/// The first line of every file fcm writes here: who wrote it and how it goes away.
pub const MARK: &str = "Written by `fcm service install`; `fcm service uninstall` removes it.";

/// The service manager of a platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    /// A systemd user unit, `~/.config/systemd/user/fcm.service`.
    Systemd,
    /// A launchd agent, `~/Library/LaunchAgents/dev.fcm.serve.plist`.
    Launchd,
}

/// The launchd label and file name.
const LAUNCHD_LABEL: &str = "dev.fcm.serve";

impl Manager {
    /// This platform's, if fcm knows one.
    pub fn here() -> Option<Manager> {
        if cfg!(target_os = "macos") {
            Some(Manager::Launchd)
        } else if cfg!(target_os = "linux") {
            Some(Manager::Systemd)
        } else {
            None
        }
    }

    /// Where the service file goes under the user's `home`.
    pub fn file(self, home: &Path) -> PathBuf {
        match self {
            Manager::Systemd => home.join(".config/systemd/user/fcm.service"),
            Manager::Launchd => home
                .join("Library/LaunchAgents")
                .join(format!("{LAUNCHD_LABEL}.plist")),
        }
    }

    /// The service file that runs `exe serve --port PORT` with `FCM_HOME` at `fcm_home`,
    /// its log in `log` (launchd; systemd keeps it in the journal).
    pub fn text(self, exe: &Path, port: u16, fcm_home: &Path, log: &Path) -> String {
        match self {
            Manager::Systemd => format!(
                "# {MARK}\n\
                 [Unit]\n\
                 Description=fcm serve: routes coding tools to free LLMs on 127.0.0.1:{port}\n\
                 After=network-online.target\n\
                 Wants=network-online.target\n\
                 \n\
                 [Service]\n\
                 Type=simple\n\
                 ExecStart={} serve --port {port}\n\
                 Environment={}\n\
                 Restart=on-failure\n\
                 RestartSec=5\n\
                 \n\
                 [Install]\n\
                 WantedBy=default.target\n",
                systemd_quote(&exe.display().to_string()),
                systemd_quote(&format!("FCM_HOME={}", fcm_home.display())),
            ),
            Manager::Launchd => format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <!-- {MARK} -->\n\
                 <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
                 <plist version=\"1.0\">\n<dict>\n\
                 \x20 <key>Label</key><string>{LAUNCHD_LABEL}</string>\n\
                 \x20 <key>ProgramArguments</key>\n  <array>\n\
                 \x20   <string>{}</string>\n    <string>serve</string>\n    <string>--port</string>\n    <string>{port}</string>\n\
                 \x20 </array>\n\
                 \x20 <key>EnvironmentVariables</key>\n  <dict><key>FCM_HOME</key><string>{}</string></dict>\n\
                 \x20 <key>RunAtLoad</key><true/>\n\
                 \x20 <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n\
                 \x20 <key>StandardErrorPath</key><string>{}</string>\n\
                 </dict>\n</plist>\n",
                xml(&exe.display().to_string()),
                xml(&fcm_home.display().to_string()),
                xml(&log.display().to_string()),
            ),
        }
    }

    /// The commands that load and start it after the file is written.
    pub fn start_commands(self, file: &Path) -> Vec<Vec<String>> {
        let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![
                owned(&["systemctl", "--user", "daemon-reload"]),
                owned(&["systemctl", "--user", "enable", "--now", "fcm.service"]),
            ],
            Manager::Launchd => vec![owned(&[
                "launchctl",
                "load",
                "-w",
                &file.display().to_string(),
            ])],
        }
    }

    /// The commands that stop and unload it before the file is removed.
    pub fn stop_commands(self, file: &Path) -> Vec<Vec<String>> {
        let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![owned(&[
                "systemctl",
                "--user",
                "disable",
                "--now",
                "fcm.service",
            ])],
            Manager::Launchd => vec![owned(&[
                "launchctl",
                "unload",
                "-w",
                &file.display().to_string(),
            ])],
        }
    }

    /// The command that says whether it runs.
    pub fn status_command(self) -> Vec<String> {
        match self {
            Manager::Systemd => ["systemctl", "--user", "is-active", "fcm.service"],
            Manager::Launchd => ["launchctl", "list", LAUNCHD_LABEL, ""],
        }
        .iter()
        .filter(|a| !a.is_empty())
        .map(|a| a.to_string())
        .collect()
    }
}

/// A value for a systemd unit line, quoted when it holds spaces, `"` or `\`.
fn systemd_quote(v: &str) -> String {
    if v.chars()
        .any(|c| c.is_whitespace() || c == '"' || c == '\\')
    {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        v.to_string()
    }
}

/// Text for an XML element.
fn xml(v: &str) -> String {
    v.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_systemd_unit_runs_fcm_serve_with_its_home() {
        let text = Manager::Systemd.text(
            Path::new("/opt/my tools/fcm"),
            19280,
            Path::new("/home/u/.config/fcm"),
            Path::new("/x"),
        );
        assert!(text.starts_with(&format!("# {MARK}\n[Unit]\n")));
        assert!(
            text.contains("ExecStart=\"/opt/my tools/fcm\" serve --port 19280\n"),
            "{text}"
        );
        assert!(
            text.contains("Environment=FCM_HOME=/home/u/.config/fcm\n"),
            "{text}"
        );
        assert!(text.contains("WantedBy=default.target"));
        assert_eq!(
            Manager::Systemd.file(Path::new("/home/u")),
            Path::new("/home/u/.config/systemd/user/fcm.service")
        );
    }

    #[test]
    fn a_launchd_agent_is_a_plist() {
        let text = Manager::Launchd.text(
            Path::new("/usr/local/bin/fcm"),
            19281,
            Path::new("/Users/u/Library/Application Support/fcm"),
            Path::new("/Users/u/fcm & co.log"),
        );
        assert!(text.contains("<string>/usr/local/bin/fcm</string>\n    <string>serve</string>"));
        assert!(text.contains("<string>19281</string>"));
        assert!(text.contains("<string>/Users/u/fcm &amp; co.log</string>"));
        assert!(text.contains(MARK));
        assert_eq!(
            Manager::Launchd.start_commands(Path::new("/p.plist")),
            vec![vec!["launchctl", "load", "-w", "/p.plist"]]
        );
    }
}
