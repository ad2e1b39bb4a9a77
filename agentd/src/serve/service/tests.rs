//! Unit tests of `serve/service.rs`.

use bollard::models::ContainerStateStatusEnum::*;

use super::*;
use crate::serve::backend::docker::state as sandbox_state;

#[test]
fn an_unanswered_sandbox_is_pending_only_while_its_container_runs() {
    assert_eq!(
        unanswered_pod_status(sandbox_state(Some(RUNNING))),
        PodStatus::Pending
    );
    for state in [
        CREATED, PAUSED, RESTARTING, REMOVING, EXITED, DEAD, STOPPING, EMPTY,
    ] {
        assert_eq!(
            unanswered_pod_status(sandbox_state(Some(state))),
            PodStatus::Failed,
            "{state}"
        );
    }
    assert_eq!(
        unanswered_pod_status(sandbox_state(None)),
        PodStatus::Failed
    );
}

#[test]
fn a_sandbox_is_gone_unless_its_container_runs_or_is_paused() {
    assert!(!is_gone(sandbox_state(Some(RUNNING))));
    assert!(!is_gone(sandbox_state(Some(PAUSED))));
    for state in [CREATED, RESTARTING, REMOVING, EXITED, DEAD, STOPPING, EMPTY] {
        assert!(is_gone(sandbox_state(Some(state))), "{state}");
    }
    assert!(is_gone(sandbox_state(None)));
    assert!(!is_gone(SandboxState::Starting));
}

#[test]
fn sudo_and_egress_keys_must_be_api_keys_and_a_stranger_is_shown_by_four_characters() {
    let api_keys = ["key-a".to_string(), "key-b".to_string()];
    let known = ["key-b".to_string()];
    assert!(only_api_keys("sudo_keys", &known, &api_keys).is_ok());
    let with_stranger = ["key-a".to_string(), "stranger".to_string()];
    let error = only_api_keys("egress_keys", &with_stranger, &api_keys).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid configuration: egress_keys holds a key (stra...) that is not one of api_keys"
    );
}
