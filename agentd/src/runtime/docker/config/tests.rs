//! Unit tests of `runtime/docker/config.rs`.

use super::*;

#[test]
fn defaults_are_hardened() {
    let body = SandboxConfig::default().container_body(
        "k",
        HashMap::new(),
        None,
        None,
        &DiskMounts::default(),
    );
    let host = body.host_config.unwrap();
    // sandboxd starts as root to separate itself from the user (uid 1000 by default).
    assert_eq!(body.user.as_deref(), Some("0:0"));
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
    assert_eq!(
        host.cap_add,
        Some(vec!["SETGID".into(), "SETUID".into(), "SETPCAP".into()])
    );
    assert_eq!(
        host.security_opt,
        Some(vec!["no-new-privileges:true".to_string()])
    );
    assert_eq!(host.init, Some(true));
    assert_eq!(host.pids_limit, Some(1024));
    assert_eq!(host.memory, host.memory_swap);
    let bindings = host.port_bindings.unwrap();
    let binding = &bindings["8000/tcp"].as_ref().unwrap()[0];
    assert_eq!(binding.host_ip.as_deref(), Some("127.0.0.1"));
    assert_eq!(binding.host_port.as_deref(), Some(""));
    assert!(body.env.unwrap().contains(&"SESSION_API_KEY=k".to_string()));
}

#[test]
fn sudo_trades_no_new_privileges_for_named_capabilities() {
    let config = SandboxConfig {
        sudo: true,
        ..SandboxConfig::default()
    };
    let host = config
        .container_body("k", HashMap::new(), None, None, &DiskMounts::default())
        .host_config
        .unwrap();
    assert_eq!(host.security_opt, Some(vec![]));
    assert!(host.cap_add.unwrap().contains(&"SETUID".to_string()));
}

#[test]
fn no_network_publishes_nothing_and_serves_a_socket() {
    let body = SandboxConfig::default().container_body(
        "k",
        HashMap::new(),
        Some(Path::new("/run/user/0/agentd/x")),
        None,
        &DiskMounts::default(),
    );
    let host = body.host_config.unwrap();
    assert_eq!(host.port_bindings, None);
    assert_eq!(host.network_mode.as_deref(), Some("none"));
    assert_eq!(
        host.binds,
        Some(vec!["/run/user/0/agentd/x:/run/sandboxd:rw".to_string()])
    );
    let cmd = body.cmd.unwrap();
    assert!(
        cmd.windows(2)
            .any(|w| w == ["--unix-socket", "/run/sandboxd/sandboxd.sock"])
    );
}

#[test]
fn a_pre_started_sandboxd_gets_a_configuration_key_and_no_session_key() {
    let config = SandboxConfig {
        await_configuration: true,
        ..SandboxConfig::default()
    };
    let body = config.container_body("k", HashMap::new(), None, None, &DiskMounts::default());
    let env = body.env.unwrap();
    assert!(env.contains(&"SANDBOXD_CONFIGURE_KEY=k".to_string()));
    assert!(!env.iter().any(|e| e.starts_with("SESSION_API_KEY=")));
    assert!(
        body.cmd
            .unwrap()
            .contains(&"--await-configuration".to_string())
    );
}

#[test]
fn the_sandbox_user_is_sandboxds_and_the_container_starts_as_root() {
    let config = SandboxConfig {
        user: Some(SandboxUser {
            uid: 4321,
            gid: 100,
        }),
        read_only_root: true,
        ..SandboxConfig::default()
    };
    let body = config.container_body("k", HashMap::new(), None, None, &DiskMounts::default());
    assert_eq!(body.user.as_deref(), Some("0:0"));
    let cmd = body.cmd.unwrap();
    assert!(cmd.windows(2).any(|w| w == ["--user-id", "4321"]));
    assert!(cmd.windows(2).any(|w| w == ["--username", "openhands"]));
    let host = body.host_config.unwrap();
    assert_eq!(
        host.cap_add,
        Some(vec!["SETGID".into(), "SETUID".into(), "SETPCAP".into()])
    );
    assert!(host.tmpfs.unwrap()["/home/openhands"].ends_with(",uid=4321,gid=100"));
}

#[test]
fn root_keeps_no_new_privileges_and_gets_only_file_capabilities() {
    let config = SandboxConfig {
        user: Some(SandboxUser::ROOT),
        ..SandboxConfig::default()
    };
    let body = config.container_body("k", HashMap::new(), None, None, &DiskMounts::default());
    assert_eq!(body.user.as_deref(), Some("0:0"));
    let env = body.env.unwrap();
    assert!(env.contains(&"HOME=/root".to_string()));
    assert!(env.contains(&"USER=root".to_string()));
    let host = body.host_config.unwrap();
    assert_eq!(
        host.security_opt,
        Some(vec!["no-new-privileges:true".to_string()])
    );
    assert_eq!(
        host.cap_add,
        Some(ROOT_CAPS.iter().map(|c| c.to_string()).collect())
    );
}

#[test]
fn scaling_leaves_pids_alone() {
    let scaled = Limits::default().scaled(0.5);
    assert_eq!(scaled.memory_bytes, Some(2 << 30));
    assert_eq!(scaled.cpus, Some(1.0));
    assert_eq!(scaled.pids, Some(1024));
}

#[test]
fn app_ports_are_published_and_named_in_the_environment() {
    let config = SandboxConfig {
        app_ports: 2,
        publish_address: "0.0.0.0".to_string(),
        ..SandboxConfig::default()
    };
    let body = config.container_body("k", HashMap::new(), None, None, &DiskMounts::default());
    let mut exposed = body.exposed_ports.unwrap();
    exposed.sort();
    assert_eq!(exposed, ["12000/tcp", "12001/tcp", "8000/tcp"]);
    let env = body.env.unwrap();
    assert!(env.contains(&"APP_PORT_1=12000".to_string()), "{env:?}");
    assert!(env.contains(&"APP_PORT_2=12001".to_string()), "{env:?}");
    let bindings = body.host_config.unwrap().port_bindings.unwrap();
    let binding = &bindings["12001/tcp"].as_ref().unwrap()[0];
    assert_eq!(binding.host_ip.as_deref(), Some("0.0.0.0"));
    assert_eq!(binding.host_port.as_deref(), Some(""));
}

#[test]
fn egress_host_pins_go_into_the_sandboxs_etc_hosts() {
    let config = SandboxConfig {
        egress_hosts: BTreeMap::from([
            ("web.test".to_string(), Ipv4Addr::new(10, 0, 0, 5)),
            ("other.test".to_string(), Ipv4Addr::new(10, 0, 0, 6)),
        ]),
        ..SandboxConfig::default()
    };
    let body = config.container_body(
        "k",
        HashMap::new(),
        None,
        Some("sbx-x"),
        &DiskMounts::default(),
    );
    assert_eq!(
        body.host_config.unwrap().extra_hosts.unwrap(),
        ["other.test:10.0.0.6", "web.test:10.0.0.5"]
    );
    let body = SandboxConfig::default().container_body(
        "k",
        HashMap::new(),
        None,
        Some("sbx-x"),
        &DiskMounts::default(),
    );
    assert_eq!(body.host_config.unwrap().extra_hosts, None);
}

#[test]
fn a_storage_quota_sizes_the_writable_layer() {
    let disk = DiskMounts {
        storage_size: Some(10 << 30),
        ..DiskMounts::default()
    };
    let body = SandboxConfig::default().container_body("k", HashMap::new(), None, None, &disk);
    let host = body.host_config.unwrap();
    assert_eq!(
        host.storage_opt,
        Some(HashMap::from([(
            "size".to_string(),
            (10u64 << 30).to_string()
        )]))
    );
    assert_eq!(host.readonly_rootfs, Some(false));
}

#[test]
fn a_disk_of_its_own_makes_the_root_read_only_and_mounts_the_writable_paths() {
    let disk = DiskMounts {
        binds: vec![
            "/d/home_openhands:/home/openhands:rw".to_string(),
            "/d/opt_venv:/opt/venv:rw".to_string(),
        ],
        read_only_root: true,
        ..DiskMounts::default()
    };
    let config = SandboxConfig {
        workspace: Some(PathBuf::from("/w")),
        read_only_root: true,
        ..SandboxConfig::default()
    };
    let body = config.container_body("k", HashMap::new(), None, None, &disk);
    let host = body.host_config.unwrap();
    assert_eq!(host.readonly_rootfs, Some(true));
    assert_eq!(host.storage_opt, None);
    assert_eq!(
        host.binds,
        Some(vec![
            "/w:/workspace:rw".to_string(),
            "/d/home_openhands:/home/openhands:rw".to_string(),
            "/d/opt_venv:/opt/venv:rw".to_string(),
        ])
    );
    // The home is on the disk: no tmpfs over it, even with `read_only_root`.
    let tmpfs = host.tmpfs.unwrap();
    assert!(tmpfs.contains_key("/tmp"));
    assert!(!tmpfs.contains_key("/home/openhands"), "{tmpfs:?}");
}
