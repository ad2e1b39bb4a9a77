//! Start-up as root with a privilege drop, and clean shutdown.

use serde_json::json;

use crate::common::*;

/// A sandbox whose shell runs as `nobody`; `None` (the test skipped) unless run as root.
async fn as_nobody() -> Option<Sandbox> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to switch users");
        return None;
    }
    Some(
        Sandbox::with(Options {
            user: Some("nobody"),
            ..Options::default()
        })
        .await,
    )
}

#[tokio::test]
async fn as_root_the_shell_and_new_files_belong_to_the_given_user() {
    let Some(sb) = as_nobody().await else {
        return;
    };
    let obs = sb.run("id -un && id -u").await;
    assert_eq!(content(&obs), "nobody\n65534");
    assert_eq!(meta(&obs, "username"), &json!("nobody"));
    // The terminal belongs to the shell's user, so it can be reopened by name.
    let obs = sb.run("echo hi > $(tty) && echo reopened").await;
    assert!(content(&obs).ends_with("reopened"), "{obs}");
    let obs = sb
        .run("cat /proc/self/status | grep -c '^CapEff:\\s*0*$'")
        .await;
    assert_eq!(content(&obs), "1", "no capabilities left");
    let obs = sb
        .act(json!({"action": "write", "args": {"path": "new.txt", "content": "x"}}))
        .await;
    assert_eq!(obs["observation"], json!("write"), "{obs}");
    let meta = std::fs::metadata(sb.ws.join("new.txt")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), 65534);
    // Static shells drop privileges too.
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "id -un", "is_static": true}, "timeout": 30}))
        .await;
    assert_eq!(content(&obs), "nobody");
}

#[tokio::test]
async fn sigterm_stops_the_daemon_and_every_shell_process() {
    let mut sb = Sandbox::start().await;
    let obs = sb.run("sleep 300 & echo $$").await;
    let shell_pid: i32 = content(&obs)
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let job = meta(&obs, "pid").as_i64().unwrap();
    sb.run_hard("sleep 300", 0.3).await;
    let status = sb.terminate();
    assert!(status.success(), "{status:?}");
    eventually("the shell and its jobs to be gone", || {
        !exists(format!("/proc/{shell_pid}")) && !exists(format!("/proc/{job}"))
    })
    .await;
}

#[tokio::test]
async fn a_missing_user_is_a_clear_start_up_error() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sandboxd"))
        .args([
            "0",
            "--working-dir",
            "/tmp",
            "--username",
            "no-such-user-here",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"no-such-user-here\" (uid 1000) does not exist"),
        "{err}"
    );
}

#[tokio::test]
async fn accepts_the_reference_start_command_line() {
    // What DockerRuntime and RemoteRuntime put after `-m openhands.runtime.action_execution_server`.
    let user = if nix::unistd::geteuid().is_root() {
        "root"
    } else {
        "openhands"
    };
    let sb = Sandbox::with(Options {
        extra_args: vec![
            "--plugins".into(),
            "agent_skills".into(),
            "jupyter".into(),
            "--username".into(),
            user.into(),
            "--user-id".into(),
            "0".into(),
            "--browsergym-eval-env".into(),
            "x".into(),
        ],
        browser: true,
        ..Options::default()
    })
    .await;
    assert_eq!(content(&sb.run("echo up").await), "up");
    // With the browser flag on (the reference's default), `.downloads` exists as the
    // OpenHands test-suite expects.
    assert!(sb.ws.join(".downloads").is_dir());
}

#[tokio::test]
async fn as_root_sandboxd_acts_with_the_users_rights_and_is_out_of_its_reach() {
    let Some(sb) = as_nobody().await else {
        return;
    };
    // A directory only root may write to: file actions are the user's, not sandboxd's root.
    let locked = sb.ws.join("locked");
    std::fs::create_dir(&locked).unwrap();
    let obs = sb
        .act(json!({"action": "write", "args": {"path": locked.join("x").to_str().unwrap(), "content": "x"}}))
        .await;
    assert_eq!(obs["observation"], json!("error"), "{obs}");
    // The refusal is explained with the user's ids (not the real uid sandboxd keeps, root).
    assert!(
        obs["content"]
            .as_str()
            .unwrap()
            .contains("the sandbox user (uid 65534"),
        "{obs}"
    );
    assert!(!locked.join("x").exists());
    // The user can neither signal sandboxd nor read its environment (the session key).
    let pid = sb.pid();
    let obs = sb
        .run(&format!(
            "kill -9 {pid}; cat /proc/{pid}/environ > /dev/null; echo tried"
        ))
        .await;
    assert!(content(&obs).contains("Operation not permitted"), "{obs}");
    assert!(content(&obs).contains("Permission denied"), "{obs}");
    assert_eq!(content(&sb.run("echo alive").await), "alive");
}
