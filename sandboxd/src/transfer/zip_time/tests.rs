//! Unit tests of `transfer/zip_time.rs`.

use std::time::Duration;

use super::*;

const DAY: u64 = 86_400;

/// The zip time of `secs` seconds after the epoch, as its fields.
fn fields(secs: u64) -> (u16, u8, u8, u8, u8, u8) {
    let dt = zip_time(Some(UNIX_EPOCH + Duration::from_secs(secs)));
    (
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
    )
}

#[test]
fn civil_dates() {
    // Day counts since 1970-01-01 as proleptic Gregorian dates, leap day included.
    assert_eq!(fields(11_016 * DAY), (2000, 2, 29, 0, 0, 0));
    assert_eq!(fields(11_017 * DAY), (2000, 3, 1, 0, 0, 0));
    assert_eq!(fields(20_454 * DAY), (2026, 1, 1, 0, 0, 0));
    assert_eq!(
        fields(951_782_400 + 3 * 3600 + 4 * 60 + 6),
        (2000, 2, 29, 3, 4, 6)
    );
    assert_eq!(zip_time(Some(UNIX_EPOCH)), DateTime::default());
    assert_eq!(zip_time(None), DateTime::default());
}

/// Zip times hold 1980-01-01 to 2107-12-31 in steps of two seconds; anything else, before
/// the epoch or far beyond what a calendar crate can represent included, is 1980-01-01.
#[test]
fn range_and_resolution() {
    let first = 3652 * DAY;
    let after_last = 50_403 * DAY;
    assert_eq!(fields(first), (1980, 1, 1, 0, 0, 0));
    assert_eq!(fields(first + 3), (1980, 1, 1, 0, 0, 2));
    assert_eq!(fields(after_last - 1), (2107, 12, 31, 23, 59, 58));
    let default = DateTime::default();
    assert_eq!(
        zip_time(Some(UNIX_EPOCH + Duration::from_secs(first - 1))),
        default
    );
    assert_eq!(
        zip_time(Some(UNIX_EPOCH + Duration::from_secs(after_last))),
        default
    );
    let before_epoch = UNIX_EPOCH.checked_sub(Duration::from_secs(DAY));
    assert_eq!(zip_time(before_epoch), default);
    for far in [1 << 40, 1 << 45] {
        let time = UNIX_EPOCH.checked_add(Duration::from_secs(far));
        assert!(time.is_some());
        assert_eq!(zip_time(time), default);
    }
}
