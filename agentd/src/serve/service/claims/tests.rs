//! Unit tests of `serve/service/claims.rs`.

use super::*;

#[test]
fn a_replica_adopts_another_replicas_sandbox_only_once_it_runs_or_is_paused() {
    assert_eq!(adoptable(SandboxState::Running), Some(false));
    assert_eq!(adoptable(SandboxState::Paused), Some(true));
    assert_eq!(adoptable(SandboxState::Starting), None);
    assert_eq!(adoptable(SandboxState::Down), None);
}

#[test]
fn a_claim_for_removal_names_the_sandbox_and_no_session_owner_or_key() {
    let claim = removal_claim("rt-1");
    assert_eq!(claim.runtime_id, "rt-1");
    assert!(claim.session_id.is_empty());
    assert!(claim.owner.is_empty());
    assert!(claim.image.is_empty());
    assert!(claim.session_api_key.is_empty());
    assert!(claim.pending_configuration.is_none());
}
