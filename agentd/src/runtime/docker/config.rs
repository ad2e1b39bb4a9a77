//! What a sandbox container looks like: one struct with hardened defaults, turned into the
//! Docker API's container body in one place ([`SandboxConfig::container_body`]).

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::models::{ContainerCreateBody, ContainerUpdateBody, HostConfig, PortBinding};

use super::disk::{DEFAULT_DISK_BYTES, DiskMounts};
use super::labels;
pub use super::network::Egress;
use super::user::SandboxUser;
use crate::runtime::sandboxd::WORKSPACE;

/// Where sandboxd lives in every sandbox image (see [`super::image`]).
pub(crate) const SANDBOXD_PATH: &str = "/opt/sandboxd/bin/sandboxd";
/// The port sandboxd listens on inside the container.
pub(crate) const SANDBOXD_PORT: u16 = 8000;
/// The first app port inside the container: app `n` (from 1) listens on `APP_PORT_BASE + n - 1`,
/// which the sandbox's environment names as `APP_PORT_n` (as OpenHands' runtimes do).
pub const APP_PORT_BASE: u16 = 12000;
/// The most app ports a sandbox may publish.
pub const MAX_APP_PORTS: u16 = 16;
pub(crate) use super::user::{SANDBOX_UID, SANDBOX_USER};

/// Where the host's socket directory is mounted with [`Network::None`].
pub(crate) const SOCKET_DIR: &str = "/run/sandboxd";
/// sandboxd's socket in it.
pub(crate) const SOCKET_NAME: &str = "sandboxd.sock";

/// The image `agentd sandbox up` starts from when none is given: the base `images/base/build.sh`
/// makes, plus the thin sandboxd layer.
pub const DEFAULT_BASE_IMAGE: &str = "sandboxd-base:bookworm";

/// How the sandbox reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// A bridge network of the sandbox's own, kept by the host's firewall from the host's
    /// services, other sandboxes and the cloud metadata address; outbound access as
    /// [`SandboxConfig::egress`] says; sandboxd published on 127.0.0.1 only.
    #[default]
    Bridge,
    /// No network at all (Docker's `none`: loopback only). agentd reaches sandboxd through a
    /// Unix socket in a host directory bind-mounted at [`SOCKET_DIR`].
    None,
}

/// Resource limits (cgroups). `None` leaves a limit off.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// Memory in bytes; swap is not allowed on top of it.
    pub memory_bytes: Option<i64>,
    /// CPUs (fractions allowed).
    pub cpus: Option<f64>,
    /// Number of processes and threads; contains fork bombs.
    pub pids: Option<i64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: Some(4 << 30),
            cpus: Some(2.0),
            pids: Some(1024),
        }
    }
}

impl Limits {
    /// These limits with memory and CPU multiplied by `factor` (pids stay: they bound a
    /// fork bomb, not work).
    pub(crate) fn scaled(&self, factor: f64) -> Limits {
        Limits {
            memory_bytes: self.memory_bytes.map(|m| (m as f64 * factor) as i64),
            cpus: self.cpus.map(|c| c * factor),
            pids: self.pids,
        }
    }

    /// The `docker update` body that gives a running container these memory and CPU limits
    /// (its process limit stays as it was created).
    pub(crate) fn update_body(&self) -> ContainerUpdateBody {
        ContainerUpdateBody {
            memory: self.memory_bytes,
            memory_swap: self.memory_bytes,
            nano_cpus: self.cpus.map(|c| (c * 1e9) as i64),
            ..Default::default()
        }
    }
}

/// Everything about one sandbox container. Defaults are the hardened ones: non-root user, no
/// capabilities, no privilege escalation, pids/memory/CPU limits, an init that reaps zombies.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// A sandbox image (with sandboxd at [`SANDBOXD_PATH`]).
    pub image: String,
    /// Host directory bind-mounted read-write at [`WORKSPACE`]. It must exist; the sandbox
    /// user takes its owner's uid and gid unless [`Self::user`] says otherwise.
    pub workspace: Option<PathBuf>,
    /// The sandbox user; `None`: the workspace's owner, else uid and gid 1000 (see
    /// [`super::user::choose`]). A uid other than 1000 gets the image with its sandbox user
    /// renumbered ([`super::image::ensure_user_image`]).
    pub user: Option<SandboxUser>,
    /// Whether the sandbox may run as root (uid 0: asked for, or the workspace's owner). Root
    /// runs with no-new-privileges and only the capabilities root needs to own files
    /// (`ROOT_CAPS`). Off by default: such a sandbox is refused.
    pub allow_root: bool,
    /// Extra environment of sandboxd and everything it runs.
    pub env: BTreeMap<String, String>,
    /// sandboxd plugins; `jupyter` starts the IPython kernel in the background.
    pub plugins: Vec<String>,
    /// Resource limits.
    pub limits: Limits,
    /// Network access.
    pub network: Network,
    /// Mount the image's root read-only; `/tmp` and the user's home are then tmpfs (unless the
    /// home is on the sandbox's own disk, see [`Self::disk_bytes`]).
    pub read_only_root: bool,
    /// The most the sandbox may write to its file systems (`/tmp` and the mounted workspace
    /// aside: the one is a sized tmpfs, the other the caller's own directory); `None`: no
    /// limit. Enforced by the storage driver's quota where it has one, else by a disk of the
    /// sandbox's own with a read-only root (see [`super::disk`]).
    pub disk_bytes: Option<u64>,
    /// Size of each tmpfs (`/tmp`, and the home directory with `read_only_root`).
    pub tmpfs_bytes: u64,
    /// Let the sandbox user become root with `sudo` inside the container (e.g. to apt-get
    /// install). This turns off no-new-privileges (sudo is setuid) and adds back the
    /// capabilities root needs to install packages. Off by default.
    pub sudo: bool,
    /// How many app ports to publish (on [`Self::publish_address`], at ports the engine picks):
    /// container ports [`APP_PORT_BASE`] and up, named in the sandbox's environment as
    /// `APP_PORT_1`... for the agent's servers. Needs [`Network::Bridge`]; at most
    /// [`MAX_APP_PORTS`].
    pub app_ports: u16,
    /// Where the sandbox's connections may go beyond the host, with [`Network::Bridge`]
    /// (enforced by the host's firewall; see [`super::network`]).
    pub egress: Egress,
    /// TCP ports of the host the sandbox may connect to, with [`Network::Bridge`]; every other
    /// host port refuses it.
    pub host_ports: Vec<u16>,
    /// Names pinned to addresses (like curl's `--resolve`), for names without public DNS: the
    /// sandbox's `/etc/hosts` has them, and the filtering proxy connects an allowed name to its
    /// pin instead of asking DNS.
    pub egress_hosts: BTreeMap<String, Ipv4Addr>,
    /// Longest wait for sandboxd to answer after the container starts.
    pub ready_timeout: Duration,
    /// Extra labels (ours are added).
    pub labels: BTreeMap<String, String>,
    /// Container name (default: `sandbox-` and a random suffix).
    pub name: Option<String>,
    /// The host address sandboxd's port is published on (bridge network). Keep the default,
    /// loopback, unless other hosts must reach the sandbox (`agentd serve` for remote agents).
    pub publish_address: String,
    /// Start sandboxd pre-started (`--await-configuration`): it binds and waits for one
    /// `POST /configure` carrying its arguments, environment and session key (a runtime API
    /// service's warm pool). The generated key is then the configuration key, passed as
    /// `SANDBOXD_CONFIGURE_KEY`, and the sandbox counts as up once sandboxd awaits it.
    pub await_configuration: bool,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            image: DEFAULT_BASE_IMAGE.to_string(),
            workspace: None,
            user: None,
            allow_root: false,
            env: BTreeMap::new(),
            plugins: vec!["jupyter".to_string()],
            limits: Limits::default(),
            network: Network::Bridge,
            read_only_root: false,
            disk_bytes: Some(DEFAULT_DISK_BYTES),
            tmpfs_bytes: 512 << 20,
            sudo: false,
            app_ports: 0,
            egress: Egress::All,
            host_ports: Vec::new(),
            egress_hosts: BTreeMap::new(),
            ready_timeout: Duration::from_secs(60),
            labels: BTreeMap::new(),
            name: None,
            publish_address: "127.0.0.1".to_string(),
            await_configuration: false,
        }
    }
}

/// Capabilities added back with [`SandboxConfig::sudo`]: what root needs to install packages
/// and switch users (Docker's defaults minus raw sockets, mknod, chroot, port binding and file
/// capabilities).
const SUDO_CAPS: &[&str] = &[
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "AUDIT_WRITE",
];

/// Capabilities of a sandbox with a non-root user: sandboxd (root, separated from the user)
/// needs them to start the user's shell and kernel as the user (groups, gid, uid) with an
/// empty bounding set (SETPCAP); the user's processes get none (a uid change from root clears
/// them, and no-new-privileges keeps them from coming back).
const SEPARATION_CAPS: &[&str] = &["SETGID", "SETUID", "SETPCAP"];

/// Capabilities of a root sandbox: those that make root the owner of every file (Docker's
/// defaults keep them too), and nothing that reaches beyond the container's files.
const ROOT_CAPS: &[&str] = &["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"];

impl SandboxConfig {
    /// The sandbox user this configuration names (before [`super::user::choose`] has decided
    /// it for a workspace: the default then).
    pub(super) fn user_or_default(&self) -> SandboxUser {
        self.user.unwrap_or_default()
    }

    /// The container ports of the app ports, in order (`APP_PORT_1` first).
    pub(crate) fn app_container_ports(&self) -> impl Iterator<Item = u16> {
        (0..self.app_ports.min(MAX_APP_PORTS)).map(|i| APP_PORT_BASE + i)
    }

    /// sandboxd's command line in a sandbox, listening on `port` of every address (or on its
    /// socket in [`SOCKET_DIR`] with `socket`).
    pub(crate) fn sandboxd_command(&self, port: u16, socket: bool) -> Vec<String> {
        let user = self.user_or_default();
        let mut cmd = vec![
            SANDBOXD_PATH.to_string(),
            port.to_string(),
            "--working-dir".to_string(),
            WORKSPACE.to_string(),
            "--host".to_string(),
            "0.0.0.0".to_string(),
            "--username".to_string(),
            user.name().to_string(),
            "--user-id".to_string(),
            user.uid.to_string(),
            "--output-dir".to_string(),
            "/tmp/sandboxd-outputs".to_string(),
            // The container's user runs nothing but the agent's code.
            "--agent-processes".to_string(),
            "user".to_string(),
        ];
        if self.await_configuration {
            cmd.push("--await-configuration".to_string());
        }
        if socket {
            cmd.push("--unix-socket".to_string());
            cmd.push(format!("{SOCKET_DIR}/{SOCKET_NAME}"));
        }
        if !self.plugins.is_empty() {
            cmd.push("--plugins".to_string());
            cmd.extend(self.plugins.iter().cloned());
        }
        cmd
    }

    /// The container of a sandbox whose engine makes its network and disk (a Docker Swarm
    /// task): the same command, environment, user, capabilities, limits and tmpfs as
    /// [`Self::container_body`] gives a container of ours, on no network of ours.
    pub(crate) fn task_body(&self, key: &str) -> ContainerCreateBody {
        self.container_body(key, HashMap::new(), None, None, &DiskMounts::default())
    }

    /// The container body for `create_container`. `key` is the session API key, `labels` ours
    /// (managed, owner...), `socket_dir` the host directory for sandboxd's socket with
    /// [`Network::None`], `network` the sandbox's own network with [`Network::Bridge`], `disk`
    /// what its disk limit needs of the container.
    pub(super) fn container_body(
        &self,
        key: &str,
        labels: HashMap<String, String>,
        socket_dir: Option<&Path>,
        network: Option<&str>,
        disk: &DiskMounts,
    ) -> ContainerCreateBody {
        let port = format!("{SANDBOXD_PORT}/tcp");
        let user = self.user_or_default();
        let home = user.home();
        let cmd = self.sandboxd_command(SANDBOXD_PORT, socket_dir.is_some());
        let key_variable = if self.await_configuration {
            "SANDBOXD_CONFIGURE_KEY"
        } else {
            "SESSION_API_KEY"
        };
        let mut env = vec![
            format!("{key_variable}={key}"),
            format!("HOME={home}"),
            format!("USER={}", user.name()),
            // Spares the PTY library a password-database lookup (NSS) in a static binary.
            "SHELL=/bin/bash".to_string(),
        ];
        env.extend(
            self.app_container_ports()
                .enumerate()
                .map(|(i, port)| format!("APP_PORT_{}={port}", i + 1)),
        );
        env.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));

        let mut tmpfs = HashMap::new();
        let tmpfs_opts = format!("rw,nosuid,nodev,size={}", self.tmpfs_bytes);
        tmpfs.insert("/tmp".to_string(), tmpfs_opts.clone());
        let home_on_disk = disk.binds.iter().any(|b| b.contains(&format!(":{home}:")));
        if self.read_only_root && !home_on_disk {
            tmpfs.insert(
                home.clone(),
                format!("{tmpfs_opts},uid={},gid={}", user.uid, user.gid),
            );
        }
        // sandboxd's port and the app ports, each published on the publish address (loopback
        // by default) at a port the engine picks.
        let published: Vec<String> = match socket_dir {
            None => std::iter::once(port)
                .chain(self.app_container_ports().map(|p| format!("{p}/tcp")))
                .collect(),
            Some(_) => Vec::new(),
        };
        let port_bindings = (!published.is_empty()).then(|| {
            published
                .iter()
                .map(|port| {
                    let binding = PortBinding {
                        host_ip: Some(self.publish_address.clone()),
                        host_port: Some(String::new()),
                    };
                    (port.clone(), Some(vec![binding]))
                })
                .collect::<HashMap<_, _>>()
        });
        let mut security_opt = Vec::new();
        if !self.sudo {
            security_opt.push("no-new-privileges:true".to_string());
        }
        let mut binds = Vec::new();
        if let Some(dir) = &self.workspace {
            binds.push(format!("{}:{WORKSPACE}:rw", dir.display()));
        }
        if let Some(dir) = socket_dir {
            binds.push(format!("{}:{SOCKET_DIR}:rw", dir.display()));
        }
        binds.extend(disk.binds.iter().cloned());
        let host_config = HostConfig {
            binds: Some(binds),
            port_bindings,
            network_mode: match socket_dir {
                Some(_) => Some("none".to_string()),
                None => network.map(str::to_string),
            },
            // sandboxd starts as root and keeps only what it needs to start the user's
            // processes as the user; see SEPARATION_CAPS, SUDO_CAPS and ROOT_CAPS.
            cap_drop: Some(vec!["ALL".to_string()]),
            cap_add: self.added_capabilities(user),
            security_opt: Some(security_opt),
            pids_limit: self.limits.pids,
            memory: self.limits.memory_bytes,
            memory_swap: self.limits.memory_bytes,
            nano_cpus: self.limits.cpus.map(|c| (c * 1e9) as i64),
            // docker-init (tini) as PID 1 reaps whatever the agent leaves behind.
            init: Some(true),
            readonly_rootfs: Some(self.read_only_root || disk.read_only_root),
            storage_opt: disk
                .storage_size
                .map(|size| HashMap::from([("size".to_string(), size.to_string())])),
            tmpfs: Some(tmpfs),
            extra_hosts: (!self.egress_hosts.is_empty()).then(|| {
                self.egress_hosts
                    .iter()
                    .map(|(name, addr)| format!("{name}:{addr}"))
                    .collect()
            }),
            ..HostConfig::default()
        };
        ContainerCreateBody {
            image: Some(self.image.clone()),
            cmd: Some(cmd),
            entrypoint: Some(Vec::new()),
            // Root, so that sandboxd can stay out of the user's reach: it acts with the user's
            // rights but keeps root as its real uid, and the user's code runs as the user
            // (sandboxd's `separate`). A root sandbox is root throughout.
            user: Some(SandboxUser::ROOT.to_string()),
            working_dir: Some(WORKSPACE.to_string()),
            env: Some(env),
            exposed_ports: (!published.is_empty()).then_some(published),
            labels: Some(labels),
            stop_signal: Some("SIGTERM".to_string()),
            host_config: Some(host_config),
            ..ContainerCreateBody::default()
        }
    }

    /// The capabilities given back after dropping all: for sudo, and for the sandbox's user
    /// (separation for a user, file capabilities for root).
    fn added_capabilities(&self, user: SandboxUser) -> Option<Vec<String>> {
        let for_user = if user.is_root() {
            ROOT_CAPS
        } else {
            SEPARATION_CAPS
        };
        let mut caps: Vec<&str> = Vec::new();
        let sudo: &[&str] = if self.sudo { SUDO_CAPS } else { &[] };
        for cap in sudo.iter().chain(for_user) {
            if !caps.contains(cap) {
                caps.push(cap);
            }
        }
        (!caps.is_empty()).then(|| caps.iter().map(|c| c.to_string()).collect())
    }

    /// Our labels plus the caller's (ours win).
    pub(super) fn all_labels(&self, ours: HashMap<String, String>) -> HashMap<String, String> {
        let mut all: HashMap<String, String> = self
            .labels
            .iter()
            .filter(|(k, _)| !k.starts_with(labels::PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        all.extend(ours);
        all
    }
}

#[cfg(test)]
mod tests;
