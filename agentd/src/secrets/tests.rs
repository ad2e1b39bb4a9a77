use protocol::action::MessageArgs;
use protocol::{Action, ActionKind, Event};
use serde_json::json;

use super::{SECRET_HIDDEN, Secret, SecretError, SecretMask, SecretSetting};

fn secret(name: &str, value: &str) -> Secret {
    Secret::new(name, value.to_string(), "d").unwrap()
}

#[test]
fn every_occurrence_is_masked_longest_secret_first() {
    let mask = SecretMask::new(&[secret("A", "hunter2"), secret("B", "hunter2-extended")]);
    assert_eq!(
        mask.mask("x hunter2-extended y hunter2 zhunter2z"),
        "x <secret_hidden> y <secret_hidden> z<secret_hidden>z"
    );
    assert_eq!(mask.mask("nothing here"), "nothing here");
    assert!(SecretMask::default().is_empty());
    assert_eq!(SecretMask::default().mask("hunter2"), "hunter2");
}

#[test]
fn json_is_masked_at_any_depth_lists_and_keys_included_regression_reference_skipped_lists() {
    let mask = SecretMask::new(&[secret("A", "s3cr3t")]);
    let mut value = json!({
        "a": "s3cr3t",
        "list": ["s3cr3t", {"deep": ["x s3cr3t y"]}],
        "s3cr3t": 1,
        "n": 5, "b": true, "z": null
    });
    mask.mask_json(&mut value);
    assert_eq!(
        value,
        json!({
            "a": SECRET_HIDDEN,
            "list": [SECRET_HIDDEN, {"deep": ["x <secret_hidden> y"]}],
            "<secret_hidden>": 1,
            "n": 5, "b": true, "z": null
        })
    );
}

#[test]
fn an_event_keeps_its_envelope_and_type_and_loses_its_secrets() {
    let mask = SecretMask::new(&[secret("TOKEN", "user-abc123")]);
    let mut action = Action::from(ActionKind::Message(MessageArgs {
        content: "token user-abc123".into(),
        ..MessageArgs::default()
    }));
    action.message = Some("says user-abc123".into());
    let masked = mask.mask_event(Event::Action(action)).unwrap();
    let json = serde_json::to_value(&masked).unwrap();
    assert_eq!(json["action"], "message");
    assert_eq!(json["args"]["content"], "token <secret_hidden>");
    assert_eq!(json["message"], "says <secret_hidden>");
    // A secret that is one of the protocol's words breaks the event: refused, not stored in
    // clear.
    let word = SecretMask::new(&[secret("W", "confirmed")]);
    let run = serde_json::from_value::<Action>(json!({"action": "run", "args": {"command": "ls"}}))
        .unwrap();
    assert!(word.mask_event(Event::Action(run)).is_err());
}

#[test]
fn secrets_are_checked_and_never_shown_by_debug() {
    let ok = secret("API_TOKEN", "value-1234");
    assert!(!format!("{ok:?}").contains("value-1234"));
    assert!(format!("{:?}", SecretMask::new(&[ok])).contains("1 values"));
    assert_eq!(
        Secret::new("1X", "long enough".into(), ""),
        Err(SecretError::BadName("1X".into()))
    );
    assert_eq!(
        Secret::new("A-B", "long enough".into(), ""),
        Err(SecretError::BadName("A-B".into()))
    );
    assert_eq!(
        Secret::new("X", "abc".into(), ""),
        Err(SecretError::TooShort("X".into()))
    );
    let env = |name: &str| (name == "SET").then(|| "from-env-value".to_string());
    let from_env = SecretSetting {
        env: Some("SET".into()),
        description: "desc".into(),
        ..SecretSetting::default()
    };
    let read = Secret::from_setting("S", &from_env, env).unwrap();
    assert_eq!(
        (read.value.as_str(), read.description.as_str()),
        ("from-env-value", "desc")
    );
    let unset = SecretSetting {
        env: Some("UNSET".into()),
        ..SecretSetting::default()
    };
    assert!(matches!(
        Secret::from_setting("S", &unset, env),
        Err(SecretError::Unset { .. })
    ));
    assert_eq!(
        Secret::from_setting("S", &SecretSetting::default(), env),
        Err(SecretError::NoSource("S".into()))
    );
}

#[test]
fn the_log_writer_masks_what_it_is_given_once_set() {
    use std::io::Write;
    use tracing_subscriber::fmt::MakeWriter;
    let log = super::LogMask::default();
    assert_eq!(log.mask("pw=letmein"), "pw=letmein");
    log.set(SecretMask::new(&[secret("P", "letmein")]));
    assert_eq!(log.mask("pw=letmein"), "pw=<secret_hidden>");
    let mut writer = log.make_writer();
    assert_eq!(writer.write(b"pw=letmein\n").unwrap(), 11);
}
