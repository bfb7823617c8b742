//! SIGINT and SIGTERM as a flag the server polls: stop accepting, drain, flush, exit 0;
//! and a command whose output is piped into `head` ending quietly when the pipe closes.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// Routes SIGINT and SIGTERM to [`stop_requested`].
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// A command printing to a pipe that closes (`fcm usage | head -3`) ends at once and
/// quietly, as command-line tools do, instead of panicking on the failed write. Not for
/// `fcm serve`: a client closing its socket must never end the server.
pub fn quiet_on_closed_pipe() {
    // SAFETY: restores the default action of SIGPIPE; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Asks the server to stop as SIGTERM does (`fcm stop`, through the admin endpoint).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Sends SIGTERM (a graceful stop) to a process of this user; false when it cannot be
/// sent (gone, or someone else's).
pub fn terminate(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill sends a signal; it touches no memory of this process.
    unsafe { libc::kill(pid, libc::SIGTERM) == 0 }
}

/// Whether a process with this pid exists (signal 0 probes without sending anything).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 performs only the existence and permission check.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
