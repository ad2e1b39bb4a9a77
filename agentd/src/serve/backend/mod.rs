//! The engines a service runs its sandboxes on, behind one trait: [`Backend`]. `docker` drives
//! one Docker engine (containers with published ports); `swarm` drives a Docker Swarm (one
//! replicated service per sandbox). The rest of `serve` (claims, pools, recovery, the reaper,
//! the front door) sees only this module's types: a sandbox is an id the backend gave it, a
//! URL the service reaches its sandboxd at, and a [`SandboxState`].
//!
//! Which backend a service runs on is [`BackendKind`] (`--backend`).

pub(super) mod docker;
mod swarm;

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{ServeConfig, ServeError};
use crate::runtime::docker::{Egress, Limits, SandboxUser};

pub(super) use docker::DockerBackend;
pub(super) use swarm::SwarmBackend;

/// One of the service's sandboxes, as the service reaches it (waiting in a pool or claimed).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SandboxContainer {
    /// The backend's id of it (a container id, a swarm service id).
    pub(super) id: String,
    /// sandboxd's URL from the service.
    pub(super) local_url: String,
    /// The port published for sandboxd (the direct URL's port).
    pub(super) port: u16,
    /// Its app ports: container port → published port.
    pub(super) app_ports: BTreeMap<u16, u16>,
    /// The sandbox image it runs.
    pub(super) image: String,
}

/// A pre-started sandbox waiting in a pool.
#[derive(Debug, Clone)]
pub(super) struct Warm {
    pub(super) runtime_id: String,
    pub(super) container: SandboxContainer,
    /// The key its `POST /configure` wants.
    pub(super) configure_key: String,
}

/// What a sandbox is made with beyond its image: the user it runs as, whether it may sudo, and
/// where it may connect (the egress policy is part of its network, made with the container).
/// Warm sandboxes are made with the service's default ([`Profile::pooled`]); a caller whose
/// profile differs gets a new sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Profile {
    pub(super) user: SandboxUser,
    pub(super) sudo: bool,
    pub(super) egress: Egress,
}

impl Profile {
    /// The profile of the service's warm sandboxes.
    pub(super) fn pooled(config: &ServeConfig) -> Profile {
        Profile {
            user: SandboxUser::default(),
            sudo: config.sandbox.sudo,
            egress: config.sandbox.egress.clone(),
        }
    }

    /// The profile label of a sandbox made with this profile by `config`'s service: a
    /// restarted service adopts only warm sandboxes with its own.
    pub(super) fn label(&self, config: &ServeConfig) -> String {
        format!(
            "user={};sudo={};app-ports={};egress={}",
            self.user, self.sudo, config.sandbox.app_ports, self.egress
        )
    }
}

/// What the engine says of a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SandboxState {
    /// It runs (sandboxd may still be coming up).
    Running,
    /// Frozen by `/pause`.
    Paused,
    /// Being placed or started by the engine (a swarm task not running yet).
    Starting,
    /// Stopped, exited, or gone: it holds no sandbox any more.
    Down,
}

/// A sandbox of the service found in the engine (at start, for recovery).
#[derive(Debug, Clone)]
pub(super) struct Found {
    /// Its runtime id label.
    pub(super) runtime_id: String,
    /// The backend's id of it.
    pub(super) id: String,
    pub(super) state: SandboxState,
    /// How to reach it; `None` when it has no reachable sandboxd (no published port).
    pub(super) container: Option<SandboxContainer>,
    /// The key a waiting sandboxd takes its configuration with.
    pub(super) configure_key: Option<String>,
    /// The profile label it was made with.
    pub(super) profile: Option<String>,
}

/// What one new sandbox is made with.
#[derive(Debug, Clone)]
pub(super) struct Spec<'a> {
    pub(super) runtime_id: &'a str,
    /// The sandbox image.
    pub(super) tag: &'a str,
    pub(super) profile: &'a Profile,
}

/// An engine that runs the service's sandboxes. Every sandbox it makes carries the service's
/// name, its runtime id and its profile as labels, so that [`Backend::find`] finds it again
/// after a restart.
#[async_trait]
pub(super) trait Backend: Send + Sync + std::fmt::Debug {
    /// The backend's name (`docker`, `swarm`), for logs.
    fn kind(&self) -> &'static str;

    /// The Docker engine sandbox images are made in and looked up from.
    fn engine(&self) -> &bollard::Docker;

    /// Creates one pre-started sandbox (sandboxd waiting for its configuration) with the
    /// service's base limits, and waits until it listens. Nothing is left on failure.
    async fn create(&self, config: &ServeConfig, spec: Spec<'_>) -> Result<Warm, ServeError>;

    /// Removes a sandbox; one that is gone already is no error.
    async fn remove(&self, id: &str) -> Result<(), ServeError>;

    /// Freezes a sandbox's processes; memory, files and processes are kept.
    async fn pause(&self, id: &str) -> Result<(), ServeError>;

    /// Thaws a paused sandbox.
    async fn unpause(&self, id: &str) -> Result<(), ServeError>;

    /// Changes a running sandbox's memory and CPU limits.
    async fn update_limits(&self, id: &str, limits: &Limits) -> Result<(), ServeError>;

    /// The engine's state of a sandbox.
    async fn state(&self, id: &str) -> Result<SandboxState, ServeError>;

    /// Every sandbox labelled with service name `name`, in whatever state.
    async fn find(&self, name: &str) -> Result<Vec<Found>, ServeError>;
}

/// The engine a service's sandboxes run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendKind {
    /// Containers of one Docker engine (the default).
    Docker,
    /// Services of the Docker Swarm this engine manages, published at host ports of `ports`.
    Swarm {
        /// The host ports sandboxes are published at.
        ports: std::ops::RangeInclusive<u16>,
    },
}

/// Connects to the backend `config` names.
pub(super) async fn connect(config: &ServeConfig) -> Result<Box<dyn Backend>, ServeError> {
    Ok(match &config.backend {
        BackendKind::Docker => Box::new(DockerBackend::connect()?),
        BackendKind::Swarm { ports } => {
            Box::new(SwarmBackend::connect(config, ports.clone()).await?)
        }
    })
}

/// The port of `http://host:PORT`.
pub(super) fn port_of(url: &str) -> Option<u16> {
    url.rsplit(':').next()?.trim_end_matches('/').parse().ok()
}

#[cfg(test)]
mod tests;
