//! Unit tests of `serve/service.rs`.

use super::*;

#[test]
fn sudo_and_egress_keys_must_be_api_keys_and_a_stranger_is_shown_by_four_characters() {
    let api_keys = ["key-a".to_string(), "key-b".to_string()];
    let known = ["key-b".to_string()];
    assert!(only_api_keys("sudo_keys", &known, &api_keys).is_ok());
    let with_stranger = ["key-a".to_string(), "stranger".to_string()];
    let error = only_api_keys("egress_keys", &with_stranger, &api_keys).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid configuration: egress_keys holds a key (stra...) that is not one of api_keys"
    );
}
