//! Other processes: whether one is alive, asking one to stop, whether a program is running.
//! The one place where this differs per OS, on `sysinfo` (Linux, macOS, Windows), so the
//! callers (`fcm stop`, `fcm status`, `fcm install cursor`) read the same everywhere.

use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

/// A process list read with nothing but names and states (no CPU, memory or files).
fn processes(which: ProcessesToUpdate<'_>) -> System {
    // sysinfo keeps each process's stat file open by default on Linux; fcm reads once.
    sysinfo::set_open_files_limit(0);
    let mut sys = System::new();
    sys.refresh_processes_specifics(which, true, ProcessRefreshKind::nothing());
    sys
}

/// Whether a process with this pid exists and has not exited (a zombie has).
pub fn alive(pid: u32) -> bool {
    let pid = Pid::from_u32(pid);
    let sys = processes(ProcessesToUpdate::Some(&[pid]));
    sys.process(pid)
        .is_some_and(|p| !matches!(p.status(), ProcessStatus::Zombie | ProcessStatus::Dead))
}

/// Asks a process of this user to stop: SIGTERM where there are signals (it drains and
/// saves its state), else it is ended at once (Windows). False when it could not be asked
/// (gone, or someone else's).
pub fn terminate(pid: u32) -> bool {
    let pid = Pid::from_u32(pid);
    let sys = processes(ProcessesToUpdate::Some(&[pid]));
    let Some(p) = sys.process(pid) else {
        return false;
    };
    p.kill_with(sysinfo::Signal::Term)
        .unwrap_or_else(|| p.kill())
}

/// Whether a process whose name `is` recognises is running. An error when the process
/// list cannot be read (it does not hold this very process): a caller that must not act
/// while a program runs then knows it cannot tell.
pub fn running(is: impl Fn(&str) -> bool) -> Result<bool, String> {
    if !sysinfo::IS_SUPPORTED_SYSTEM {
        return Err("this system's processes cannot be listed".into());
    }
    let sys = processes(ProcessesToUpdate::All);
    if sys.process(Pid::from_u32(std::process::id())).is_none() {
        return Err("the process list could not be read".into());
    }
    Ok(sys
        .processes()
        .values()
        .filter(|p| !matches!(p.status(), ProcessStatus::Zombie | ProcessStatus::Dead))
        .any(|p| is(&p.name().to_string_lossy())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_found_by_name() {
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX - 7));
        let me = std::env::current_exe().unwrap();
        let name = me.file_name().unwrap().to_string_lossy().to_string();
        // Linux shortens names to 15 bytes.
        let short: String = name.chars().take(15).collect();
        assert_eq!(running(|n| n == name || n == short), Ok(true));
        assert_eq!(running(|n| n == "no-such-program-fcm"), Ok(false));
    }

    #[cfg(unix)]
    #[test]
    fn terminate_stops_a_child_and_an_exited_one_is_not_alive() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(alive(child.id()));
        assert!(terminate(child.id()));
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!alive(child.id()), "reaped");
        assert!(!terminate(u32::MAX - 7));
    }
}
