//! Unit tests of `serve/backend/kubernetes/pod.rs`.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, PodCondition,
    PodStatus,
};

use super::*;
use crate::runtime::docker::{Limits, SandboxUser};

fn sandbox() -> SandboxConfig {
    SandboxConfig {
        image: "registry.example/sandboxd-runtime:t".to_string(),
        name: Some("rt-1".to_string()),
        await_configuration: true,
        plugins: Vec::new(),
        disk_bytes: Some(10 << 30),
        limits: Limits {
            cpus: Some(1.5),
            memory_bytes: Some(1 << 30),
            pids: Some(512),
        },
        ..SandboxConfig::default()
    }
}

fn plan<'a>(sandbox: &'a SandboxConfig, class: Option<&'a str>) -> PodPlan<'a> {
    PodPlan {
        service: "svc",
        runtime_id: "rt-1",
        sandbox,
        configure_key: "ck",
        port: 8000,
        profile: "user=1000:1000;sudo=false",
        runtime_class: class,
        image_pull_secrets: &[],
    }
}

#[test]
fn a_sandbox_pod_is_the_hardened_container_with_requests_as_its_limits() {
    let sandbox = sandbox();
    let pod = sandbox_pod(&plan(&sandbox, Some("gvisor")));
    let labels = pod.metadata.labels.clone().unwrap();
    assert_eq!(labels[SERVE_NAME], "svc");
    assert_eq!(labels[RUNTIME_ID], "rt-1");
    let annotations = pod.metadata.annotations.clone().unwrap();
    assert_eq!(annotations[IMAGE], "registry.example/sandboxd-runtime:t");
    let spec = pod.spec.clone().unwrap();
    assert_eq!(spec.runtime_class_name.as_deref(), Some("gvisor"));
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.automount_service_account_token, Some(false));
    assert_eq!(spec.enable_service_links, Some(false));
    assert_eq!(spec.share_process_namespace, Some(true));
    assert_eq!(
        spec.security_context
            .unwrap()
            .seccomp_profile
            .unwrap()
            .type_,
        "RuntimeDefault"
    );
    let container = &spec.containers[0];
    let command = container.command.clone().unwrap();
    assert_eq!(command[..2], ["/opt/sandboxd/bin/sandboxd", "8000"]);
    assert!(command.contains(&"--await-configuration".to_string()));
    let env = container.env.clone().unwrap();
    assert!(
        env.iter()
            .any(|e| e.name == "SANDBOXD_CONFIGURE_KEY" && e.value.as_deref() == Some("ck"))
    );
    let security = container.security_context.clone().unwrap();
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(security.privileged, Some(false));
    assert_eq!(security.run_as_user, Some(0));
    let caps = security.capabilities.unwrap();
    assert_eq!(caps.drop, Some(vec!["ALL".to_string()]));
    assert_eq!(
        caps.add,
        Some(["SETGID", "SETUID", "SETPCAP"].map(String::from).to_vec())
    );
    let resources = container.resources.clone().unwrap();
    let limits = resources.limits.unwrap();
    assert_eq!(limits["cpu"].0, "1500m");
    assert_eq!(limits["memory"].0, (1u64 << 30).to_string());
    assert_eq!(limits["ephemeral-storage"].0, (10u64 << 30).to_string());
    assert_eq!(resources.requests.unwrap(), limits);
    let tmp = &spec.volumes.unwrap()[0];
    assert_eq!(
        tmp.empty_dir.clone().unwrap().medium.as_deref(),
        Some("Memory")
    );
    assert_eq!(
        container.volume_mounts.clone().unwrap()[0].mount_path,
        "/tmp"
    );
    let probe = container.readiness_probe.clone().unwrap();
    assert_eq!(
        probe.tcp_socket.unwrap().port,
        IntOrString::String(PORT_NAME.to_string())
    );
}

#[test]
fn sudo_and_a_read_only_root_are_the_docker_sandboxs() {
    let sandbox = SandboxConfig {
        sudo: true,
        read_only_root: true,
        user: Some(SandboxUser::default()),
        ..sandbox()
    };
    let pod = sandbox_pod(&plan(&sandbox, None));
    let spec = pod.spec.unwrap();
    assert_eq!(spec.runtime_class_name, None);
    let container = &spec.containers[0];
    let security = container.security_context.clone().unwrap();
    assert_eq!(security.allow_privilege_escalation, Some(true));
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert!(
        security
            .capabilities
            .unwrap()
            .add
            .unwrap()
            .contains(&"CHOWN".to_string())
    );
    // The home is a tmpfs too with a read-only root.
    let mounts: Vec<String> = container
        .volume_mounts
        .clone()
        .unwrap()
        .into_iter()
        .map(|m| m.mount_path)
        .collect();
    assert_eq!(mounts, ["/home/openhands", "/tmp"]);
}

fn status(phase: &str, ready: bool, ip: Option<&str>) -> PodStatus {
    PodStatus {
        phase: Some(phase.to_string()),
        pod_ip: ip.map(str::to_string),
        conditions: Some(vec![PodCondition {
            type_: "Ready".to_string(),
            status: if ready { "True" } else { "False" }.to_string(),
            ..PodCondition::default()
        }]),
        ..PodStatus::default()
    }
}

fn with_status(status: PodStatus) -> Pod {
    let sandbox = sandbox();
    let mut pod = sandbox_pod(&plan(&sandbox, None));
    pod.status = Some(status);
    pod
}

#[test]
fn a_pod_is_ready_once_running_ready_and_addressed() {
    assert_eq!(
        progress(&with_status(status("Running", true, Some("10.1.2.3")))),
        Progress::Ready("10.1.2.3".to_string())
    );
    assert!(matches!(
        progress(&with_status(status("Running", false, Some("10.1.2.3")))),
        Progress::Waiting(_)
    ));
    assert!(matches!(
        progress(&with_status(status("Pending", false, None))),
        Progress::Waiting(_)
    ));
    let mut failed = status("Failed", false, None);
    failed.container_statuses = Some(vec![ContainerStatus {
        name: CONTAINER.to_string(),
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 2,
                reason: Some("Error".to_string()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    }]);
    let Progress::Failed(why) = progress(&with_status(failed)) else {
        panic!("a failed pod is not failed")
    };
    assert!(why.contains("exit code 2"), "{why}");
    let mut bad_image = status("Pending", false, None);
    bad_image.container_statuses = Some(vec![ContainerStatus {
        name: CONTAINER.to_string(),
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some("InvalidImageName".to_string()),
                message: Some("bad".to_string()),
            }),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    }]);
    assert!(matches!(
        progress(&with_status(bad_image)),
        Progress::Failed(_)
    ));
}

#[test]
fn a_found_pod_is_reached_at_its_ip_with_its_claim_and_key() {
    let mut pod = with_status(status("Running", true, Some("10.1.2.3")));
    let claim = Claim {
        runtime_id: "rt-1".to_string(),
        session_id: "s".to_string(),
        owner: "o".to_string(),
        image: "i".to_string(),
        session_api_key: "k".to_string(),
        created_at: "t".to_string(),
        pending_configuration: None,
    };
    pod.metadata
        .annotations
        .get_or_insert_default()
        .insert(CLAIM.to_string(), serde_json::to_string(&claim).unwrap());
    let found = found(&pod).unwrap();
    assert_eq!(found.runtime_id, "rt-1");
    assert_eq!(found.state, SandboxState::Running);
    assert_eq!(found.configure_key.as_deref(), Some("ck"));
    assert_eq!(found.claim, Some(claim));
    let container = found.container.unwrap();
    assert_eq!(container.local_url, "http://10.1.2.3:8000");
    assert_eq!(container.image, "registry.example/sandboxd-runtime:t");

    pod.metadata
        .annotations
        .get_or_insert_default()
        .insert(CLAIM.to_string(), "{not json".to_string());
    assert!(
        super::found(&pod).is_err(),
        "an unreadable claim counts as none"
    );
}

#[test]
fn a_pod_being_deleted_or_gone_is_down() {
    let mut pod = with_status(status("Running", true, Some("10.1.2.3")));
    assert_eq!(state(Some(&pod)), SandboxState::Running);
    assert_eq!(state(None), SandboxState::Down);
    pod.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    assert_eq!(state(Some(&pod)), SandboxState::Down);
    assert_eq!(url("fd00::1", 8000), "http://[fd00::1]:8000");
}
