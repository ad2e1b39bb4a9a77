//! The MCP endpoints, all behind the same key check as every other protected route:
//!
//! - `/mcp`: sandboxd's own MCP server (its actions as tools), streamable HTTP (`rmcp`'s
//!   tower service).
//! - `/mcp/proxy`: the proxy of the stdio MCP servers `/update_mcp_server` set, streamable
//!   HTTP.
//! - `GET /mcp/sse` and `POST /mcp/messages/?session_id=ID`: the same proxy over the older
//!   HTTP+SSE transport, as the reference serves it (OpenHands' host uses `/mcp/sse`): the
//!   stream's first event, `endpoint`, names where to post; each posted JSON-RPC message is
//!   answered `202 Accepted`, and replies come as `message` events.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService, Transport};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use tokio::sync::mpsc;

use super::detail;
use crate::executor::Executor;
use crate::mcp::{McpServers, ProxyServer, SandboxTools};

/// How long an MCP session may be idle before sandboxd forgets it (the client then starts a new
/// one): an agent may think for a long time between two calls.
const SESSION_IDLE: Duration = Duration::from_secs(60 * 60);
/// Messages queued for one SSE session, each way.
const SSE_QUEUE: usize = 64;
/// The comment sent on an idle SSE stream, so that nothing between closes it.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The routes of the MCP servers, to be put behind the key check.
pub(super) fn routes<S: Clone + Send + Sync + 'static>(
    executor: &Arc<Executor>,
    max_body_bytes: usize,
) -> Router<S> {
    let tools = {
        let executor = executor.clone();
        streamable(move || SandboxTools::new(executor.clone()), max_body_bytes)
    };
    let servers = executor.mcp_servers();
    let proxy = {
        let servers = servers.clone();
        streamable(move || ProxyServer::new(servers.clone()), max_body_bytes)
    };
    let sse = Arc::new(SseSessions {
        servers,
        sessions: Mutex::default(),
    });
    let sse_routes = Router::new()
        .route("/mcp/sse", get(sse_stream))
        .route("/mcp/messages/", post(sse_message))
        .with_state(sse);
    Router::new()
        .route_service("/mcp", tools)
        .route_service("/mcp/proxy", proxy)
        .merge(sse_routes)
}

/// A streamable-HTTP endpoint whose sessions each get a server from `server`.
fn streamable<H: ServerHandler>(
    server: impl Fn() -> H + Send + Sync + 'static,
    max_body_bytes: usize,
) -> StreamableHttpService<H, LocalSessionManager> {
    StreamableHttpService::new(
        move || Ok(server()),
        Arc::new(session_manager()),
        config(max_body_bytes),
    )
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

/// The open SSE sessions of the proxy: where each one's posted messages go.
#[derive(Debug)]
struct SseSessions {
    servers: Arc<McpServers>,
    sessions: Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>,
}

impl SseSessions {
    fn sender(&self, id: &str) -> Option<mpsc::Sender<ClientJsonRpcMessage>> {
        self.sessions.lock().ok()?.get(id).cloned()
    }
}

/// `GET /mcp/sse`: a new session of the proxy, served for as long as the stream is open.
async fn sse_stream(State(sse): State<Arc<SseSessions>>) -> Response {
    let id = match sandbox_common::random_hex(32) {
        Ok(id) => id,
        Err(e) => {
            tracing::error!(error = %e, "no randomness for an MCP session id");
            return detail(StatusCode::SERVICE_UNAVAILABLE, "cannot open a session now");
        }
    };
    let (to_server, from_client) = mpsc::channel(SSE_QUEUE);
    let (to_client, from_server) = mpsc::channel(SSE_QUEUE);
    if let Ok(mut sessions) = sse.sessions.lock() {
        sessions.insert(id.clone(), to_server);
    }
    let transport = ChannelTransport {
        to_client,
        from_client,
    };
    let handler = ProxyServer::new(sse.servers.clone());
    let service = tokio::spawn(async move {
        match handler.serve(transport).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => tracing::debug!(error = %e, "MCP SSE session ended before it began"),
        }
    });
    let session = SseSession {
        id: id.clone(),
        sessions: sse.clone(),
        service,
        from_server,
        endpoint: Some(format!("/mcp/messages/?session_id={id}")),
    };
    let stream = futures_util::stream::unfold(session, |mut session| async move {
        let event = session.next_event().await?;
        Some((Ok::<_, Infallible>(event), session))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(SSE_KEEP_ALIVE))
        .into_response()
}

/// One SSE stream's session: dropped when the client goes, which ends the session.
struct SseSession {
    id: String,
    sessions: Arc<SseSessions>,
    service: tokio::task::JoinHandle<()>,
    from_server: mpsc::Receiver<ServerJsonRpcMessage>,
    /// The first event, until sent.
    endpoint: Option<String>,
}

impl SseSession {
    async fn next_event(&mut self) -> Option<Event> {
        if let Some(endpoint) = self.endpoint.take() {
            return Some(Event::default().event("endpoint").data(endpoint));
        }
        let message = self.from_server.recv().await?;
        match serde_json::to_string(&message) {
            Ok(json) => Some(Event::default().event("message").data(json)),
            Err(e) => {
                tracing::error!(error = %e, "cannot encode an MCP message");
                None
            }
        }
    }
}

impl Drop for SseSession {
    fn drop(&mut self) {
        self.service.abort();
        if let Ok(mut sessions) = self.sessions.sessions.lock() {
            sessions.remove(&self.id);
        }
    }
}

#[derive(Debug, Deserialize)]
struct SessionQuery {
    session_id: String,
}

/// `POST /mcp/messages/?session_id=ID`: one JSON-RPC message for a session's server.
async fn sse_message(
    State(sse): State<Arc<SseSessions>>,
    Query(query): Query<SessionQuery>,
    body: Bytes,
) -> Response {
    let Some(sender) = sse.sender(&query.session_id) else {
        return detail(StatusCode::NOT_FOUND, "Could not find session");
    };
    let message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(e) => {
            return detail(
                StatusCode::BAD_REQUEST,
                format!("Could not parse message: {e}"),
            );
        }
    };
    match sender.send(message).await {
        Ok(()) => (StatusCode::ACCEPTED, "Accepted").into_response(),
        Err(_) => detail(StatusCode::NOT_FOUND, "Could not find session"),
    }
}

/// The proxy's end of an SSE session: what it sends goes to the stream, what it receives was
/// posted.
struct ChannelTransport {
    to_client: mpsc::Sender<ServerJsonRpcMessage>,
    from_client: mpsc::Receiver<ClientJsonRpcMessage>,
}

/// The client's stream is gone.
#[derive(Debug, thiserror::Error)]
#[error("the SSE stream is closed")]
struct StreamClosed;

impl Transport<RoleServer> for ChannelTransport {
    type Error = StreamClosed;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), StreamClosed>> + Send + 'static {
        let to_client = self.to_client.clone();
        async move { to_client.send(item).await.map_err(|_| StreamClosed) }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.from_client.recv()
    }

    async fn close(&mut self) -> Result<(), StreamClosed> {
        self.from_client.close();
        Ok(())
    }
}
