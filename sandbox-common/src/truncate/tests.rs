//! Unit tests of `truncate.rs`.

use super::*;

#[test]
fn middle_truncation_matches_the_reference_length() {
    let out = truncate_middle("x".repeat(40_000), MAX_OBSERVATION_CHARS);
    assert_eq!(out.chars().count(), 30_047);
    assert!(out.contains(TRUNCATION_NOTICE));
    let short = "é".repeat(30_000);
    assert_eq!(truncate_middle(short.clone(), MAX_OBSERVATION_CHARS), short);
}

#[test]
fn half_the_limit_is_kept_at_each_end_counted_in_characters() {
    let long = format!("{}{}", "a".repeat(60), "b".repeat(60));
    assert_eq!(
        truncate_middle(long.as_str(), 20),
        format!("{}{TRUNCATION_NOTICE}{}", "a".repeat(10), "b".repeat(10))
    );
    assert_eq!(
        truncate_middle("ééééé", 2),
        format!("é{TRUNCATION_NOTICE}é")
    );
    assert!(matches!(
        truncate_middle(long.as_str(), 120),
        Cow::Borrowed(_)
    ));
}
