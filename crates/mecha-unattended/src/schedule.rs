//! A trigger's schedule: five cron fields (minute, hour, day of month,
//! month, day of week) or a shorthand (`@hourly`, `@daily`, …), read in
//! the machine's local time, as cron reads them.

use std::str::FromStr;

use chrono::{DateTime, Local, TimeZone};

/// A checked schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    written: String,
    cron: croner::Cron,
}

impl Schedule {
    /// The schedule as written, or why it is none, with the shape to use.
    pub fn parse(written: &str) -> Result<Self, String> {
        let written = written.trim();
        let shape = "a schedule is five fields, minute hour day-of-month month day-of-week \
                     (`0 7 * * *` is 07:00 every day, `*/15 * * * 1-5` every quarter hour on \
                     weekdays), or @hourly, @daily, @weekly, @monthly, @yearly";
        let fields = written.split_whitespace().count();
        if !written.starts_with('@') && fields != 5 {
            return Err(format!("`{written}` has {fields} fields; {shape}"));
        }
        let cron = croner::Cron::from_str(written)
            .map_err(|e| format!("`{written}` is no schedule ({e}); {shape}"))?;
        Ok(Self {
            written: written.to_owned(),
            cron,
        })
    }

    /// The schedule as the user wrote it.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// The first time the schedule names strictly after `after`; `None`
    /// when it names none (the 30th of February).
    pub fn next_after<Tz: TimeZone>(&self, after: &DateTime<Tz>) -> Option<DateTime<Tz>> {
        self.cron.find_next_occurrence(after, false).ok()
    }

    /// The time a run is due at `now`, for a trigger whose runs so far
    /// cover everything up to `covered` (its last run's start, or when it
    /// was added): the first time the schedule names after `covered`, if
    /// that is not after `now`. Several times missed (the machine slept)
    /// make one run: the first of them is returned, and the run that
    /// follows covers them all.
    pub fn due(&self, covered: &DateTime<Local>, now: &DateTime<Local>) -> Option<DateTime<Local>> {
        self.next_after(covered).filter(|next| next <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn at(hour: u32, minute: u32) -> DateTime<Local> {
        Local
            .with_ymd_and_hms(2026, 12, 3, hour, minute, 0)
            .single()
            .unwrap()
    }

    #[test]
    fn a_daily_schedule_names_its_next_minute() {
        let daily = Schedule::parse("0 7 * * *").unwrap();
        assert_eq!(daily.next_after(&at(6, 59)), Some(at(7, 0)));
        assert_eq!(
            daily.next_after(&at(7, 0)),
            Some(at(7, 0) + Duration::days(1))
        );
    }

    #[test]
    fn bad_schedules_say_the_shape_to_use() {
        for bad in ["0 7 * *", "0 0 7 * * *", "61 * * * *", "every morning", ""] {
            let err = Schedule::parse(bad).unwrap_err();
            assert!(err.contains("five fields"), "{bad}: {err}");
        }
        assert!(Schedule::parse("@daily").is_ok());
    }

    #[test]
    fn runs_missed_while_asleep_are_due_once() {
        let every_minute = Schedule::parse("* * * * *").unwrap();
        // Last run at 06:00, the machine woke at 06:05: one run is due.
        assert_eq!(every_minute.due(&at(6, 0), &at(6, 5)), Some(at(6, 1)));
        // That run (started 06:05) covers up to 06:05: nothing more is due
        // until 06:06.
        assert_eq!(every_minute.due(&at(6, 5), &at(6, 5)), None);
        assert_eq!(every_minute.due(&at(6, 5), &at(6, 6)), Some(at(6, 6)));
    }
}
