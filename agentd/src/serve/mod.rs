//! `agentd serve`: the runtime API (docs/protocol.md §9) for many agent hosts. One service per Docker host
//! creates, finds, pauses and stops hardened sandbox containers for callers that hold one of
//! its API keys, OpenHands' `RemoteRuntime` among them.
//!
//! - [`service::SandboxService`] owns the sandboxes and answers the runtime API's operations
//!   (start, claim, stop, pause, resume, status); its parts: `table` (the claimed sandboxes),
//!   `pool` (warm pools and their filler), `images` (caller image → sandbox image, made once),
//!   `recovery` (a previous run's sandboxes and claims, at start), `reaper` (idle stop);
//! - `backend`: the engine the sandboxes run on, behind the `Backend` trait (`docker`: one
//!   Docker engine; `swarm`: a Docker Swarm's services; `kubernetes`: a namespace's pods);
//! - [`routes`] is the HTTP layer (the only one of this module);
//! - [`auth`]: API keys; [`command`]: the caller's start command mapped onto sandboxd;
//!   [`store`]: claims on disk.

pub(crate) mod auth;
mod backend;
mod builds;
mod capacity;
pub(crate) mod command;
mod front_door;
mod images;
mod pool;
mod reaper;
mod recovery;
pub(crate) mod routes;
pub(crate) mod service;
pub(crate) mod store;
mod table;
mod tls;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::runtime::docker::{DockerError, Egress, Limits, SandboxConfig, config};

pub use backend::{BackendKind, KubeConnection, KubeError, KubernetesSettings};
pub(crate) use service::SandboxService;
pub use tls::TlsFiles;

/// Everything the service is configured with.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The engine the sandboxes run on.
    pub backend: BackendKind,
    /// The service's name: its containers are labelled with it, and a restarted service
    /// recovers only the containers with its name.
    pub name: String,
    /// Callers must send one of these as `X-API-Key`.
    pub api_keys: Vec<String>,
    /// The image (base or sandbox image) of sandboxes whose image this host does not have.
    pub default_image: String,
    /// Caller image → local image.
    pub images: BTreeMap<String, String>,
    /// Ready sandboxes kept of the default image.
    pub pool_size: usize,
    /// Ready sandboxes kept of other local images.
    pub pools: BTreeMap<String, usize>,
    /// Sandboxes without an action for this long are stopped; `None`: never.
    pub idle_timeout: Option<Duration>,
    /// The host name or address in the URLs given to callers.
    pub public_host: String,
    /// Hand out front-door URLs (`{public_url}/sandboxes/{runtime_id}`, proxied by the
    /// service) instead of sandboxd's published port.
    pub front_door: bool,
    /// The service's URL as callers reach it; default `http(s)://{public_host}:{bound port}`.
    pub public_url: Option<String>,
    /// Serve the runtime API and the front door over TLS with this certificate and key.
    pub tls: Option<TlsFiles>,
    /// The host address sandbox ports are published on.
    pub publish_address: String,
    /// CPU and memory limits at `resource_factor` 1 (pids are not scaled).
    pub limits: Limits,
    /// Where claims (session → sandbox, keys) are kept, 0700.
    pub state_dir: PathBuf,
    /// Answer of `GET /registry_prefix`.
    pub registry_prefix: String,
    /// sandboxd binary to make base images sandbox images with.
    pub sandboxd_binary: Option<PathBuf>,
    /// Other container settings (network, read-only root, sudo...); image, limits, name and
    /// labels are the service's.
    pub sandbox: SandboxConfig,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// What one HTTP connection may hold, and for how long (connection cap, header and idle
    /// deadlines, the smaller budget of connections without a valid key).
    pub connections: http_guard::Limits,
    /// Largest `POST /build` body (a build context).
    pub max_build_bytes: usize,
    /// Keys (among `api_keys`) whose sandboxes may use sudo when `sandbox.sudo` (the policy
    /// for every key) is off.
    pub sudo_keys: Vec<String>,
    /// Egress policies of the sandboxes of some keys (among `api_keys`), instead of
    /// `sandbox.egress`; such sandboxes are made when asked for, not taken from a warm pool.
    pub egress_keys: BTreeMap<String, Egress>,
    /// Egress policies of the sandboxes of some caller images (as callers name them), for
    /// keys without one of their own; made when asked for too.
    pub egress_images: BTreeMap<String, Egress>,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            backend: BackendKind::Docker,
            name: "default".to_string(),
            api_keys: Vec::new(),
            default_image: config::DEFAULT_BASE_IMAGE.to_string(),
            images: BTreeMap::new(),
            pool_size: 2,
            pools: BTreeMap::new(),
            idle_timeout: Some(Duration::from_secs(30 * 60)),
            public_host: "127.0.0.1".to_string(),
            front_door: false,
            public_url: None,
            tls: None,
            publish_address: "127.0.0.1".to_string(),
            limits: Limits::default(),
            state_dir: default_state_dir(),
            registry_prefix: "agentd.local".to_string(),
            sandboxd_binary: None,
            sandbox: SandboxConfig {
                plugins: Vec::new(),
                app_ports: 2,
                ..SandboxConfig::default()
            },
            max_body_bytes: 1024 * 1024,
            connections: http_guard::Limits {
                // Builds and the graceful stop's removals take as long as they take.
                shutdown_grace: None,
                ..http_guard::Limits::default()
            },
            max_build_bytes: 512 * 1024 * 1024,
            sudo_keys: Vec::new(),
            egress_keys: BTreeMap::new(),
            egress_images: BTreeMap::new(),
        }
    }
}

impl ServeConfig {
    /// sandboxd's URL for callers, given the port published for it.
    fn public_url(&self, port: u16) -> String {
        format!("http://{}:{port}", self.public_host)
    }

    /// The URL callers reach sandbox `runtime_id`'s sandboxd at: through the front door, or
    /// at its published `port`.
    fn sandbox_url(&self, runtime_id: &str, port: u16) -> String {
        match (&self.public_url, self.front_door) {
            (Some(base), true) => format!(
                "{}{}/{runtime_id}",
                base.trim_end_matches('/'),
                front_door::PREFIX
            ),
            _ => self.public_url(port),
        }
    }

    /// The `work_hosts` of a sandbox with these app ports (container port → host port): the
    /// URL a caller reaches each at → the port the agent listens on inside.
    fn work_hosts(&self, app_ports: &BTreeMap<u16, u16>) -> BTreeMap<String, u16> {
        app_ports
            .iter()
            .map(|(inside, outside)| (self.public_url(*outside), *inside))
            .collect()
    }
}

/// Locks one of the service's `std` mutexes. A panic while holding one leaves consistent data
/// (each lock scope is a single insert, remove or update), so a poisoned lock is used as is.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `$XDG_STATE_HOME/agentd/serve`, else `~/.local/state/agentd/serve`.
pub(crate) fn default_state_dir() -> PathBuf {
    crate::config::default_sessions_dir()
        .parent()
        .map(|p| p.join("serve"))
        .unwrap_or_else(|| PathBuf::from(".agentd/serve"))
}

/// Why the service could not do something. Each variant says whether retrying helps.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration cannot work. Retrying cannot help.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The request cannot work (HTTP 400). Retrying the same request cannot help.
    #[error("{0}")]
    BadRequest(String),
    /// The request body cannot be decoded (HTTP 422). Retrying the same body cannot help.
    #[error("{0}")]
    Unprocessable(String),
    /// No such session or runtime for this key (HTTP 404). Retrying cannot help.
    #[error("{0}")]
    NotFound(String),
    /// The service's policy forbids this request (HTTP 403); the message names the setting.
    /// Retrying cannot help.
    #[error("{0}")]
    Forbidden(String),
    /// The session is in a state that forbids this (HTTP 409). Retrying after the state changed
    /// can help.
    #[error("{0}")]
    Conflict(String),
    /// The service's backend cannot do this at all (HTTP 409; the message says what to do
    /// instead). Retrying cannot help.
    #[error("{0}")]
    Unsupported(String),
    /// The Kubernetes API failed; its error says whether retrying helps.
    #[error(transparent)]
    Kubernetes(#[from] backend::KubeError),
    /// Docker failed; its error says whether retrying helps. (A base image and no sandboxd
    /// binary is [`ServeError::Config`]: see the `From` below.)
    #[error(transparent)]
    Docker(DockerError),
    /// A sandboxd did not take its configuration. Retrying may help if it was a connection
    /// failure.
    #[error("sandboxd: {0}")]
    Client(#[from] client::ClientError),
    /// The state directory failed. Retrying helps once the disk is fixed.
    #[error(transparent)]
    ClaimStore(#[from] store::ClaimStoreError),
    /// Something else inside the service. Retrying rarely helps.
    #[error("{0}")]
    Internal(String),
    /// The listener failed. Retrying may help.
    #[error("serving HTTP: {0}")]
    Serve(std::io::Error),
}

impl From<DockerError> for ServeError {
    /// The one mapping of the Docker layer's errors: no sandboxd binary to make a base image
    /// a sandbox image with is the service's configuration, not the engine's failure.
    fn from(e: DockerError) -> ServeError {
        match e {
            DockerError::NoSandboxd { .. } => ServeError::Config(e.to_string()),
            other => ServeError::Docker(other),
        }
    }
}

/// Opens the service (Docker, images, recovery), calls `on_listening` with the bound address,
/// serves on `listener` until `shutdown` resolves, then stops the pool filler and the reaper
/// and removes the warm sandboxes. Claimed sandboxes are left running for the next start to
/// recover (and so are warm ones after a crash: a restart adopts those of its own policy,
/// `agentd sandbox gc` removes the others).
pub async fn run(
    mut config: ServeConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let max_body = config.max_body_bytes;
    let connections = config.connections;
    let local = listener.local_addr().map_err(ServeError::Serve)?;
    let tls = config.tls.as_ref().map(tls::server_config).transpose()?;
    if config.public_url.is_none() {
        let scheme = if tls.is_some() { "https" } else { "http" };
        config.public_url = Some(format!(
            "{scheme}://{}:{}",
            config.public_host,
            local.port()
        ));
    }
    let service = Arc::new(SandboxService::open(config).await?);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let filler = tokio::spawn(service.clone().fill_pools(stopped.clone()));
    let reaper = tokio::spawn(service.clone().reap_idle(stopped));
    let app = routes::router(service.clone(), max_body);
    on_listening(local);
    match tls {
        Some(tls) => {
            let listener = tls::TlsListener::new(listener, tls).map_err(ServeError::Serve)?;
            http_guard::serve(listener, app, connections, shutdown).await;
        }
        None => http_guard::serve(listener, app, connections, shutdown).await,
    }
    let _ = stop.send(true);
    let _ = filler.await;
    let _ = reaper.await;
    service.drain_pools().await;
    Ok(())
}
