//! Unit tests of `serve/auth.rs`.

use super::*;

#[test]
fn only_configured_keys_pass_and_each_key_is_its_own_owner() {
    let keys = ApiKeys::new(["one", "two", ""]);
    let one = keys.verify(b"one").unwrap();
    let two = keys.verify(b"two").unwrap();
    assert_ne!(one, two);
    assert_eq!(keys.verify(b"one"), Some(one.clone()));
    assert_eq!(keys.verify(b"onE"), None);
    assert_eq!(keys.verify(b""), None);
    assert!(!one.as_str().contains("one"));
    assert!(ApiKeys::new([""]).is_empty());
}

#[test]
fn a_session_key_is_the_same_key_only_when_equal() {
    assert!(same_key(b"abc", "abc"));
    assert!(!same_key(b"abd", "abc"));
    assert!(!same_key(b"", "abc"));
}
