//! Unit tests of `runtime/death.rs`.

use super::*;

#[test]
fn the_first_death_is_kept() {
    let (death, _) = watch::channel(None);
    assert!(record_death(&death, "first".into(), String::new()));
    assert!(!record_death(&death, "second".into(), String::new()));
    assert_eq!(death.borrow().as_ref().unwrap().summary, "first");
}
