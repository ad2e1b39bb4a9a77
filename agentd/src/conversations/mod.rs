//! The conversation server (`agentd server`, docs/conversations.md): agents as a service, for
//! programs (REST, live events over WebSocket and SSE) and for people (a web page it serves).
//!
//! A conversation is a session (the event stream and state of [`crate::session`]) plus what it
//! was created with (`conversation.json`) and a host workspace directory, all under
//! `DATA/conversations/ID/`. The server keeps each conversation's [`EventStream`] open while it
//! lives: the user's messages and requests (pause, resume, stop, confirm, reject) are events
//! added to it, which the controller of a running conversation reacts to, exactly as
//! OpenHands' clients talk to its controller.
//!
//! A conversation holds a sandbox only while a run is active ([`crate::session::run_attached`]).
//! A run ends in a final state or is detached when the conversation has waited idle for the user
//! longer than `idle_release` (the sandbox is released; the state saved after every step lets the
//! next run go on). A message to a conversation without a run starts one. Nothing lives only in
//! memory: after a restart, conversations are read back from disk, and those that were running
//! are resumed.
//!
//! - `store`: `conversation.json`, the conversation's settings and owner;
//! - `manager`: the conversations, their runs, the idle release, the recovery at start;
//! - `routes`: the REST API and its authentication; `live`: the event streams (WebSocket, SSE);
//! - `page.html`: the web page; `openapi.json`: the API's description, kept true by a test.

mod live;
mod manager;
mod routes;
mod store;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use protocol::conversation::LlmSettings;

use crate::agent::Agent;
use crate::controller::AgentFactory;
use crate::events::EventStream;
use crate::llm::LlmRegistry;
use crate::mcp::McpSettings;
use crate::runtime::RuntimeConfig;
use crate::secrets::SecretMask;
use crate::security::SecurityConfig;

pub use manager::ConversationError;

/// What a conversation's agent is made from.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// The agent's name (`CodeActAgent`).
    pub agent: String,
    /// The conversation's model settings, over the server's defaults.
    pub llm: Option<LlmSettings>,
    /// Secret values to mask in what the agent logs and sends.
    pub mask: SecretMask,
}

/// A conversation's agent, the agents it may delegate to, and the registry its models come
/// from (whose per-model stats the run's state keeps).
#[allow(
    missing_debug_implementations,
    reason = "holds the agent, a trait object"
)]
pub struct MadeAgent {
    /// The agent.
    pub agent: Box<dyn Agent>,
    /// The agents a `delegate` action may start (`None`: delegation is refused).
    pub delegates: Option<AgentFactory>,
    /// The registry the agent's models came from.
    pub llms: Option<LlmRegistry>,
}

/// Makes a conversation's agent (the binary knows the settings file and the model's endpoint);
/// `Err` says why the request cannot be served (HTTP 400).
pub type MakeAgent = Arc<dyn Fn(&AgentRequest) -> Result<MadeAgent, String> + Send + Sync>;

/// The server's settings.
#[derive(Clone)]
pub struct ServerConfig {
    /// Where conversations are kept (`DATA/conversations/ID/`).
    pub data_dir: PathBuf,
    /// Keys callers must send; a conversation belongs to the key that created it.
    pub api_keys: Vec<String>,
    /// The sandbox of every conversation, before its own settings: its workspace becomes the
    /// conversation's directory, its kind the one the conversation asks for.
    pub runtime: RuntimeConfig,
    /// Iteration limit, and the most a conversation may ask for.
    pub max_iterations: u32,
    /// Budget limit in USD, and the most a conversation may ask for.
    pub max_budget: Option<f64>,
    /// The security analyzer of every conversation, and whether conversations hold risky
    /// actions for confirmation unless they say otherwise.
    pub security: SecurityConfig,
    /// How long a conversation that waits for the user keeps its sandbox.
    pub idle_release: Duration,
    /// How many conversations may hold a sandbox at once; beyond, creating or restarting one
    /// is refused (429).
    pub max_running: usize,
    /// The MCP servers every conversation's agent gets.
    pub mcp: McpSettings,
    /// Makes each conversation's agent.
    pub make_agent: MakeAgent,
    /// What one HTTP connection may hold, and for how long.
    pub connections: http_guard::Limits,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Largest workspace download (zip).
    pub max_zip_bytes: u64,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("data_dir", &self.data_dir)
            .field("api_keys", &self.api_keys.len())
            .field("runtime", &self.runtime.kind)
            .field("max_iterations", &self.max_iterations)
            .field("idle_release", &self.idle_release)
            .finish_non_exhaustive()
    }
}

/// Why the server could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The settings cannot work. Retrying cannot help.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The data directory could not be read or written. Retrying helps once the disk is fixed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
}

/// Reads the conversations back from `config.data_dir` (resuming those that were running),
/// calls `on_listening` with the bound address, serves on `listener` until `shutdown`
/// resolves, then detaches every run (their state is saved; the next start resumes them).
pub async fn run(
    config: ServerConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    if config.api_keys.is_empty() || config.api_keys.iter().any(|k| k.trim().is_empty()) {
        return Err(ServerError::Config(
            "the server needs at least one API key, and no key may be empty".to_string(),
        ));
    }
    let connections = config.connections;
    let max_body = config.max_body_bytes;
    let manager = manager::Conversations::open(config).await?;
    let reaper = tokio::spawn(manager.clone().release_idle());
    let app = routes::router(manager.clone(), max_body);
    let local = listener.local_addr().map_err(|source| ServerError::Io {
        path: "listener".to_string(),
        source,
    })?;
    on_listening(local);
    http_guard::serve(listener, app, connections, shutdown).await;
    reaper.abort();
    manager.detach_all().await;
    Ok(())
}

/// The events of `stream` with ids above `after`, oldest first, at most `limit`, and whether
/// more follow.
fn page(stream: &EventStream, after: i64, limit: usize) -> (Vec<protocol::Event>, bool) {
    let mut events: Vec<protocol::Event> = stream
        .search(&crate::events::EventFilter {
            start_id: Some(after.saturating_add(1)),
            limit: Some(limit.saturating_add(1)),
            ..Default::default()
        })
        .iter()
        .map(|e| (**e).clone())
        .collect();
    let has_more = events.len() > limit;
    events.truncate(limit);
    (events, has_more)
}

#[cfg(test)]
mod tests;
