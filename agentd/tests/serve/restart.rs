//! Sessions survive the service: SIGKILL it, start it again, and its sandboxes are found (by
//! label and state file) with their keys, and still run actions.

use client::ObservationExt;
use client::protocol::runtime_api::{PodStatus, SessionStatus};

use crate::common::*;

#[tokio::test]
async fn a_killed_service_restarts_and_finds_its_sandboxes() {
    let mut service = Service::start(Options {
        pool_size: 1,
        ..Options::default()
    });
    let (started, sandbox) = service.ready_sandbox(KEY_A, "survivor").await;
    sandbox
        .write("/workspace/note.txt", "before the kill")
        .await
        .unwrap();
    let (paused, _) = service.ready_sandbox(KEY_B, "sleeper").await;
    service.api(KEY_B).pause(&paused.runtime_id).await.unwrap();

    service.kill();
    service.spawn();

    let api = service.api(KEY_A);
    let found = api.session("survivor").await.unwrap();
    assert_eq!(found.status, SessionStatus::Running);
    assert_eq!(found.runtime_id, started.runtime_id);
    assert_eq!(found.url, started.url);
    assert_eq!(found.session_api_key, started.session_api_key);
    assert_eq!(
        api.runtime(&started.runtime_id).await.unwrap().pod_status,
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
    b.resume(&paused.runtime_id).await.unwrap();
    b.wait_until_ready(&paused.runtime_id, std::time::Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();

    // The warm sandbox was adopted again, not duplicated.
    let warm: usize = api.list().await.unwrap().warm.values().sum();
    assert!(warm <= 1, "{warm} warm sandboxes");
    api.stop(&started.runtime_id).await.unwrap();
    b.stop(&paused.runtime_id).await.unwrap();
}
