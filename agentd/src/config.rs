//! agentd's settings file (TOML). Command-line flags override environment variables, which
//! override the file, which overrides the defaults; the CLI does the layering, this module
//! only reads the file and knows where sessions live.
//!
//! ```toml
//! runtime = "docker"          # local | docker | remote
//! max_iterations = 50
//! max_budget = 2.5            # USD
//! sessions_dir = "/var/lib/agentd/sessions"
//! workspace = "/srv/project"
//!
//! [docker]
//! image = "sandboxd-base:bookworm"
//! memory = "2g"
//! cpus = 1.5
//! pids = 512
//! network = "none"
//! read_only = true
//! disk = "10g"               # the most a sandbox may write; "none": no limit
//! uid = "4321:4321"          # the sandbox user; default: the workspace's owner
//! allow_root = false         # refuse sandboxes as root (a root-owned workspace)
//! sudo = false               # the sandbox user may not sudo (sudo says why)
//!
//! [remote]
//! url = "http://sandbox-host:8000"      # a sandboxd, directly
//! api_key = "..."
//! api_url = "http://sandbox-host:3000"  # or a runtime API service (agentd serve)
//! service_api_key = "..."
//! keep = false                          # leave the sandbox running on close
//!
//! [serve]
//! api_keys = ["key-of-host-a", "key-of-host-b"]
//! name = "default"
//! image = "sandboxd-base:bookworm"      # for images this host does not have
//! images = { "ghcr.io/all-hands-ai/runtime:0.62-nikolaik" = "my-runtime:latest" }
//! pool_size = 2                         # ready sandboxes of the default image
//! pools = { "my-runtime:latest" = 1 }
//! idle_timeout = 1800                   # seconds; 0 = never
//! public_host = "sandbox-host"
//! publish_address = "0.0.0.0"
//! memory = "4g"
//! cpus = 2
//! pids = 1024
//! state_dir = "/var/lib/agentd/serve"
//! registry_prefix = "agentd.local"
//! allow_root = false                    # a start as root is refused (403)
//! sudo = false                          # no caller's sandbox user may sudo...
//! sudo_keys = ["key-of-host-a"]         # ...but these callers' may
//! app_ports = 2                         # published per sandbox: work_hosts, APP_PORT_n
//!
//! [llm]                       # the CodeAct agent's model; keys in crate::llm::config
//! model = "gpt-4o"
//! base_url = "https://api.openai.com/v1"
//! [llm.prices."gpt-4o"]
//! input_cost_per_token = 2.5e-6
//! output_cost_per_token = 1e-5
//!
//! [condenser]                 # keys in crate::memory::condenser
//! type = "llm"
//! max_size = 120
//!
//! [agent]
//! ipython = true              # offer execute_ipython_cell
//! think = true                # offer think
//! browsing = false            # offer browser (a sandbox with Chromium)
//! system_prompt_file = "prompt.md"
//! delegation = true           # offer delegate_to_agent (ReadOnlyAgent, LocAgent, BrowsingAgent, DummyAgent)
//! task_tracker = true         # offer task_tracker (plan/view; TASKS.md in the session)
//! condensation_request = true # offer request_condensation
//!
//! [mcp]                       # MCP servers; keys in crate::mcp::settings
//! shttp_servers = [{ url = "http://127.0.0.1:8931/mcp", api_key = "...", timeout = 60 }]
//! sse_servers = ["http://127.0.0.1:9000/sse"]
//! stdio_servers = [{ name = "fetch", command = "uvx", args = ["mcp-server-fetch"] }]
//! [secrets.STAGING_TOKEN]     # exported in the sandbox's shell, masked everywhere else
//! env = "MY_STAGING_TOKEN"    # read from agentd's environment (or: value = "...")
//! description = "API token of the staging server"
//!
//! [microagents]
//! disabled = ["docker"]       # microagents not to use, by name
//!
//! [security]                  # keys in crate::security
//! confirmation_mode = true    # hold actions that are not low-risk for the user
//! security_analyzer = "rules" # llm | rules
//! [[security.rules]]          # added to the rules analyzer's table
//! on = "command"              # command | path | write | url
//! pattern = '\bterraform\s+destroy\b'
//! risk = "high"
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::llm::LlmConfig;
use crate::mcp::McpSection;
use crate::memory::CondenserConfig;
use crate::runtime::RuntimeKind;
use crate::runtime::docker::Network;
use crate::secrets::SecretSetting;
use crate::security::SecuritySection;

/// Errors reading the settings file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// It could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// It is not valid TOML for these settings (unknown keys are errors, so typos show).
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its position.
        source: toml::de::Error,
    },
}

/// The settings file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Where sandboxes run.
    pub runtime: Option<RuntimeKind>,
    /// Iteration limit of a run.
    pub max_iterations: Option<u32>,
    /// Budget limit of a run, in USD.
    pub max_budget: Option<f64>,
    /// Where sessions (event logs, state) are kept.
    pub sessions_dir: Option<PathBuf>,
    /// The host directory the sandbox works in.
    pub workspace: Option<PathBuf>,
    /// The sandboxd binary (local runtime, and images).
    pub sandboxd: Option<PathBuf>,
    /// Docker runtime settings.
    #[serde(default)]
    pub docker: DockerSection,
    /// Remote runtime settings.
    #[serde(default)]
    pub remote: RemoteSection,
    /// `agentd serve` settings.
    #[serde(default)]
    pub serve: ServeSection,
    /// The LLM of the CodeAct agent.
    pub llm: Option<LlmConfig>,
    /// How the CodeAct agent condenses its history.
    pub condenser: Option<CondenserConfig>,
    /// The CodeAct agent.
    #[serde(default)]
    pub agent: AgentSection,
    /// The MCP servers whose tools the agent gets.
    pub mcp: Option<McpSection>,
    /// Custom secrets, by the environment variable they are exported as in the sandbox.
    #[serde(default)]
    pub secrets: std::collections::BTreeMap<String, SecretSetting>,
    /// Microagents.
    #[serde(default)]
    pub microagents: MicroagentsSection,
    /// Risk analysis and confirmation mode.
    #[serde(default)]
    pub security: SecuritySection,
}

/// `[microagents]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MicroagentsSection {
    /// Names of microagents not to use.
    #[serde(default)]
    pub disabled: Vec<String>,
}

/// `[agent]`: the CodeAct agent's tools and prompt.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// Offer `execute_ipython_cell` (default true).
    pub ipython: Option<bool>,
    /// Offer `think` (default true).
    pub think: Option<bool>,
    /// Offer the `browser` tool (default false: the sandbox needs Chromium, which the image
    /// from `images/browser/build.sh` has).
    pub browsing: Option<bool>,
    /// A file with the system prompt to use instead of the built-in one.
    pub system_prompt_file: Option<PathBuf>,
    /// Offer `delegate_to_agent` (ReadOnlyAgent, LocAgent, BrowsingAgent, DummyAgent); default
    /// false.
    pub delegation: Option<bool>,
    /// Offer `task_tracker` (a task list kept in the state and `TASKS.md`); default false.
    pub task_tracker: Option<bool>,
    /// Offer `request_condensation` (the model asks the condenser to act); default false.
    pub condensation_request: Option<bool>,
}

/// `[docker]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DockerSection {
    /// Sandbox or base image.
    pub image: Option<String>,
    /// Memory limit (`512m`, `4g`).
    pub memory: Option<String>,
    /// CPU limit.
    pub cpus: Option<f64>,
    /// Process limit.
    pub pids: Option<i64>,
    /// `bridge` or `none`.
    pub network: Option<Network>,
    /// Where a sandbox with network may connect beyond the host: `all`, `none`, or a list of
    /// IPv4 addresses, CIDR blocks and domains with optional ports
    /// (`["10.0.0.0/8", "192.0.2.7:443", "pypi.org:443", "*.pythonhosted.org:443"]`).
    pub egress: Option<EgressSetting>,
    /// Names pinned to IPv4 addresses (`{"web.test" = "10.0.0.5"}`): in the sandbox's
    /// /etc/hosts, and where the egress proxy connects them.
    pub egress_hosts: Option<std::collections::BTreeMap<String, std::net::Ipv4Addr>>,
    /// TCP ports of the host a sandbox with network may connect to (default: none).
    pub host_ports: Option<Vec<u16>>,
    /// Read-only root file system.
    pub read_only: Option<bool>,
    /// The most a sandbox may write (`10g`; `none`: no limit). Default 10g.
    pub disk: Option<String>,
    /// The sandbox user, `UID` or `UID:GID` (default: the workspace's owner).
    pub uid: Option<String>,
    /// Allow sandboxes that run as root (default false: refused).
    pub allow_root: Option<bool>,
    /// Let the sandbox user use sudo (default false).
    pub sudo: Option<bool>,
}

/// `[docker] egress`: a word (`all`, `none`) or a list of rules.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum EgressSetting {
    /// `"all"`, `"none"`, or rules separated by commas.
    Text(String),
    /// Rules, one per item.
    List(Vec<String>),
}

impl EgressSetting {
    /// The policy it says; `Err` names the bad rule.
    pub fn policy(&self) -> Result<crate::runtime::docker::Egress, String> {
        match self {
            EgressSetting::Text(text) => text.parse(),
            EgressSetting::List(rules) => rules
                .iter()
                .map(|r| r.parse())
                .collect::<Result<Vec<_>, _>>()
                .map(crate::runtime::docker::Egress::Allow),
        }
    }
}

/// `[remote]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSection {
    /// sandboxd's URL.
    pub url: Option<String>,
    /// Its session API key.
    pub api_key: Option<String>,
    /// A runtime API service (`agentd serve`) to get the sandbox from, by session id.
    pub api_url: Option<String>,
    /// The service's API key (`X-API-Key`).
    pub service_api_key: Option<String>,
    /// Leave the service's sandbox running when the run ends (default: stop it).
    pub keep: Option<bool>,
}

/// `[serve]`: the runtime API service.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeSection {
    /// Keys callers send as `X-API-Key`.
    #[serde(default)]
    pub api_keys: Vec<String>,
    /// The service's name (labels its containers).
    pub name: Option<String>,
    /// Image for sandboxes whose image this host does not have.
    pub image: Option<String>,
    /// Caller image → local image.
    #[serde(default)]
    pub images: std::collections::BTreeMap<String, String>,
    /// Warm sandboxes of the default image.
    pub pool_size: Option<usize>,
    /// Warm sandboxes of other local images.
    #[serde(default)]
    pub pools: std::collections::BTreeMap<String, usize>,
    /// Seconds without an action before a sandbox is stopped; 0 = never.
    pub idle_timeout: Option<f64>,
    /// Host in the URLs given to callers.
    pub public_host: Option<String>,
    /// Host address ports are published on.
    pub publish_address: Option<String>,
    /// The engine sandboxes run on: `docker` (default) or `swarm`.
    pub backend: Option<String>,
    /// The swarm backend's host port range, `LOW-HIGH` (default 31000-31999).
    pub swarm_ports: Option<String>,
    /// Hand out front-door URLs (the service proxies each sandbox) instead of published ports.
    pub front_door: Option<bool>,
    /// The service's URL as callers reach it (default from public_host and the bound port).
    pub public_url: Option<String>,
    /// PEM certificate chain for TLS (with `tls_key`).
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with `tls_cert`).
    pub tls_key: Option<PathBuf>,
    /// Memory limit at resource_factor 1 (`4g`).
    pub memory: Option<String>,
    /// CPU limit at resource_factor 1.
    pub cpus: Option<f64>,
    /// Process limit.
    pub pids: Option<i64>,
    /// Where claims are kept.
    pub state_dir: Option<PathBuf>,
    /// Answer of `GET /registry_prefix`.
    pub registry_prefix: Option<String>,
    /// Allow sandboxes as root (`--username root`, `--user-id 0`); default false: 403.
    pub allow_root: Option<bool>,
    /// Let every caller's sandbox user use sudo (default false).
    pub sudo: Option<bool>,
    /// Keys (among `api_keys`) whose sandbox users may use sudo.
    #[serde(default)]
    pub sudo_keys: Vec<String>,
    /// App ports published per sandbox (default 2).
    pub app_ports: Option<u16>,
    /// HTTP connections served at once (default 1024).
    pub max_connections: Option<u32>,
    /// Egress policies of some keys' sandboxes (key → policy, as `[docker] egress`); the
    /// others have `[docker] egress`.
    #[serde(default)]
    pub egress_keys: std::collections::BTreeMap<String, EgressSetting>,
    /// Egress policies of the sandboxes of some caller images (image → policy), for keys
    /// without their own.
    #[serde(default)]
    pub egress_images: std::collections::BTreeMap<String, EgressSetting>,
}

impl FileConfig {
    /// Reads `path`.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Where sessions live by default: `$XDG_STATE_HOME/agentd/sessions`, else
/// `~/.local/state/agentd/sessions`, else `./.agentd/sessions`.
pub fn default_sessions_dir() -> PathBuf {
    if let Some(state) = std::env::var_os("XDG_STATE_HOME") {
        return PathBuf::from(state).join("agentd/sessions");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/state/agentd/sessions"),
        None => PathBuf::from(".agentd/sessions"),
    }
}

/// A new session id: the UTC time and a random suffix (`20261122-081500-3fa9c1`); the OS's
/// random source failing is its error (runs started in the same second need the suffix).
pub fn new_session_id() -> Result<String, sandbox_common::RandomError> {
    let hex = sandbox_common::random_hex(3)?;
    Ok(format!(
        "{}-{hex}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S")
    ))
}

#[cfg(test)]
mod tests;
