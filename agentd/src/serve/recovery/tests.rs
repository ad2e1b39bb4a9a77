//! Unit tests of `serve/recovery.rs`.

use bollard::models::ContainerStateStatusEnum::{EXITED, PAUSED, RUNNING};
use bollard::models::{ContainerConfig, ContainerState, NetworkSettings, PortBinding};

use super::*;
use crate::runtime::docker::config::SANDBOXD_PORT;
use crate::runtime::docker::labels;
use crate::serve::backend::docker::found;
use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};

/// A container as the engine describes it (`port` published, `key` in its environment), as
/// the docker backend finds it.
fn container(state: ContainerStateStatusEnum, port: Option<&str>, key: Option<&str>) -> Found {
    found(&inspected(state, port, key))
}

fn inspected(
    state: ContainerStateStatusEnum,
    port: Option<&str>,
    key: Option<&str>,
) -> ContainerInspectResponse {
    let ports = port.map(|p| {
        HashMap::from([(
            format!("{SANDBOXD_PORT}/tcp"),
            Some(vec![PortBinding {
                host_ip: Some("127.0.0.1".to_string()),
                host_port: Some(p.to_string()),
            }]),
        )])
    });
    ContainerInspectResponse {
        id: Some("c-1".to_string()),
        state: Some(ContainerState {
            status: Some(state),
            ..ContainerState::default()
        }),
        config: Some(ContainerConfig {
            image: Some("sandboxd-runtime:tag".to_string()),
            env: Some(
                key.map(|k| format!("SANDBOXD_CONFIGURE_KEY={k}"))
                    .into_iter()
                    .chain(["PATH=/bin".to_string()])
                    .collect(),
            ),
            labels: Some(HashMap::from([(
                labels::SERVE_RUNTIME_ID.to_string(),
                "rt-1".to_string(),
            )])),
            ..ContainerConfig::default()
        }),
        network_settings: Some(NetworkSettings {
            ports,
            ..NetworkSettings::default()
        }),
        ..ContainerInspectResponse::default()
    }
}

fn claim() -> Claim {
    Claim {
        runtime_id: "rt-1".to_string(),
        session_id: "s".to_string(),
        owner: "o".to_string(),
        image: "img".to_string(),
        session_api_key: "k".to_string(),
        created_at: "t".to_string(),
        pending_configuration: None,
    }
}

#[test]
fn a_claimed_running_sandbox_is_reclaimed_and_can_take_its_configuration() {
    let Fate::Reclaim(found) = fate(
        &container(RUNNING, Some("32768"), Some("ck")),
        Some(claim()),
    ) else {
        panic!("not reclaimed");
    };
    assert_eq!(found.claim, claim());
    assert_eq!(found.container.id, "c-1");
    assert_eq!(found.container.local_url, "http://127.0.0.1:32768");
    assert_eq!(found.container.port, 32768);
    assert!(!found.paused);
    assert_eq!(found.configure_key.as_deref(), Some("ck"));
}

#[test]
fn a_claimed_paused_sandbox_is_reclaimed_paused_and_cannot_be_configured() {
    let Fate::Reclaim(found) = fate(&container(PAUSED, Some("32768"), Some("ck")), Some(claim()))
    else {
        panic!("not reclaimed");
    };
    assert!(found.paused);
    assert_eq!(found.configure_key, None);
}

#[test]
fn a_claimed_sandbox_that_stopped_or_has_no_port_is_removed_with_its_claim() {
    for found in [
        container(EXITED, Some("32768"), Some("ck")),
        container(RUNNING, None, Some("ck")),
    ] {
        match fate(&found, Some(claim())) {
            Fate::Remove { claim: Some(c) } => assert_eq!(c, claim()),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn an_unclaimed_running_sandbox_is_offered_to_its_images_pool() {
    let Fate::Pool { tag, warm } = fate(&container(RUNNING, Some("32768"), Some("ck")), None)
    else {
        panic!("not offered to a pool");
    };
    assert_eq!(tag, "sandboxd-runtime:tag");
    assert_eq!(
        (
            warm.runtime_id.as_str(),
            warm.container.id.as_str(),
            warm.container.local_url.as_str(),
            warm.container.port,
            warm.configure_key.as_str()
        ),
        ("rt-1", "c-1", "http://127.0.0.1:32768", 32768, "ck")
    );
}

#[test]
fn an_unclaimed_sandbox_that_cannot_serve_a_pool_is_removed() {
    for found in [
        container(PAUSED, Some("32768"), Some("ck")),
        container(EXITED, Some("32768"), Some("ck")),
        container(RUNNING, None, Some("ck")),
        container(RUNNING, Some("32768"), None),
    ] {
        assert!(
            matches!(fate(&found, None), Fate::Remove { claim: None }),
            "{found:?}"
        );
    }
}
