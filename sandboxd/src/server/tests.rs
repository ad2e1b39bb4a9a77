//! Unit tests of `server.rs`.

use super::*;

#[test]
fn decoding_errors_carry_the_reference_messages() {
    let obs = serde_json::json!({"observation": "run", "content": "", "extras": {"command": "x"}});
    assert_eq!(
        decode_action(obs).unwrap_err().to_string(),
        "400: Invalid action type"
    );
    let think = serde_json::json!({"action": "think", "args": {"thought": "x"}});
    assert_eq!(
        decode_action(think).unwrap_err().to_string(),
        "'ActionExecutor' object has no attribute 'think'"
    );
    let nope = decode_action(serde_json::json!({"action": "nope"})).unwrap_err();
    assert!(nope.to_string().starts_with(
        "'action['action']='nope'' is not defined. Available actions: ['null', 'run',"
    ));
    let wrong = decode_action(serde_json::json!({"action": "run", "args": {"command": 3}}));
    assert!(matches!(wrong, Err(ActionError::WrongArguments(..))));
    let missing_args = decode_action(serde_json::json!({"action": "run"}));
    assert!(matches!(missing_args, Err(ActionError::WrongArguments(..))));
}

#[test]
fn constant_time_comparison() {
    assert!(constant_time_eq(b"sekret", b"sekret"));
    assert!(!constant_time_eq(b"sekret", b"sekreT"));
    assert!(!constant_time_eq(b"", b"sekret"));
}
