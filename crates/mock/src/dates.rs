//! Calendar dates from Unix seconds and back, in the forms the providers write them:
//! RFC 3339 (Anthropic's reset headers), AWS's ISO 8601 basic format (`x-amz-date`).

use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The time `secs` from now in RFC 3339 (`2025-10-25T12:00:00Z`), as Anthropic's
/// `anthropic-ratelimit-*-reset` headers give it.
pub(crate) fn rfc3339_in(secs: u64) -> String {
    rfc3339(unix_now().saturating_add(secs))
}

pub(crate) fn rfc3339(unix: u64) -> String {
    let (year, month, day, h, m, s) = civil(unix);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// `20261207T101010Z`: AWS's `x-amz-date`, ISO 8601 in its basic format.
pub(crate) fn amz_date(unix: u64) -> String {
    let (year, month, day, h, m, s) = civil(unix);
    format!("{year:04}{month:02}{day:02}T{h:02}{m:02}{s:02}Z")
}

/// The Unix seconds of an `x-amz-date` (`20261207T101010Z`), if it is one.
pub(crate) fn parse_amz_date(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    if bytes.len() != 16 || bytes[8] != b'T' || bytes[15] != b'Z' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u64> {
        let digits = text.get(range)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten()
    };
    let (year, month, day) = (number(0..4)?, number(4..6)?, number(6..8)?);
    let (h, m, s) = (number(9..11)?, number(11..13)?, number(13..15)?);
    let valid = year >= 1970
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && h < 24
        && m < 60
        && s < 61;
    valid.then(|| days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

/// Year, month, day, hour, minute, second of a Unix time.
fn civil(unix: u64) -> (u64, u64, u64, u64, u64, u64) {
    let (year, month, day) = civil_from_days(unix / 86_400);
    let rest = unix % 86_400;
    (year, month, day, rest / 3600, rest / 60 % 60, rest % 60)
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Days from 1970-01-01 to a date in or after 1970 (the inverse of `civil_from_days`).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).saturating_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::{amz_date, parse_amz_date, rfc3339};

    #[test]
    fn reset_times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_761_393_600), "2025-10-25T12:00:00Z");
    }

    #[test]
    fn amz_dates_are_iso8601_basic_and_read_back() {
        assert_eq!(amz_date(1_796_638_210), "20261207T101010Z");
        assert_eq!(parse_amz_date("20261207T101010Z"), Some(1_796_638_210));
        assert_eq!(parse_amz_date("20000229T000000Z"), Some(951_782_400));
        for t in [0, 951_782_400, 1_761_393_600, 4_102_444_799] {
            assert_eq!(parse_amz_date(&amz_date(t)), Some(t));
        }
        for bad in [
            "2026-12-07T10:10:10Z",
            "20261307T101010Z",
            "20261207T101010",
            "x",
        ] {
            assert_eq!(parse_amz_date(bad), None, "{bad}");
        }
    }
}
