//! SIGINT and SIGTERM (Ctrl-C and Ctrl-Break on Windows) as a flag the server polls: stop
//! accepting, drain, flush, exit 0; and a command whose output is piped into `head` ending
//! quietly when the pipe closes.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Routes SIGINT and SIGTERM (on Windows also Ctrl-Break) to [`stop_requested`].
pub fn install() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    #[cfg(windows)]
    let signals = [SIGINT, SIGTERM, signal_hook::consts::SIGBREAK];
    #[cfg(not(windows))]
    let signals = [SIGINT, SIGTERM];
    for signal in signals {
        // Fails only for signals that may not be caught, which these are not.
        let _ = signal_hook::flag::register(signal, &STOP);
    }
}

/// A command printing to a pipe that closes (`fcm usage | head -3`) ends at once and
/// quietly, as command-line tools do, instead of panicking on the failed write. Not for
/// `fcm serve`: a client closing its socket must never end the server. (Windows has no
/// SIGPIPE: there the failed write ends the command with an error.)
pub fn quiet_on_closed_pipe() {
    #[cfg(unix)]
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
