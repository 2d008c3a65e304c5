//! The wall clock as the ledger, the cache and the window count it: Unix milliseconds.

use std::time::SystemTime;

/// A time as Unix milliseconds; 0 before 1970.
pub fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Now, as Unix milliseconds.
pub fn now_ms() -> i64 {
    unix_ms(SystemTime::now())
}

/// The UTC (year, month, day) of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Days from 1970-01-01 to a UTC date (the inverse of [`civil_from_days`]).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// The start (Unix ms) of the UTC day of `now_ms`.
pub fn day_start(now_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(DAY_MS)
}

/// The start (Unix ms) of the UTC month `ahead` months after the one of `now_ms`.
pub fn month_start(now_ms: i64, ahead: i64) -> i64 {
    let (y, m, _) = civil_from_days(now_ms.div_euclid(DAY_MS));
    let months = y * 12 + (m - 1) + ahead;
    days_from_civil(months.div_euclid(12), months.rem_euclid(12) + 1, 1) * DAY_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_start_on_the_first_at_midnight_utc() {
        // 2026-12-03T09:00Z → 2026-12-01 and 2027-01-01; 2024-02-29 → 2024-03-01.
        let now = 1_796_288_400_000;
        assert_eq!(month_start(now, 0), 1_796_083_200_000);
        assert_eq!(month_start(now, 1), 1_798_761_600_000);
        assert_eq!(month_start(1_709_164_800_000, 1), 1_709_251_200_000);
        assert_eq!(month_start(0, 0), 0);
        assert_eq!(day_start(now), 1_796_256_000_000);
    }

    #[test]
    fn dates_and_days_go_both_ways() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        for days in [-1000, 0, 59, 60, 19_782, 20_790, 100_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
