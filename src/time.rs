//! fcm's clock ([`now_ms`]) and wall-clock helpers: RFC 3339 timestamps for state files and
//! HTTP dates for `Retry-After`.
//!
//! A few dozen lines of calendar arithmetic instead of a date crate: fcm only needs UTC.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 for clocks before it).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// fcm's clock, in ms since the Unix epoch: it never runs backwards within a run, so a
/// cooldown or pause lasts what it says even when the system clock is set back (measured on
/// the wall clock, it would last the jump's length too). It is the monotonic time since the
/// first call plus an offset that starts at the wall clock and follows it only forwards: a
/// clock put right ahead, or the hours a suspended machine slept (the monotonic clock stops
/// meanwhile), are taken in; a clock set back is not.
pub fn now_ms() -> u64 {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    let clock = CLOCK.get_or_init(Clock::new);
    clock.read(
        clock.start.elapsed().as_millis() as u64,
        unix_ms(SystemTime::now()),
    )
}

/// The state behind [`now_ms`]: when it started, and the offset that only grows.
struct Clock {
    start: Instant,
    offset: AtomicU64,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
            offset: AtomicU64::new(0),
        }
    }

    /// The reading for `elapsed` monotonic ms since the start while the wall clock says
    /// `wall`: the offset grows to what makes the two agree, and never shrinks.
    fn read(&self, elapsed: u64, wall: u64) -> u64 {
        let wanted = wall.saturating_sub(elapsed);
        // Read first: the offset rarely grows, and a read leaves the cache line shared
        // where an update would take it from every other core on each call.
        let offset = self.offset.load(Ordering::Acquire);
        if wanted <= offset {
            return elapsed + offset;
        }
        elapsed + self.offset.fetch_max(wanted, Ordering::AcqRel).max(wanted)
    }
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's civil-from-days.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-12-01T05:11:41Z` (second precision, UTC).
pub fn rfc3339(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Milliseconds in a day.
pub const DAY_MS: u64 = 86_400_000;

/// The UTC day of `ms`, `2026-12-01`: how the usage ledger names its days.
pub fn utc_day(ms: u64) -> String {
    rfc3339(ms)[..10].to_string()
}

/// The start of the UTC day after the one `ms` falls in: when a per-day quota frees up.
pub fn next_utc_midnight(ms: u64) -> u64 {
    (ms / DAY_MS + 1) * DAY_MS
}

/// The next midnight in the US Pacific time zone after `ms` (Google AI Studio's daily quotas
/// reset then): UTC-7 from the second Sunday of March to the first Sunday of November (at
/// 02:00 local), UTC-8 otherwise.
pub fn next_pacific_midnight(ms: u64) -> u64 {
    let offset = |at: u64| -> u64 {
        let (y, _, _) = civil_from_days((at / DAY_MS) as i64);
        // The n-th Sunday of a month, as days since 1970 (1970-01-01 was a Thursday).
        let sunday = |month: u32, n: i64| {
            let first = days_from_civil(y, month, 1);
            let to_sunday = (3 - first).rem_euclid(7);
            first + to_sunday + 7 * (n - 1)
        };
        let hour = 3_600_000u64;
        let starts = sunday(3, 2) as u64 * DAY_MS + 10 * hour; // 02:00 PST is 10:00 UTC
        let ends = sunday(11, 1) as u64 * DAY_MS + 9 * hour; // 02:00 PDT is 09:00 UTC
        if (starts..ends).contains(&at) {
            7 * hour
        } else {
            8 * hour
        }
    };
    let local = ms.saturating_sub(offset(ms));
    let midnight_local = (local / DAY_MS + 1) * DAY_MS;
    // The offset at the moment itself: a midnight never falls in a change's hour.
    midnight_local + offset(midnight_local + 8 * 3_600_000)
}

/// A calendar date written `2026-10-10` (ISO 8601, four-digit year, two-digit month and
/// day), as days since 1970-01-01; `None` for any other form or a day the calendar lacks
/// (`2026-02-30`).
pub fn parse_iso_date(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let shaped = b.len() == 10 && b[4] == b'-' && b[7] == b'-';
    if !shaped || !digits(0..4) || !digits(5..7) || !digits(8..10) {
        return None;
    }
    let (y, m, d) = (
        text[..4].parse::<i64>().ok()?,
        text[5..7].parse::<u32>().ok()?,
        text[8..].parse::<u32>().ok()?,
    );
    if !(1..=12).contains(&m) || d == 0 {
        return None;
    }
    // A day past the month's end rolls into the next month: such a date does not read back.
    let days = days_from_civil(y, m, d);
    (civil_from_days(days) == (y, m, d)).then_some(days)
}

/// Days since 1970-01-01 as [`parse_iso_date`] reads them: `2026-10-10`.
pub fn iso_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Reads back what [`rfc3339`] writes (`2026-12-01T05:11:41Z`), as ms since the epoch.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    let (date, clock) = text.trim().strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, mo, day) = (d.next()??, d.next()??, d.next()??);
    let mut c = clock.split(':').map(|p| p.parse::<u64>().ok());
    let (h, mi, s) = (c.next()??, c.next()??, c.next()??);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let days = u64::try_from(days_from_civil(y, mo as u32, day as u32)).ok()?;
    Some(((days * 86_400) + h * 3600 + mi * 60 + s) * 1000)
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form `Retry-After` uses.
pub fn parse_http_date(text: &str) -> Option<SystemTime> {
    let rest = text
        .trim()
        .split_once(',')
        .map_or(text.trim(), |(_, r)| r.trim());
    let mut parts = rest.split_whitespace();
    let day: u32 = parts.next()?.parse().ok()?;
    let month = parts.next()?.to_ascii_lowercase();
    let month = MONTHS.iter().position(|m| *m == month)? as u32 + 1;
    let year: i64 = parts.next()?.parse().ok()?;
    if !(1970..=9999).contains(&year) {
        return None;
    }
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, mi, s) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = u64::try_from(days).ok()?.checked_mul(86_400)? + h * 3600 + mi * 60 + s;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// A duration for people: `850 ms`, `12.3 s`, `4m05s`, `2h10m`.
pub fn human_ms(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..=3_599_999 => format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacific_midnight_follows_daylight_saving() {
        let at = |t: &str| parse_rfc3339(t).unwrap();
        // December: PST, midnight is 08:00 UTC.
        assert_eq!(
            next_pacific_midnight(at("2026-12-04T18:30:00Z")),
            at("2026-12-05T08:00:00Z")
        );
        // Before 08:00 UTC it is still the day before in California.
        assert_eq!(
            next_pacific_midnight(at("2026-12-04T07:59:00Z")),
            at("2026-12-04T08:00:00Z")
        );
        // July: PDT, midnight is 07:00 UTC.
        assert_eq!(
            next_pacific_midnight(at("2026-07-01T12:00:00Z")),
            at("2026-07-02T07:00:00Z")
        );
    }

    /// A new clock's readings for (monotonic ms since start, wall ms) pairs.
    fn readings(steps: &[(u64, u64)]) -> Vec<u64> {
        let clock = Clock::new();
        steps
            .iter()
            .map(|&(elapsed, wall)| clock.read(elapsed, wall))
            .collect()
    }

    #[test]
    fn the_clock_follows_the_wall_forwards_only() {
        let hour = 3_600_000;
        let t = 1_800_000_000_000;
        let check = |what: &str, steps: &[(u64, u64)], want: &[u64]| {
            assert_eq!(readings(steps), want, "{what}");
        };
        check(
            "steady",
            &[(0, t), (500, t + 500), (1000, t + 1000)],
            &[t, t + 500, t + 1000],
        );
        check(
            "set back an hour: time goes on from where it was",
            &[(0, t), (1000, t + 1000 - hour), (2000, t + 2000 - hour)],
            &[t, t + 1000, t + 2000],
        );
        check(
            "put right ahead, or woken after a suspended hour: followed",
            &[(0, t), (1000, t + 1000 + hour), (2000, t + 2000 + hour)],
            &[t, t + 1000 + hour, t + 2000 + hour],
        );
        check(
            "ahead, then back: never backwards",
            &[(0, t), (1000, t + 1000 + hour), (2000, t + 2000)],
            &[t, t + 1000 + hour, t + 2000 + hour],
        );
        let wall = unix_ms(SystemTime::now());
        let (a, b) = (now_ms(), now_ms());
        assert!(
            a >= wall && b >= a,
            "never behind the wall clock, never backwards"
        );
    }

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_102_301_000), "2026-12-01T05:18:21Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn rfc3339_reads_back() {
        for ms in [0, 1_796_102_301_000, 951_782_400_000] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
        }
        assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("soon"), None);
    }

    #[test]
    fn utc_days_and_their_ends() {
        assert_eq!(utc_day(1_796_102_301_000), "2026-12-01");
        assert_eq!(
            rfc3339(next_utc_midnight(1_796_102_301_000)),
            "2026-12-02T00:00:00Z"
        );
        let midnight = next_utc_midnight(0);
        assert_eq!(
            (utc_day(midnight - 1), utc_day(midnight)),
            ("1970-01-01".into(), "1970-01-02".into())
        );
        assert_eq!(next_utc_midnight(midnight), midnight + DAY_MS);
    }

    #[test]
    fn parses_http_dates() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(unix_ms(t), 784_111_777_000);
        assert_eq!(rfc3339(unix_ms(t)), "1994-11-06T08:49:37Z");
        for bad in [
            "",
            "soon",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
        ] {
            assert!(parse_http_date(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn iso_dates_are_read_strictly() {
        let cases = [
            ("1970-01-01", Some(0)),
            ("2026-10-10", Some(20_736)),
            ("2024-02-29", Some(19_782)),
            ("2026-12-31", Some(20_818)),
            ("2026-02-29", None),
            ("2026-02-30", None),
            ("2026-04-31", None),
            ("2026-13-01", None),
            ("2026-00-10", None),
            ("2026-10-00", None),
            ("2026-1-10", None),
            ("2026/10/10", None),
            ("26-10-10", None),
            ("2026-10-10T00:00:00Z", None),
            (" 2026-10-10", None),
            ("+026-10-10", None),
            ("2026-10-+1", None),
            ("", None),
        ];
        for (text, days) in cases {
            assert_eq!(parse_iso_date(text), days, "{text}");
            if let Some(days) = days {
                assert_eq!(iso_date(days), text);
                assert_eq!(utc_day(days as u64 * DAY_MS), text);
            }
        }
    }

    #[test]
    fn round_trips_days() {
        for days in [-1000, 0, 59, 60, 10_957, 20_788] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_ms(850), "850 ms");
        assert_eq!(human_ms(12_300), "12.3 s");
        assert_eq!(human_ms(245_000), "4m05s");
        assert_eq!(human_ms(7_800_000), "2h10m");
    }
}
