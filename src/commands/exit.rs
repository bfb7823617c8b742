//! Every exit code fcm returns, in one table: its number and what it means. Users and CI
//! depend on the numbers, so they never change. `fcm check` lists its codes in its help
//! (argh wants them there as literals; a test in `check` keeps that list in step with this
//! table).
//!
//! Which outcome gives which code is decided where it happens (`cli` for errors, `check`
//! for failure kinds, each command for its own result); this module only names the codes.

/// How an fcm process ends, as its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitCode {
    /// The command did its job.
    Ok = 0,
    /// A runtime failure: an error, or a command whose job failed (no usable model, a
    /// failed doctor check, no server to stop).
    Failure = 1,
    /// A bad flag, or an unknown provider or model.
    Usage = 2,
    /// `fcm check`: no key set.
    NoKey = 3,
    /// `fcm check`: the provider rejected the key.
    KeyRejected = 4,
    /// `fcm check`: rate limited or out of quota.
    RateLimited = 5,
    /// `fcm check`: an answer that cannot be used.
    Unusable = 6,
    /// `fcm check`: no answer.
    Unreachable = 7,
    /// `fcm check`: an answer, but not the right one.
    WrongAnswer = 8,
    /// `fcm check`: the provider's notice (a paid plan, credits, sign up) instead of an answer.
    ProviderNotice = 9,
    /// Stopped by Ctrl-C (SIGINT) before the job was done: 128 + the signal's number, as
    /// shells report it. `fcm bench` saves what it measured first.
    Interrupted = 130,
}

impl ExitCode {
    /// Every code, in order (the man page lists them).
    pub(crate) const ALL: [ExitCode; 11] = [
        ExitCode::Ok,
        ExitCode::Failure,
        ExitCode::Usage,
        ExitCode::NoKey,
        ExitCode::KeyRejected,
        ExitCode::RateLimited,
        ExitCode::Unusable,
        ExitCode::Unreachable,
        ExitCode::WrongAnswer,
        ExitCode::ProviderNotice,
        ExitCode::Interrupted,
    ];

    /// The number the process exits with.
    pub(crate) fn code(self) -> i32 {
        self as i32
    }

    /// What the code means, in the words `fcm check --help` prints for the codes it lists
    /// (that help comes from argh's `error_code` attribute, which takes literals only: a test
    /// in `check` holds the two equal) and the man page's exit status section.
    pub(crate) fn description(self) -> &'static str {
        match self {
            ExitCode::Ok => "success",
            ExitCode::Failure => "runtime failure",
            ExitCode::Usage => "usage error",
            ExitCode::NoKey => "key not set (or a variable the provider URL needs)",
            ExitCode::KeyRejected => "key rejected (HTTP 401/403)",
            ExitCode::RateLimited => "rate limited or out of quota",
            ExitCode::Unusable => {
                "answer unusable (empty, error payload, invalid JSON, HTML, bad request)"
            }
            ExitCode::Unreachable => "unreachable, timed out, or provider error",
            ExitCode::WrongAnswer => "answered, but wrong (17 + 25 is not what it said)",
            ExitCode::ProviderNotice => {
                "a provider notice instead of an answer (a paid plan, credits, quota or sign-up)"
            }
            ExitCode::Interrupted => "interrupted (Ctrl-C); fcm bench saves what it measured",
        }
    }

    /// The code with this number, if fcm has one.
    #[cfg(test)]
    pub(crate) fn from_code(code: i32) -> Option<ExitCode> {
        ExitCode::ALL.into_iter().find(|c| c.code() == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_numbers_never_change() {
        let numbers: Vec<(ExitCode, i32)> = ExitCode::ALL.iter().map(|c| (*c, c.code())).collect();
        assert_eq!(
            numbers,
            [
                (ExitCode::Ok, 0),
                (ExitCode::Failure, 1),
                (ExitCode::Usage, 2),
                (ExitCode::NoKey, 3),
                (ExitCode::KeyRejected, 4),
                (ExitCode::RateLimited, 5),
                (ExitCode::Unusable, 6),
                (ExitCode::Unreachable, 7),
                (ExitCode::WrongAnswer, 8),
                (ExitCode::ProviderNotice, 9),
                (ExitCode::Interrupted, 130),
            ]
        );
        for c in ExitCode::ALL {
            assert_eq!(ExitCode::from_code(c.code()), Some(c));
            assert!(!c.description().is_empty());
        }
        assert_eq!(ExitCode::from_code(10), None);
        assert_eq!(ExitCode::from_code(128), None);
    }
}
