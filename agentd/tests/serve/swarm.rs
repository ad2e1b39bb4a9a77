//! The swarm backend for real: a one-node Docker Swarm made on this machine's engine for the
//! test (and left afterwards, even when the test fails), sandboxes as swarm services reached
//! through the front door.
//!
//! The engine is shared with the other tests: the swarm changes nothing of their containers
//! (plain containers are no swarm's), one swarm test runs at a time, and what the swarm made
//! (its services, their networks, `docker_gwbridge`) goes with it.

use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use client::ObservationExt;
use client::protocol::runtime_api::SessionStatus;

use crate::common::*;

/// One swarm test at a time.
static SWARM: Mutex<()> = Mutex::new(());

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// This engine in swarm mode while it lives.
struct OneNodeSwarm {
    /// The swarm was made by this guard (and is left by it).
    made: bool,
    /// `docker_gwbridge` was there before.
    had_gwbridge: bool,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl OneNodeSwarm {
    fn init() -> OneNodeSwarm {
        let lock = SWARM
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let had_gwbridge =
            !docker(&["network", "ls", "-q", "--filter", "name=^docker_gwbridge$"]).is_empty();
        let state = docker(&["info", "--format", "{{.Swarm.LocalNodeState}}"]);
        let made = state == "inactive";
        if made {
            let status = Command::new("docker")
                .args(["swarm", "init", "--advertise-addr", "127.0.0.1"])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "docker swarm init failed");
        }
        OneNodeSwarm {
            made,
            had_gwbridge,
            _one_at_a_time: lock,
        }
    }

    /// The swarm services of service `name`.
    fn services(name: &str) -> Vec<String> {
        let filter = format!("label=dev.sandboxd.serve.name={name}");
        docker(&["service", "ls", "-q", "--filter", &filter])
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// Removes what service `name` left in the swarm (its services and their networks).
    fn clean(name: &str) {
        let services = Self::services(name);
        if !services.is_empty() {
            let mut args = vec!["service", "rm"];
            args.extend(services.iter().map(String::as_str));
            docker(&args);
        }
        let filter = format!("label=dev.sandboxd.serve.name={name}");
        for network in docker(&["network", "ls", "-q", "--filter", &filter]).split_whitespace() {
            // A network goes once its task's container has.
            for _ in 0..100 {
                if docker(&["network", "rm", network]).is_empty() {
                    std::thread::sleep(Duration::from_millis(100));
                } else {
                    break;
                }
            }
        }
    }
}

impl Drop for OneNodeSwarm {
    fn drop(&mut self) {
        if !self.made {
            return;
        }
        // Whatever a failed test left: every service of this swarm is ours.
        let services = docker(&["service", "ls", "-q"]);
        if !services.is_empty() {
            let mut args = vec!["service", "rm"];
            args.extend(services.split_whitespace());
            docker(&args);
        }
        let _ = Command::new("docker")
            .args(["swarm", "leave", "--force"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !self.had_gwbridge {
            docker(&["network", "rm", "docker_gwbridge"]);
        }
    }
}

/// A service on the swarm backend (no disk limit: a swarm service has none).
fn swarm_options(pool: usize, idle: f64) -> Options {
    Options {
        pool_size: pool,
        idle_timeout: idle,
        // The scheduler reserves what a sandbox may use: a quarter CPU each lets the replica
        // test's six sandboxes fit on this 2-CPU node.
        cpus: Some("0.25"),
        extra: ["--backend", "swarm", "--disk", "none"]
            .map(str::to_string)
            .to_vec(),
    }
}

#[tokio::test]
async fn swarm_sandboxes_start_run_pause_resume_survive_a_restart_and_stop() {
    let _swarm = OneNodeSwarm::init();
    let mut service = Service::start(swarm_options(1, 0.0));
    let name = service.name.clone();
    let (started, sandbox) = service.ready_sandbox(KEY_A, "on-the-swarm").await;
    let runtime_id = started.access.runtime_id.clone();
    // Through the front door, never a node's port.
    assert_eq!(
        started.access.url,
        format!("{}/sandboxes/{runtime_id}", service.url)
    );
    let services = OneNodeSwarm::services(&name);
    assert!(!services.is_empty(), "no swarm service for the sandbox");
    let obs = sandbox
        .run("echo from a swarm task; id -u", None)
        .await
        .unwrap();
    assert_eq!(obs.content.trim(), "from a swarm task\n1000");
    assert_eq!(obs.exit_code(), Some(0));

    let api = service.api(KEY_A);
    sandbox.run("export KEPT=across-pause", None).await.unwrap();
    api.pause(&runtime_id).await.unwrap();
    assert_eq!(
        api.session("on-the-swarm").await.unwrap().status,
        SessionStatus::Paused
    );
    api.resume(&runtime_id).await.unwrap();
    let obs = sandbox.run("echo $KEPT", None).await.unwrap();
    assert_eq!(obs.content.trim(), "across-pause");

    // A killed service finds its sandbox again (and its session key still works).
    sandbox
        .write("/workspace/note.txt", "before the kill")
        .await
        .unwrap();
    service.kill();
    service.spawn();
    let sandbox = service
        .found_sandbox(KEY_A, "on-the-swarm", &runtime_id)
        .await;
    let api = service.api(KEY_A);
    let obs = sandbox.run("cat /workspace/note.txt", None).await.unwrap();
    assert_eq!(obs.content.trim(), "before the kill");

    api.stop(&runtime_id).await.unwrap();
    eventually(30, "the sandbox's swarm service to go", || {
        let left = OneNodeSwarm::services(&name).len();
        // The warm one stays.
        async move { left <= 1 }
    })
    .await;
    service.terminate(Duration::from_secs(30));
    assert!(OneNodeSwarm::services(&name).is_empty());
    OneNodeSwarm::clean(&name);
}

#[tokio::test]
async fn idle_swarm_sandboxes_are_stopped() {
    let _swarm = OneNodeSwarm::init();
    let service = Service::start(swarm_options(0, 2.0));
    let name = service.name.clone();
    let (started, _sandbox) = service.ready_sandbox(KEY_A, "idle").await;
    let api = service.api(KEY_A);
    wait_until_idle_stopped(&api, "idle", 60).await;
    eventually(30, "its swarm service to go", || {
        let left = OneNodeSwarm::services(&name).is_empty();
        async move { left }
    })
    .await;
    assert_runtime_gone(&api, &started.access.runtime_id).await;
    drop(service);
    OneNodeSwarm::clean(&name);
}

#[tokio::test]
async fn two_replicas_share_one_pool_and_never_hand_out_a_sandbox_twice() {
    let _swarm = OneNodeSwarm::init();
    let a = Service::start(swarm_options(2, 0.0));
    let name = a.name.clone();
    let api_a = a.api(KEY_A);
    eventually(120, "replica A's pool to fill", || {
        let api = &api_a;
        async move { api.list().await.unwrap().warm.values().sum::<usize>() == 2 }
    })
    .await;
    // B starts on the same cluster and takes A's warm sandboxes into its pool too.
    let b = a.replica();
    let api_b = b.api(KEY_A);
    assert_eq!(api_b.list().await.unwrap().warm.values().sum::<usize>(), 2);

    // Both hand out at once: each warm sandbox goes to one of them only.
    start_four_sessions_on_two_replicas(&a, &b, "a sandbox").await;

    // The state is the cluster's: B answers for a session A started, and stops it.
    let found = api_b.session("s-0").await.unwrap();
    assert_eq!(found.status, SessionStatus::Running);
    api_b.stop(&found.access.runtime_id).await.unwrap();
    assert_eq!(
        api_a.session("s-0").await.unwrap().status,
        SessionStatus::Stopped
    );
    drop(b);
    drop(a);
    OneNodeSwarm::clean(&name);
}
