//! The Prometheus text exposition format (0.0.4), written by hand ([`Exposition`]): `# HELP`
//! and `# TYPE` once per family before its samples, label values escaped (`\\`, `\"`,
//! `\n`), histogram buckets cumulative with `le` ending at `+Inf`, then `_sum` and
//! `_count`, durations in seconds. Which families a scrape holds is `metrics`' business.

use std::fmt::Write;

use crate::state::histogram::HistogramSnapshot;

/// The content type of the text format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Metric families being written.
pub(crate) struct Exposition {
    out: String,
}

impl Exposition {
    pub(crate) fn new() -> Exposition {
        Exposition {
            out: String::with_capacity(64 * 1024),
        }
    }

    /// Starts a family: its help line and type (`counter`, `gauge`, `histogram`).
    pub(crate) fn family(&mut self, name: &str, kind: &str, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    /// One sample of the family just started (`name` may carry a suffix: `_bucket`).
    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                for c in v.chars() {
                    match c {
                        '\\' => self.out.push_str("\\\\"),
                        '"' => self.out.push_str("\\\""),
                        '\n' => self.out.push_str("\\n"),
                        c => self.out.push(c),
                    }
                }
                self.out.push('"');
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }

    /// A histogram's samples, µs turned into seconds.
    pub(crate) fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        let bucket = format!("{name}_bucket");
        for (bound, count) in &h.buckets {
            let le = bound.map_or("+Inf".to_string(), |us| number(seconds(us)));
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&bucket, &with_le, *count as f64);
        }
        self.sample(&format!("{name}_sum"), labels, seconds(h.sum_us));
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

fn seconds(us: u64) -> f64 {
    us as f64 / 1_000_000.0
}

/// A value as the format writes it: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_escape_label_values_and_write_numbers_plainly() {
        let mut e = Exposition::new();
        e.family("x_total", "counter", "A help\nwith a \\ and a newline.");
        e.sample(
            "x_total",
            &[("model", "p/a\"b\\c\nd"), ("result", "ok")],
            3.0,
        );
        e.sample("x_total", &[], 0.25);
        e.sample("x_total", &[], f64::INFINITY);
        assert_eq!(
            e.finish(),
            "# HELP x_total A help\\nwith a \\\\ and a newline.\n# TYPE x_total counter\n\
             x_total{model=\"p/a\\\"b\\\\c\\nd\",result=\"ok\"} 3\nx_total 0.25\nx_total +Inf\n"
        );
    }

    #[test]
    fn a_histogram_is_cumulative_in_seconds() {
        let h = HistogramSnapshot {
            buckets: vec![
                (Some(1_000), 1),
                (Some(2_500), 2),
                (Some(1_500_000), 3),
                (None, 4),
            ],
            sum_us: 2_251_500,
            count: 4,
        };
        let mut e = Exposition::new();
        e.histogram("t_seconds", &[("model", "p/m")], &h);
        assert_eq!(
            e.finish(),
            "t_seconds_bucket{model=\"p/m\",le=\"0.001\"} 1\n\
             t_seconds_bucket{model=\"p/m\",le=\"0.0025\"} 2\n\
             t_seconds_bucket{model=\"p/m\",le=\"1.5\"} 3\n\
             t_seconds_bucket{model=\"p/m\",le=\"+Inf\"} 4\n\
             t_seconds_sum{model=\"p/m\"} 2.2515\n\
             t_seconds_count{model=\"p/m\"} 4\n"
        );
    }
}
