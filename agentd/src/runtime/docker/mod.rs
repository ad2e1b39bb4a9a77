//! The Docker runtime: one hardened container per sandbox, running sandboxd, created and
//! removed through the Docker API (bollard).
//!
//! A sandbox is ready when sandboxd says it listens (its first stdout line, read from the
//! container's log stream: no polling) and `/alive` answers through the port published on
//! loopback, or, for a sandbox without network, through a Unix socket in a host directory
//! mounted into it. Every container carries our labels ([`labels`]); those of a dead owner are
//! found and removed by [`DockerHost::gc`].

mod archive;
mod bridge;
pub(crate) mod config;
pub(crate) mod disk;
pub(crate) mod egress_proxy;
mod host_command;
pub(crate) mod image;
pub(crate) mod inspect;
pub(crate) mod labels;
mod layer;
pub(crate) mod network;
mod setup;
pub(crate) mod user;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use bollard::models::{
    ContainerInspectResponse, ContainerStateStatusEnum, ContainerSummaryStateEnum,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectContainerOptions, ListContainersOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, StartContainerOptions, WaitContainerOptions,
};
use client::SandboxClient;
use futures_util::StreamExt;
use sandbox_common::random_hex;

pub use config::{Limits, Network, SandboxConfig};
use config::{MAX_APP_PORTS, SANDBOXD_PORT};
pub use disk::{DiskError, DiskLimit};
use disk::{DiskMounts, StorageQuota};
use inspect::{app_ports_of, container_name, is_managed, is_not_found, label, state_of, url_of};
use labels::Owner;
pub use network::{CidrRule, Egress, EgressRule, FirewallError};
pub use sandbox_common::DomainRule;
pub use user::{SandboxUser, UserError};

/// Errors of the Docker runtime.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// The engine could not be reached or refused a request (retrying may help if it was
    /// restarting).
    #[error("Docker engine: {0}")]
    Engine(#[from] bollard::errors::Error),
    /// The image does not exist in the engine (no registry is consulted).
    #[error(
        "image {image} is not in the Docker engine (build the base with images/base/build.sh, or docker load/import it)"
    )]
    ImageMissing {
        /// The image asked for.
        image: String,
    },
    /// No sandboxd binary to put into an image.
    #[error(
        "cannot read the sandboxd binary {path}: {source} (build it with images/build-sandboxd.sh and pass --sandboxd or AGENTD_SANDBOXD_BIN)"
    )]
    SandboxdBinary {
        /// Where it was looked for.
        path: std::path::PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// `image` is a base image and no sandboxd binary was given or found to make it a sandbox
    /// image with. Retrying cannot help until one is given.
    #[error(
        "{image} is a base image and no sandboxd binary was given: pass --sandboxd PATH, set AGENTD_SANDBOXD_BIN, or put sandboxd next to agentd"
    )]
    NoSandboxd {
        /// The base image.
        image: String,
    },
    /// Building a sandbox image failed; the message ends with the build's last lines.
    #[error("building the sandbox image failed: {0}")]
    Build(String),
    /// The sandbox user cannot be chosen (root not allowed, workspace not writable).
    #[error(transparent)]
    User(#[from] UserError),
    /// The sandbox's network could not be isolated (the host's firewall could not be changed).
    #[error(transparent)]
    Firewall(#[from] FirewallError),
    /// The configuration asks for something this runtime cannot do.
    #[error("unsupported sandbox configuration: {0}")]
    Unsupported(String),
    /// The container started but sandboxd did not become ready; it has been removed.
    #[error("sandbox {id} did not become ready: {reason}\n--- last container output ---\n{logs}")]
    NotReady {
        /// Container id.
        id: String,
        /// What happened (exited with a status, timed out...).
        reason: String,
        /// The container's last output lines.
        logs: String,
    },
    /// No managed sandbox has this id or name.
    #[error("no sandbox {0}")]
    NoSuchSandbox(String),
    /// The container lacks what a sandbox has (port, key); it was not made by this runtime or
    /// has stopped.
    #[error("sandbox {id} cannot be reached: {reason}")]
    Unreachable {
        /// Container id.
        id: String,
        /// What is missing.
        reason: String,
    },
    /// The directory for a sandbox's socket could not be made.
    #[error("cannot prepare the socket directory {path}: {source}")]
    SocketDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A sandbox's egress policy file could not be written for the filtering proxy.
    #[error(
        "cannot write the egress policy {path}: {source} (agentd needs root for a sandbox with network)"
    )]
    EgressPolicy {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The lock that keeps `gc` away from a sandbox network being set up could not be taken.
    #[error(
        "cannot lock {path} for setting up a sandbox network: {source} (agentd needs root for a sandbox with network)"
    )]
    SetupLock {
        /// The lock file or its directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The sandbox's disk could not be made.
    #[error(transparent)]
    Disk(#[from] DiskError),
    /// The OS gave no randomness for a session key.
    #[error("no randomness for a session key: {0}")]
    Entropy(String),
    /// The sandbox's HTTP client could not be built.
    #[error(transparent)]
    Client(#[from] client::ClientError),
}

/// A running sandbox: where it answers and the key it wants.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SandboxContainer {
    /// Container id.
    pub id: String,
    /// Container name.
    pub name: String,
    /// sandboxd's base URL, reachable from this host.
    pub url: String,
    /// Its session API key (`X-Session-API-Key`); for a sandbox started with
    /// [`SandboxConfig::await_configuration`], the key its `POST /configure` wants.
    pub session_api_key: String,
    /// The image it runs.
    pub(crate) image: String,
    /// Its app ports: container port → the host port it is published on.
    pub app_ports: BTreeMap<u16, u16>,
    /// How its disk is limited, in words ([`DiskLimit`]'s; `""` for a sandbox made before
    /// disks were limited).
    pub disk: String,
}

impl SandboxContainer {
    /// A client for its sandboxd.
    pub fn client(&self) -> Result<SandboxClient, DockerError> {
        Ok(SandboxClient::new(
            &self.url,
            Some(self.session_api_key.clone()),
        )?)
    }
}

/// One managed container as `agentd sandbox ls` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SandboxSummary {
    /// Container id.
    pub id: String,
    /// Container name.
    pub name: String,
    /// Image.
    pub(crate) image: String,
    /// Engine state (`running`, `exited`...; serialized as the engine's word, `""` when it
    /// gave none).
    pub state: ContainerSummaryStateEnum,
    /// sandboxd's URL when it is running and reachable from this host.
    pub url: Option<String>,
    /// Pid of the owning agentd; `None` for a detached sandbox.
    pub owner_pid: Option<u32>,
    /// Whether the owner is gone (the sandbox is an orphan for [`DockerHost::gc`]).
    pub orphaned: bool,
}

/// What [`DockerHost::gc`] removes.
#[derive(Debug, Clone, Copy, Default)]
pub struct GcPolicy {
    /// Also running detached sandboxes (everything we manage).
    pub all: bool,
}

/// The Docker runtime: a connection to the engine, which must run on this host (published
/// ports are bound to its loopback, sockets live in its file system).
#[derive(Debug, Clone)]
pub struct DockerHost {
    docker: Docker,
    /// Parent of the per-sandbox socket directories ([`Network::None`]); private to this user.
    socket_root: PathBuf,
    /// Whether the engine's storage driver limits a container's writable layer, found once.
    storage_quota: std::sync::Arc<tokio::sync::OnceCell<StorageQuota>>,
}

impl DockerHost {
    /// Connects to the engine at `DOCKER_HOST` or the local socket (nothing is sent yet).
    /// Socket directories go under `$XDG_RUNTIME_DIR/agentd`, else `$TMPDIR/agentd-UID`.
    pub fn connect() -> Result<DockerHost, DockerError> {
        let socket_root = match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(dir) => PathBuf::from(dir).join("agentd"),
            None => std::env::temp_dir().join(format!("agentd-{}", current_uid())),
        };
        Ok(DockerHost {
            docker: Docker::connect_with_defaults()?,
            socket_root,
            storage_quota: std::sync::Arc::default(),
        })
    }

    /// The engine connection, for image operations ([`image`]).
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// Creates, starts and waits for a sandbox. With `owner`, the sandbox belongs to that
    /// process and becomes an orphan when it dies; without, it lives until [`Self::down`].
    /// On any failure nothing is left behind.
    pub async fn up(
        &self,
        config: &SandboxConfig,
        owner: Option<&Owner>,
    ) -> Result<SandboxContainer, DockerError> {
        if config.network == Network::None
            && (config.egress != Egress::All || !config.host_ports.is_empty())
        {
            return Err(DockerError::Unsupported(
                "an egress policy or host ports apply to a sandbox with network; one without network reaches nothing".to_string(),
            ));
        }
        if config.app_ports > 0 && config.network == Network::None {
            return Err(DockerError::Unsupported(
                "app ports are published through the bridge network; a sandbox without network has none".to_string(),
            ));
        }
        if config.app_ports > MAX_APP_PORTS {
            return Err(DockerError::Unsupported(format!(
                "{} app ports asked for; at most {MAX_APP_PORTS}",
                config.app_ports
            )));
        }
        if !image::is_sandbox_image(&self.docker, &config.image).await? {
            return Err(DockerError::Unsupported(format!(
                "{} has no sandboxd; make it a sandbox image first (agentd image build --base {})",
                config.image, config.image
            )));
        }
        for name in config.egress_hosts.keys() {
            sandbox_common::normalize_host(name)
                .map_err(|e| DockerError::Unsupported(format!("egress host pin {name:?}: {e}")))?;
        }
        if !config.egress.domains().is_empty() {
            // Before anything is made: there is nothing to clean up if it fails.
            egress_proxy::ensure_running(&self.docker, &config.image).await?;
        }
        let user = user::choose(config.workspace.as_deref(), config.user, config.allow_root)?;
        let mut config = config.clone();
        config.user = Some(user);
        if user.needs_renumbering() {
            config.image = image::ensure_user_image(&self.docker, &config.image, user).await?;
        }
        let config = &config;
        let suffix = random_hex(6).map_err(|e| DockerError::Entropy(e.to_string()))?;
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| format!("sandbox-{suffix}"));
        let mut ours = HashMap::from([(labels::MANAGED.to_string(), "true".to_string())]);
        if let Some(owner) = owner {
            ours.insert(labels::OWNER.to_string(), owner.label());
        }
        let key = random_hex(32).map_err(|e| DockerError::Entropy(e.to_string()))?;
        // `setup` keeps `gc` away from the network and its rules, or the socket directory,
        // until the container runs (see `setup`): until then no container uses them, as for
        // ones left behind.
        let (socket_dir, bridge, setup) = match config.network {
            Network::Bridge => {
                // An interface name has at most 15 bytes.
                let bridge = format!("{}{}", network::BRIDGE_PREFIX, &suffix[..10]);
                ours.insert(labels::BRIDGE.to_string(), bridge.clone());
                let setup = setup::SetupLock::bridge(&bridge).await.map_err(|source| {
                    DockerError::SetupLock {
                        path: setup::bridge_lock(&bridge),
                        source,
                    }
                })?;
                (None, Some(bridge), setup)
            }
            Network::None => {
                let setup = setup::SetupLock::socket_dir(&self.socket_root, &name)
                    .await
                    .map_err(|source| DockerError::SocketDir {
                        path: self.socket_root.clone(),
                        source,
                    })?;
                let dir = self.socket_root.join(&name);
                ours.insert(labels::SOCKET_DIR.to_string(), dir.display().to_string());
                (Some(dir), None, setup)
            }
        };
        // The network (the engine's work) and the disk (ours) at once: both are on the way to
        // the first observation, and neither needs the other.
        let network = async {
            match &bridge {
                Some(bridge) => self.create_network(bridge, &ours, config).await,
                None => Ok(()),
            }
        };
        let (network, disk) = tokio::join!(network, self.disk(config, &name));
        // On a failure of either, what the other made goes too.
        let (disk, disk_limit, own_disk) = match (network, disk) {
            (Ok(()), Ok(disk)) => disk,
            (network, Err(e)) => {
                if network.is_ok()
                    && let Some(bridge) = &bridge
                {
                    self.remove_network(bridge).await;
                }
                remove_socket_dir(socket_dir.as_deref());
                return Err(e);
            }
            (Err(e), Ok((_, _, own_disk))) => {
                if let Some(own_disk) = own_disk {
                    own_disk.release().await;
                }
                remove_socket_dir(socket_dir.as_deref());
                return Err(e);
            }
        };
        ours.insert(labels::DISK_LIMIT.to_string(), disk_limit.to_string());
        ours.extend(
            config
                .labels
                .iter()
                .filter(|(k, _)| k.starts_with(labels::SERVE_PREFIX))
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        let body = config.container_body(
            &key,
            config.all_labels(ours),
            socket_dir.as_deref(),
            bridge.as_deref(),
            &disk,
        );
        let options = CreateContainerOptionsBuilder::default().name(&name).build();
        let id = match self.docker.create_container(Some(options), body).await {
            Ok(created) => created.id,
            Err(e) => {
                remove_socket_dir(socket_dir.as_deref());
                if let Some(bridge) = &bridge {
                    self.remove_network(bridge).await;
                }
                return Err(e.into());
            }
        };
        let waited = self
            .start_and_wait(&id, config.ready_timeout, config.await_configuration)
            .await;
        if let Some(own_disk) = own_disk {
            // Started, the container holds its own mounts of the disk: the host's go now, and
            // the disk goes when the container does, however it is removed.
            own_disk.release().await;
        }
        let made = match waited {
            Ok((url, app_ports)) => Ok(SandboxContainer {
                id,
                name,
                url,
                session_api_key: key,
                image: config.image.clone(),
                app_ports,
                disk: disk_limit.to_string(),
            }),
            Err(e) => {
                self.remove(&id).await;
                Err(e)
            }
        };
        // Running on its network, or all removed: a sweep may look now.
        drop(setup);
        made
    }

    /// What the sandbox's disk limit needs (see [`disk`]): nothing, the storage driver's quota,
    /// or a disk of its own, made and mounted now (released with the container).
    async fn disk(
        &self,
        config: &SandboxConfig,
        name: &str,
    ) -> Result<(DiskMounts, DiskLimit, Option<disk::OwnDisk>), DockerError> {
        let Some(bytes) = config.disk_bytes else {
            return Ok((DiskMounts::default(), DiskLimit::Unlimited, None));
        };
        let quota = self
            .storage_quota
            .get_or_try_init(|| disk::probe(&self.docker, &config.image))
            .await?;
        let why = match quota {
            StorageQuota::Supported => {
                let mounts = DiskMounts {
                    storage_size: Some(bytes),
                    ..DiskMounts::default()
                };
                return Ok((mounts, DiskLimit::StorageQuota { bytes }, None));
            }
            StorageQuota::Unsupported(why) => why.clone(),
        };
        let user = config.user_or_default();
        let image = self.docker.inspect_image(&config.image).await?;
        let label = image
            .config
            .as_ref()
            .and_then(|c| c.labels.as_ref())
            .and_then(|l| l.get(disk::WRITABLE_LABEL))
            .cloned();
        let paths =
            disk::writable_paths(&user.home(), config.workspace.is_some(), label.as_deref());
        let own = disk::make(&self.docker, name, bytes, &config.image, &paths, user).await?;
        let read_only_root = !config.sudo;
        let mounts = DiskMounts {
            storage_size: None,
            binds: disk::binds(own.dir(), &paths),
            read_only_root,
        };
        let limit = DiskLimit::OwnDisk {
            bytes,
            paths,
            read_only_root,
            why,
        };
        Ok((mounts, limit, Some(own)))
    }

    async fn start_and_wait(
        &self,
        id: &str,
        timeout: Duration,
        await_configuration: bool,
    ) -> Result<(String, BTreeMap<u16, u16>), DockerError> {
        let marker = if await_configuration {
            "sandboxd awaiting configuration on"
        } else {
            "sandboxd listening on"
        };
        // Follow the output from the start, so the "listening" line cannot be missed.
        let mut logs = self.docker.logs(
            id,
            Some(
                LogsOptionsBuilder::default()
                    .follow(true)
                    .stdout(true)
                    .stderr(true)
                    .build(),
            ),
        );
        let mut exited = self.docker.wait_container(id, None::<WaitContainerOptions>);
        self.docker
            .start_container(id, None::<StartContainerOptions>)
            .await?;
        let not_ready = |reason: String| async move {
            DockerError::NotReady {
                id: id.to_string(),
                reason,
                logs: self.tail_logs(id, 20).await,
            }
        };
        let listening = async {
            let mut pending = String::new();
            while let Some(chunk) = logs.next().await {
                let Ok(chunk) = chunk else { break };
                pending.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
                if pending.contains(marker) {
                    return true;
                }
                if let Some(last_newline) = pending.rfind('\n') {
                    pending.drain(..=last_newline);
                }
            }
            false
        };
        tokio::select! {
            ready = listening => if !ready {
                // The output ends when the container exits: report how it exited.
                let status = tokio::time::timeout(Duration::from_secs(5), exited.next()).await;
                let reason = match status {
                    Ok(status) => exit_reason(status),
                    Err(_) => "its output ended before sandboxd listened".to_string(),
                };
                return Err(not_ready(reason).await);
            },
            status = exited.next() => return Err(not_ready(exit_reason(status)).await),
            () = tokio::time::sleep(timeout) => {
                return Err(not_ready(format!("sandboxd did not listen within {timeout:?}")).await);
            }
        }
        let inspect = self.inspect(id).await?;
        let url = url_of(&inspect).ok_or_else(|| DockerError::Unreachable {
            id: id.to_string(),
            reason: "no published port or network address".to_string(),
        })?;
        let app_ports = app_ports_of(&inspect);
        if await_configuration {
            // It answers only `/configure` (and 503 to anything else) until configured.
            return Ok((url, app_ports));
        }
        let client = SandboxClient::new(&url, None)?;
        if let Err(e) = client.wait_until_alive(Duration::from_secs(10)).await {
            return Err(not_ready(format!("{url}/alive did not answer: {e}")).await);
        }
        Ok((url, app_ports))
    }

    /// The container with this id, id prefix or name, if it is one of ours.
    async fn inspect_managed(
        &self,
        id_or_name: &str,
    ) -> Result<ContainerInspectResponse, DockerError> {
        match self
            .docker
            .inspect_container(id_or_name, None::<InspectContainerOptions>)
            .await
        {
            Ok(inspect) if is_managed(&inspect) => Ok(inspect),
            Ok(_) => Err(DockerError::NoSuchSandbox(id_or_name.to_string())),
            Err(e) if is_not_found(&e) => Err(DockerError::NoSuchSandbox(id_or_name.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    /// The managed sandbox with this id, id prefix or name, with its URL and key.
    pub async fn get(&self, id_or_name: &str) -> Result<SandboxContainer, DockerError> {
        let inspect = self.inspect_managed(id_or_name).await?;
        let id = inspect.id.clone().unwrap_or_default();
        let config = inspect.config.clone().unwrap_or_default();
        let session_api_key = config
            .env
            .iter()
            .flatten()
            .find_map(|kv| kv.strip_prefix("SESSION_API_KEY=").map(str::to_string))
            .ok_or_else(|| DockerError::Unreachable {
                id: id.clone(),
                reason: "it has no SESSION_API_KEY".to_string(),
            })?;
        let url = url_of(&inspect).ok_or_else(|| DockerError::Unreachable {
            id: id.clone(),
            reason: "it is not running".to_string(),
        })?;
        Ok(SandboxContainer {
            name: container_name(&inspect),
            image: config.image.unwrap_or_default(),
            app_ports: app_ports_of(&inspect),
            disk: label(&inspect, labels::DISK_LIMIT)
                .unwrap_or_default()
                .to_string(),
            id,
            url,
            session_api_key,
        })
    }

    /// Every managed sandbox, running or not.
    pub async fn list(&self) -> Result<Vec<SandboxSummary>, DockerError> {
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&labels::managed_filter())
            .build();
        let containers = self.docker.list_containers(Some(options)).await?;
        Ok(containers
            .into_iter()
            .map(|c| {
                let owner = c
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(labels::OWNER))
                    .and_then(|o| Owner::parse(o));
                let socket = c.labels.as_ref().and_then(|l| l.get(labels::SOCKET_DIR));
                let url = match socket {
                    Some(dir) => Some(format!("unix:{dir}/{}", config::SOCKET_NAME)),
                    None => c.ports.iter().flatten().find_map(|p| {
                        (p.private_port == SANDBOXD_PORT)
                            .then_some(p.public_port)
                            .flatten()
                            .map(|port| format!("http://127.0.0.1:{port}"))
                    }),
                };
                SandboxSummary {
                    id: c.id.unwrap_or_default(),
                    name: c
                        .names
                        .iter()
                        .flatten()
                        .next()
                        .map(|n| n.trim_start_matches('/').to_string())
                        .unwrap_or_default(),
                    image: c.image.unwrap_or_default(),
                    state: c.state.unwrap_or(ContainerSummaryStateEnum::EMPTY),
                    url,
                    owner_pid: owner.as_ref().map(Owner::pid),
                    orphaned: owner.as_ref().is_some_and(|o| !o.is_alive()),
                }
            })
            .collect())
    }

    /// Stops and removes a sandbox (and its socket directory).
    pub async fn down(&self, id_or_name: &str) -> Result<(), DockerError> {
        let inspect = self.inspect_managed(id_or_name).await?;
        self.remove_inspected(&inspect).await
    }

    /// Removes the sandboxes whose owner is gone, detached ones that have stopped (exited or
    /// dead; one still being created is left alone), and socket directories left behind; with
    /// `policy.all`, every managed sandbox. Returns the removed container ids.
    pub async fn gc(&self, policy: GcPolicy) -> Result<Vec<String>, DockerError> {
        let mut removed = Vec::new();
        for sandbox in self.list().await? {
            let stopped = matches!(
                sandbox.state,
                ContainerSummaryStateEnum::EXITED | ContainerSummaryStateEnum::DEAD
            );
            let detached = sandbox.owner_pid.is_none();
            if policy.all || sandbox.orphaned || (detached && stopped) {
                match self.down(&sandbox.id).await {
                    Ok(()) | Err(DockerError::NoSuchSandbox(_)) => removed.push(sandbox.id),
                    Err(e) => return Err(e),
                }
            }
        }
        // Socket directories whose container went away some other way (never one of a sandbox
        // being made: `setup`).
        let turn = setup::sweep_turn(&self.socket_root).await;
        let live: Vec<String> = self.list().await?.into_iter().map(|s| s.name).collect();
        if let Ok(entries) = std::fs::read_dir(&self.socket_root) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if live.contains(&name) || name == setup::SWEEP_TURN {
                    continue;
                }
                let Some(claim) = setup::claim_for_sweep(&entry.path(), setup::OnClaim::Keep)
                else {
                    continue;
                };
                // Judged now that nobody is making it: its container may have started since
                // `live` was listed.
                match self
                    .docker
                    .inspect_container(&name, None::<InspectContainerOptions>)
                    .await
                {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {
                        let _ = std::fs::remove_dir_all(entry.path());
                    }
                    Err(e) => return Err(e.into()),
                }
                drop(claim);
            }
        }
        drop(turn);
        disk::sweep(&self.docker, &live).await?;
        layer::sweep(&self.docker).await?;
        self.sweep_networks().await?;
        Ok(removed)
    }

    async fn remove_inspected(
        &self,
        inspect: &ContainerInspectResponse,
    ) -> Result<(), DockerError> {
        let id = inspect.id.clone().unwrap_or_default();
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(&id, Some(options)).await {
            Ok(()) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        }
        if let Some(bridge) = label(inspect, labels::BRIDGE) {
            self.remove_network(bridge).await;
        }
        if let Some(dir) = label(inspect, labels::SOCKET_DIR) {
            match std::fs::remove_dir_all(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(DockerError::SocketDir {
                        path: dir.into(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// Best-effort removal on a failure path (the error being reported matters more).
    async fn remove(&self, id: &str) {
        match self.inspect(id).await {
            Ok(inspect) => {
                if let Err(e) = self.remove_inspected(&inspect).await {
                    tracing::warn!(%id, error = %e, "could not remove a failed sandbox");
                }
            }
            Err(e) => tracing::warn!(%id, error = %e, "could not inspect a failed sandbox"),
        }
    }

    async fn inspect(&self, id: &str) -> Result<ContainerInspectResponse, DockerError> {
        Ok(self
            .docker
            .inspect_container(id, None::<InspectContainerOptions>)
            .await?)
    }

    /// Freezes a sandbox's processes (`docker pause`); memory, files and processes are kept.
    pub(crate) async fn pause(&self, id: &str) -> Result<(), DockerError> {
        self.docker
            .pause_container(id)
            .await
            .map_err(|e| self.missing(id, e))
    }

    /// Thaws a paused sandbox (`docker unpause`).
    pub(crate) async fn unpause(&self, id: &str) -> Result<(), DockerError> {
        self.docker
            .unpause_container(id)
            .await
            .map_err(|e| self.missing(id, e))
    }

    /// Changes a running sandbox's memory and CPU limits (`docker update`).
    pub(crate) async fn update_limits(&self, id: &str, limits: &Limits) -> Result<(), DockerError> {
        self.docker
            .update_container(id, limits.update_body())
            .await
            .map_err(|e| self.missing(id, e))
    }

    /// The managed containers carrying label `key=value`, running or not, inspected (labels,
    /// environment, state, published port).
    pub(crate) async fn inspect_labelled(
        &self,
        key: &str,
        value: &str,
    ) -> Result<Vec<ContainerInspectResponse>, DockerError> {
        let mut filters = labels::managed_filter();
        filters
            .entry("label".to_string())
            .or_default()
            .push(format!("{key}={value}"));
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let mut found = Vec::new();
        for container in self.docker.list_containers(Some(options)).await? {
            let Some(id) = container.id else { continue };
            match self.inspect(&id).await {
                Ok(inspect) => found.push(inspect),
                Err(DockerError::Engine(e)) if is_not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(found)
    }

    /// The engine's state of a container (`running`, `paused`, `exited`...); `None` when it
    /// is gone (or the engine gave none).
    pub(crate) async fn get_state(
        &self,
        id: &str,
    ) -> Result<Option<ContainerStateStatusEnum>, DockerError> {
        match self.inspect(id).await {
            Ok(inspect) => Ok(state_of(&inspect)),
            Err(DockerError::Engine(e)) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn missing(&self, id: &str, e: bollard::errors::Error) -> DockerError {
        if is_not_found(&e) {
            DockerError::NoSuchSandbox(id.to_string())
        } else {
            e.into()
        }
    }

    /// The container's last `lines` lines of output, for error messages.
    pub(crate) async fn tail_logs(&self, id: &str, lines: usize) -> String {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .tail(&lines.to_string())
            .build();
        let mut out = String::new();
        let mut logs = self.docker.logs(id, Some(options));
        while let Some(Ok(chunk)) = logs.next().await {
            out.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
        }
        out
    }
}

/// Says how a container's wait ended.
fn exit_reason(
    status: Option<Result<bollard::models::ContainerWaitResponse, bollard::errors::Error>>,
) -> String {
    match status {
        Some(Ok(s)) => format!("the container exited with status {}", s.status_code),
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => {
            format!("the container exited with status {code}")
        }
        Some(Err(e)) => format!("waiting for the container failed: {e}"),
        None => "the container stopped".to_string(),
    }
}

/// Removes the directory of a sandbox's Unix socket, if it has one (its start failed).
fn remove_socket_dir(dir: Option<&Path>) {
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    // The owner of our own /proc entry is our uid, without unsafe code or a libc binding.
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}
