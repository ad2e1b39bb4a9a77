//! Unit tests of `serve/service/status.rs`.

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
