//! Agent hosts on one service: two `agentd run --runtime remote` processes at once, each in its
//! own sandbox; and agentd's remote runtime reusing a kept session.

use std::process::Stdio;

use agentd::{RemoteApiConfig, Runtime, RuntimeConfig, RuntimeKind};
use client::ObservationExt;
use protocol::action::{CmdRunArgs, FileWriteArgs};
use protocol::{Action, ActionKind};
use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn two_agent_hosts_run_tasks_concurrently_in_separate_sandboxes() {
    let service = Service::start(Options::pooled(1));
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let actions = json!([
        {"action": "run", "args": {"command": "echo $AGENT_HOST > /workspace/who; cat /proc/sys/kernel/hostname"}},
        {"action": "run", "args": {"command": "sleep 1; ls /workspace; cat /workspace/who"}},
    ]);
    std::fs::write(&script, actions.to_string()).unwrap();
    let spawn = |key: &str, session: &str| {
        agentd()
            .args(["run", "--runtime", "remote", "--json", "--task", "t"])
            .args(["--session", session, "--script"])
            .arg(&script)
            .arg("--sessions-dir")
            .arg(dir.path().join("sessions"))
            .env("SANDBOX_REMOTE_RUNTIME_API_URL", &service.url)
            .env("SANDBOX_API_KEY", key)
            .env_remove("AGENTD_CONFIG")
            .env_remove("SANDBOX_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn(KEY_A, "host-a");
    let b = spawn(KEY_B, "host-b");
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let outputs: Vec<Vec<String>> = [&a, &b]
        .iter()
        .map(|out| {
            assert!(
                out.status.success(),
                "agentd run failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|e| e["observation"] == "run")
                .map(|e| e["content"].as_str().unwrap_or_default().trim().to_string())
                .collect()
        })
        .collect();
    assert_eq!(outputs[0].len(), 2, "{outputs:?}");
    assert_eq!(outputs[1].len(), 2, "{outputs:?}");
    // Different containers (hostnames), each seeing only its own workspace.
    assert_ne!(outputs[0][0], outputs[1][0], "{outputs:?}");
    for out in &outputs {
        assert!(out[1].starts_with("who"), "{out:?}");
    }
    // Each run stopped its sandbox when it ended.
    for key in [KEY_A, KEY_B] {
        assert!(service.api(key).list().await.unwrap().runtimes.is_empty());
    }
}

#[tokio::test]
async fn the_remote_runtime_reuses_a_kept_session() {
    let service = Service::start(Options::default());
    let mut config = RuntimeConfig {
        kind: RuntimeKind::Remote,
        remote_api: Some(RemoteApiConfig {
            url: service.url.clone(),
            api_key: KEY_A.to_string(),
            session_id: "kept".to_string(),
            image: "anything:latest".to_string(),
            keep: true,
            ..RemoteApiConfig::default()
        }),
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::start(&config).await.unwrap();
    let write = Action::from(ActionKind::Write(FileWriteArgs::new(
        "/workspace/state.txt",
        "from the first run",
    )));
    let obs = runtime.execute(&write).await;
    assert_eq!(obs.kind.type_name(), "write", "{obs:?}");
    let first = service
        .api(KEY_A)
        .session("kept")
        .await
        .unwrap()
        .access
        .runtime_id;
    runtime.close().await.unwrap();

    // Kept: the next start of the session finds the same sandbox, files and all.
    config.remote_api.as_mut().unwrap().keep = false;
    let runtime = Runtime::start(&config).await.unwrap();
    let cat = Action::from(ActionKind::Run(CmdRunArgs::new("cat /workspace/state.txt")));
    let obs = runtime.execute(&cat).await;
    assert_eq!(obs.content.trim(), "from the first run", "{obs:?}");
    assert_eq!(obs.exit_code(), Some(0));
    assert_eq!(
        service
            .api(KEY_A)
            .session("kept")
            .await
            .unwrap()
            .access
            .runtime_id,
        first
    );
    runtime.close().await.unwrap();
    assert_eq!(
        service
            .api(KEY_A)
            .session("kept")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}
