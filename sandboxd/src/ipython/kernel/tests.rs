//! Unit tests of `ipython/kernel.rs`.

use super::*;

#[test]
fn hex_user_expression_is_decoded() {
    let reply = serde_json::json!({"status": "ok", "user_expressions": {"exe": {
            "status": "ok", "data": {"text/plain": "'2f7573722f62696e2f707974686f6e33'"}, "metadata": {}}}});
    assert_eq!(
        decode_hex_repr(&reply, "exe").as_deref(),
        Some("/usr/bin/python3")
    );
    assert_eq!(decode_hex_repr(&reply, "other"), None);
}
