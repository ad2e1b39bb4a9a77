//! The Docker runtime: a container from the base image (made a sandbox image on start), removed
//! on close and on drop, and a container killed mid-action.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use agentd::docker::SandboxConfig;
use agentd::{Runtime, RuntimeConfig, RuntimeError, RuntimeKind, error_id};

use crate::common::{Cleanup, answer_to_a_kill, error_id_of, eventually, metadata, run, sh};

/// The sandboxd put into images: `AGENTD_SANDBOXD_BIN` (the static build), else the
/// workspace's static release build.
fn image_sandboxd() -> PathBuf {
    testkit::sandboxd_binary("x86_64-unknown-linux-gnu/release")
}

fn config() -> RuntimeConfig {
    RuntimeConfig {
        kind: RuntimeKind::Docker,
        sandboxd_binary: Some(image_sandboxd()),
        docker: SandboxConfig {
            image: crate::common::base_image(),
            plugins: Vec::new(),
            ..SandboxConfig::default()
        },
        ..RuntimeConfig::default()
    }
}

fn container_exists(id: &str) -> bool {
    Command::new("docker")
        .args(["inspect", "--type", "container", id])
        .output()
        .is_ok_and(|o| o.status.success())
}

async fn start() -> (Runtime, Cleanup) {
    let runtime = Runtime::start(&config())
        .await
        .unwrap_or_else(|e| panic!("the Docker runtime did not start: {e}"));
    let cleanup = Cleanup(vec![runtime.container_id().unwrap().to_string()]);
    (runtime, cleanup)
}

#[tokio::test]
async fn a_container_runs_actions_and_close_removes_it() {
    let (runtime, _cleanup) = start().await;
    assert_eq!(runtime.kind(), RuntimeKind::Docker);
    assert!(runtime.url().starts_with("http://127.0.0.1:"));
    let id = runtime.container_id().unwrap().to_string();
    assert!(container_exists(&id));
    let obs = runtime.execute(&run(3, "echo hi from $(whoami)")).await;
    assert_eq!(obs.content.trim(), "hi from openhands");
    assert_eq!(obs.cause, Some(3));
    assert_eq!(obs.tool_call_metadata, Some(metadata(3)));
    runtime.health().await.unwrap();
    runtime.close().await.unwrap();
    assert!(!container_exists(&id), "close left the container");
}

#[tokio::test]
async fn dropping_without_close_removes_the_container() {
    let (runtime, _cleanup) = start().await;
    let id = runtime.container_id().unwrap().to_string();
    assert_eq!(sh(&runtime, "echo up").await, "up");
    drop(runtime);
    assert!(!container_exists(&id), "the drop left the container");
}

#[tokio::test]
async fn a_container_killed_mid_action_answers_with_an_error_at_once() {
    let (runtime, _cleanup) = start().await;
    let id = runtime.container_id().unwrap().to_string();
    let sleep = run(41, "sleep 30");
    let pending = runtime.execute(&sleep);
    let killer = async {
        eventually("sleep to start in the container", || {
            Command::new("docker")
                .args(["top", &id])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("sleep 30"))
        })
        .await;
        let killed = Command::new("docker").args(["kill", &id]).output().unwrap();
        assert!(killed.status.success(), "{killed:?}");
        Instant::now()
    };
    let obs = answer_to_a_kill(pending, killer, Duration::from_secs(5)).await;
    assert!(obs.content.contains("container"), "{}", obs.content);
    assert_eq!(obs.cause, Some(41));

    assert!(!runtime.is_alive());
    assert!(matches!(runtime.health().await, Err(RuntimeError::Died(_))));
    let started = Instant::now();
    let obs = runtime.execute(&run(42, "echo again")).await;
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(error_id_of(&obs), error_id::SANDBOX_DIED);
    runtime.close().await.unwrap();
    assert!(!container_exists(&id));
}
