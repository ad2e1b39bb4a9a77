//! What agentd's MCP client and sandboxd's MCP proxy agree on: the checks a stdio MCP
//! server's settings pass (agentd's `[mcp]` settings, sandboxd's `/update_mcp_server`), with
//! the reference's messages, and the deadline of every MCP request with its message.

use std::time::Duration;

use protocol::api::McpStdioServer;

/// The longest wait for the answer to any MCP request (start-up, listing tools, a tool call):
/// 30 s, as the reference.
pub const MCP_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a request that waited `waited` in vain says (the reference's text).
pub fn mcp_timeout_message(waited: Duration) -> String {
    format!(
        "Timed out while waiting for response to ClientRequest. Waited {:?} seconds.",
        waited.as_secs_f64()
    )
}

/// Why a stdio MCP server's settings are refused; the text is the reference's where it has
/// one. Retrying the same settings cannot help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct McpServerError(pub String);

/// Checks a stdio server's settings: `name` is letters, digits, `-` and `_`; `command` is one
/// executable without spaces; every `env` name is a variable name.
pub fn check_stdio_server(server: &McpStdioServer) -> Result<(), McpServerError> {
    let refuse = |text: &str| Err(McpServerError(text.to_owned()));
    if server.name.is_empty() {
        return refuse("Server name cannot be empty");
    }
    if !server
        .name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return refuse("Server name can only contain letters, numbers, hyphens, and underscores");
    }
    if server.command.trim().is_empty() {
        return refuse("Command cannot be empty");
    }
    if server.command.contains(char::is_whitespace) {
        return refuse(
            "Command should be a single executable without spaces (use arguments field for parameters)",
        );
    }
    if let Some(bad) = server.env.keys().find(|key| !is_env_name(key)) {
        return Err(McpServerError(format!(
            "Invalid environment variable name {bad:?}: it must start with a letter or an \
             underscore and hold only letters, numbers and underscores"
        )));
    }
    Ok(())
}

/// `^[a-zA-Z_][a-zA-Z0-9_]*$`
fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests;
