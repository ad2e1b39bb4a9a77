//! The egress filtering proxy of the sandboxes whose policy names domains, and the policy
//! files it reads.
//!
//! One proxy serves every sandbox of the Docker engine and outlives the agentd that started
//! it (`agentd sandbox up` exits once its sandbox is up): a container named [`PROXY_NAME`],
//! on the host's network namespace, restarted unless stopped, running the hidden mode of the
//! sandboxd every sandbox image carries (`sandboxd --egress-proxy`; see sandboxd's `egress`
//! module) on [`PROXY_PORT`], as `nobody`, with no capabilities and a read-only root. It is
//! labelled [`labels::EGRESS_PROXY`], not as a sandbox, so `sandbox ls` and `gc` leave it
//! alone; `docker rm -f sandboxd-egress-proxy` removes it (the next sandbox that needs it
//! starts it again).
//!
//! Each such sandbox's policy (its subnet, domain rules and pins) is a JSON file named after
//! its bridge in [`POLICY_DIR`], mounted read-only into the proxy, written before the sandbox
//! starts and removed with its network (`down`, a failed `up`, `gc`).

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use bollard::models::{
    ContainerCreateBody, ContainerStateStatusEnum, HostConfig, HostConfigLogConfig, RestartPolicy,
    RestartPolicyNameEnum,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectContainerOptions, LogsOptionsBuilder,
    StartContainerOptions,
};
use futures_util::StreamExt;
use protocol::egress::EgressPolicy;

use super::config::SANDBOXD_PATH;
use super::inspect::{is_not_found, label, state_of};
use super::network::{Egress, SUBNET_POOL};
use super::{DockerError, labels};

/// The proxy container's name (one per engine).
pub(crate) const PROXY_NAME: &str = "sandboxd-egress-proxy";
/// The host port the proxy listens on; the firewall redirects sandboxes' connections to it.
/// The same for every agentd of the engine, since the proxy and its rules are shared.
pub(crate) const PROXY_PORT: u16 = 18129;
/// The host directory of the policy files (mounted read-only into the proxy).
pub(crate) const POLICY_DIR: &str = "/run/sandboxd/egress";
/// Where it is mounted in the proxy.
const POLICY_MOUNT: &str = "/policies";
/// The line the proxy prints once it listens.
const LISTENING: &str = "sandboxd egress proxy listening on";
/// How long a proxy that was (re)started may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);

fn policy_path(bridge: &str) -> PathBuf {
    Path::new(POLICY_DIR).join(format!("{bridge}.json"))
}

fn policy_error(path: &Path, source: std::io::Error) -> DockerError {
    DockerError::EgressPolicy {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes the policy of the sandbox behind `bridge` (network `subnet`), atomically, readable
/// by the proxy.
pub(crate) fn write_policy(
    bridge: &str,
    subnet: &str,
    egress: &Egress,
    hosts: &BTreeMap<String, Ipv4Addr>,
) -> Result<(), DockerError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = Path::new(POLICY_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(|e| policy_error(dir, e))?;
    let policy = EgressPolicy {
        subnet: subnet.to_string(),
        domains: egress.domains().iter().map(ToString::to_string).collect(),
        hosts: hosts.clone(),
    };
    let json = serde_json::to_vec_pretty(&policy)
        .map_err(|e| policy_error(dir, std::io::Error::other(e)))?;
    let path = policy_path(bridge);
    let temporary = dir.join(format!(".{bridge}.json.tmp"));
    std::fs::write(&temporary, json).map_err(|e| policy_error(&temporary, e))?;
    std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o644))
        .map_err(|e| policy_error(&temporary, e))?;
    std::fs::rename(&temporary, &path).map_err(|e| policy_error(&path, e))
}

/// Removes the policy of the sandbox behind `bridge`, if it has one.
pub(crate) fn remove_policy(bridge: &str) {
    let path = policy_path(bridge);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove an egress policy")
        }
    }
}

/// The bridges that have a policy (those of live sandboxes and any left behind).
pub(crate) fn policy_bridges() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(POLICY_DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let bridge = name.strip_suffix(".json")?;
            bridge
                .starts_with(super::network::BRIDGE_PREFIX)
                .then(|| bridge.to_string())
        })
        .collect()
}

/// The proxy container's body: `image` is any sandbox image (it carries sandboxd).
fn container_body(image: &str) -> ContainerCreateBody {
    let (pool, prefix) = SUBNET_POOL;
    ContainerCreateBody {
        image: Some(image.to_string()),
        entrypoint: Some(Vec::new()),
        cmd: Some(vec![
            SANDBOXD_PATH.to_string(),
            sandbox_common::modes::EGRESS_PROXY.to_string(),
            "--policies".to_string(),
            POLICY_MOUNT.to_string(),
            "--listen".to_string(),
            format!("0.0.0.0:{PROXY_PORT}"),
            "--deny".to_string(),
            format!("{pool}/{prefix}"),
        ]),
        user: Some("65534:65534".to_string()),
        labels: Some(HashMap::from([(
            labels::EGRESS_PROXY.to_string(),
            "true".to_string(),
        )])),
        host_config: Some(HostConfig {
            network_mode: Some("host".to_string()),
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::UNLESS_STOPPED),
                maximum_retry_count: None,
            }),
            binds: Some(vec![format!("{POLICY_DIR}:{POLICY_MOUNT}:ro")]),
            cap_drop: Some(vec!["ALL".to_string()]),
            security_opt: Some(vec!["no-new-privileges:true".to_string()]),
            readonly_rootfs: Some(true),
            memory: Some(512 << 20),
            pids_limit: Some(1024),
            log_config: Some(HostConfigLogConfig {
                typ: Some("json-file".to_string()),
                config: Some(HashMap::from([
                    ("max-size".to_string(), "10m".to_string()),
                    ("max-file".to_string(), "2".to_string()),
                ])),
            }),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    }
}

/// Makes sure the proxy runs: created from `image` (a sandbox image) if there is none, started
/// if it stopped, and waited for until it listens.
pub(crate) async fn ensure_running(docker: &Docker, image: &str) -> Result<(), DockerError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .create(POLICY_DIR)
        .map_err(|e| policy_error(Path::new(POLICY_DIR), e))?;
    let state = match docker
        .inspect_container(PROXY_NAME, None::<InspectContainerOptions>)
        .await
    {
        Ok(inspect) => {
            if label(&inspect, labels::EGRESS_PROXY) != Some("true") {
                return Err(DockerError::Unsupported(format!(
                    "a container named {PROXY_NAME} is in the way of the egress proxy; remove it"
                )));
            }
            state_of(&inspect)
        }
        Err(e) if is_not_found(&e) => {
            let options = CreateContainerOptionsBuilder::default()
                .name(PROXY_NAME)
                .build();
            match docker
                .create_container(Some(options), container_body(image))
                .await
            {
                Ok(_) => None,
                // Another agentd made it meanwhile.
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 409, ..
                }) => None,
                Err(e) => return Err(e.into()),
            }
        }
        Err(e) => return Err(e.into()),
    };
    if state == Some(ContainerStateStatusEnum::RUNNING) {
        return Ok(());
    }
    match docker
        .start_container(PROXY_NAME, None::<StartContainerOptions>)
        .await
    {
        Ok(()) => {}
        // Already started (by another agentd).
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 304, ..
        }) => {}
        Err(e) => return Err(e.into()),
    }
    wait_listening(docker).await
}

/// Follows the proxy's output until it says it listens.
async fn wait_listening(docker: &Docker) -> Result<(), DockerError> {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs().saturating_sub(1)) as i32;
    let mut logs = docker.logs(
        PROXY_NAME,
        Some(
            LogsOptionsBuilder::default()
                .follow(true)
                .stdout(true)
                .stderr(true)
                // This start's output, not an earlier one's.
                .since(since)
                .build(),
        ),
    );
    let listening = async {
        let mut seen = String::new();
        while let Some(Ok(chunk)) = logs.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            if seen.contains(LISTENING) {
                return Ok(());
            }
        }
        Err(seen)
    };
    let failed = |output: String| DockerError::NotReady {
        id: PROXY_NAME.to_string(),
        reason: "the egress proxy did not start".to_string(),
        logs: output,
    };
    match tokio::time::timeout(START_TIMEOUT, listening).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(output)) => Err(failed(output)),
        Err(_) => Err(failed(format!(
            "it did not listen within {START_TIMEOUT:?}"
        ))),
    }
}
