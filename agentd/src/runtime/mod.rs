//! Where sandboxes live. Only this module knows: the rest of agentd hands a [`Runtime`] the
//! runnable actions and gets observations back, whether the sandbox is a sandboxd child process
//! on this host ([`RuntimeKind::Local`]), a Docker container ([`RuntimeKind::Docker`], see
//! [`docker`]) or a sandboxd someone else runs ([`RuntimeKind::Remote`]).
//!
//! A [`Runtime`] owns what it started: [`Runtime::close`] stops it, and dropping a runtime
//! without closing it (an early return, a panic) still kills the local process group or removes
//! the container.
//!
//! A runnable action's observation gets its tool-call metadata in one place:
//! [`Runtime::execute`] keeps the action, sends sandboxd the action without its
//! `tool_call_metadata` (nor `llm_metrics`), and puts the kept action's metadata on the
//! observation, for every runtime and every answer (sandboxd's observation or an error made
//! here). sandboxd's echo of the metadata it is sent stays in the wire protocol for other
//! clients; agentd does not ship the model's response with every action only to get it back.
//!
//! Inside: `sandbox` (the [`Runtime`]) uses `local`, `container` (over [`docker`]) and
//! `remote`; `local` and `container` record a death, and `sandbox` answers with it, through
//! `death` ([`SandboxDeath`], `record_death`), which uses none of them.

mod container;
mod death;
pub(crate) mod docker;
mod local;
mod remote;
mod sandbox;
pub(crate) mod sandboxd;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use death::SandboxDeath;
pub use sandbox::Runtime;

/// Where a [`Runtime`]'s sandbox runs.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// sandboxd as a child process on this host, as the current user, no isolation.
    #[default]
    Local,
    /// sandboxd in a hardened Docker container.
    Docker,
    /// A sandboxd at a URL, started and stopped by someone else.
    Remote,
}

impl RuntimeKind {
    /// The configuration name (`local`, `docker`, `remote`).
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::Local => "local",
            RuntimeKind::Docker => "docker",
            RuntimeKind::Remote => "remote",
        }
    }
}

impl fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to get a sandbox. [`Default`] is a local sandboxd in the current directory.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Which runtime.
    pub kind: RuntimeKind,
    /// The host directory the sandbox works in. Local: the shell's working directory (default:
    /// the current directory). Docker: mounted at `/workspace` unless `docker.workspace` is set
    /// (default: nothing mounted). Remote: ignored.
    pub workspace: Option<PathBuf>,
    /// The sandboxd binary: run by the local runtime, put into images by the Docker runtime
    /// when `docker.image` is a base image. Default:
    /// [`sandboxd::default_sandboxd_binary`] (`AGENTD_SANDBOXD_BIN`, else `sandboxd` next
    /// to the running executable).
    pub sandboxd_binary: Option<PathBuf>,
    /// Local runtime settings.
    pub local: LocalConfig,
    /// Docker runtime settings; `image` may be a sandbox image or a base image (made a sandbox
    /// image on start). Its `ready_timeout` is replaced by `startup_timeout`.
    pub docker: docker::SandboxConfig,
    /// Remote runtime: sandboxd's base URL (`http://host:port` or `unix:/path.sock`).
    pub remote_url: Option<String>,
    /// Remote runtime: its session API key, if it wants one.
    pub remote_api_key: Option<String>,
    /// Remote runtime through a runtime API service (`agentd serve`): when set, the sandbox
    /// is started (or a running one reused) by session id, and `remote_url`/`remote_api_key`
    /// are not used.
    pub remote_api: Option<RemoteApiConfig>,
    /// Longest wait for the sandbox to answer `/alive` after it was started (or, for a remote
    /// sandbox, after we first try it). Does not bound building a Docker image.
    pub startup_timeout: Duration,
    /// The hard timeout given to actions that carry none (OpenHands' `sandbox.timeout`); `None`
    /// sends them without one (no HTTP deadline either).
    pub default_action_timeout: Option<Duration>,
    /// Shown each piece of a command's (or cell's) output as it is produced: the action is
    /// sent to sandboxd's stream endpoint, and its observation is the same. `None`: sent plainly.
    pub on_output: Option<OutputListener>,
}

/// Sees a running action's output as it comes (see [`RuntimeConfig::on_output`]).
#[derive(Clone)]
pub struct OutputListener(pub std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for OutputListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputListener")
    }
}

impl Default for RuntimeConfig {
    fn default() -> RuntimeConfig {
        RuntimeConfig {
            kind: RuntimeKind::Local,
            workspace: None,
            sandboxd_binary: None,
            local: LocalConfig::default(),
            docker: docker::SandboxConfig::default(),
            remote_url: None,
            remote_api_key: None,
            remote_api: None,
            startup_timeout: Duration::from_secs(60),
            default_action_timeout: Some(Duration::from_secs(120)),
            on_output: None,
        }
    }
}

/// Where a runtime API service is, and what to ask it for.
#[derive(Debug, Clone, Default)]
pub struct RemoteApiConfig {
    /// The service's base URL (`SANDBOX_REMOTE_RUNTIME_API_URL`).
    pub url: String,
    /// Its API key (`SANDBOX_API_KEY`, sent as `X-API-Key`).
    pub api_key: String,
    /// The session the sandbox belongs to: a running sandbox of this session is reused.
    pub session_id: String,
    /// The image to ask for (the service maps images it does not have onto its default).
    pub image: String,
    /// Environment of sandboxd and the bash session.
    pub environment: BTreeMap<String, String>,
    /// sandboxd plugins (`jupyter` starts the IPython kernel at once).
    pub plugins: Vec<String>,
    /// Leave the sandbox running when the runtime closes (a later run of the same session
    /// reuses it); default: stop it.
    pub keep: bool,
}

/// Settings of the local runtime's sandboxd.
#[derive(Debug, Clone, Default)]
pub struct LocalConfig {
    /// Python interpreter of the IPython kernel; it must import ipykernel (sandboxd's
    /// `--python`; default: `SANDBOXD_PYTHON`, else `python3` on `PATH`).
    pub python: Option<PathBuf>,
    /// sandboxd plugins; `jupyter` starts the kernel at once instead of on the first cell.
    pub plugins: Vec<String>,
    /// Extra environment of sandboxd and everything it runs.
    pub env: BTreeMap<String, String>,
    /// Start bash without profile and rc files (faster, and independent of the user's dotfiles).
    pub no_login_shell: bool,
    /// Let sandboxd serve browser actions with the host's Chromium (its `--enable-browser`,
    /// which also makes `.downloads` in the workspace); off, it runs with `--no-enable-browser`.
    pub browser: bool,
}

/// Why a [`Runtime`] could not start, or did not stop cleanly. Each variant says whether trying
/// again can help.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The configuration lacks something or contradicts itself. Fix it; retrying cannot help.
    #[error("invalid runtime configuration: {0}")]
    Config(String),
    /// No sandboxd binary was given or found. Retrying cannot help.
    #[error(
        "no sandboxd binary: set it in the configuration (--sandboxd), set AGENTD_SANDBOXD_BIN, or put sandboxd next to agentd"
    )]
    NoSandboxd,
    /// The sandboxd binary could not be started. Retrying cannot help until it is fixed.
    #[error("cannot start {}: {source}", .binary.display())]
    Spawn {
        /// The binary.
        binary: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A host file or directory the runtime needs could not be made or used.
    #[error("{what} {}: {source}", .path.display())]
    Io {
        /// What it is for.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The local sandboxd exited, or printed something unexpected, before it listened; the
    /// message ends with its last output. Retrying rarely helps.
    #[error("sandboxd did not start: {reason}{}", tail(.output))]
    NotStarted {
        /// What happened.
        reason: String,
        /// sandboxd's last stderr lines.
        output: String,
    },
    /// The sandbox did not answer within the startup timeout. Retrying with a longer timeout
    /// can help.
    #[error("the sandbox at {url} did not become ready within {:?}: {reason}{}", .waited, tail(.output))]
    StartTimeout {
        /// Where it was expected (or the binary, if it never said where it listens).
        url: String,
        /// How long we waited.
        waited: Duration,
        /// The last failure.
        reason: String,
        /// Its last output, when we have it.
        output: String,
    },
    /// The sandbox refused our session API key. Retrying cannot help; check the key.
    #[error("the sandbox at {url} refused the session API key (HTTP {status}: {detail})")]
    Unauthorized {
        /// The sandbox.
        url: String,
        /// The status it answered with.
        status: u16,
        /// Its message.
        detail: String,
    },
    /// The sandbox died; see [`SandboxDeath`]. Retrying cannot help: start a new runtime.
    #[error("the sandbox died: {0}")]
    Died(SandboxDeath),
    /// The sandbox did not answer (it may be restarting, or the network is down). Retrying can
    /// help.
    #[error("the sandbox at {url} does not answer: {source}")]
    Unreachable {
        /// The sandbox.
        url: String,
        /// Why.
        source: client::ClientError,
    },
    /// The local sandboxd could not be stopped (it did not exit after SIGKILL: a process stuck
    /// in the kernel). Retrying can help.
    #[error("sandboxd (pid {pid}) did not exit after SIGKILL")]
    Stuck {
        /// Its pid.
        pid: u32,
    },
    /// The runtime API service refused or failed a call; [`client::ClientError::is_retryable`]
    /// says whether retrying helps.
    #[error("the runtime API at {url}: {source}")]
    RuntimeApi {
        /// The service.
        url: String,
        /// What failed.
        source: client::ClientError,
    },
    /// The runtime API service reported the sandbox as failed, or it was not ready in time.
    /// Retrying (a new sandbox) may help.
    #[error("the runtime API's sandbox {runtime_id} is not ready: {status}")]
    RuntimeNotReady {
        /// The sandbox.
        runtime_id: String,
        /// Its last `pod_status`.
        status: String,
    },
    /// The Docker runtime failed; its error says whether retrying helps. (A base image and
    /// no sandboxd binary is [`RuntimeError::NoSandboxd`]: see the `From` below.)
    #[error(transparent)]
    Docker(docker::DockerError),
    /// The sandbox's client could not be made (a bad URL or key). Retrying cannot help.
    #[error(transparent)]
    Client(#[from] client::ClientError),
    /// The OS gave no randomness for a session key. Retrying may help.
    #[error("no randomness for a session key: {0}")]
    Entropy(String),
}

impl From<docker::DockerError> for RuntimeError {
    /// The one mapping of the Docker layer's errors: no sandboxd binary for a base image is
    /// the runtime's [`RuntimeError::NoSandboxd`], whichever layer found it missing.
    fn from(e: docker::DockerError) -> RuntimeError {
        match e {
            docker::DockerError::NoSandboxd { .. } => RuntimeError::NoSandboxd,
            other => RuntimeError::Docker(other),
        }
    }
}

/// ` (last output: ...)` for an error message, or nothing.
fn tail(output: &str) -> String {
    let output = output.trim_end();
    if output.is_empty() {
        String::new()
    } else {
        format!("\n--- last output ---\n{output}")
    }
}

/// The `error_id`s of the error observations [`Runtime::execute`] makes itself (sandboxd's own
/// error observations carry `""`).
pub mod error_id {
    /// The action is not one a sandbox runs (`think`, `finish`, `message`...).
    pub const NOT_RUNNABLE: &str = "AGENT_RUNTIME$NOT_RUNNABLE";
    /// The sandbox died before or while running the action; it will not run more.
    pub const SANDBOX_DIED: &str = "AGENT_RUNTIME$SANDBOX_DIED";
    /// The sandbox could not be reached; the action may or may not have run.
    pub const UNREACHABLE: &str = "AGENT_RUNTIME$UNREACHABLE";
    /// No answer within the action's timeout (plus the HTTP margin).
    pub(crate) const TIMEOUT: &str = "AGENT_RUNTIME$TIMEOUT";
    /// The sandbox refused the request (HTTP error: bad key, malformed or unknown action).
    pub(crate) const REFUSED: &str = "AGENT_RUNTIME$REFUSED";
}

#[cfg(test)]
mod tests;
