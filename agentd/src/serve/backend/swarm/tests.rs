//! Unit tests of `serve/backend/swarm.rs`.

use super::*;

fn sandbox() -> SandboxConfig {
    SandboxConfig {
        image: "sandboxd-runtime:t".to_string(),
        name: Some("rt-1".to_string()),
        await_configuration: true,
        disk_bytes: None,
        app_ports: 1,
        limits: Limits {
            cpus: Some(1.5),
            memory_bytes: Some(1 << 30),
            pids: Some(512),
        },
        ..SandboxConfig::default()
    }
}

#[test]
fn a_sandbox_service_is_the_hardened_container_placed_by_its_resources() {
    let labels = HashMap::from([("dev.sandboxd.serve.name".to_string(), "n".to_string())]);
    let spec = service_spec(
        &sandbox(),
        "ck",
        labels.clone(),
        31001,
        &BTreeMap::from([(12000, 31002)]),
    );
    assert_eq!(spec.name.as_deref(), Some("rt-1"));
    assert_eq!(spec.labels.as_ref(), Some(&labels));
    let task = spec.task_template.unwrap();
    let container = task.container_spec.unwrap();
    assert_eq!(container.image.as_deref(), Some("sandboxd-runtime:t"));
    assert_eq!(container.user.as_deref(), Some("0:0"));
    assert_eq!(container.capability_drop, Some(vec!["ALL".to_string()]));
    assert_eq!(container.init, Some(true));
    assert_eq!(container.privileges.unwrap().no_new_privileges, Some(true));
    let env = container.env.unwrap();
    assert!(
        env.contains(&"SANDBOXD_CONFIGURE_KEY=ck".to_string()),
        "{env:?}"
    );
    assert!(env.contains(&"APP_PORT_1=12000".to_string()), "{env:?}");
    let command = container.command.unwrap();
    assert!(
        command.contains(&"--await-configuration".to_string()),
        "{command:?}"
    );
    let tmp = &container.mounts.unwrap()[0];
    assert_eq!(tmp.target.as_deref(), Some("/tmp"));
    assert_eq!(tmp.typ, Some(MountType::TMPFS));
    let resources = task.resources.unwrap();
    let limits = resources.limits.unwrap();
    assert_eq!(
        (limits.nano_cpus, limits.memory_bytes, limits.pids),
        (Some(1_500_000_000), Some(1 << 30), Some(512))
    );
    let reserved = resources.reservations.unwrap();
    assert_eq!(
        (reserved.nano_cpus, reserved.memory_bytes),
        (Some(1_500_000_000), Some(1 << 30))
    );
    assert_eq!(
        task.restart_policy.unwrap().condition,
        Some(TaskSpecRestartPolicyConditionEnum::NONE)
    );
    assert_eq!(task.networks.unwrap()[0].target.as_deref(), Some("rt-1"));
    let ports: Vec<(
        Option<i64>,
        Option<i64>,
        Option<EndpointPortConfigPublishModeEnum>,
    )> = spec
        .endpoint_spec
        .unwrap()
        .ports
        .unwrap()
        .into_iter()
        .map(|p| (p.target_port, p.published_port, p.publish_mode))
        .collect();
    let host = Some(EndpointPortConfigPublishModeEnum::HOST);
    assert_eq!(
        ports,
        [
            (Some(8000), Some(31001), host),
            (Some(12000), Some(31002), host)
        ]
    );
}

#[test]
fn what_a_swarm_service_cannot_do_is_refused_with_the_reason() {
    assert_eq!(unsupported(&sandbox()), Ok(()));
    let cases = [
        (
            SandboxConfig {
                disk_bytes: Some(1),
                ..sandbox()
            },
            "--disk none",
        ),
        (
            SandboxConfig {
                read_only_root: true,
                ..sandbox()
            },
            "read-only root",
        ),
        (
            SandboxConfig {
                network: Network::None,
                ..sandbox()
            },
            "overlay network",
        ),
        (
            SandboxConfig {
                egress: Egress::Deny,
                ..sandbox()
            },
            "host firewall",
        ),
        (
            SandboxConfig {
                workspace: Some("/w".into()),
                ..sandbox()
            },
            "host directory",
        ),
    ];
    for (config, says) in cases {
        let why = unsupported(&config).unwrap_err();
        assert!(why.contains(says), "{why}");
    }
}

#[test]
fn a_sandbox_is_starting_until_its_task_runs_and_down_after() {
    let task = |state| Task {
        status: Some(bollard::models::TaskStatus {
            state: Some(state),
            ..Default::default()
        }),
        ..Task::default()
    };
    assert_eq!(
        state_of_task(Some(&task(TaskState::PENDING)), false),
        SandboxState::Starting
    );
    assert_eq!(
        state_of_task(Some(&task(TaskState::RUNNING)), false),
        SandboxState::Running
    );
    assert_eq!(
        state_of_task(Some(&task(TaskState::RUNNING)), true),
        SandboxState::Paused
    );
    for state in [
        TaskState::FAILED,
        TaskState::SHUTDOWN,
        TaskState::COMPLETE,
        TaskState::REJECTED,
    ] {
        assert_eq!(state_of_task(Some(&task(state)), false), SandboxState::Down);
    }
    assert_eq!(state_of_task(None, false), SandboxState::Down);
}

#[test]
fn api_versions_are_read_as_their_minor_number() {
    assert_eq!(api_minor("1.41"), Some(41));
    assert_eq!(api_minor("2.0"), None);
}
