//! The MCP endpoints: sandboxd's own MCP server at `/mcp` (streamable HTTP, `rmcp`'s tower
//! service), behind the same key check as every other protected route.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::executor::Executor;
use crate::mcp::SandboxTools;

/// How long an MCP session may be idle before sandboxd forgets it (the client then starts a new
/// one): an agent may think for a long time between two calls.
const SESSION_IDLE: Duration = Duration::from_secs(60 * 60);

/// The routes of the MCP servers, to be put behind the key check.
pub(super) fn routes<S: Clone + Send + Sync + 'static>(
    executor: Arc<Executor>,
    max_body_bytes: usize,
) -> Router<S> {
    let tools = StreamableHttpService::new(
        move || Ok(SandboxTools::new(executor.clone())),
        Arc::new(session_manager()),
        config(max_body_bytes),
    );
    Router::new().route_service("/mcp", tools)
}

fn session_manager() -> LocalSessionManager {
    let mut manager = LocalSessionManager::default();
    let mut session = SessionConfig::default();
    session.keep_alive = Some(SESSION_IDLE);
    // No SSE priming events (empty `data` with a `retry`): older clients (the Python SDK before
    // 1.17, which OpenHands pins) log them as broken messages.
    session.sse_retry = None;
    manager.session_config = session;
    manager
}

/// The key check guards these routes, and a sandbox is reached under names and addresses of
/// its host's choosing (`127.0.0.1:PORT`, a Unix socket's `sandboxd`, a service's host name):
/// no `Host` allow-list.
fn config(max_body_bytes: usize) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_sse_retry(None)
        .with_max_request_body_bytes(max_body_bytes)
}
