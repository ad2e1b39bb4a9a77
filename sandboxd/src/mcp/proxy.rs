//! The stdio MCP servers of a sandbox ([`McpServers`], set by `/update_mcp_server`) and the
//! MCP server that proxies them ([`ProxyServer`], served at `/mcp/proxy` and `/mcp/sse`).
//!
//! The reference mounts a new proxy next to the old ones on every update, so that the first
//! mount keeps answering and servers added later stay unreachable. Here the posted list *is*
//! the set: a new or changed server is (re)started, an unchanged one keeps running, one no
//! longer listed is stopped, and the one proxy always serves the current set. Tool names are
//! the reference's: a server's own when there is one server, `{server}_{tool}` when there are
//! several.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::api::McpStdioServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use sandbox_common::{McpServerError, check_stdio_server};

use super::stdio::{Launch, StdioServer};

/// The sandbox's stdio MCP servers, by name.
#[derive(Debug, Default)]
pub(crate) struct McpServers {
    servers: std::sync::RwLock<BTreeMap<String, Arc<StdioServer>>>,
}

impl McpServers {
    /// Makes `list` the set of servers, run as `launch` says: checks every entry first (one bad
    /// entry changes nothing), then starts the new and changed ones (at once, each within the
    /// MCP request deadline) and stops those no longer listed. Returns what went wrong in
    /// starting (one paragraph per server, `""` when nothing did); a server that did not start
    /// is kept, and tried again on its next use.
    pub(crate) async fn update(
        &self,
        list: Vec<McpStdioServer>,
        launch: Launch,
    ) -> Result<String, McpServerError> {
        let mut wanted = BTreeMap::new();
        for server in list {
            check_stdio_server(&server)
                .map_err(|e| McpServerError(format!("MCP server {:?}: {e}", server.name)))?;
            if wanted.contains_key(&server.name) {
                return Err(McpServerError(format!(
                    "MCP server {:?} is listed twice",
                    server.name
                )));
            }
            wanted.insert(server.name.clone(), server);
        }
        let (starting, stopped) = {
            let mut servers = self
                .servers
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut next = BTreeMap::new();
            let mut starting = Vec::new();
            for (name, spec) in wanted {
                let server = match servers.remove(&name) {
                    Some(old) if *old.spec() == spec && *old.launch() == launch => old,
                    _ => {
                        let new = Arc::new(StdioServer::new(spec, launch.clone()));
                        starting.push(new.clone());
                        new
                    }
                };
                next.insert(name, server);
            }
            let stopped = std::mem::replace(&mut *servers, next);
            (starting, stopped)
        };
        // Dropped outside the lock: each stops its program (unless a call still holds it).
        for name in stopped.keys() {
            tracing::info!(server = %name, "MCP server removed or replaced");
        }
        drop(stopped);
        let started =
            futures_util::future::join_all(starting.iter().map(|s| s.ensure_started())).await;
        let errors: Vec<String> = started.into_iter().filter_map(Result::err).collect();
        Ok(errors.join("\n\n"))
    }

    fn snapshot(&self) -> BTreeMap<String, Arc<StdioServer>> {
        self.servers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Every server's tools under their proxied names; a server that cannot list them is
    /// left out (and logged).
    async fn tools(&self) -> Vec<Tool> {
        let servers = self.snapshot();
        let several = servers.len() > 1;
        let listed =
            futures_util::future::join_all(servers.values().map(|server| server.list_tools()))
                .await;
        let mut tools = Vec::new();
        for ((name, _), listed) in servers.iter().zip(listed) {
            match listed {
                Ok(listed) => tools.extend(listed.into_iter().map(|mut tool| {
                    if several {
                        tool.name = format!("{name}_{}", tool.name).into();
                    }
                    tool
                })),
                Err(e) => {
                    tracing::warn!(server = %name, error = %e, "MCP server left out of the tool list")
                }
            }
        }
        tools
    }

    /// The server and its own tool name for a proxied tool name: with one server, that
    /// server; with several, the one whose `{name}_` starts it (the longest such name).
    fn route(&self, tool: &str) -> Option<(Arc<StdioServer>, String)> {
        let servers = self.snapshot();
        if servers.len() == 1 {
            return servers
                .into_values()
                .next()
                .map(|server| (server, tool.to_owned()));
        }
        servers
            .into_iter()
            .filter_map(|(name, server)| {
                let own = tool.strip_prefix(name.as_str())?.strip_prefix('_')?;
                Some((name.len(), server, own.to_owned()))
            })
            .max_by_key(|(len, _, _)| *len)
            .map(|(_, server, own)| (server, own))
    }
}

/// The MCP server of the proxy: one per MCP session, all sharing the servers.
#[derive(Debug, Clone)]
pub(crate) struct ProxyServer {
    servers: Arc<McpServers>,
}

impl ProxyServer {
    pub(crate) fn new(servers: Arc<McpServers>) -> ProxyServer {
        ProxyServer { servers }
    }
}

impl ServerHandler for ProxyServer {
    fn get_info(&self) -> ServerConfig {
        super::server_info("sandboxd-mcp-proxy")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.servers.tools().await))
    }

    /// The server's answer as it is; a server that gave none (did not start, exited, did not
    /// answer in time) is a protocol error whose message says so, as the reference's proxy
    /// raises one.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some((server, tool)) = self.servers.route(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        };
        tokio::select! {
            called = server.call(&tool, request.arguments) => match called {
                Ok(result) => Ok(result.into()),
                Err(why) => Err(ErrorData::internal_error(why, None)),
            },
            () = context.ct.cancelled() => Err(ErrorData::internal_error("the call was cancelled", None)),
        }
    }
}
