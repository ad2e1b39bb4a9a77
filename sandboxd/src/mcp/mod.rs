//! MCP in the sandbox, on the official Rust SDK (`rmcp`): sandboxd's own MCP server, whose
//! tools are the sandbox's actions (`tools`). The HTTP transports that carry it are
//! `crate::server`'s.

mod tools;

pub(crate) use tools::SandboxTools;
