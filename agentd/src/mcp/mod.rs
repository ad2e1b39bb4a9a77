//! MCP on the host, on the official Rust SDK (`rmcp`): which servers a run uses (`settings`:
//! `[mcp]` and its checks), agentd's client of them (`hub`: connected once, tools listed for
//! the agent, calls with deadlines), the older SSE transport `rmcp` lacks (`sse`), and the
//! content of an `mcp` observation (`result`: written as the reference writes it, read back
//! for the model).
//!
//! SSE and streamable-HTTP servers are called from the host. Stdio servers run in the sandbox
//! (`crate::runtime` posts them to its `/update_mcp_server`) and are reached through its MCP
//! proxy, one more streamable-HTTP server.

mod hub;
mod result;
mod settings;
mod sse;

pub(crate) use hub::{Endpoint, McpTransport};
pub use hub::{McpFailure, McpHub};
pub(crate) use result::{action_message, read_content};
pub use settings::{
    McpSection, McpSettings, McpSettingsError, RemoteEntry, RemoteServer, StdioArgs, StdioEntry,
    StdioEnv,
};
