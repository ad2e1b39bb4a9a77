//! The engines a service runs its sandboxes on, behind one trait: [`Backend`]. `docker` drives
//! one Docker engine (containers with published ports); `swarm` drives a Docker Swarm (one
//! replicated service per sandbox); `kubernetes` drives a Kubernetes namespace (one pod per
//! sandbox). The rest of `serve` (claims, pools, recovery, the reaper,
//! the front door) sees only this module's types: a sandbox is an id the backend gave it, a
//! URL the service reaches its sandboxd at, and a [`SandboxState`].
//!
//! Which backend a service runs on is [`BackendKind`] (`--backend`).

pub(super) mod docker;
mod kubernetes;
mod swarm;

use std::collections::BTreeMap;

use async_trait::async_trait;
use client::{ClientError, SandboxClient};

use super::store::Claim;
use super::{ServeConfig, ServeError};
use crate::runtime::docker::config::SANDBOXD_PORT;
use crate::runtime::docker::{DockerError, Egress, Limits, SandboxConfig, SandboxUser, user};

pub(super) use docker::DockerBackend;
pub use kubernetes::{KubeConnection, KubeError, KubernetesSettings};
pub(super) use swarm::SwarmBackend;

/// One of the service's sandboxes, as the service reaches it (waiting in a pool or claimed).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ServedSandbox {
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
    pub(super) container: ServedSandbox,
    /// The key its `POST /configure` wants.
    pub(super) configure_key: String,
}

/// What a sandbox is made with beyond its image: the user it runs as, whether it may sudo,
/// where it may connect (the egress policy is part of its network, made with the container),
/// and the runtime class it runs under. Warm sandboxes are made with the service's default
/// ([`Profile::pooled`]); a caller whose profile differs gets a new sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Profile {
    pub(super) user: SandboxUser,
    pub(super) sudo: bool,
    pub(super) egress: Egress,
    /// The runtime class the caller asked for (one [`Backend::check_runtime_class`] allowed).
    pub(super) runtime_class: Option<String>,
}

impl Profile {
    /// The profile of the service's warm sandboxes.
    pub(super) fn pooled(config: &ServeConfig) -> Profile {
        Profile {
            user: SandboxUser::default(),
            sudo: config.sandbox.sudo,
            egress: config.sandbox.egress.clone(),
            runtime_class: None,
        }
    }

    /// The profile label of a sandbox made with this profile by `config`'s service: a
    /// restarted service adopts only warm sandboxes with its own.
    pub(super) fn label(&self, config: &ServeConfig) -> String {
        let mut label = format!(
            "user={};sudo={};app-ports={};egress={}",
            self.user, self.sudo, config.sandbox.app_ports, self.egress
        );
        if let Some(class) = &self.runtime_class {
            label.push_str(";runtime-class=");
            label.push_str(class);
        }
        label
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
    pub(super) container: Option<ServedSandbox>,
    /// The key a waiting sandboxd takes its configuration with.
    pub(super) configure_key: Option<String>,
    /// The profile label it was made with.
    pub(super) profile: Option<String>,
    /// Its claim, on a backend that keeps claims ([`Backend::keeps_claims`]).
    pub(super) claim: Option<Claim>,
}

/// What one new sandbox is made with.
#[derive(Debug, Clone)]
pub(super) struct Spec<'a> {
    pub(super) runtime_id: &'a str,
    /// The sandbox image.
    pub(super) tag: &'a str,
    pub(super) profile: &'a Profile,
    /// Its memory and CPU limits (the service's, or scaled by a `resource_factor` on a backend
    /// that cannot change them later: [`Backend::resizes`]).
    pub(super) limits: &'a Limits,
}

impl Spec<'_> {
    /// The sandbox `config`'s service makes of `image` for this spec, running as `user`: the
    /// service's sandbox settings with the spec's limits, sudo and egress, named after its
    /// runtime id, its sandboxd waiting for its configuration.
    pub(super) fn sandbox(
        &self,
        config: &ServeConfig,
        image: String,
        user: SandboxUser,
    ) -> SandboxConfig {
        SandboxConfig {
            image,
            plugins: Vec::new(),
            limits: self.limits.clone(),
            await_configuration: true,
            user: Some(user),
            sudo: self.profile.sudo,
            egress: self.profile.egress.clone(),
            name: Some(self.runtime_id.to_string()),
            ..config.sandbox.clone()
        }
    }

    /// The profile's user, unless it is root and `config`'s service does not allow root (the
    /// docker backend leaves that to [`DockerHost::up`](crate::runtime::docker::DockerHost::up)).
    pub(super) fn user(&self, config: &ServeConfig) -> Result<SandboxUser, ServeError> {
        user::choose(None, Some(self.profile.user), config.sandbox.allow_root)
            .map_err(|e| DockerError::from(e).into())
    }
}

/// An engine that runs the service's sandboxes. Every sandbox it makes carries the service's
/// name, its runtime id and its profile as labels, so that [`Backend::find`] finds it again
/// after a restart.
#[async_trait]
pub(super) trait Backend: Send + Sync + std::fmt::Debug {
    /// The backend's name (`docker`, `swarm`, `kubernetes`), for logs and messages.
    fn kind(&self) -> &'static str;

    /// The Docker engine sandbox images are made in and looked up from, whose host also bounds
    /// what one sandbox may be given; `None` when the backend has none (kubernetes: nodes pull
    /// the images the operator published, and the scheduler places pods by their requests).
    fn engine(&self) -> Option<&bollard::Docker>;

    /// The port sandboxd listens on inside a sandbox (the configuration sent to a waiting
    /// sandboxd keeps it).
    fn sandboxd_port(&self) -> u16 {
        SANDBOXD_PORT
    }

    /// Refuses a runtime class (a `/start`'s `runtime_class`) this backend does not run
    /// sandboxes under: a 400 where it has none, a 403 naming the setting where the operator
    /// did not allow that one.
    fn check_runtime_class(&self, class: &str) -> Result<(), ServeError> {
        Err(ServeError::BadRequest(format!(
            "runtime_class {class:?}: the {} backend runs sandboxes under no runtime class (the kubernetes backend does, for the classes its operator allows)",
            self.kind()
        )))
    }

    /// Whether [`Backend::update_limits`] changes a running sandbox's limits. Where it cannot,
    /// a `/start` with a `resource_factor` other than 1 gets a sandbox made with the scaled
    /// limits instead of a warm one.
    fn resizes(&self) -> bool {
        true
    }

    /// Creates one pre-started sandbox (sandboxd waiting for its configuration) with the
    /// spec's limits, and waits until it listens. Nothing is left on failure.
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

    /// Whether claims live on the sandboxes (labels the engine keeps and lets change), where
    /// every replica of the service sees them, instead of in one replica's state directory.
    fn keeps_claims(&self) -> bool {
        false
    }

    /// Puts `claim` on sandbox `id`. With `first`, only if it has none yet, atomically: `Ok(false)`
    /// when another replica claimed it first (or it is gone), so that no warm sandbox is handed
    /// out twice.
    async fn put_claim(&self, id: &str, claim: &Claim, first: bool) -> Result<bool, ServeError> {
        let _ = (id, claim, first);
        Err(ServeError::Internal(format!(
            "the {} backend keeps no claims",
            self.kind()
        )))
    }
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
    /// Pods of a Kubernetes namespace.
    Kubernetes(KubernetesSettings),
}

/// Connects to the backend `config` names.
pub(super) async fn connect(config: &ServeConfig) -> Result<Box<dyn Backend>, ServeError> {
    Ok(match &config.backend {
        BackendKind::Docker => Box::new(DockerBackend::connect()?),
        BackendKind::Swarm { ports } => {
            Box::new(SwarmBackend::connect(config, ports.clone()).await?)
        }
        BackendKind::Kubernetes(settings) => {
            Box::new(kubernetes::KubernetesBackend::connect(config, settings).await?)
        }
    })
}

/// The port of `http://host:PORT`.
pub(super) fn port_of(url: &str) -> Option<u16> {
    url.rsplit(':').next()?.trim_end_matches('/').parse().ok()
}

/// Whether a sandboxd at `url` answers HTTP at all, through `http`: any status (waiting for
/// its configuration, it answers 503 to `/alive`), not a connection failure or a timeout.
pub(super) async fn answers_http(http: &reqwest::Client, url: &str) -> bool {
    let Ok(sandboxd) = SandboxClient::with_http_client(url, None, http.clone()) else {
        return false;
    };
    matches!(
        sandboxd.alive().await,
        Ok(()) | Err(ClientError::Http { .. })
    )
}

#[cfg(test)]
mod tests;
