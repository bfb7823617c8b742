//! How old the catalog is: its `updated` date ([`CatalogDate`], read strictly as
//! `YYYY-MM-DD`) and what that makes it on a given day ([`Age`]). Pure: the day comes in,
//! the commands read the clock and say it (`fcm models`, `fcm doctor`).

use serde::{Deserialize, Serialize};

use crate::time::{iso_date, parse_iso_date, DAY_MS};

/// Past this many days a catalog is called old. Free tiers move within weeks: between
/// mid-September and mid-October 2026 one public audit of the same providers retired or
/// found paid 46 of 271 free models; two months without an update leaves a catalog
/// naming models that are gone and limits that changed.
pub const OLD_AFTER_DAYS: i64 = 60;

/// The day the catalog's facts were last brought up to date (`"updated": "2026-10-10"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CatalogDate {
    /// Days since 1970-01-01.
    days: i64,
}

impl CatalogDate {
    /// `2026-10-10`; `None` for another form or a day the calendar lacks.
    pub fn parse(text: &str) -> Option<CatalogDate> {
        parse_iso_date(text).map(|days| CatalogDate { days })
    }

    /// Whole days from this date to the UTC day of `now_ms`; 0 for a date still to come
    /// (a clock set back is not a reason to call a catalog new or old).
    pub fn days_old(self, now_ms: u64) -> i64 {
        let today = i64::try_from(now_ms / DAY_MS).unwrap_or(i64::MAX);
        today.saturating_sub(self.days).max(0)
    }
}

impl std::fmt::Display for CatalogDate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&iso_date(self.days))
    }
}

impl Serialize for CatalogDate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CatalogDate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CatalogDate, D::Error> {
        let text = String::deserialize(d)?;
        CatalogDate::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid date {text:?}: expected a day of the calendar as YYYY-MM-DD"
            ))
        })
    }
}

/// What a catalog's date makes it on a given day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Age {
    /// No `updated` date (a catalog of one's own may leave it out).
    Undated,
    /// At most [`OLD_AFTER_DAYS`] old.
    Current { date: CatalogDate, days: i64 },
    /// Older than [`OLD_AFTER_DAYS`].
    Old { date: CatalogDate, days: i64 },
}

impl Age {
    pub fn of(updated: Option<CatalogDate>, now_ms: u64) -> Age {
        let Some(date) = updated else {
            return Age::Undated;
        };
        match date.days_old(now_ms) {
            days if days > OLD_AFTER_DAYS => Age::Old { date, days },
            days => Age::Current { date, days },
        }
    }

    /// `of 2026-10-10 (54 days old)`, or `undated`.
    pub fn describe(&self) -> String {
        match self {
            Age::Undated => "undated".to_string(),
            Age::Current { date, days } | Age::Old { date, days } => {
                format!(
                    "of {date} ({days} day{} old)",
                    if *days == 1 { "" } else { "s" }
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noon UTC of a day written `YYYY-MM-DD`, as ms.
    fn noon(day: &str) -> u64 {
        parse_iso_date(day).unwrap() as u64 * DAY_MS + DAY_MS / 2
    }

    #[test]
    fn age_in_days_from_the_date_and_today() {
        let cases = [
            ("2026-10-10", "2026-10-10", 0),
            ("2026-10-10", "2026-10-11", 1),
            ("2026-10-10", "2026-12-03", 54),
            ("2026-10-10", "2026-12-09", 60),
            ("2026-10-10", "2026-12-10", 61),
            ("2024-02-28", "2024-03-01", 2),
            ("2025-12-31", "2026-01-01", 1),
            ("2026-10-10", "2026-10-01", 0),
        ];
        for (updated, today, days) in cases {
            let date = CatalogDate::parse(updated).unwrap();
            assert_eq!(date.days_old(noon(today)), days, "{updated} on {today}");
        }
        let date = CatalogDate::parse("2026-10-10").unwrap();
        let midnight = parse_iso_date("2026-10-11").unwrap() as u64 * DAY_MS;
        assert_eq!(
            (date.days_old(midnight - 1), date.days_old(midnight)),
            (0, 1),
            "a day is a UTC day"
        );
    }

    #[test]
    fn older_than_sixty_days_is_old() {
        let date = CatalogDate::parse("2026-10-10");
        let cases = [
            (None, "2026-12-03", Age::Undated, "undated"),
            (
                date,
                "2026-10-11",
                Age::Current {
                    date: date.unwrap(),
                    days: 1,
                },
                "of 2026-10-10 (1 day old)",
            ),
            (
                date,
                "2026-12-09",
                Age::Current {
                    date: date.unwrap(),
                    days: 60,
                },
                "of 2026-10-10 (60 days old)",
            ),
            (
                date,
                "2026-12-10",
                Age::Old {
                    date: date.unwrap(),
                    days: 61,
                },
                "of 2026-10-10 (61 days old)",
            ),
        ];
        for (updated, today, age, text) in cases {
            assert_eq!(Age::of(updated, noon(today)), age, "{today}");
            assert_eq!(age.describe(), text);
        }
    }

    #[test]
    fn dates_read_and_write_as_iso_text() {
        let date: CatalogDate = serde_json::from_str("\"2026-10-10\"").unwrap();
        assert_eq!(date.to_string(), "2026-10-10");
        assert_eq!(serde_json::to_string(&date).unwrap(), "\"2026-10-10\"");
        for bad in [
            "\"2026-02-30\"",
            "\"10/10/2026\"",
            "\"2026-10-10T00:00Z\"",
            "20261010",
        ] {
            let err = serde_json::from_str::<CatalogDate>(bad).unwrap_err();
            assert!(
                err.to_string().contains("YYYY-MM-DD") || err.to_string().contains("invalid type"),
                "{bad}: {err}"
            );
        }
    }
}
