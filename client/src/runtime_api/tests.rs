//! Unit tests of `runtime_api.rs`.

use super::*;

#[test]
fn segments_are_encoded() {
    assert_eq!(encode_segment("abc-1_2.x"), "abc-1_2.x");
    assert_eq!(encode_segment("a/b c"), "a%2Fb%20c");
}

#[test]
fn keys_must_be_header_values() {
    assert!(matches!(
        RuntimeApiClient::new("http://127.0.0.1:1", "bad\nkey"),
        Err(ClientError::InvalidApiKey)
    ));
}
