//! UTC timestamps from `SystemTime`, by hand: a session needs two spellings
//! of "now" (RFC 3339 for the header, a sortable compact one for the id),
//! which is not worth a time crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// A moment in UTC, broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Utc {
    year: i64,
    month: u32,
    day: u32,
    hour: u64,
    minute: u64,
    second: u64,
    millis: u32,
}

impl Utc {
    /// `time` in UTC; a clock set before 1970 reads as 1970.
    pub(crate) fn at(time: SystemTime) -> Self {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        let (year, month, day) = civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0));
        let of_day = secs % 86_400;
        Self {
            year,
            month,
            day,
            hour: of_day / 3600,
            minute: of_day % 3600 / 60,
            second: of_day % 60,
            millis: since.subsec_millis(),
        }
    }

    /// `2026-12-01T16:36:47.123Z`: milliseconds, so that two sessions
    /// started in the same second still order by start.
    pub(crate) fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }

    /// `20261201-163647`: the time part of a session id, which sorts as the
    /// time does.
    pub(crate) fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard
/// Hinnant's `civil_from_days`): eras of 400 years, years starting in March
/// so the leap day is the last of the year.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are in range by construction (1..=31, 1..=12).
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(secs: u64, millis: u64) -> Utc {
        Utc::at(UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis))
    }

    #[test]
    fn known_moments() {
        assert_eq!(at(0, 0).rfc3339(), "1970-01-01T00:00:00.000Z");
        // 2000-02-29, a leap day of a century year divisible by 400.
        assert_eq!(at(951_782_400, 5).rfc3339(), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(951_868_800, 0).rfc3339(), "2000-03-01T00:00:00.000Z");
        // 2100 is not a leap year: 28 February is followed by 1 March.
        assert_eq!(at(4_107_542_399, 999).rfc3339(), "2100-02-28T23:59:59.999Z");
        assert_eq!(at(4_107_542_400, 0).rfc3339(), "2100-03-01T00:00:00.000Z");
        // The last second of a leap year.
        assert_eq!(at(1_735_689_599, 0).rfc3339(), "2024-12-31T23:59:59.000Z");
        assert_eq!(at(1_796_143_007, 0).compact(), "20261201-163647");
    }

    #[test]
    fn every_day_follows_the_one_before() {
        // Walks 1970..2400 a day at a time: dates never repeat or skip, and
        // months have their lengths.
        let mut previous = civil_from_days(0);
        assert_eq!(previous, (1970, 1, 1));
        for days in 1..(430 * 366) {
            let (y, m, d) = civil_from_days(days);
            let (py, pm, pd) = previous;
            let next_of_previous = if d == 1 {
                let leap = py % 4 == 0 && (py % 100 != 0 || py % 400 == 0);
                let length = match pm {
                    2 if leap => 29,
                    2 => 28,
                    4 | 6 | 9 | 11 => 30,
                    _ => 31,
                };
                assert_eq!(pd, length, "{py}-{pm} ends on day {pd}");
                if pm == 12 { (py + 1, 1) } else { (py, pm + 1) }
            } else {
                assert_eq!(d, pd + 1);
                (py, pm)
            };
            assert_eq!((y, m), next_of_previous, "day {days}");
            previous = (y, m, d);
        }
    }

    #[test]
    fn before_1970_reads_as_1970() {
        let early = UNIX_EPOCH - Duration::from_secs(10);
        assert_eq!(Utc::at(early).rfc3339(), "1970-01-01T00:00:00.000Z");
    }
}
