//! Reading a response's rate-limit headers into [`Window`]s: every provider's naming
//! (`x-ratelimit-*-NAME`, the plain and IETF draft forms), and resets as Go-style
//! durations, seconds or Unix times.

use crate::time::{next_utc_midnight, DAY_MS};

use super::limits::MINUTE_MS;
use super::window::{Period, Unit, Window};

/// Which window a header belongs to and what it says of it.
enum Field {
    Limit,
    Remaining,
    Reset,
}

/// Reads every rate-limit window in a response's headers (names compared without case):
/// `x-ratelimit-{limit,remaining,reset}[-NAME]` and `ratelimit-{limit,remaining,reset}`.
/// Resets are Go-style durations (`1m26.4s`, `185ms`), seconds, or Unix times in seconds
/// or milliseconds. Windows without a `remaining` or `limit` figure are left out.
pub fn read_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    now: u64,
) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    let mut resets: Vec<(String, u64)> = Vec::new();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        let Some(rest) = name
            .strip_prefix("x-ratelimit-")
            .or_else(|| name.strip_prefix("ratelimit-"))
        else {
            continue;
        };
        let (field, window) = match rest.split_once('-') {
            Some((f, w)) => (f, w),
            None => (rest, ""),
        };
        let field = match field {
            "limit" => Field::Limit,
            "remaining" => Field::Remaining,
            "reset" => Field::Reset,
            _ => continue,
        };
        let value = value.trim();
        if let Field::Reset = field {
            if let Some(at) = reset_at(value, now) {
                resets.push((window.to_string(), at));
            }
            continue;
        }
        let Some(n) = value
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
        else {
            continue;
        };
        let n = n as u64;
        let w = match windows.iter_mut().position(|w| w.name == window) {
            Some(i) => &mut windows[i],
            None => {
                windows.push(window_named(window, now));
                windows.last_mut().expect("just pushed")
            }
        };
        match field {
            Field::Limit => w.limit = Some(n),
            Field::Remaining => w.remaining = Some(n),
            Field::Reset => unreachable!("handled above"),
        }
    }
    for (name, at) in resets {
        if let Some(w) = windows.iter_mut().find(|w| w.name == name) {
            w.reset_at = at;
        }
    }
    windows
}

/// A window with no figures yet, its unit and period read from its name.
fn window_named(name: &str, now: u64) -> Window {
    let unit = if name.contains("tok") {
        Unit::Tokens
    } else {
        Unit::Requests
    };
    let period = name.rsplit('-').find_map(|part| match part {
        "second" | "sec" | "s" => Some(Period::Second),
        "minute" | "min" | "m" | "1m" => Some(Period::Minute),
        "hour" | "h" => Some(Period::Hour),
        "day" | "d" | "1d" => Some(Period::Day),
        "month" => Some(Period::Month),
        _ => None,
    });
    let reset_at = match period {
        Some(Period::Second) => now + 1000,
        Some(Period::Day) => next_utc_midnight(now),
        Some(Period::Hour) => now + 3_600_000,
        // A month's end is a long way off; look again within a day.
        Some(Period::Month) => now + DAY_MS,
        Some(Period::Minute) | None => now + MINUTE_MS,
    };
    Window {
        name: name.to_string(),
        unit,
        period,
        limit: None,
        remaining: None,
        reset_at,
    }
}

/// When a reset header says the window is full again (ms since epoch): a duration from
/// now (`1m26.4s`, `185ms`, `30`, `6.5`), or a Unix time in seconds or milliseconds.
pub fn reset_at(value: &str, now: u64) -> Option<u64> {
    let v = value.trim();
    if let Ok(n) = v.parse::<f64>() {
        if !n.is_finite() || n < 0.0 {
            return None;
        }
        return Some(if n >= 1e12 {
            n as u64 // Unix ms (OpenRouter)
        } else if n >= 1e9 {
            (n * 1000.0) as u64 // Unix seconds
        } else {
            now.saturating_add((n * 1000.0).ceil() as u64)
        });
    }
    let d = parse_duration(v)?;
    Some(now.saturating_add(d.as_millis().min(u128::from(u64::MAX / 2)) as u64))
}

/// A Go-style duration: `1m26.4s`, `185ms`, `2h3m`, `1.5us`, `0s`. Uncapped.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let mut total = 0.0f64;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += n * scale;
    }
    (total.is_finite() && total < 1e12).then(|| std::time::Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_796_102_301_000; // 2026-12-01T05:18:21Z

    #[test]
    fn go_durations_seconds_and_unix_times() {
        let cases: &[(&str, Option<u64>)] = &[
            ("1m26.4s", Some(NOW + 86_400)),
            ("185ms", Some(NOW + 185)),
            ("2h3m", Some(NOW + 7_380_000)),
            ("0s", Some(NOW)),
            ("30", Some(NOW + 30_000)),
            ("6.5", Some(NOW + 6_500)),
            ("1796102400", Some(1_796_102_400_000)),
            ("1796102400123", Some(1_796_102_400_123)),
            ("soon", None),
            ("-3", None),
            ("1x", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(reset_at(text, NOW), *want, "{text}");
        }
        assert_eq!(
            parse_duration("1.5us"),
            Some(std::time::Duration::from_nanos(1500))
        );
    }

    #[test]
    fn groq_headers_from_a_real_answer() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/reference/realwire/groq__200_ratelimit_headers.headers"
        );
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            // A CI elsewhere, without the samples beside the checkout.
            Err(_) if std::env::var_os("FCM_REALWIRE_OPTIONAL").is_some() => return,
            Err(e) => panic!(
                "{path}: {e} (the realwire samples sit beside the checkout; set FCM_REALWIRE_OPTIONAL=1 to skip)"
            ),
        };
        let headers: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let w = read_headers(headers, NOW);
        assert_eq!(
            w,
            vec![
                Window {
                    name: "requests".into(),
                    unit: Unit::Requests,
                    period: None,
                    limit: Some(1000),
                    remaining: Some(999),
                    reset_at: NOW + 86_400,
                },
                Window {
                    name: "tokens".into(),
                    unit: Unit::Tokens,
                    period: None,
                    limit: Some(12_000),
                    remaining: Some(11_963),
                    reset_at: NOW + 185,
                },
            ]
        );
    }

    #[test]
    fn windows_in_every_providers_style() {
        // Cerebras: named periods, resets in seconds.
        let w = read_headers(
            [
                ("x-ratelimit-limit-requests-day", "14400"),
                ("x-ratelimit-remaining-requests-day", "0"),
                ("x-ratelimit-reset-requests-day", "33011.38"),
                ("X-RateLimit-Remaining-Tokens-Minute", "59000"),
            ],
            NOW,
        );
        assert_eq!(
            (w[0].period, w[0].remaining, w[0].reset_at),
            (Some(Period::Day), Some(0), NOW + 33_011_380)
        );
        assert_eq!(
            (w[1].unit, w[1].period, w[1].reset_at),
            (Unit::Tokens, Some(Period::Minute), NOW + 60_000)
        );
        // OpenRouter: plain names, reset in Unix ms.
        let w = read_headers(
            [
                ("X-RateLimit-Limit", "50"),
                ("X-RateLimit-Remaining", "3"),
                ("X-RateLimit-Reset", "1796169600000"),
            ],
            NOW,
        );
        assert_eq!(
            (
                w[0].name.as_str(),
                w[0].limit,
                w[0].remaining,
                w[0].reset_at
            ),
            ("", Some(50), Some(3), 1_796_169_600_000)
        );
        // Mistral: no reset header; a minute window is full again within the minute.
        let w = read_headers(
            [
                ("x-ratelimit-limit-req-minute", "15"),
                ("x-ratelimit-remaining-req-minute", "0"),
            ],
            NOW,
        );
        assert_eq!(
            (w[0].unit, w[0].period, w[0].reset_at),
            (Unit::Requests, Some(Period::Minute), NOW + 60_000)
        );
        // IETF draft; junk is ignored.
        let w = read_headers(
            [
                ("ratelimit-remaining", "7"),
                ("ratelimit-reset", "12"),
                ("x-ratelimit-remaining-requests", "lots"),
                ("content-type", "x"),
            ],
            NOW,
        );
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].remaining, w[0].reset_at), (Some(7), NOW + 12_000));
    }
}
