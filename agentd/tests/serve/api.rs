//! The runtime API's endpoints: keys, ownership, the caller's command and environment,
//! resource factors, pause/resume, idle stop.

use std::time::Duration;

use client::protocol::runtime_api::{PodStatus, SessionStatus};
use client::{ClientError, ObservationExt, SandboxClient};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn wrong_or_missing_keys_are_refused_everywhere_but_alive() {
    let service = Service::start(Options::default());
    let http = reqwest::Client::new();
    let calls = [
        ("GET", "/sessions/s"),
        ("GET", "/runtime/r"),
        ("GET", "/runtimes"),
        ("GET", "/registry_prefix"),
        ("GET", "/image_exists?image=x"),
        ("POST", "/start"),
        ("POST", "/stop"),
        ("POST", "/pause"),
        ("POST", "/resume"),
    ];
    for (method, path) in calls {
        for key in [None, Some("wrong"), Some("")] {
            let mut request =
                http.request(method.parse().unwrap(), format!("{}{path}", service.url));
            if let Some(key) = key {
                request = request.header("X-API-Key", key);
            }
            let response = request.json(&json!({})).send().await.unwrap();
            assert_eq!(response.status(), 401, "{method} {path} with {key:?}");
        }
    }
    let alive = http
        .get(format!("{}/alive", service.url))
        .send()
        .await
        .unwrap();
    assert_eq!(alive.status(), 200);
    // The right key passes; an image is said to exist only when the host has it.
    let api = service.api(KEY_A);
    assert!(
        !api.image_exists("ghcr.io/all-hands-ai/runtime:x")
            .await
            .unwrap()
    );
    assert!(api.image_exists(&base_image()).await.unwrap());
    assert_eq!(api.registry_prefix().await.unwrap(), "agentd.local");
}

#[tokio::test]
async fn partial_and_silent_connections_are_closed_and_lock_no_caller_out() {
    let service = Service::start(Options::default());
    let addr: std::net::SocketAddr = service.url.trim_start_matches("http://").parse().unwrap();
    // Strangers past their cap (64): half send half a request and wait, half say nothing.
    let mut held = testkit::hold_connections(addr, 150, b"GET /runtimes HTTP/1.1\r\nhost: x\r\n");
    let answer = tokio::time::timeout(
        Duration::from_secs(15),
        service.api(KEY_A).registry_prefix(),
    )
    .await
    .expect("a caller is served while strangers hold connections");
    assert_eq!(answer.unwrap(), "agentd.local");
    // The first ones are closed at the head deadline (10 s), if not evicted before.
    for stream in held.iter_mut().take(5) {
        testkit::assert_closed(stream, Duration::from_secs(15));
    }
}

#[tokio::test]
async fn a_session_and_its_key_belong_to_the_api_key_that_started_it() {
    let service = Service::start(Options::default());
    let (started, sandbox) = service.ready_sandbox(KEY_A, "owned").await;
    let (a, b) = (service.api(KEY_A), service.api(KEY_B));

    let found = a.session("owned").await.unwrap();
    assert_eq!(found.status, SessionStatus::Running);
    assert_eq!(found.access.runtime_id, started.access.runtime_id);
    assert_eq!(found.access.session_api_key, started.access.session_api_key);

    // Another key learns nothing and can do nothing.
    let status = |e: ClientError| e.status();
    assert_eq!(
        b.session("owned").await.map_err(status).unwrap_err(),
        Some(404)
    );
    let id = &started.access.runtime_id;
    assert_eq!(b.runtime(id).await.map_err(status).unwrap_err(), Some(404));
    assert_eq!(b.stop(id).await.map_err(status).unwrap_err(), Some(404));
    assert_eq!(b.pause(id).await.map_err(status).unwrap_err(), Some(404));
    assert!(b.list().await.unwrap().runtimes.is_empty());
    // Regression (issue 14.10d): B's start of the same session id answered 409, telling B
    // that another key has such a session. Session ids are each key's own: B gets its own.
    let own = b.start(&start_request("owned")).await.unwrap();
    assert_ne!(own.access.runtime_id, started.access.runtime_id);
    assert_ne!(own.access.session_api_key, started.access.session_api_key);
    b.stop(&own.access.runtime_id).await.unwrap();
    assert!(b.list().await.unwrap().runtimes.is_empty());

    // The data plane wants the session key, not the service's.
    let wrong = SandboxClient::new(&started.access.url, Some(KEY_A.to_string())).unwrap();
    assert_eq!(
        wrong.run("true", None).await.unwrap_err().status(),
        Some(403)
    );
    assert_eq!(
        sandbox.run("true", None).await.unwrap().exit_code(),
        Some(0)
    );

    // Starting a running session again answers with it.
    let again = a.start(&start_request("owned")).await.unwrap();
    assert_eq!(again.access.runtime_id, started.access.runtime_id);
    assert_eq!(a.list().await.unwrap().runtimes.len(), 1);

    a.stop(id).await.unwrap();
    assert_eq!(
        a.session("owned").await.map_err(status).unwrap_err(),
        Some(404)
    );
    assert!(service.containers().is_empty(), "the container is removed");
}

#[tokio::test]
async fn start_honours_the_callers_command_environment_and_resource_factor() {
    let service = Service::start(Options::default());
    let api = service.api(KEY_A);
    let mut request = start_request("env");
    request
        .environment
        .insert("CALLER_VAR".into(), "from-the-caller".into());
    request
        .environment
        .insert("NO_CHANGE_TIMEOUT_SECONDS".into(), "1".into());
    request
        .environment
        .insert("SESSION_API_KEY".into(), "ignored".into());
    request.resource_factor = 2.0;
    let started = api.start(&request).await.unwrap();
    let key = started.access.session_api_key.clone().unwrap();
    assert_ne!(key, "ignored");
    assert_eq!(
        api.wait_until_ready(&started.access.runtime_id, Duration::from_secs(60))
            .await
            .unwrap(),
        Ok(())
    );
    let sandbox = SandboxClient::new(&started.access.url, Some(key)).unwrap();
    let obs = sandbox
        .run("echo $CALLER_VAR; id -u; pwd", None)
        .await
        .unwrap();
    assert_eq!(obs.content.trim(), "from-the-caller\n1000\n/workspace");
    // NO_CHANGE_TIMEOUT_SECONDS reached sandboxd: a silent command returns after ~1 s.
    let started_at = std::time::Instant::now();
    let obs = sandbox.run("sleep 20", None).await.unwrap();
    assert_eq!(obs.exit_code(), Some(-1));
    assert!(started_at.elapsed() < Duration::from_secs(10));
    // Twice the base limits (1 CPU, 1 GiB).
    let limits = inspect(
        &started.access.runtime_id,
        "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}",
    );
    assert_eq!(limits, format!("2000000000 {} {}", 2u64 << 30, 2u64 << 30));
    assert_eq!(
        inspect(&started.access.runtime_id, "{{.HostConfig.PortBindings}}"),
        "map[12000/tcp:[{127.0.0.1 }] 12001/tcp:[{127.0.0.1 }] 8000/tcp:[{127.0.0.1 }]]",
        "sandboxd's port and the two app ports, on the publish address only"
    );
}

#[tokio::test]
async fn requests_that_cannot_work_are_refused_precisely() {
    let service = Service::start(Options::default());
    let api = service.api(KEY_A);
    let mut request = start_request("bad");
    request.command.push("--unix-socket".into());
    request.command.push("/tmp/x".into());
    let err = api.start(&request).await.unwrap_err();
    assert_eq!(err.status(), Some(400), "{err}");
    assert!(err.to_string().contains("--unix-socket"), "{err}");
    let mut request = start_request("bad");
    request.resource_factor = 0.0;
    assert_eq!(api.start(&request).await.unwrap_err().status(), Some(400));
    // More than the host has: a 400 that says what it can give (1 CPU per factor here).
    let cpus = std::thread::available_parallelism().unwrap().get();
    request.resource_factor = (cpus + 1) as f64;
    let err = api.start(&request).await.unwrap_err();
    assert_eq!(err.status(), Some(400), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("this host has {cpus} CPUs")),
        "{text}"
    );
    assert!(
        text.contains("the largest resource_factor it can give is"),
        "{text}"
    );
    // A runtime class is the kubernetes backend's: here it is refused, never dropped.
    let mut request = start_request("bad");
    request.runtime_class = Some("sysbox-runc".to_string());
    let err = api.start(&request).await.unwrap_err();
    assert_eq!(err.status(), Some(400), "{err}");
    assert!(err.to_string().contains("sysbox-runc"), "{err}");
    let response = reqwest::Client::new()
        .post(format!("{}/start", service.url))
        .header("X-API-Key", KEY_A)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    assert!(service.containers().is_empty(), "nothing is left behind");
}

#[tokio::test]
async fn pause_and_resume_keep_the_workspace() {
    let service = Service::start(Options::default());
    let (started, sandbox) = service.ready_sandbox(KEY_A, "pause").await;
    let id = &started.access.runtime_id;
    let api = service.api(KEY_A);
    let obs = sandbox
        .write("/workspace/kept.txt", "still here")
        .await
        .unwrap();
    assert!(obs.exit_code().is_none_or(|c| c == 0), "{obs:?}");
    api.pause(id).await.unwrap();
    assert_eq!(
        api.session("pause").await.unwrap().status,
        SessionStatus::Paused
    );
    assert_eq!(api.runtime(id).await.unwrap().pod_status, PodStatus::Paused);
    assert_eq!(inspect(id, "{{.State.Status}}"), "paused");
    // The data plane does not answer while paused.
    let probe = tokio::time::timeout(Duration::from_secs(1), sandbox.alive()).await;
    assert!(!matches!(probe, Ok(Ok(()))), "a paused sandbox answered");
    api.resume(id).await.unwrap();
    assert_eq!(
        api.session("pause").await.unwrap().status,
        SessionStatus::Running
    );
    let obs = sandbox.run("cat /workspace/kept.txt", None).await.unwrap();
    assert_eq!(obs.content.trim(), "still here");
    api.stop(id).await.unwrap();
    assert!(
        service.containers().is_empty(),
        "a paused-then-stopped sandbox is removed"
    );
}

/// Regression: a sandbox whose container died was still reported `running` (and handed out
/// again by `/start`), so OpenHands reused it and then gave up on its `failed` pod status.
#[tokio::test]
async fn a_sandbox_that_died_is_reported_stopped_and_started_anew() {
    let service = Service::start(Options::default());
    let (started, _sandbox) = service.ready_sandbox(KEY_A, "dies").await;
    let api = service.api(KEY_A);
    let killed = std::process::Command::new("docker")
        .args(["kill", &started.access.runtime_id])
        .output()
        .unwrap();
    assert!(killed.status.success(), "{killed:?}");
    assert_eq!(
        api.runtime(&started.access.runtime_id)
            .await
            .unwrap()
            .pod_status,
        PodStatus::Failed
    );
    assert_eq!(
        api.session("dies").await.unwrap().status,
        SessionStatus::Stopped
    );
    let (again, sandbox) = service.ready_sandbox(KEY_A, "dies").await;
    assert_ne!(again.access.runtime_id, started.access.runtime_id);
    assert_eq!(
        sandbox.run("true", None).await.unwrap().exit_code(),
        Some(0)
    );
    assert!(
        !service.containers().contains(&started.access.runtime_id),
        "the dead sandbox is cleaned up"
    );
    api.stop(&again.access.runtime_id).await.unwrap();
}

#[tokio::test]
async fn idle_sandboxes_are_stopped() {
    let service = Service::start(Options {
        idle_timeout: 2.0,
        ..Options::default()
    });
    let (started, sandbox) = service.ready_sandbox(KEY_A, "idle").await;
    assert_eq!(
        sandbox.run("true", None).await.unwrap().exit_code(),
        Some(0)
    );
    let api = service.api(KEY_A);
    wait_until_idle_stopped(&api, "idle", 30).await;
    assert_runtime_gone(&api, &started.access.runtime_id).await;
    eventually(30, "its container to be removed", || async {
        service.containers().is_empty()
    })
    .await;
}

/// A start request whose command asks for `username` and `user_id`.
fn start_as(
    session: &str,
    username: &str,
    user_id: &str,
) -> client::protocol::runtime_api::StartRequest {
    let mut request = start_request(session);
    let command = &mut request.command;
    let at = |flag: &str, command: &[String]| command.iter().position(|a| a == flag).unwrap() + 1;
    let name = at("--username", command);
    command[name] = username.to_string();
    let id = at("--user-id", command);
    command[id] = user_id.to_string();
    request
}

#[tokio::test]
async fn the_callers_user_is_honoured_and_root_needs_the_policy() {
    let service = Service::start(Options::default());
    let api = service.api(KEY_A);
    // Root under the default policy: refused, naming the setting; nothing is created.
    let refused = api.start(&start_as("root", "root", "0")).await.unwrap_err();
    assert_eq!(refused.status(), Some(403), "{refused}");
    assert!(refused.to_string().contains("allow_root"), "{refused}");
    assert!(service.containers().is_empty());
    // A name the images do not have: refused, never replaced by another user.
    let refused = api
        .start(&start_as("alice", "alice", "1000"))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(400), "{refused}");

    // Another uid: the sandbox user takes it.
    let (_, sandbox) = service
        .ready_sandbox_for(KEY_A, &start_as("uid", "openhands", "4321"))
        .await;
    let obs = sandbox
        .run("id -u; id -g; cd ~ && pwd", None)
        .await
        .unwrap();
    assert_eq!(obs.content.trim(), "4321\n4321\n/home/openhands");

    // Where the policy allows root, root it is.
    let rooted = Service::start(Options {
        extra: vec!["--allow-root".to_string()],
        ..Options::default()
    });
    let (_, sandbox) = rooted
        .ready_sandbox_for(KEY_A, &start_as("root", "root", "0"))
        .await;
    let obs = sandbox
        .run(
            "id -u; cd ~ && pwd; touch /workspace/f && stat -c %U /workspace/f",
            None,
        )
        .await
        .unwrap();
    assert_eq!(obs.content.trim(), "0\n/root\nroot");
}
