//! The `[mcp]` settings: which MCP servers a run uses, named the way OpenHands' `[mcp]` names
//! them, with its checks and messages.
//!
//! ```toml
//! [mcp]
//! sse_servers = ["http://127.0.0.1:9000/sse", { url = "https://mcp.example/sse", api_key = "..." }]
//! shttp_servers = [{ url = "https://mcp.example/mcp", api_key = "...", timeout = 120 }]
//! stdio_servers = [
//!   { name = "fetch", command = "uvx", args = ["mcp-server-fetch"], env = { LOG = "warn" } },
//!   { name = "notes", command = "python3", args = "-m notes_server --dir '/workspace/my notes'", env = "A=1,B=2" },
//! ]
//! ```
//!
//! SSE and streamable-HTTP servers are called from the host; stdio servers run in the sandbox
//! (its `/update_mcp_server`), never on the host.

use std::collections::BTreeMap;
use std::time::Duration;

use protocol::api::McpStdioServer;
use serde::Deserialize;

/// The `timeout` of a streamable-HTTP server without one: 60 s.
const DEFAULT_SHTTP_TIMEOUT: u64 = 60;
/// The longest `timeout` a server may have.
const MAX_TIMEOUT: u64 = 3600;

/// `[mcp]` as written: URLs as text or tables, stdio `args` as a list or a shell-like string,
/// `env` as a table or `K=V,K2=V2`. [`McpSection::settings`] checks it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// Servers reached over HTTP with Server-Sent Events.
    #[serde(default)]
    pub sse_servers: Vec<RemoteEntry>,
    /// Servers reached over streamable HTTP.
    #[serde(default)]
    pub shttp_servers: Vec<RemoteEntry>,
    /// Servers the sandbox runs.
    #[serde(default)]
    pub stdio_servers: Vec<StdioEntry>,
}

/// A server reached over the network: its URL, or a table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RemoteEntry {
    /// Just the URL.
    Url(String),
    /// The URL with an API key and (streamable HTTP) a timeout in seconds.
    Table {
        /// The server's URL.
        url: String,
        /// Sent as `Authorization: Bearer`, `s` and `X-Session-API-Key`.
        #[serde(default)]
        api_key: Option<String>,
        /// Seconds a tool call may take (streamable HTTP only; 1 to 3600, default 60).
        #[serde(default)]
        timeout: Option<i64>,
    },
}

/// A stdio server as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdioEntry {
    /// Its name.
    pub name: String,
    /// Its program.
    pub command: String,
    /// Its arguments: a list, or one shell-like string.
    #[serde(default)]
    pub args: Option<StdioArgs>,
    /// Its environment: a table, or `K=V,K2=V2`.
    #[serde(default)]
    pub env: Option<StdioEnv>,
}

/// Stdio `args`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StdioArgs {
    /// One argument per item.
    List(Vec<String>),
    /// Split as a shell would (quotes and backslashes; nothing is expanded).
    Text(String),
}

/// Stdio `env`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StdioEnv {
    /// Name → value.
    Table(BTreeMap<String, String>),
    /// `K=V,K2=V2`.
    Text(String),
}

/// Which MCP servers a run uses, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpSettings {
    /// Servers reached over HTTP with Server-Sent Events.
    pub sse_servers: Vec<RemoteServer>,
    /// Servers reached over streamable HTTP.
    pub shttp_servers: Vec<RemoteServer>,
    /// Servers the sandbox runs.
    pub stdio_servers: Vec<McpStdioServer>,
}

impl McpSettings {
    /// Whether no server is named.
    pub fn is_empty(&self) -> bool {
        self.sse_servers.is_empty()
            && self.shttp_servers.is_empty()
            && self.stdio_servers.is_empty()
    }
}

/// A server reached over the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteServer {
    /// Its URL.
    pub url: String,
    /// Its API key.
    pub api_key: Option<String>,
    /// How long a tool call may take.
    pub timeout: Duration,
}

/// Settings that are not valid: `Invalid MCP configuration: {why}`, as the reference says.
/// Retrying cannot help; fix the settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid MCP configuration: {0}")]
pub struct McpSettingsError(pub String);

impl McpSection {
    /// Adds a stdio server given as `NAME=COMMAND [ARGS...]` (shell-like words), as the
    /// `--mcp-stdio` flag gives it.
    pub fn add_stdio(&mut self, text: &str) -> Result<(), McpSettingsError> {
        let Some((name, command_line)) = text.split_once('=') else {
            return Err(McpSettingsError(format!(
                "{text:?}: a stdio server is NAME=COMMAND [ARGS...]"
            )));
        };
        let mut words = split_shell_words(command_line).map_err(McpSettingsError)?;
        if words.is_empty() {
            return Err(McpSettingsError("Command cannot be empty".to_owned()));
        }
        let command = words.remove(0);
        self.stdio_servers.push(StdioEntry {
            name: name.trim().to_owned(),
            command,
            args: Some(StdioArgs::List(words)),
            env: None,
        });
        Ok(())
    }

    /// The settings this section says, checked.
    pub fn settings(&self) -> Result<McpSettings, McpSettingsError> {
        let sse_servers = remote_servers(&self.sse_servers, false)?;
        let shttp_servers = remote_servers(&self.shttp_servers, true)?;
        let mut stdio_servers: Vec<McpStdioServer> = Vec::new();
        for entry in &self.stdio_servers {
            let server = entry.server()?;
            sandbox_common::check_stdio_server(&server)
                .map_err(|e| McpSettingsError(e.to_string()))?;
            if stdio_servers.iter().any(|s| s.name == server.name) {
                return Err(McpSettingsError(format!(
                    "Duplicate MCP stdio server name {:?}",
                    server.name
                )));
            }
            stdio_servers.push(server);
        }
        Ok(McpSettings {
            sse_servers,
            shttp_servers,
            stdio_servers,
        })
    }
}

impl StdioEntry {
    fn server(&self) -> Result<McpStdioServer, McpSettingsError> {
        let args = match &self.args {
            None => Vec::new(),
            Some(StdioArgs::List(args)) => args.clone(),
            Some(StdioArgs::Text(text)) => split_shell_words(text).map_err(McpSettingsError)?,
        };
        let env = match &self.env {
            None => BTreeMap::new(),
            Some(StdioEnv::Table(env)) => env.clone(),
            Some(StdioEnv::Text(text)) => parse_env(text).map_err(McpSettingsError)?,
        };
        Ok(McpStdioServer {
            name: self.name.clone(),
            command: self.command.clone(),
            args,
            env,
        })
    }
}

fn remote_servers(
    entries: &[RemoteEntry],
    streamable: bool,
) -> Result<Vec<RemoteServer>, McpSettingsError> {
    let mut servers: Vec<RemoteServer> = Vec::new();
    for entry in entries {
        let (url, api_key, timeout) = match entry {
            RemoteEntry::Url(url) => (url.clone(), None, None),
            RemoteEntry::Table {
                url,
                api_key,
                timeout,
            } => (url.clone(), api_key.clone(), *timeout),
        };
        check_url(&url)?;
        let timeout = match (timeout, streamable) {
            (Some(t), true) if t <= 0 => {
                return Err(McpSettingsError("Timeout must be positive".into()));
            }
            (Some(t), true) if t > MAX_TIMEOUT as i64 => {
                return Err(McpSettingsError(format!(
                    "Timeout cannot exceed {MAX_TIMEOUT} seconds"
                )));
            }
            (Some(t), true) => Duration::from_secs(t.unsigned_abs()),
            (Some(_), false) => {
                return Err(McpSettingsError(format!(
                    "{url}: only streamable HTTP servers (shttp_servers) take a timeout"
                )));
            }
            (None, true) => Duration::from_secs(DEFAULT_SHTTP_TIMEOUT),
            (None, false) => sandbox_common::MCP_REQUEST_TIMEOUT,
        };
        if servers.iter().any(|s| s.url == url) {
            return Err(McpSettingsError(
                "Duplicate MCP server URLs are not allowed".into(),
            ));
        }
        servers.push(RemoteServer {
            url,
            api_key: api_key.filter(|k| !k.is_empty()),
            timeout,
        });
    }
    Ok(servers)
}

/// The reference's URL checks, with its messages.
fn check_url(url: &str) -> Result<(), McpSettingsError> {
    let refuse = |text: &str| Err(McpSettingsError(text.to_owned()));
    let url = url.trim();
    if url.is_empty() {
        return refuse("URL cannot be empty");
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return refuse("URL must include a scheme (http:// or https://)");
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    if host.is_empty() || host.starts_with(':') {
        return refuse("URL must include a valid domain/host");
    }
    if !["http", "https", "ws", "wss"].contains(&scheme.to_ascii_lowercase().as_str()) {
        return refuse("URL scheme must be http, https, ws, or wss");
    }
    Ok(())
}

/// `K=V,K2=V2` as a table.
fn parse_env(text: &str) -> Result<BTreeMap<String, String>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_owned(), value.trim().to_owned()))
            }
            _ => Err(format!(
                "Environment variable {pair:?} must be in KEY=VALUE format"
            )),
        })
        .collect()
}

/// Splits `text` into words as a POSIX shell does, without expanding anything: single quotes
/// keep everything, double quotes keep all but `\"` and `\\`, a backslash outside quotes
/// keeps the next character.
pub(crate) fn split_shell_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(format!("Unclosed single quote in {text:?}")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(format!("Unclosed double quote in {text:?}")),
                        },
                        Some(c) => w.push(c),
                        None => return Err(format!("Unclosed double quote in {text:?}")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(format!("A backslash ends {text:?}")),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests;
