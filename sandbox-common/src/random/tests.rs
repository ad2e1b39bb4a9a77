//! Unit tests of `random.rs`.

use super::*;

#[test]
fn random_hex_is_hex_of_the_asked_length() {
    let key = random_hex(32).unwrap();
    assert_eq!(key.len(), 64);
    assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(key, random_hex(32).unwrap());
}
