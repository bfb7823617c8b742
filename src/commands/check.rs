//! `fcm check`: one real completion through the gate, one line, an exit code for CI.

use std::time::Duration;

use anyhow::Result;
use argh::{ArgsInfo, FromArgs};
use serde_json::json;

use crate::answers::classify::FailureKind;
use crate::commands::exit::ExitCode;
use crate::commands::usage;
use crate::commands::{process_id_token, require_provider, Setup};
use crate::providers::catalog::{key_hint, tier_rank, KeyStatus, ModelRef};
use crate::providers::quota::{Unit, Window};
use crate::providers::upstream::Upstream;
use crate::routing::ping::{ping, Judged, Ping, Question, Spend};
use crate::routing::rank::{Policy, Standing, UNKNOWN};
use crate::routing::{Candidate, Recorder};
use crate::state::breaker::BreakerState;
use crate::state::files;
use crate::state::ledger::Ledger;
use crate::time;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(
    subcommand,
    name = "check",
    note = "Runs one real completion through the content gate and prints one line.",
    error_code(0, "ok: the model answered with real content"),
    error_code(2, "usage error"),
    error_code(3, "key not set (or a variable the provider URL needs)"),
    error_code(4, "key rejected (HTTP 401/403)"),
    error_code(5, "rate limited or out of quota"),
    error_code(
        6,
        "answer unusable (empty, error payload, invalid JSON, HTML, bad request)"
    ),
    error_code(7, "unreachable, timed out, or provider error"),
    error_code(8, "answered, but wrong (17 + 25 is not what it said)"),
    error_code(
        9,
        "a provider notice instead of an answer (a paid plan, credits, quota or sign-up)"
    )
)]
/// Smoke-check a provider key with one real completion (for CI).
pub(crate) struct CheckArgs {
    /// PROVIDER or PROVIDER/MODEL
    #[argh(positional)]
    pub(crate) target: String,
    /// seconds to wait for the answer (default 30)
    #[argh(option, default = "30")]
    pub(crate) timeout: u64,
    /// print one JSON object instead of a line
    #[argh(switch)]
    pub(crate) json: bool,
}

/// The exit code a failure kind maps to.
pub fn exit_code_for(kind: FailureKind) -> ExitCode {
    use FailureKind::*;
    match kind {
        AuthError => ExitCode::KeyRejected,
        RateLimit | QuotaExhausted => ExitCode::RateLimited,
        InvalidRequest | HtmlMaintenance | InvalidJson | EmptyChoices | EmptyContent
        | ErrorPayload | EmptyStream | ContextOverflow | InvalidToolCall | ModelNotFound
        | ContinuationMisfit => ExitCode::Unusable,
        ProviderUrlUnresolvable => ExitCode::NoKey,
        ModelOverloaded | Timeout | StreamStall | NetworkError | ProviderServerError => {
            ExitCode::Unreachable
        }
        ProviderNotice => ExitCode::ProviderNotice,
    }
}

fn what(kind: FailureKind) -> &'static str {
    use FailureKind::*;
    match kind {
        AuthError => "key rejected",
        RateLimit => "rate limited",
        QuotaExhausted => "out of quota",
        InvalidRequest => "request refused",
        HtmlMaintenance => "answered with an HTML page",
        InvalidJson => "answered with invalid JSON",
        EmptyChoices | EmptyContent | EmptyStream => "answered with no content",
        ContextOverflow => "request too long for this model",
        ErrorPayload => "answered with an error payload",
        InvalidToolCall => "answered with a tool call that cannot run",
        ModelNotFound => "the provider does not serve this model (retired? `fcm models --refresh`)",
        ProviderNotice => "a provider notice instead of an answer (gone paid? out of credits?)",
        ContinuationMisfit => "started an answer over instead of finishing it",
        ProviderUrlUnresolvable => "URL incomplete",
        ModelOverloaded => "model overloaded",
        Timeout => "timed out",
        StreamStall => "stream stalled",
        NetworkError => "unreachable",
        ProviderServerError => "provider error",
    }
}

/// Models of one provider a check tries at most before it says the key does not work: a
/// key works when a model answers with it, and a provider's best model may be broken while
/// the next answers, but each try spends a request of the provider's day.
pub(crate) const MODELS_TRIED: usize = 4;

/// What a check of `target` tries, in order: `PROVIDER/MODEL` alone, or the models of
/// `PROVIDER`, best-tiered first.
pub(crate) fn choose<'a>(setup: &'a Setup, target: &str) -> Result<Vec<ModelRef<'a>>> {
    if let Some(m) = setup.catalog.find(target) {
        return Ok(vec![m]);
    }
    let (pid, mid) = target.split_once('/').unwrap_or((target, ""));
    let provider = require_provider(&setup.catalog, pid)?;
    if !mid.is_empty() {
        return usage(format!(
            "unknown model {target:?}; `fcm models --provider {pid}` lists its models"
        ));
    }
    let policy = Policy::of(&setup.config.router);
    // Never contacted yet: only the catalog's tier and score decide; ties keep catalog order.
    let standing = |m: &crate::providers::catalog::Model| Standing {
        state: BreakerState::Closed,
        evidence: UNKNOWN,
        verdict: 0,
        success_rate: 0.0,
        ttft_ms: None,
        tier: tier_rank(&m.tier),
        swe: m.swe_bench.unwrap_or(-1.0),
        headroom: 1.0,
        room: crate::state::ledger::Headroom::OPEN,
        key: "",
    };
    let mut models: Vec<_> = provider.models.iter().collect();
    // Stable: equals keep the catalog's order.
    models.sort_by(|a, b| policy.compare(&standing(a), &standing(b)));
    if models.is_empty() {
        return usage(format!("provider {pid} has no models"));
    }
    Ok(models
        .into_iter()
        .map(|model| ModelRef { provider, model })
        .collect())
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    if args.timeout == 0 || args.timeout > 600 {
        return usage(format!(
            "--timeout must be between 1 and 600 seconds (got {})",
            args.timeout
        ));
    }
    let setup = Setup::load()?;
    let models = choose(&setup, &args.target)?;
    check(
        &setup,
        &models,
        None,
        Duration::from_secs(args.timeout),
        args.json,
    )
}

/// Checks `models` in turn until one answers (at most [`MODELS_TRIED`]): the first that
/// does, with the ones that failed before it; or, when none does, the first failure (the
/// best model's), with the others. A missing or rejected key ends it at once: no other
/// model of the provider would take it.
fn first_answer<'a>(
    setup: &Setup,
    models: &[ModelRef<'a>],
    only_key: Option<&str>,
    timeout: Duration,
) -> Result<(Checked, Vec<Checked>)> {
    let mut failed: Vec<Checked> = Vec::new();
    for m in models.iter().take(MODELS_TRIED) {
        let c = checked(setup, *m, only_key, timeout)?;
        let about_the_key = matches!(c.code, ExitCode::NoKey | ExitCode::KeyRejected);
        if c.code == ExitCode::Ok || about_the_key {
            return Ok((c, failed));
        }
        failed.push(c);
    }
    let first = failed.remove(0);
    Ok((first, failed))
}

/// Real completions of `models` through the gate and the ledger until one answers (see
/// [`first_answer`]), its line (or JSON) printed after the lines of the models that failed
/// before it; returns the exit code. `only_key`: check that key of the provider (one just
/// set), not the one the ledger would choose.
pub(crate) fn check(
    setup: &Setup,
    models: &[ModelRef<'_>],
    only_key: Option<&str>,
    timeout: Duration,
    json: bool,
) -> Result<ExitCode> {
    let (c, failed) = first_answer(setup, models, only_key, timeout)?;
    // The one place check writes: nothing a provider echoed of a secret gets through.
    let secrets = setup.secrets(None);
    let tag = |c: &Checked| {
        if c.code == ExitCode::Ok {
            "ok   "
        } else {
            "FAIL "
        }
    };
    if json {
        let tried: Vec<_> = failed
            .iter()
            .map(|f| {
                json!({"model": f.model, "exitCode": f.code.code(), "kind": f.kind,
                            "status": f.http, "message": format!("{}{}", tag(f), f.line)})
            })
            .collect();
        let v = json!({"model": c.model, "ok": c.code == ExitCode::Ok, "exitCode": c.code.code(),
                       "kind": c.kind, "status": c.http, "latencyMs": c.ms, "key": c.key_note,
                       "message": format!("{}{}", tag(&c), c.line), "remaining": c.left,
                       "alsoTried": tried});
        println!("{}", secrets.redact(&v.to_string()));
        return Ok(c.code);
    }
    let answered = c.code == ExitCode::Ok;
    if answered {
        // The models that failed first, then the one that answered.
        for f in &failed {
            println!("{}", secrets.redact(&format!("{}{}", tag(f), f.line)));
        }
    }
    println!("{}", secrets.redact(&format!("{}{}", tag(&c), c.line)));
    if answered && !failed.is_empty() {
        println!(
            "the key works: {} answered after {} of its provider's models failed",
            c.model,
            failed.len()
        );
    }
    if !answered {
        for f in &failed {
            println!("{}", secrets.redact(&format!("{}{}", tag(f), f.line)));
        }
    }
    Ok(c.code)
}

/// The exit code and line of [`check`] (without its `ok`/`FAIL` tag), not printed (`fcm
/// doctor --online`).
pub(crate) fn outcome(
    setup: &Setup,
    models: &[ModelRef<'_>],
    only_key: Option<&str>,
    timeout: Duration,
) -> Result<(ExitCode, String)> {
    let (c, failed) = first_answer(setup, models, only_key, timeout)?;
    let mut line = c.line;
    if c.code == ExitCode::Ok && !failed.is_empty() {
        let names: Vec<&str> = failed.iter().map(|f| f.model.as_str()).collect();
        line.push_str(&format!(" (after {} failed)", names.join(", ")));
    }
    Ok((c.code, setup.secrets(None).redact(&line).into_owned()))
}

/// What one check found.
struct Checked {
    /// `provider/modelId`.
    model: String,
    code: ExitCode,
    kind: Option<FailureKind>,
    http: Option<u16>,
    ms: Option<u64>,
    /// The line `fcm check` prints after its `ok`/`FAIL` tag (not yet cleaned of secrets).
    line: String,
    key_note: String,
    left: Vec<Window>,
}

fn checked(
    setup: &Setup,
    m: ModelRef<'_>,
    only_key: Option<&str>,
    timeout: Duration,
) -> Result<Checked> {
    let keys = setup.keys();
    let secrets = setup.secrets(None);
    let (status, _) = keys.lookup(m.provider);
    let done = |code, kind, http, ms, line, key_note: &str, left: Vec<Window>| Checked {
        model: m.key(),
        code,
        kind,
        http,
        ms,
        line,
        key_note: key_note.to_string(),
        left,
    };
    if let KeyStatus::Missing(vars) = &status {
        let how = if vars.is_empty() {
            format!("add apiKeys.{} to config.json", m.provider.id)
        } else {
            format!(
                "set {} (sign up: {})",
                vars.join(" or "),
                m.provider.signup_url
            )
        };
        let line = format!("{}: key not set; {how}", m.key());
        return Ok(done(
            ExitCode::NoKey,
            None,
            None,
            None,
            line,
            &status.describe(),
            Vec::new(),
        ));
    }
    let c = Candidate::of(m, &keys, &process_id_token(), &secrets);
    let target = &c.target;
    let usage_path = files::state_file("usage.json")?;
    let ledger = Ledger::load(&usage_path, time::now_ms(), setup.config.router.keys.sticky)?;
    let spend = match only_key.and_then(|v| target.keys.iter().position(|k| k.value == v)) {
        Some(k) => Spend::Key(k),
        None => Spend::User,
    };
    let record = Recorder {
        ledger: &ledger,
        health: None,
    };
    let sent = ping(
        record,
        &Upstream::new(),
        &c,
        Question::Sum,
        timeout,
        spend,
        false,
    );
    if let Err(e) = ledger.sync(&usage_path, time::now_ms()) {
        eprintln!("fcm check: warning: {:#}", anyhow::Error::new(e));
    }
    let (ping, grant) = match sent {
        Ok(sent) => sent,
        Err(b) => {
            let why = b.why.says();
            let line = format!(
                "{}: not sent: {why}; frees up at {} (`fcm usage` shows what is left)",
                m.key(),
                time::rfc3339(b.until_ms)
            );
            let kind = Some(FailureKind::QuotaExhausted);
            let key_note = status.describe();
            return Ok(done(
                ExitCode::RateLimited,
                kind,
                None,
                None,
                line,
                &key_note,
                Vec::new(),
            ));
        }
    };
    let key_note = match grant.api_key(&target.keys) {
        Some(k) => {
            let origin = match &k.origin {
                KeyStatus::Env(var) => var.clone(),
                _ => format!("config.json apiKeys.{}", m.provider.id),
            };
            let several = if target.keys.len() > 1 {
                format!("{} ", k.label)
            } else {
                String::new()
            };
            format!("{several}{origin} {}", key_hint(&k.value))
        }
        None => status.describe(),
    };
    let left = ledger.left(&c.metered, grant.key, time::now_ms());
    let left_note = left_note(&left);
    Ok(match ping {
        Ping::Ok {
            judged: judged @ (Judged::Wrong | Judged::Notice),
            total_ms,
            said,
            ..
        } => {
            let (code, what) = match judged {
                Judged::Notice => (
                    ExitCode::ProviderNotice,
                    "a provider notice instead of an answer",
                ),
                _ => (ExitCode::WrongAnswer, "a wrong answer to 17 + 25"),
            };
            let line = format!(
                "{}: {what} in {total_ms} ms: {said:?} ({key_note}){left_note}",
                m.key()
            );
            done(code, None, Some(200), Some(total_ms), line, &key_note, left)
        }
        Ping::Ok {
            total_ms, tokens, ..
        } => {
            let line = format!(
                "{}: answered in {total_ms} ms, {tokens} tokens ({key_note}){left_note}",
                m.key()
            );
            done(
                ExitCode::Ok,
                None,
                Some(200),
                Some(total_ms),
                line,
                &key_note,
                left,
            )
        }
        Ping::Failed {
            kind,
            status: http,
            detail,
            ..
        } => {
            let code = exit_code_for(kind);
            let http_note = http
                .filter(|s| !(200..300).contains(s))
                .map(|s| format!("HTTP {s}, "))
                .unwrap_or_default();
            let line = format!(
                "{}: {} ({http_note}{kind}): {detail} ({key_note}){left_note}",
                m.key(),
                what(kind)
            );
            done(code, Some(kind), http, None, line, &key_note, left)
        }
    })
}

/// `; left: 998 requests (resets in 1m26s), 11963 tokens (resets in 185 ms)`, from what
/// the provider reported on this answer; empty when it reported nothing.
fn left_note(windows: &[Window]) -> String {
    let now = time::now_ms();
    let parts: Vec<String> = windows
        .iter()
        .filter_map(|w| {
            let left = w.remaining?;
            let unit = match w.unit {
                Unit::Requests => "requests",
                Unit::Tokens => "tokens",
            };
            let per = match w.period {
                Some(p) => format!(" per {}", format!("{p:?}").to_ascii_lowercase()),
                None => String::new(),
            };
            Some(format!(
                "{left} {unit}{per} (resets in {})",
                time::human_ms(w.reset_at.saturating_sub(now))
            ))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("; left: {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_an_exit_code() {
        for kind in FailureKind::ALL {
            let code = exit_code_for(kind).code();
            assert!((3..=9).contains(&code) && code != 8, "{kind}");
            assert!(!what(kind).is_empty());
        }
        assert_eq!(exit_code_for(FailureKind::AuthError).code(), 4);
        assert_eq!(exit_code_for(FailureKind::RateLimit).code(), 5);
        assert_eq!(exit_code_for(FailureKind::EmptyChoices).code(), 6);
        assert_eq!(exit_code_for(FailureKind::Timeout).code(), 7);
        assert_eq!(exit_code_for(FailureKind::ProviderNotice).code(), 9);
    }

    /// The codes `fcm check --help` lists (argh's `error_code` attribute, literals) are the
    /// exit table's, in its words; only success is worded for check.
    #[test]
    fn the_help_lists_the_exit_table() {
        let help = CheckArgs::from_args(&["fcm", "check"], &["--help"])
            .err()
            .expect("--help exits early")
            .output;
        let listed: Vec<(ExitCode, &str)> = help
            .split_once("Error codes:\n")
            .expect("an error code list")
            .1
            .lines()
            .filter_map(|l| l.trim().split_once(' '))
            .map(|(n, text)| {
                let code = n.parse().ok().and_then(ExitCode::from_code);
                (
                    code.unwrap_or_else(|| panic!("{n}: not in the exit table")),
                    text,
                )
            })
            .collect();
        let codes: Vec<ExitCode> = listed.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            codes,
            [
                ExitCode::Ok,
                ExitCode::Usage,
                ExitCode::NoKey,
                ExitCode::KeyRejected,
                ExitCode::RateLimited,
                ExitCode::Unusable,
                ExitCode::Unreachable,
                ExitCode::WrongAnswer,
                ExitCode::ProviderNotice,
            ]
        );
        for (code, text) in listed {
            match code {
                ExitCode::Ok => assert_eq!(text, "ok: the model answered with real content"),
                _ => assert_eq!(text, code.description(), "{code:?}"),
            }
        }
    }
}
