//! MCP in the sandbox, on the official Rust SDK (`rmcp`): sandboxd's own MCP server, whose
//! tools are the sandbox's actions (`tools`); the stdio MCP servers the sandbox runs for its
//! host (`stdio`: one server's program and client), and the MCP server that proxies them
//! (`proxy`). The HTTP transports that carry both servers are `crate::server`'s.

mod proxy;
mod stdio;
mod tools;

pub(crate) use proxy::{McpServers, ProxyServer};
pub(crate) use stdio::Launch;
pub(crate) use tools::SandboxTools;

/// What sandboxd's MCP servers say about themselves: they offer tools.
fn server_info(name: &str) -> rmcp::model::ServerConfig {
    use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
    let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
    info.server_info = Implementation::new(name, env!("CARGO_PKG_VERSION"));
    info
}
