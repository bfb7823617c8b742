//! The bench's table while it runs, on a terminal: rows fill in as models finish, best first
//! as far as is known, the models still being probed marked `probing` below them, all in a
//! region redrawn in place that the final table replaces. Never used when stdout is piped
//! or with `--json` (those get the final output only, without an escape code).

use std::io::Write;
use std::time::{Duration, Instant};

use crossterm::{cursor, terminal, QueueableCommand};

use crate::routing::rank::Policy;
use crate::secrets::Secrets;
use crate::state::bench_file::{BenchReport, ModelResult};

/// Redraws at most this often: a few a second read as live, without flicker.
const REDRAW_EVERY: Duration = Duration::from_millis(150);
/// The elapsed time on the last line moves on this often while nothing finishes.
const CLOCK_EVERY: Duration = Duration::from_secs(1);

/// The table in progress.
pub(super) struct LiveTable<'s> {
    done: Vec<ModelResult>,
    /// Keys of the models still being probed, in catalog order.
    pending: Vec<String>,
    policy: Policy,
    secrets: &'s Secrets,
    /// Lines of the frame on screen now.
    drawn: u16,
    last_draw: Option<Instant>,
    /// A model finished since the frame on screen was drawn.
    behind: bool,
    /// The run's timestamp, for the rows' `measuredAt`.
    started: Instant,
}

impl<'s> LiveTable<'s> {
    pub(super) fn new(pending: Vec<String>, policy: Policy, secrets: &'s Secrets) -> LiveTable<'s> {
        let mut t = LiveTable {
            done: Vec::new(),
            pending,
            policy,
            secrets,
            drawn: 0,
            last_draw: None,
            behind: false,
            started: Instant::now(),
        };
        t.draw();
        t
    }

    /// One model is done: its row takes its place, the others' ranks move.
    pub(super) fn finished(&mut self, r: &ModelResult) {
        self.pending.retain(|k| *k != r.model);
        self.done.push(r.clone());
        let due = self.last_draw.is_none_or(|t| t.elapsed() >= REDRAW_EVERY);
        if due || self.pending.is_empty() {
            self.draw();
        } else {
            self.behind = true;
        }
    }

    /// Called every few dozen milliseconds while the bench runs: draws what finished since
    /// the last frame once a redraw is due (so the last rows never wait for another model
    /// to finish), and the elapsed time once a second.
    pub(super) fn tick(&mut self) {
        let since = self.last_draw.map_or(Duration::MAX, |t| t.elapsed());
        if (self.behind && since >= REDRAW_EVERY) || since >= CLOCK_EVERY {
            self.draw();
        }
    }

    /// Takes the region off the screen: the final table is printed in its place.
    pub(super) fn clear(&mut self) {
        let mut out = std::io::stdout().lock();
        if self.drawn > 0 {
            let _ = out.queue(cursor::MoveToPreviousLine(self.drawn));
            let _ = out.queue(terminal::Clear(terminal::ClearType::FromCursorDown));
        }
        let _ = out.flush();
        self.drawn = 0;
    }

    fn draw(&mut self) {
        let (_, rows) = terminal::size().unwrap_or((100, 40));
        let text = frame(
            &self.done,
            &self.pending,
            self.policy,
            usize::from(rows.saturating_sub(2)).max(6),
            self.started.elapsed(),
        );
        let text = self.secrets.redact(&text);
        let mut out = std::io::stdout().lock();
        if self.drawn > 0 {
            let _ = out.queue(cursor::MoveToPreviousLine(self.drawn));
            let _ = out.queue(terminal::Clear(terminal::ClearType::FromCursorDown));
        }
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.drawn = text.lines().count() as u16;
        self.last_draw = Some(Instant::now());
        self.behind = false;
    }
}

/// One frame: the finished models ranked, then those still being probed, cut to `height`
/// lines (the best rows kept; a last line says how many more are not shown).
pub(super) fn frame(
    done: &[ModelResult],
    pending: &[String],
    policy: Policy,
    height: usize,
    elapsed: Duration,
) -> String {
    let mut ranked = done.to_vec();
    crate::bench::rank(&mut ranked, policy);
    let report = BenchReport {
        models: ranked,
        ..BenchReport::default()
    };
    // Each row is one line of a condensed table; the borders and the header take four,
    // the summary one.
    let room = height.saturating_sub(5).max(1);
    let rows = report.models.iter().filter(|m| m.pings > 0).count() + pending.len();
    let hidden = rows.saturating_sub(room);
    let t = super::rows::table(&report, pending, Some(room));
    let mut out = format!("{t}\n");
    let probing = pending.len();
    out.push_str(&format!(
        "{} of {} models done, {probing} probing{}, {:.0} s\n",
        done.len(),
        done.len() + probing,
        if hidden > 0 {
            format!(", {hidden} more rows below")
        } else {
            String::new()
        },
        elapsed.as_secs_f64()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::bench_file::BenchVerdict;
    use crate::state::config::Prefer;

    fn result(model: &str, tier: &str, verdict: BenchVerdict, ttft: u64) -> ModelResult {
        serde_json::from_value(serde_json::json!({
            "rank": 0, "model": model, "provider": "p", "label": model, "tier": tier,
            "sweBench": null, "usable": verdict != BenchVerdict::Down, "verdict": verdict,
            "pings": 2, "successes": 2, "successRate": 1.0, "ttftMsP50": ttft, "ttftMsP95": ttft,
            "latencyMsP50": ttft, "latencyMsP95": ttft, "jitterMs": 0, "tokensPerSec": 1.0,
            "lastFailureKind": null, "lastFailureStatus": null, "lastFailure": null,
            "measuredAt": "t"}))
        .unwrap()
    }

    const QUALITY: Policy = Policy {
        prefer: Prefer::Quality,
        max_ttft_ms: 8_000,
    };

    #[test]
    fn finished_rows_ranked_then_the_pending_ones() {
        let done = [
            result("p/b-tier", "B", BenchVerdict::Perfect, 10),
            result("p/s-tier", "S", BenchVerdict::Normal, 1500),
        ];
        let pending = vec!["p/slow".to_string()];
        let f = frame(&done, &pending, QUALITY, 40, Duration::from_secs(3));
        let at = |needle: &str| f.find(needle).unwrap_or_else(|| panic!("{needle}: {f}"));
        assert!(at("p/s-tier") < at("p/b-tier"), "strongest first: {f}");
        assert!(at("p/b-tier") < at("p/slow"), "pending last: {f}");
        assert!(f.contains("probing"));
        assert!(f.contains("2 of 3 models done, 1 probing, 3 s"), "{f}");
    }

    #[test]
    fn a_frame_never_outgrows_the_screen() {
        let done: Vec<ModelResult> = (0..30)
            .map(|n| result(&format!("p/m{n:02}"), "A", BenchVerdict::Perfect, n))
            .collect();
        let pending: Vec<String> = (0..30).map(|n| format!("p/q{n:02}")).collect();
        let f = frame(&done, &pending, QUALITY, 20, Duration::ZERO);
        assert!(f.lines().count() <= 20, "{f}");
        assert!(f.contains("p/m00"), "the best rows stay: {f}");
        assert!(f.contains("45 more rows below"), "{f}");
    }
}
