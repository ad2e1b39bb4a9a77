//! Unit tests of `serve/reaper.rs`.

use super::*;

#[test]
fn the_reaper_looks_four_times_per_timeout_within_bounds() {
    assert_eq!(period(Duration::from_secs(8)), Duration::from_secs(2));
    assert_eq!(
        period(Duration::from_millis(100)),
        Duration::from_millis(250)
    );
    assert_eq!(
        period(Duration::from_secs(30 * 60)),
        Duration::from_secs(30)
    );
}

#[test]
fn a_sandbox_is_idle_from_the_timeout_on() {
    let timeout = Duration::from_secs(60);
    assert!(!is_idle(59.9, timeout));
    assert!(is_idle(60.0, timeout));
    assert!(is_idle(61.0, timeout));
}
