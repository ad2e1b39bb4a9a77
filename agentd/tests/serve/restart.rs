//! Sessions survive the service: SIGKILL it, start it again, and its sandboxes are found (by
//! label and state file) with their keys, and still run actions.

use client::ObservationExt;
use client::protocol::runtime_api::{PodStatus, SessionStatus};

use crate::common::*;

#[tokio::test]
async fn a_killed_service_restarts_and_finds_its_sandboxes() {
    let mut service = Service::start(Options::pooled(1));
    let (started, sandbox) = service.ready_sandbox(KEY_A, "survivor").await;
    sandbox
        .write("/workspace/note.txt", "before the kill")
        .await
        .unwrap();
    let (paused, _) = service.ready_sandbox(KEY_B, "sleeper").await;
    let paused = &paused.access.runtime_id;
    service.api(KEY_B).pause(paused).await.unwrap();

    service.kill();
    service.spawn();

    let api = service.api(KEY_A);
    let found = api.session("survivor").await.unwrap();
    assert_eq!(found.status, SessionStatus::Running);
    assert_eq!(found.access.runtime_id, started.access.runtime_id);
    assert_eq!(found.access.url, started.access.url);
    assert_eq!(found.access.session_api_key, started.access.session_api_key);
    assert_eq!(
        api.runtime(&started.access.runtime_id)
            .await
            .unwrap()
            .pod_status,
        PodStatus::Ready
    );
    let obs = sandbox.run("cat /workspace/note.txt", None).await.unwrap();
    assert_eq!(obs.content.trim(), "before the kill");
    assert_eq!(obs.exit_code(), Some(0));

    // The paused one is still paused, and still the other key's.
    let b = service.api(KEY_B);
    assert_eq!(
        b.session("sleeper").await.unwrap().status,
        SessionStatus::Paused
    );
    assert_eq!(
        api.session("sleeper").await.unwrap_err().status(),
        Some(404)
    );
    b.resume(paused).await.unwrap();
    b.wait_until_ready(paused, std::time::Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();

    // The warm sandbox was adopted again, not duplicated.
    let warm: usize = api.list().await.unwrap().warm.values().sum();
    assert!(warm <= 1, "{warm} warm sandboxes");
    api.stop(&started.access.runtime_id).await.unwrap();
    b.stop(paused).await.unwrap();
}

/// Regression: a service killed after it claimed a warm sandbox but before it sent sandboxd its
/// configuration left that sandbox `pending` for ever. The claim keeps the configuration until
/// sandboxd took it, and a restarted service sends it.
#[tokio::test]
async fn a_configuration_interrupted_by_a_kill_is_finished_after_the_restart() {
    let mut service = Service::start(Options::pooled(1));
    // The owner fingerprint of KEY_A, from a real claim; and a warm sandbox to claim by hand.
    let (started, _) = service.ready_sandbox(KEY_A, "first").await;
    let state = service.state.path().to_path_buf();
    let claim_of = |runtime_id: &str| -> serde_json::Value {
        let path = state.join(format!("{runtime_id}.json"));
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    };
    let first = claim_of(&started.access.runtime_id);
    assert!(
        first.get("pending_configuration").is_none(),
        "a configured sandbox's claim keeps no configuration: {first}"
    );
    eventually(120, "a warm sandbox", || async {
        service.containers().len() == 2
    })
    .await;
    let warm = service
        .containers()
        .into_iter()
        .map(|id| {
            inspect(&id, "{{.Name}}")
                .trim_start_matches('/')
                .to_string()
        })
        .find(|name| *name != started.access.runtime_id)
        .unwrap();

    // Killed right after writing the claim, before configuring sandboxd.
    service.kill();
    let key = "interrupted-session-key";
    let configure = protocol::api::ConfigureRequest {
        args: agentd::start_command::sandboxd_args(&start_request("interrupted").command, 8000)
            .unwrap(),
        env: agentd::start_command::environment(&Default::default(), key),
    };
    let claim = serde_json::json!({
        "runtime_id": warm,
        "session_id": "interrupted",
        "owner": first["owner"],
        "image": "any",
        "session_api_key": key,
        "created_at": "2026-01-01T00:00:00Z",
        "pending_configuration": configure,
    });
    std::fs::write(
        state.join(format!("{warm}.json")),
        serde_json::to_vec(&claim).unwrap(),
    )
    .unwrap();
    service.spawn();

    let api = service.api(KEY_A);
    let found = api.session("interrupted").await.unwrap();
    assert_eq!(found.access.runtime_id, warm);
    let ready = api
        .wait_until_ready(&warm, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(ready, Ok(()), "the interrupted sandbox never became ready");
    let sandbox = client::SandboxClient::new(&found.access.url, Some(key.to_string())).unwrap();
    let obs = sandbox.run("echo configured", None).await.unwrap();
    assert_eq!(obs.content.trim(), "configured");
    assert!(claim_of(&warm).get("pending_configuration").is_none());
}
