//! File times as zip entry times.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{Datelike, Timelike};
use zip::DateTime;

/// A file time as a zip (MS-DOS) time, in UTC; outside 1980–2107 it is 1980-01-01.
pub(super) fn zip_time(time: Option<SystemTime>) -> DateTime {
    let Some(utc) = time
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .and_then(|since| i64::try_from(since.as_secs()).ok())
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
    else {
        return DateTime::default();
    };
    let parts = (
        u16::try_from(utc.year()),
        u8::try_from(utc.month()),
        u8::try_from(utc.day()),
        u8::try_from(utc.hour()),
        u8::try_from(utc.minute()),
        u8::try_from(utc.second()),
    );
    match parts {
        (Ok(year), Ok(month), Ok(day), Ok(hour), Ok(minute), Ok(second)) => {
            DateTime::from_date_and_time(year, month, day, hour, minute, second).unwrap_or_default()
        }
        _ => DateTime::default(),
    }
}

#[cfg(test)]
mod tests;
