//! [`McpHub`]: agentd's MCP client of a run's servers (`rmcp`): connected once at the start
//! (each within the MCP deadline, all at once; one that does not answer is reported and left
//! out), their tools listed for the agent, kept connected, and called with a deadline per
//! call. A server whose connection is lost is connected again on its next call, not on
//! every call (the reference reconnects to every server per call).

use std::sync::Arc;
use std::time::Duration;

use protocol::action::McpArgs;
use protocol::llm::Tool;
use protocol::observation::McpExtras;
use protocol::{Observation, ObservationKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use sandbox_common::{MCP_REQUEST_TIMEOUT, mcp_timeout_message};

use super::result::{error_content, result_content};
use super::settings::{McpSettings, RemoteServer};
use super::sse::SseTransport;

/// How agentd speaks to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum McpTransport {
    /// HTTP with Server-Sent Events (`sse_servers`).
    Sse,
    /// Streamable HTTP (`shttp_servers`, the sandbox's proxy).
    StreamableHttp,
}

/// One MCP server a run uses.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// What messages call it: its URL, or `the sandbox's stdio servers`.
    pub(crate) label: String,
    /// Where it is.
    pub(crate) url: String,
    pub(crate) transport: McpTransport,
    /// The HTTP client to reach it with (the sandbox's, for the sandbox's proxy).
    pub(crate) http: reqwest::Client,
    /// Sent with every request (its key).
    pub(crate) headers: HeaderMap,
    /// How long a tool call may take.
    pub(crate) call_timeout: Duration,
}

impl Endpoint {
    /// The endpoints of `settings`' SSE and streamable-HTTP servers, in that order. Keys go as
    /// `Authorization: Bearer`, `s` and `X-Session-API-Key`, as the reference sends them.
    pub(crate) fn remote(settings: &McpSettings) -> Vec<Endpoint> {
        let http = reqwest::Client::builder()
            .connect_timeout(client::CONNECT_TIMEOUT)
            .build()
            .unwrap_or_default();
        let endpoint = |server: &RemoteServer, transport| Endpoint {
            label: server.url.clone(),
            url: server.url.clone(),
            transport,
            http: http.clone(),
            headers: key_headers(server.api_key.as_deref()),
            call_timeout: server.timeout,
        };
        let sse = settings
            .sse_servers
            .iter()
            .map(|s| endpoint(s, McpTransport::Sse));
        let shttp = settings
            .shttp_servers
            .iter()
            .map(|s| endpoint(s, McpTransport::StreamableHttp));
        sse.chain(shttp).collect()
    }
}

/// The headers that carry an MCP server's key.
pub(crate) fn key_headers(key: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let Some(key) = key else { return headers };
    for (name, value) in [
        ("authorization", format!("Bearer {key}")),
        ("s", key.to_owned()),
        ("x-session-api-key", key.to_owned()),
    ] {
        if let (Ok(name), Ok(mut value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            value.set_sensitive(true);
            headers.insert(name, value);
        }
    }
    headers
}

/// A server that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpFailure {
    /// The server (its URL, or the sandbox's stdio server's name).
    pub server: String,
    /// Why.
    pub reason: String,
}

/// A connected server.
#[derive(Debug)]
struct Server {
    endpoint: Endpoint,
    /// Its session; `None` once it was lost (connected again on the next call).
    session: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
}

/// The run's MCP servers and their tools; see the module documentation.
#[derive(Debug, Default)]
pub struct McpHub {
    servers: Vec<Arc<Server>>,
    /// Each tool with its server: the first server that offers a name has it.
    tools: Vec<(Tool, Arc<Server>)>,
}

impl McpHub {
    /// Connects to `endpoints` and lists their tools: the hub, and the servers left out.
    pub(crate) async fn connect(endpoints: Vec<Endpoint>) -> (McpHub, Vec<McpFailure>) {
        let attempts = endpoints.into_iter().map(|endpoint| async move {
            let connected = async {
                let session = open(&endpoint).await?;
                let tools = tokio::time::timeout(MCP_REQUEST_TIMEOUT, session.list_all_tools())
                    .await
                    .map_err(|_| mcp_timeout_message(MCP_REQUEST_TIMEOUT))?
                    .map_err(|e| format!("cannot list its tools: {e}"))?;
                Ok::<_, String>((session, tools))
            };
            (connected.await, endpoint)
        });
        let mut hub = McpHub::default();
        let mut failures = Vec::new();
        for (connected, endpoint) in futures_util::future::join_all(attempts).await {
            match connected {
                Ok((session, tools)) => {
                    tracing::info!(server = %endpoint.label, tools = tools.len(), "MCP server connected");
                    let server = Arc::new(Server {
                        endpoint,
                        session: tokio::sync::Mutex::new(Some(session)),
                    });
                    for tool in tools {
                        let tool = function(&tool);
                        if hub
                            .tools
                            .iter()
                            .any(|(t, _)| t.function.name == tool.function.name)
                        {
                            tracing::warn!(tool = %tool.function.name, server = %server.endpoint.label, "an MCP tool of this name is offered already; left out");
                            continue;
                        }
                        hub.tools.push((tool, server.clone()));
                    }
                    hub.servers.push(server);
                }
                Err(reason) => failures.push(McpFailure {
                    server: endpoint.label,
                    reason,
                }),
            }
        }
        (hub, failures)
    }

    /// The tools, as the model is offered them.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.iter().map(|(tool, _)| tool.clone()).collect()
    }

    /// Calls the tool `args` names: the `mcp` observation of the call. Never fails: a call
    /// that got no result (an unknown tool, a server that is gone or did not answer in time)
    /// is answered with the error as the reference words it.
    pub(crate) async fn call(&self, args: &McpArgs) -> Observation {
        let content = match self
            .tools
            .iter()
            .find(|(t, _)| t.function.name == args.name)
        {
            Some((_, server)) => server.call(args).await,
            None if self.servers.is_empty() => error_content("No MCP clients found"),
            None => error_content(&format!(
                "No matching MCP agent found for tool name: {}",
                args.name
            )),
        };
        let mut observation = Observation::new(
            ObservationKind::Mcp(McpExtras {
                name: args.name.clone(),
                arguments: args.arguments.clone(),
            }),
            content.clone(),
        );
        observation.message = content;
        observation
    }
}

impl Server {
    /// The content of one call's observation.
    async fn call(&self, args: &McpArgs) -> String {
        let peer = match self.peer().await {
            Ok(peer) => peer,
            Err(why) => return error_content(&why),
        };
        let mut params = CallToolRequestParams::new(args.name.clone());
        params.arguments = Some(args.arguments.clone());
        let timeout = self.endpoint.call_timeout;
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(result) => result_content(&result),
                Err(e) => error_content(&format!("cannot record the tool's result: {e}")),
            },
            Ok(Err(ServiceError::McpError(e))) => error_content(&e.message),
            Ok(Err(e)) => {
                *self.session.lock().await = None;
                error_content(&format!(
                    "MCP server {} is gone ({e}); agentd connects to it again for the next call",
                    self.endpoint.label
                ))
            }
            Err(_) => match self.endpoint.transport {
                McpTransport::StreamableHttp => error_content(&format!(
                    "Tool \"{}\" timed out after {:?} seconds",
                    args.name,
                    timeout.as_secs_f64()
                )),
                McpTransport::Sse => error_content(&mcp_timeout_message(timeout)),
            },
        }
    }

    /// The session's peer, connecting again first if the session was lost.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut session = self.session.lock().await;
        if session
            .as_ref()
            .is_some_and(|s| s.is_closed() || s.is_transport_closed())
        {
            *session = None;
        }
        if session.is_none() {
            tracing::info!(server = %self.endpoint.label, "connecting to the MCP server again");
            *session = Some(open(&self.endpoint).await.map_err(|why| {
                format!("MCP server {} is not reachable: {why}", self.endpoint.label)
            })?);
        }
        session
            .as_ref()
            .map(|s| s.peer().clone())
            .ok_or_else(|| format!("MCP server {} is not connected", self.endpoint.label))
    }
}

/// A session with `endpoint`'s server, within [`MCP_REQUEST_TIMEOUT`].
async fn open(endpoint: &Endpoint) -> Result<RunningService<RoleClient, ()>, String> {
    let opened = async {
        match endpoint.transport {
            McpTransport::StreamableHttp => {
                let mut config =
                    StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str());
                config.custom_headers = endpoint
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let transport =
                    StreamableHttpClientTransport::with_client(endpoint.http.clone(), config);
                ().serve(transport).await.map_err(|e| e.to_string())
            }
            McpTransport::Sse => {
                let transport = SseTransport::connect(
                    endpoint.http.clone(),
                    &endpoint.url,
                    endpoint.headers.clone(),
                    MCP_REQUEST_TIMEOUT,
                )
                .await
                .map_err(|e| e.to_string())?;
                ().serve(transport).await.map_err(|e| e.to_string())
            }
        }
    };
    tokio::time::timeout(MCP_REQUEST_TIMEOUT, opened)
        .await
        .map_err(|_| mcp_timeout_message(MCP_REQUEST_TIMEOUT))?
}

/// An MCP tool as the model is offered it.
fn function(tool: &rmcp::model::Tool) -> Tool {
    Tool::function(
        tool.name.to_string(),
        tool.description.as_deref().unwrap_or_default(),
        serde_json::Value::Object((*tool.input_schema).clone()),
    )
}

#[cfg(test)]
mod tests;
