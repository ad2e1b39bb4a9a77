//! agentd, the host side of the sandbox runtime: it creates sandboxes and drives agents in them.
//!
//! - `events`: the session's append-only, persisted event stream;
//! - `state`, `controller` and `agent`: the state machine that steps an agent, with its limits
//!   and stuck detection; the CodeAct, replay and scripted agents;
//! - `llm`: the client for OpenAI-compatible models; `memory`: the agent's view of its history,
//!   condensers, and the history as chat messages;
//! - `runtime`: sandboxes to execute actions in (local process, Docker container, remote);
//! - `mcp`: the MCP servers a run uses (`[mcp]`), agentd's client of them, and what an `mcp`
//!   observation says;
//! - `recall`: the run's memory (microagents, workspace context) answering `recall` actions;
//!   `secrets`: secret values exported to the sandbox and masked everywhere else;
//!   `workspace`: the sandbox's workspace made ready before the agent starts (repository,
//!   `setup.sh`, the pre-commit hook, secrets in the shell);
//! - `session`: one headless run wiring them together; `trajectory`: recordings and replay;
//! - `conversations`: the conversation server (`agentd server`): agents as a service, with
//!   live events and a web page;
//! - `serve`: the runtime API service (`agentd serve`) that gives other agent hosts sandboxes;
//! - `config`, `display`: the settings file and live progress of the CLI.
//!
//! Every module is private: what the `agentd` binary and the integration tests use is
//! re-exported below, and nothing else, so that rustc reports what nobody uses.

mod agent;
mod config;
mod controller;
mod conversations;
mod display;
mod events;
mod llm;
mod mcp;
mod memory;
mod recall;
mod runtime;
mod secrets;
mod security;
mod serve;
mod session;
mod state;
mod tasks;
mod trajectory;
mod workspace;

pub use agent::codeact::tools::{ToolProfile, ToolSet};
pub use agent::codeact::{CodeActAgent, CodeActConfig};
pub use agent::{Agent, AgentError, BrowsingAgent, ReplayAgent, ScriptedAgent, Step};
pub use config::{
    ConfigError, DockerSection, FileConfig, MicroagentsSection, RemoteSection, ServeSection,
    default_sessions_dir, new_session_id,
};
pub use controller::{AgentFactory, ControllerError, DEFAULT_MAX_ITERATIONS};
pub use conversations::{
    AgentRequest, ConversationError, MadeAgent, MakeAgent, ServerConfig, ServerError,
    run as serve_conversations,
};
pub use display::render as render_event;
pub use events::{EventLogError, EventStream};
pub use llm::{
    AGENT_SERVICE, CONDENSER_SERVICE, DEFAULT_BASE_URL, Llm, LlmConfig, LlmRegistry, RegistryError,
    RetryNotice, ToolCalling,
};
pub use mcp::{
    McpFailure, McpHub, McpSection, McpSettings, McpSettingsError, RemoteEntry, RemoteServer,
    StdioArgs, StdioEntry, StdioEnv,
};
pub use recall::microagent::MicroagentError;
pub use runtime::{
    LocalConfig, OutputListener, RemoteApiConfig, Runtime, RuntimeConfig, RuntimeError,
    RuntimeKind, SandboxDeath, error_id,
};
pub use secrets::{
    LogMask, MaskError, MaskedStderr, SECRET_HIDDEN, Secret, SecretError, SecretMask, SecretSetting,
};
pub use security::{
    AnalyzerKind, Risk, RuleSetting, RuleTarget, RulesError, SecurityAnalyzer, SecurityConfig,
    SecuritySection,
};
pub use serve::store::ClaimStoreError;
pub use serve::{
    BackendKind, KubeConnection, KubeError, KubernetesSettings, ServeConfig, ServeError, TlsFiles,
    run as serve,
};
pub use session::{ActionTally, Outcome, RunSpec, SessionError, run as run_session, session_dir};
pub use state::{STATE_FILE, State, StateError};
pub use workspace::{RepoOrigin, Repository, WorkspaceError, WorkspaceSpec};

/// Sandbox containers on the Docker engine: the hardened configuration, images, the sandbox
/// user policy, and the owner labels that let `gc` find orphans.
pub mod docker {
    pub use crate::runtime::docker::config::DEFAULT_BASE_IMAGE;
    pub use crate::runtime::docker::image::{
        ContextFile, SandboxImage, build, ensure_sandbox_image, import_rootfs, is_sandbox_image,
        sandbox_image_for,
    };
    pub use crate::runtime::docker::labels::Owner;
    pub use crate::runtime::docker::user::{SandboxUser, UserError, choose as choose_user};
    pub use crate::runtime::docker::{
        CidrRule, DockerError, DockerHost, DomainRule, Egress, EgressRule, FirewallError, GcPolicy,
        Limits, Network, SandboxConfig, SandboxContainer,
    };
}

/// Recorded runs: trajectories (JSON arrays of events), saved, loaded, compared.
pub mod trajectories {
    pub use crate::trajectory::{Difference, TrajectoryError, compare, load, save, task};
}

/// The runtime API service's mapping of a caller's start command onto sandboxd.
pub mod start_command {
    pub use crate::serve::command::{environment, sandboxd_args};
}
