//! File times as zip entry times.

use std::time::{SystemTime, UNIX_EPOCH};

use zip::DateTime;

/// A file time as a zip (MS-DOS) time, in UTC; outside 1980–2107 it is 1980-01-01.
pub(super) fn zip_time(time: Option<SystemTime>) -> DateTime {
    let Some(secs) = time
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
    else {
        return DateTime::default();
    };
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    let parts = (
        u16::try_from(year),
        u8::try_from(rem / 3600),
        u8::try_from(rem % 3600 / 60),
        u8::try_from(rem % 60),
    );
    match parts {
        (Ok(year), Ok(hour), Ok(minute), Ok(second)) => {
            DateTime::from_date_and_time(year, month, day, hour, minute, second).unwrap_or_default()
        }
        _ => DateTime::default(),
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u8, u8) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    // day ≤ 31 and month ≤ 12 by construction.
    (
        year,
        u8::try_from(month).unwrap_or(1),
        u8::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        let t = UNIX_EPOCH + std::time::Duration::from_secs(951_782_400 + 3 * 3600 + 4 * 60 + 6);
        let dt = zip_time(Some(t));
        assert_eq!(
            (
                dt.year(),
                dt.month(),
                dt.day(),
                dt.hour(),
                dt.minute(),
                dt.second()
            ),
            (2000, 2, 29, 3, 4, 6)
        );
        assert_eq!(zip_time(Some(UNIX_EPOCH)), DateTime::default());
        assert_eq!(zip_time(None), DateTime::default());
    }
}
