//! The runtime API: the control plane OpenHands' `RemoteRuntime` speaks to create, find, pause
//! and stop sandboxes (docs/protocol.md §9), plus the listing endpoint of our own (`GET /runtimes`).
//!
//! Every request carries the service's key as `X-API-Key`; errors are
//! [`ErrorResponse`](crate::api::ErrorResponse) bodies (`{"detail": ...}`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The header that carries the service's API key.
pub const API_KEY_HEADER: &str = "X-API-Key";

/// Body of `POST /start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartRequest {
    /// The image the caller wants; the service maps images it does not have onto its default.
    pub image: String,
    /// The reference's start command line (`... python -u -m openhands.runtime.action_execution_server
    /// PORT --working-dir DIR ...`); the arguments after the module name are given to sandboxd,
    /// the port is chosen by the service.
    #[serde(default)]
    pub command: Vec<String>,
    /// The working directory of the command (the reference sends `/openhands/code/`; ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Environment of sandboxd and hence of the bash session (e.g. `NO_CHANGE_TIMEOUT_SECONDS`).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// The caller's session id; `/sessions/{session_id}` finds the sandbox later.
    pub session_id: String,
    /// Multiplier of the service's CPU and memory limits (default 1).
    #[serde(default = "one")]
    pub resource_factor: f64,
    /// The runtime class to run the sandbox under (the reference can ask for `sysbox-runc`):
    /// `agentd serve`'s kubernetes backend sets it as the pod's `runtimeClassName` when its
    /// operator allows that class (a 403 otherwise); the docker and swarm backends refuse any
    /// (400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class: Option<String>,
}

fn one() -> f64 {
    1.0
}

/// How a caller reaches its sandbox: the keys `POST /start` and `GET /sessions/{sid}` both
/// answer, in this order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeAccess {
    /// The sandbox's id for `/runtime/{id}`, `/stop`, `/pause`, `/resume`.
    pub runtime_id: String,
    /// The data plane's base URL (sandboxd), reachable from the caller.
    pub url: String,
    /// The key to send to the data plane as `X-Session-API-Key`; answered only to the API key
    /// that started the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_api_key: Option<String>,
    /// The agent's app ports: the URL the caller reaches each at → the port the agent's
    /// server listens on inside the sandbox (also `APP_PORT_1`... in its environment).
    #[serde(default)]
    pub work_hosts: BTreeMap<String, u16>,
}

/// Body of a successful `POST /start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartResponse {
    /// The sandbox and its data plane.
    #[serde(flatten)]
    pub access: RuntimeAccess,
    /// The image the sandbox runs: the one asked for, the local image the operator mapped it
    /// to, or the service's default for an image it does not have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// Body of `POST /stop`, `/pause` and `/resume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeIdRequest {
    /// The sandbox.
    pub runtime_id: String,
}

/// Whether a session's sandbox runs, as `GET /sessions/{sid}` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Running (it may still be starting: see `pod_status`).
    Running,
    /// Paused: the data plane does not answer until `/resume`.
    Paused,
    /// Stopped: it is gone.
    Stopped,
}

/// Where a sandbox is in its life, as `GET /runtime/{id}` says (`pod_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PodStatus {
    /// Created, but sandboxd does not answer `/alive` yet; keep polling.
    Pending,
    /// sandboxd answers `/alive`: actions can run.
    Ready,
    /// Paused; `/resume` it.
    Paused,
    /// The container stopped or sandboxd could not start; start a new one.
    Failed,
}

/// Body of a successful `GET /sessions/{sid}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionResponse {
    /// Running, paused or stopped.
    pub status: SessionStatus,
    /// The sandbox and its data plane.
    #[serde(flatten)]
    pub access: RuntimeAccess,
}

/// Body of a successful `GET /runtime/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStatusResponse {
    /// The id asked about.
    pub runtime_id: String,
    /// Where the sandbox is in its life.
    pub pod_status: PodStatus,
    /// How often the sandbox restarted (always 0: a sandbox is never restarted behind the
    /// caller's back, since that would lose its state).
    #[serde(default)]
    pub restart_count: u32,
    /// Why it restarted.
    #[serde(default)]
    pub restart_reasons: Vec<String>,
}

/// Body of a successful `POST /stop`, `/pause` or `/resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStateResponse {
    /// The sandbox.
    pub runtime_id: String,
    /// Its status after the call.
    pub status: SessionStatus,
}

/// Body of `GET /registry_prefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryPrefixResponse {
    /// Where the caller would push images it builds (`{prefix}/runtime:TAG`).
    pub registry_prefix: String,
}

/// Body of `GET /image_exists?image=IMAGE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageExistsResponse {
    /// Whether the service has that image (its own, or one the operator mapped it to), so
    /// that `/start` runs it as itself.
    pub exists: bool,
    /// What OpenHands' client logs of an image that exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageInfo>,
}

/// An image the service has, as `GET /image_exists` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// When the image was made (RFC 3339).
    pub upload_time: String,
    /// Its size.
    pub image_size_bytes: i64,
}

/// Body of a successful `POST /build` (the request is a multipart form: `context`, the
/// base64 text of a gzipped tar of the build context; `target_image`; `tags`, repeated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildResponse {
    /// The id to ask `GET /build_status?build_id=` about.
    pub build_id: String,
}

/// Where a build is (`status` of `GET /build_status`), with the reference's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BuildStatus {
    /// Still building; ask again.
    InProgress,
    /// Built: `image` runs.
    Success,
    /// Not built: `error` says why.
    Failure,
}

/// Body of `GET /build_status?build_id=ID`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildStatusResponse {
    /// The build.
    pub build_id: String,
    /// Where it is.
    pub status: BuildStatus,
    /// The image built (its target name), once it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One sandbox in `GET /runtimes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeSummary {
    /// The sandbox's id.
    pub runtime_id: String,
    /// The session it belongs to.
    pub session_id: String,
    /// Running or paused.
    pub status: SessionStatus,
    /// Whether its sandboxd answered `/alive` (as last seen).
    pub pod_status: PodStatus,
    /// The image the caller asked for.
    pub image: String,
    /// The data plane's base URL.
    pub url: String,
    /// When it was started (RFC 3339, UTC).
    pub created_at: String,
}

/// Body of `GET /runtimes`: the caller's sandboxes (those started with its API key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeList {
    /// The sandboxes.
    pub runtimes: Vec<RuntimeSummary>,
    /// Ready sandboxes waiting in the warm pool, per sandbox image.
    #[serde(default)]
    pub warm: BTreeMap<String, usize>,
}
