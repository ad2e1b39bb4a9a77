//! Unit tests of `hex.rs`.

use super::*;

#[test]
fn each_byte_is_two_lower_case_digits() {
    assert_eq!(hex(&[]), "");
    assert_eq!(hex(&[0, 9, 0xab, 0xff]), "0009abff");
}
