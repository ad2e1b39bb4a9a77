//! The `swarm` backend: one replicated Docker Swarm service (one replica) per sandbox, through
//! the manager's engine. Each has an overlay network of its own (sandboxes do not reach each
//! other), the container of a Docker sandbox (same command, user, capabilities, limits, tmpfs:
//! [`SandboxConfig::task_body`]), resources reserved as limited (the scheduler places by
//! them), no restart (a sandbox that dies is gone, as with Docker), and sandboxd's port and
//! the app ports published in host mode at ports of the operator's range, so that the service
//! reaches a sandbox at `http://NODE_ADDRESS:PORT` wherever it runs.
//!
//! Pause, resume and a changed `resource_factor` act on the task's container and need it to
//! run on this engine's node (one-node swarms, or sandboxes placed there); elsewhere they are
//! refused (409). Images are the manager's: on a multi-node swarm every node needs the
//! sandbox image too (no registry is assumed).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::RangeInclusive;
use std::time::Duration;

use async_trait::async_trait;
use bollard::Docker;
use bollard::models::{
    EndpointPortConfig, EndpointPortConfigPublishModeEnum, EndpointSpec, Limit, LocalNodeState,
    Mount, MountTmpfsOptions, MountType, NetworkAttachmentConfig, NetworkCreateRequest,
    ResourceObject, Service, ServiceSpec, ServiceSpecMode, ServiceSpecModeReplicated, Task,
    TaskSpec, TaskSpecContainerSpec, TaskSpecContainerSpecPrivileges, TaskSpecResources,
    TaskSpecRestartPolicy, TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{ListServicesOptionsBuilder, ListTasksOptionsBuilder};
use sandbox_common::random_hex;

use super::docker::serve_labels;
use super::{Backend, Found, SandboxState, ServedSandbox, Spec, Warm, answers_http};
use crate::runtime::docker::config::SANDBOXD_PORT;
use crate::runtime::docker::inspect::is_not_found;
use crate::runtime::docker::{DockerError, Egress, Limits, Network, SandboxConfig, image, labels};
use crate::serve::store::Claim;
use crate::serve::{ServeConfig, ServeError};

/// How often a sandbox being placed is looked at.
const PLACEMENT_POLL: Duration = Duration::from_millis(100);
/// How long the removal of a sandbox's network waits for its task to be gone.
const NETWORK_REMOVAL: Duration = Duration::from_secs(30);

/// Sandboxes as services of a Docker Swarm this engine manages.
#[derive(Debug)]
pub(in crate::serve) struct SwarmBackend {
    docker: Docker,
    /// The host ports sandboxes are published at (on the node that runs them).
    ports: RangeInclusive<u16>,
    /// This engine's node id.
    node: String,
}

impl SwarmBackend {
    /// Connects to the engine `DOCKER_HOST` (or the local socket) names, which must manage a
    /// swarm, and checks that `config` asks nothing a swarm service cannot do.
    pub(in crate::serve) async fn connect(
        config: &ServeConfig,
        ports: RangeInclusive<u16>,
    ) -> Result<SwarmBackend, ServeError> {
        unsupported(&config.sandbox).map_err(ServeError::Config)?;
        if ports.is_empty() {
            return Err(ServeError::Config(
                "the swarm port range is empty".to_string(),
            ));
        }
        let docker = Docker::connect_with_local_defaults().map_err(DockerError::from)?;
        let info = docker.info().await.map_err(DockerError::from)?;
        let swarm = info.swarm.unwrap_or_default();
        if swarm.local_node_state != Some(LocalNodeState::ACTIVE)
            || swarm.control_available != Some(true)
        {
            return Err(ServeError::Config(
                "the swarm backend needs a swarm manager's engine: this engine is not one (docker swarm init, or point DOCKER_HOST at a manager)".to_string(),
            ));
        }
        let version = docker.version().await.map_err(DockerError::from)?;
        if version
            .api_version
            .as_deref()
            .and_then(api_minor)
            .is_some_and(|minor| minor < 46)
            && !config.sandbox.sudo
        {
            tracing::warn!(
                api = version.api_version.as_deref().unwrap_or_default(),
                "this engine predates swarm services with no-new-privileges (API 1.46): setuid programs in sandboxes gain no capabilities (all are dropped) but are not refused"
            );
        }
        Ok(SwarmBackend {
            docker,
            ports,
            node: swarm.node_id.unwrap_or_default(),
        })
    }

    /// The service's tasks, newest first.
    async fn tasks(&self, service: &str) -> Result<Vec<Task>, ServeError> {
        let filters = HashMap::from([("service", vec![service])]);
        let options = ListTasksOptionsBuilder::new().filters(&filters).build();
        let mut tasks = self
            .docker
            .list_tasks(Some(options))
            .await
            .map_err(DockerError::from)?;
        tasks.sort_by_key(|t| std::cmp::Reverse(t.version.as_ref().and_then(|v| v.index)));
        Ok(tasks)
    }

    /// The container of a service's running task, if it runs on this engine's node.
    async fn local_container(&self, service: &str) -> Result<String, ServeError> {
        let tasks = self.tasks(service).await?;
        let task = tasks
            .iter()
            .find(|t| task_state(t) == Some(TaskState::RUNNING))
            .ok_or_else(|| ServeError::Conflict(format!("sandbox {service} is not running")))?;
        if task.node_id.as_deref() != Some(self.node.as_str()) {
            return Err(ServeError::Conflict(format!(
                "sandbox {service} runs on another node of the swarm; pausing and resizing act on this node's sandboxes only"
            )));
        }
        task.status
            .as_ref()
            .and_then(|s| s.container_status.as_ref())
            .and_then(|c| c.container_id.clone())
            .ok_or_else(|| ServeError::Conflict(format!("sandbox {service} has no container yet")))
    }

    /// The address a node is reached at.
    async fn node_address(&self, node: &str) -> Result<String, ServeError> {
        let node = self
            .docker
            .inspect_node(node)
            .await
            .map_err(DockerError::from)?;
        node.status
            .and_then(|s| s.addr)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| ServeError::Internal("a swarm node without an address".to_string()))
    }

    /// Host ports of the range no service publishes, `count` of them, from a random start.
    async fn free_ports(&self, count: usize) -> Result<Vec<u16>, ServeError> {
        let services = self
            .docker
            .list_services(None)
            .await
            .map_err(DockerError::from)?;
        let taken: HashSet<u16> = services
            .iter()
            .filter_map(|s| s.spec.as_ref()?.endpoint_spec.as_ref()?.ports.as_ref())
            .flatten()
            .filter_map(|p| u16::try_from(p.published_port?).ok())
            .collect();
        let (low, high) = (*self.ports.start(), *self.ports.end());
        let span = u32::from(high - low) + 1;
        let start = u32::from_str_radix(
            &random_hex(4).map_err(|e| ServeError::Internal(e.to_string()))?,
            16,
        )
        .unwrap_or(0)
            % span;
        let free: Vec<u16> = (0..span)
            .map(|i| low + ((start + i) % span) as u16)
            .filter(|p| !taken.contains(p))
            .take(count)
            .collect();
        if free.len() < count {
            return Err(ServeError::Conflict(format!(
                "no free port left in the swarm port range {low}-{high}"
            )));
        }
        Ok(free)
    }

    /// Waits until the service's task runs and its sandboxd answers HTTP; its URL.
    async fn wait_placed(
        &self,
        service: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<String, ServeError> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| ServeError::Internal(e.to_string()))?;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last = String::from("not scheduled yet");
        loop {
            if let Some(task) = self.tasks(service).await?.first() {
                let status = task.status.clone().unwrap_or_default();
                match status.state {
                    Some(TaskState::RUNNING) => {
                        let node = task.node_id.clone().unwrap_or_default();
                        let url = format!("http://{}:{port}", self.node_address(&node).await?);
                        if answers_http(&http, &url).await {
                            return Ok(url);
                        }
                        last = "sandboxd does not answer yet".to_string();
                    }
                    Some(
                        state @ (TaskState::FAILED
                        | TaskState::REJECTED
                        | TaskState::COMPLETE
                        | TaskState::SHUTDOWN
                        | TaskState::ORPHANED
                        | TaskState::REMOVE),
                    ) => {
                        return Err(DockerError::NotReady {
                            id: service.to_string(),
                            reason: format!("its task is {state}"),
                            logs: status.err.or(status.message).unwrap_or_default(),
                        }
                        .into());
                    }
                    state => {
                        last = format!(
                            "its task is {} ({})",
                            state.map(|s| s.to_string()).unwrap_or_default(),
                            status.err.or(status.message).unwrap_or_default()
                        );
                    }
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(DockerError::NotReady {
                    id: service.to_string(),
                    reason: format!("not placed and listening within {timeout:?}: {last}"),
                    logs: String::new(),
                }
                .into());
            }
            tokio::time::sleep(PLACEMENT_POLL).await;
        }
    }

    /// Removes a sandbox's network once its task's container is gone (best effort).
    async fn remove_network(&self, name: &str) {
        let deadline = tokio::time::Instant::now() + NETWORK_REMOVAL;
        loop {
            match self.docker.remove_network(name).await {
                Ok(()) => return,
                Err(e) if is_not_found(&e) => return,
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    tracing::warn!(network = name, error = %e, "cannot remove a sandbox's network");
                    return;
                }
                // Still in use by the task being shut down.
                Err(_) => tokio::time::sleep(PLACEMENT_POLL).await,
            }
        }
    }

    async fn create_service(
        &self,
        config: &ServeConfig,
        spec: &Spec<'_>,
        key: &str,
    ) -> Result<(String, u16, BTreeMap<u16, u16>), ServeError> {
        let chosen = spec.user(config)?;
        let mut tag = spec.tag.to_string();
        if chosen.needs_renumbering() {
            tag = image::ensure_user_image(&self.docker, &tag, chosen).await?;
        }
        let sandbox = spec.sandbox(config, tag, chosen);
        unsupported(&sandbox).map_err(ServeError::BadRequest)?;
        let ports = self
            .free_ports(1 + sandbox.app_container_ports().count())
            .await?;
        let sandboxd_port = ports[0];
        let app_ports: BTreeMap<u16, u16> = sandbox
            .app_container_ports()
            .zip(ports[1..].iter().copied())
            .collect();
        let mut service_labels: HashMap<String, String> =
            serve_labels(config, spec).into_iter().collect();
        // The pool a sandbox found after a restart goes back to (the task's image may be a
        // renumbered user's image).
        service_labels.insert(labels::SERVE_IMAGE.to_string(), spec.tag.to_string());
        let network = NetworkCreateRequest {
            name: spec.runtime_id.to_string(),
            driver: Some("overlay".to_string()),
            labels: Some(service_labels.clone()),
            ..NetworkCreateRequest::default()
        };
        self.docker
            .create_network(network)
            .await
            .map_err(DockerError::from)?;
        let service = service_spec(&sandbox, key, service_labels, sandboxd_port, &app_ports);
        match self.docker.create_service(service, None).await {
            Ok(created) => Ok((created.id.unwrap_or_default(), sandboxd_port, app_ports)),
            Err(e) => {
                self.remove_network(spec.runtime_id).await;
                Err(DockerError::from(e).into())
            }
        }
    }
}

/// The minor version of Docker API version `1.N`.
fn api_minor(version: &str) -> Option<u32> {
    version.strip_prefix("1.")?.parse().ok()
}

/// Why a swarm service cannot be the sandbox `config` asks for (`None`: it can).
fn unsupported(config: &SandboxConfig) -> Result<(), String> {
    if config.disk_bytes.is_some() {
        return Err("a swarm service's disk cannot be limited (no storage quota, no disk of its own): run the service with --disk none".to_string());
    }
    if config.read_only_root {
        return Err("the swarm backend runs no sandbox with a read-only root".to_string());
    }
    if config.network != Network::Bridge {
        return Err("swarm sandboxes have network (an overlay network each)".to_string());
    }
    if config.egress != Egress::All || !config.host_ports.is_empty() {
        return Err("egress policies and host ports are enforced by the Docker backend's host firewall; the swarm backend has none".to_string());
    }
    if config.workspace.is_some() {
        return Err("a swarm sandbox mounts no host directory".to_string());
    }
    Ok(())
}

/// The service of one sandbox.
fn service_spec(
    sandbox: &SandboxConfig,
    key: &str,
    labels: HashMap<String, String>,
    sandboxd_port: u16,
    app_ports: &BTreeMap<u16, u16>,
) -> ServiceSpec {
    let body = sandbox.task_body(key);
    let host = body.host_config.clone().unwrap_or_default();
    let mut mounts = Vec::new();
    for (target, options) in host.tmpfs.iter().flatten() {
        let size = options
            .split(',')
            .find_map(|o| o.strip_prefix("size="))
            .and_then(|s| s.parse().ok());
        mounts.push(Mount {
            target: Some(target.clone()),
            typ: Some(MountType::TMPFS),
            tmpfs_options: Some(MountTmpfsOptions {
                size_bytes: size,
                mode: Some(0o1777),
                ..MountTmpfsOptions::default()
            }),
            ..Mount::default()
        });
    }
    let container = TaskSpecContainerSpec {
        image: body.image.clone(),
        labels: Some(labels.clone()),
        command: body.cmd.clone(),
        env: body.env.clone(),
        dir: body.working_dir.clone(),
        user: body.user.clone(),
        privileges: Some(TaskSpecContainerSpecPrivileges {
            no_new_privileges: Some(!sandbox.sudo),
            ..TaskSpecContainerSpecPrivileges::default()
        }),
        read_only: host.readonly_rootfs,
        mounts: Some(mounts),
        stop_signal: body.stop_signal.clone(),
        hosts: host.extra_hosts.as_ref().map(|hosts| {
            hosts
                .iter()
                .filter_map(|h| h.split_once(':'))
                .map(|(name, addr)| format!("{addr} {name}"))
                .collect()
        }),
        init: host.init,
        capability_add: host.cap_add.clone(),
        capability_drop: host.cap_drop.clone(),
        ..TaskSpecContainerSpec::default()
    };
    let limits = Limit {
        nano_cpus: host.nano_cpus,
        memory_bytes: host.memory,
        pids: host.pids_limit,
    };
    let ports = std::iter::once((SANDBOXD_PORT, sandboxd_port))
        .chain(app_ports.iter().map(|(i, o)| (*i, *o)))
        .map(|(inside, outside)| EndpointPortConfig {
            target_port: Some(i64::from(inside)),
            published_port: Some(i64::from(outside)),
            publish_mode: Some(EndpointPortConfigPublishModeEnum::HOST),
            ..EndpointPortConfig::default()
        })
        .collect();
    ServiceSpec {
        name: sandbox.name.clone(),
        labels: Some(labels),
        task_template: Some(TaskSpec {
            container_spec: Some(container),
            resources: Some(TaskSpecResources {
                limits: Some(limits),
                // Placement by resources: a node must have what the sandbox may use.
                reservations: Some(ResourceObject {
                    nano_cpus: host.nano_cpus,
                    memory_bytes: host.memory,
                    ..ResourceObject::default()
                }),
                ..TaskSpecResources::default()
            }),
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::NONE),
                ..TaskSpecRestartPolicy::default()
            }),
            networks: sandbox.name.clone().map(|name| {
                vec![NetworkAttachmentConfig {
                    target: Some(name),
                    ..NetworkAttachmentConfig::default()
                }]
            }),
            ..TaskSpec::default()
        }),
        mode: Some(ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated { replicas: Some(1) }),
            ..ServiceSpecMode::default()
        }),
        endpoint_spec: Some(EndpointSpec {
            ports: Some(ports),
            ..EndpointSpec::default()
        }),
        ..ServiceSpec::default()
    }
}

fn task_state(task: &Task) -> Option<TaskState> {
    task.status.as_ref()?.state
}

/// A service's sandbox state from its newest task (and, for one on this node, whether its
/// container is paused).
fn state_of_task(task: Option<&Task>, paused: bool) -> SandboxState {
    match task.and_then(task_state) {
        Some(TaskState::RUNNING) if paused => SandboxState::Paused,
        Some(TaskState::RUNNING) => SandboxState::Running,
        Some(
            TaskState::NEW
            | TaskState::ALLOCATED
            | TaskState::PENDING
            | TaskState::ASSIGNED
            | TaskState::ACCEPTED
            | TaskState::PREPARING
            | TaskState::READY
            | TaskState::STARTING,
        ) => SandboxState::Starting,
        _ => SandboxState::Down,
    }
}

/// The published host port of `target` in a service's spec.
fn published(service: &Service, target: u16) -> Option<u16> {
    service
        .spec
        .as_ref()?
        .endpoint_spec
        .as_ref()?
        .ports
        .as_ref()?
        .iter()
        .find(|p| p.target_port == Some(i64::from(target)))
        .and_then(|p| u16::try_from(p.published_port?).ok())
}

/// The claim a service carries ([`labels::SERVE_CLAIM`]); an unreadable one is logged and
/// counts as a claim nobody can use (never as none: the sandbox is not handed out again).
fn claim_of(service: &Service) -> Option<Claim> {
    let text = service_label(service, labels::SERVE_CLAIM)?;
    match serde_json::from_str(text) {
        Ok(claim) => Some(claim),
        Err(e) => {
            tracing::warn!(service = ?service.id, error = %e, "an unreadable claim label");
            None
        }
    }
}

/// Whether the engine refused an update made on an older version of the service.
fn out_of_sequence(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError { message, .. }
            if message.contains("out of sequence")
    )
}

fn service_label<'a>(service: &'a Service, key: &str) -> Option<&'a str> {
    service
        .spec
        .as_ref()?
        .labels
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

#[async_trait]
impl Backend for SwarmBackend {
    fn kind(&self) -> &'static str {
        "swarm"
    }

    fn engine(&self) -> Option<&Docker> {
        Some(&self.docker)
    }

    async fn create(&self, config: &ServeConfig, spec: Spec<'_>) -> Result<Warm, ServeError> {
        let key = random_hex(32).map_err(|e| ServeError::Internal(e.to_string()))?;
        let (id, port, app_ports) = self.create_service(config, &spec, &key).await?;
        match self
            .wait_placed(&id, port, config.sandbox.ready_timeout)
            .await
        {
            Ok(local_url) => Ok(Warm {
                runtime_id: spec.runtime_id.to_string(),
                container: ServedSandbox {
                    id,
                    local_url,
                    port,
                    app_ports,
                    image: spec.tag.to_string(),
                },
                configure_key: key,
            }),
            Err(e) => {
                if let Err(down) = self.remove(&id).await {
                    tracing::warn!(service = %id, error = %down, "cannot remove a sandbox that did not come up");
                }
                Err(e)
            }
        }
    }

    async fn remove(&self, id: &str) -> Result<(), ServeError> {
        let service = match self.docker.inspect_service(id, None).await {
            Ok(service) => service,
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(DockerError::from(e).into()),
        };
        match self.docker.delete_service(id).await {
            Ok(()) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(DockerError::from(e).into()),
        }
        if let Some(network) = service_label(&service, labels::SERVE_RUNTIME_ID) {
            self.remove_network(network).await;
        }
        Ok(())
    }

    async fn pause(&self, id: &str) -> Result<(), ServeError> {
        let container = self.local_container(id).await?;
        self.docker
            .pause_container(&container)
            .await
            .map_err(|e| DockerError::from(e).into())
    }

    async fn unpause(&self, id: &str) -> Result<(), ServeError> {
        let container = self.local_container(id).await?;
        self.docker
            .unpause_container(&container)
            .await
            .map_err(|e| DockerError::from(e).into())
    }

    async fn update_limits(&self, id: &str, limits: &Limits) -> Result<(), ServeError> {
        // A new task template would replace the configured sandbox: the running container's
        // limits change instead.
        let container = self.local_container(id).await?;
        self.docker
            .update_container(&container, limits.update_body())
            .await
            .map_err(|e| DockerError::from(e).into())
    }

    async fn state(&self, id: &str) -> Result<SandboxState, ServeError> {
        match self.docker.inspect_service(id, None).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return Ok(SandboxState::Down),
            Err(e) => return Err(DockerError::from(e).into()),
        }
        let tasks = self.tasks(id).await?;
        let task = tasks.first();
        let paused = match task
            .filter(|t| t.node_id.as_deref() == Some(self.node.as_str()))
            .and_then(|t| {
                t.status
                    .as_ref()?
                    .container_status
                    .as_ref()?
                    .container_id
                    .clone()
            }) {
            Some(container) => self
                .docker
                .inspect_container(&container, None)
                .await
                .ok()
                .and_then(|c| c.state?.paused)
                .unwrap_or(false),
            None => false,
        };
        Ok(state_of_task(task, paused))
    }

    fn keeps_claims(&self) -> bool {
        true
    }

    async fn put_claim(&self, id: &str, claim: &Claim, first: bool) -> Result<bool, ServeError> {
        let text = serde_json::to_string(claim).map_err(|e| ServeError::Internal(e.to_string()))?;
        // The engine takes an update only at the version it was read at: of two replicas
        // claiming one sandbox, the second's update is refused and it reads the claim.
        loop {
            let service = match self.docker.inspect_service(id, None).await {
                Ok(service) => service,
                Err(e) if is_not_found(&e) => return Ok(false),
                Err(e) => return Err(DockerError::from(e).into()),
            };
            if first && service_label(&service, labels::SERVE_CLAIM).is_some() {
                return Ok(false);
            }
            let version = service.version.and_then(|v| v.index).unwrap_or_default();
            let mut spec = service.spec.unwrap_or_default();
            spec.labels
                .get_or_insert_default()
                .insert(labels::SERVE_CLAIM.to_string(), text.clone());
            let options = bollard::query_parameters::UpdateServiceOptions {
                version: i32::try_from(version).unwrap_or(i32::MAX),
                ..Default::default()
            };
            match self.docker.update_service(id, spec, options, None).await {
                Ok(_) => return Ok(true),
                Err(e) if is_not_found(&e) => return Ok(false),
                Err(e) if out_of_sequence(&e) => continue,
                Err(e) => return Err(DockerError::from(e).into()),
            }
        }
    }

    async fn find(&self, name: &str) -> Result<Vec<Found>, ServeError> {
        let filters = HashMap::from([("label", vec![format!("{}={name}", labels::SERVE_NAME)])]);
        let options = ListServicesOptionsBuilder::new().filters(&filters).build();
        let services = self
            .docker
            .list_services(Some(options))
            .await
            .map_err(DockerError::from)?;
        let mut found = Vec::new();
        for service in services {
            let id = service.id.clone().unwrap_or_default();
            let state = self.state(&id).await?;
            let tasks = self.tasks(&id).await?;
            let node = tasks
                .first()
                .filter(|t| task_state(t) == Some(TaskState::RUNNING))
                .and_then(|t| t.node_id.clone());
            let address = match node {
                Some(node) => Some(self.node_address(&node).await?),
                None => None,
            };
            let container_spec = service
                .spec
                .as_ref()
                .and_then(|s| s.task_template.as_ref())
                .and_then(|t| t.container_spec.as_ref());
            let container =
                address
                    .zip(published(&service, SANDBOXD_PORT))
                    .map(|(address, port)| ServedSandbox {
                        id: id.clone(),
                        local_url: format!("http://{address}:{port}"),
                        port,
                        app_ports: service
                            .spec
                            .as_ref()
                            .and_then(|s| s.endpoint_spec.as_ref())
                            .and_then(|e| e.ports.as_ref())
                            .into_iter()
                            .flatten()
                            .filter_map(|p| {
                                let inside = u16::try_from(p.target_port?).ok()?;
                                let outside = u16::try_from(p.published_port?).ok()?;
                                (inside != SANDBOXD_PORT).then_some((inside, outside))
                            })
                            .collect(),
                        image: service_label(&service, labels::SERVE_IMAGE)
                            .unwrap_or_default()
                            .to_string(),
                    });
            found.push(Found {
                runtime_id: service_label(&service, labels::SERVE_RUNTIME_ID)
                    .unwrap_or_default()
                    .to_string(),
                id,
                state,
                container,
                configure_key: container_spec
                    .and_then(|c| c.env.as_ref())
                    .into_iter()
                    .flatten()
                    .find_map(|kv| {
                        kv.strip_prefix("SANDBOXD_CONFIGURE_KEY=")
                            .map(str::to_string)
                    }),
                profile: service_label(&service, labels::SERVE_PROFILE).map(str::to_string),
                claim: claim_of(&service),
            });
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests;
