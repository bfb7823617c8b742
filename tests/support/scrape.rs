//! Reading a `/metrics` scrape as a monitoring system does: parsed by a Prometheus
//! text-format parser that is not fcm's (the `prometheus-parse` crate), checked by
//! Prometheus's own `promtool` where it is installed, and against Prometheus's naming
//! conventions.

use prometheus_parse::{LineInfo, Scrape, Value};

/// Parses an exposition, checking that the parser took every line: a line it cannot read
/// it would skip without a word.
pub fn parse(text: &str) -> Scrape {
    for line in text.lines() {
        assert!(
            !matches!(LineInfo::parse(line), LineInfo::Ignored),
            "a line the parser does not read: {line:?}"
        );
    }
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let sample_lines = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    let parsed: usize = scrape
        .samples
        .iter()
        .map(|s| match &s.value {
            Value::Histogram(buckets) => buckets.len(),
            _ => 1,
        })
        .sum();
    assert_eq!(sample_lines, parsed, "every sample line parsed:\n{text}");
    scrape
}

/// The value of the sample `metric` with exactly these labels (of the ones it has).
pub fn value(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .filter(|x| x.metric == metric)
        .find(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(b) => b.iter().map(|c| c.count).fold(0.0, f64::max),
            Value::Summary(_) => f64::NAN,
        })
}

/// Where Prometheus's own checker is installed (Debian: prometheus), it reads the text
/// too and finds nothing to say, lint included.
pub fn promtool_check(text: &str) {
    let Ok(mut child) = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        return;
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Names as Prometheus names them: a counter ends in `_total`, nothing else does; a
/// histogram measures seconds; units are base units, spelt out; no family mixes units
/// under a label.
pub fn named_as_prometheus_names(s: &Scrape) {
    for sample in &s.samples {
        let name = sample.metric.as_str();
        match &sample.value {
            Value::Counter(_) => assert!(name.ends_with("_total"), "counter {name}"),
            Value::Histogram(_) => assert!(name.ends_with("_seconds"), "histogram {name}"),
            _ => assert!(!name.ends_with("_total"), "gauge {name}"),
        }
        for abbreviated in [
            "_ms",
            "_millis",
            "milliseconds",
            "_secs",
            "_kb",
            "_mb",
            "_bytes_",
        ] {
            assert!(!name.contains(abbreviated), "{name}: base units, spelt out");
        }
        for mixing in ["counter", "unit", "type"] {
            assert!(
                sample.labels.get(mixing).is_none(),
                "{name} has a {mixing:?} label: one metric per unit"
            );
        }
    }
}
