//! Unit tests of `serve/service.rs`.

use bollard::models::ContainerStateStatusEnum::*;

use super::*;

#[test]
fn an_unanswered_sandbox_is_pending_only_while_its_container_runs() {
    assert_eq!(unanswered_pod_status(Some(RUNNING)), PodStatus::Pending);
    for state in [
        CREATED, PAUSED, RESTARTING, REMOVING, EXITED, DEAD, STOPPING, EMPTY,
    ] {
        assert_eq!(
            unanswered_pod_status(Some(state)),
            PodStatus::Failed,
            "{state}"
        );
    }
    assert_eq!(unanswered_pod_status(None), PodStatus::Failed);
}

#[test]
fn a_sandbox_is_gone_unless_its_container_runs_or_is_paused() {
    assert!(!is_gone(Some(RUNNING)));
    assert!(!is_gone(Some(PAUSED)));
    for state in [CREATED, RESTARTING, REMOVING, EXITED, DEAD, STOPPING, EMPTY] {
        assert!(is_gone(Some(state)), "{state}");
    }
    assert!(is_gone(None));
}
