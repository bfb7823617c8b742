//! `bench.json`: what the last bench run found of each model (its verdict, statistics and
//! tool-call tally), as `fcm bench --json` prints it and the router reads it to rank
//! models before real traffic has spoken. The types and their one rule; the bench
//! (`bench`) computes them, the router (`routing/live`) reads them.

use serde::{Deserialize, Serialize};

use crate::answers::classify::FailureKind;

/// A model's rating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchVerdict {
    Perfect,
    Normal,
    Slow,
    Unstable,
    RateLimited,
    EmptyAnswers,
    /// Answered, but never what was asked (a wrong sum, a call for another city).
    WrongAnswer,
    /// Its "answers" are the provider talking: a paid plan, credits, a quota, sign up.
    ProviderNotice,
    Down,
    AuthFailed,
    NoKey,
    /// Not contacted: its known budget for today is below the pings it would need (a
    /// bench never spends the last tenth of a daily limit).
    QuotaBudget,
}

impl BenchVerdict {
    pub fn label(self) -> &'static str {
        match self {
            BenchVerdict::Perfect => "Perfect",
            BenchVerdict::Normal => "Normal",
            BenchVerdict::Slow => "Slow",
            BenchVerdict::Unstable => "Unstable",
            BenchVerdict::RateLimited => "Rate limited",
            BenchVerdict::EmptyAnswers => "Empty answers",
            BenchVerdict::WrongAnswer => "Wrong answer",
            BenchVerdict::ProviderNotice => "Provider notice",
            BenchVerdict::Down => "Down",
            BenchVerdict::AuthFailed => "Auth failed",
            BenchVerdict::NoKey => "No key",
            BenchVerdict::QuotaBudget => "Over budget",
        }
    }
}

/// One model's summary: the `models[]` entry of `fcm bench --json` and `bench.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelResult {
    pub rank: usize,
    pub model: String,
    pub provider: String,
    pub label: String,
    pub tier: String,
    pub swe_bench: Option<f64>,
    pub usable: bool,
    pub verdict: BenchVerdict,
    /// Every ping sent, tool pings included; `successes` the ones answered.
    pub pings: u32,
    pub successes: u32,
    pub success_rate: f64,
    /// Tool pings sent (`--tools`); `None` when none was. Absent from older `bench.json`
    /// files, which still load.
    #[serde(default)]
    pub tool_pings: Option<u32>,
    /// Tool pings answered with a call that passed the check.
    #[serde(default)]
    pub tool_calls: Option<u32>,
    /// Tool pings that failed (`invalid_tool_call` for a broken or invented call); the
    /// rest answered in text without a call.
    #[serde(default)]
    pub tool_failures: Option<u32>,
    /// When the tool pings ran: a later run without `--tools` keeps them in `bench.json`.
    #[serde(default)]
    pub tools_measured_at: Option<String>,
    pub ttft_ms_p50: Option<u64>,
    pub ttft_ms_p95: Option<u64>,
    pub latency_ms_p50: Option<u64>,
    pub latency_ms_p95: Option<u64>,
    pub jitter_ms: Option<u64>,
    pub tokens_per_sec: Option<f64>,
    pub last_failure_kind: Option<FailureKind>,
    pub last_failure_status: Option<u16>,
    pub last_failure: Option<String>,
    pub measured_at: String,
    /// Fewer pings were sent than asked for: a known daily budget allows the bench only a
    /// small share of it (see `fcm bench`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub budget_capped: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl ModelResult {
    /// Whether the last tool pings proved this model calls tools: see [`proves_tool_calls`].
    pub fn proves_tool_calls(&self) -> bool {
        proves_tool_calls(self.tool_pings.unwrap_or(0), self.tool_calls.unwrap_or(0))
    }

    /// Keeps `older`'s tool results when this run sent no tool ping: a plain `fcm bench`
    /// does not make the router forget which models call tools.
    pub(crate) fn keep_tools_of(&mut self, older: &ModelResult) {
        if self.tool_pings.is_none() {
            self.tool_pings = older.tool_pings;
            self.tool_calls = older.tool_calls;
            self.tool_failures = older.tool_failures;
            self.tools_measured_at = older.tools_measured_at.clone();
        }
    }
}

/// A model proves it calls tools when more than half of its tool pings produced a valid
/// call (1 of 1, 2 of 2 or 3, 3 of 4 or 5): most, not all, because one slip is a failover
/// away and free hosts have bad moments; never a coin toss, such as 1 of 2.
pub fn proves_tool_calls(tool_pings: u32, valid_calls: u32) -> bool {
    tool_pings > 0 && valid_calls * 2 > tool_pings
}

/// The whole document: `fcm bench --json` and `$FCM_HOME/bench.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchReport {
    pub generated_at: String,
    pub models: Vec<ModelResult>,
    /// The run was stopped (Ctrl-C) before every model was measured: `models` holds those
    /// that were, and `unfinished` names the others (their earlier entries, if any, kept).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfinished: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_tool_pings_must_call_to_prove_it() {
        let cases = [
            (0, 0, false),
            (1, 1, true),
            (1, 0, false),
            (2, 1, false),
            (2, 2, true),
            (3, 2, true),
            (3, 1, false),
            (4, 2, false),
            (4, 3, true),
            (5, 3, true),
        ];
        for (pings, calls, want) in cases {
            assert_eq!(proves_tool_calls(pings, calls), want, "{calls}/{pings}");
        }
    }
}
