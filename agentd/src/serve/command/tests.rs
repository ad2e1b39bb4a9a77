//! Unit tests of `serve/command.rs`.

use super::*;

#[test]
fn the_requested_user_is_honoured_or_refused() {
    let user = |args: &[&str]| requested_user(&strings(args));
    assert_eq!(user(&[]), Ok(SandboxUser::default()));
    assert_eq!(
        user(&["--username", "openhands", "--user-id", "1000"]),
        Ok(SandboxUser::default())
    );
    assert_eq!(
        user(&["--username", "root", "--user-id", "0"]),
        Ok(SandboxUser::ROOT)
    );
    assert_eq!(user(&["--user-id", "0"]), Ok(SandboxUser::ROOT));
    assert_eq!(
        user(&["--username", "openhands", "--user-id", "4321"]),
        Ok(SandboxUser {
            uid: 4321,
            gid: 4321
        })
    );
    assert!(user(&["--username", "alice", "--user-id", "1000"]).is_err());
    assert!(user(&["--username", "root", "--user-id", "1000"]).is_err());
    assert!(user(&["--user-id", "x"]).is_err());
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_reference_command_maps_onto_sandboxd() {
    let command = testkit::reference_start_command(&["agent_skills", "jupyter"]);
    let args = sandboxd_args(&command, 8000).unwrap();
    assert_eq!(
        args,
        strings(&[
            "8000",
            "--host",
            "0.0.0.0",
            "--output-dir",
            "/tmp/sandboxd-outputs",
            "--working-dir",
            "/workspace",
            "--plugins",
            "agent_skills",
            "jupyter",
            "--username",
            "openhands",
            "--user-id",
            "1000",
            "--no-enable-browser",
        ])
    );
}

#[test]
fn an_empty_command_gets_the_defaults_and_foreign_flags_are_refused() {
    let args = sandboxd_args(&[], 8000).unwrap();
    assert!(args.ends_with(&strings(&["--working-dir", "/workspace"])));
    let err = sandboxd_args(&strings(&["sandboxd", "1", "--unix-socket", "/x"]), 8000).unwrap_err();
    assert!(err.contains("--unix-socket"), "{err}");
    let err = sandboxd_args(&strings(&["sandboxd", "--session-api-key=x"]), 8000).unwrap_err();
    assert!(err.contains("--session-api-key"), "{err}");
}

#[test]
fn the_session_key_is_the_services() {
    let caller = BTreeMap::from([
        ("SESSION_API_KEY".to_string(), "mine".to_string()),
        ("SANDBOXD_UNIX_SOCKET".to_string(), "/x".to_string()),
        ("NO_CHANGE_TIMEOUT_SECONDS".to_string(), "1".to_string()),
    ]);
    let env = environment(&caller, "service-made");
    assert_eq!(env["SESSION_API_KEY"], "service-made");
    assert_eq!(env["NO_CHANGE_TIMEOUT_SECONDS"], "1");
    assert!(!env.contains_key("SANDBOXD_UNIX_SOCKET"));
}
