//! Logic that agentd and sandboxd (and their tests) both need and that is not a wire shape, so
//! it has no place in `protocol`, which holds serde types only.
//!
//! Why one crate and not one per helper: each helper is a few dozen lines. Why it is not a grab
//! bag: each module has exactly one job and is named after it, a helper joins only when two
//! crates need it and it has a job of its own, and the crate exposes only the names re-exported
//! here. No async runtime, no HTTP; the only I/O is reading `/proc` and the OS's random source.
//!
//! - `truncate`: the middle cut of over-long observation text, with its limit and its notice.
//!   sandboxd cuts command output with it; agentd cuts observations for the LLM with it and
//!   recognises sandboxd's cut by the notice.
//! - `pyrepr`: Python's `repr` of a string, which the reference's messages show (sandboxd's
//!   editor errors, agentd's MCP action messages).
//! - `hex`: bytes as hex digits (digests in names and tags, random tokens).
//! - `random`: random hex from the OS (session keys, HMAC keys, markers, ids).
//! - `procstat`: the fields of `/proc/PID/stat` we use (state, parent, process group, session,
//!   terminal foreground group, CPU times, start time), read past the command name's last `)`.
//! - `egress`: domain rules of a sandbox's egress policy (`example.com:443`, `*.pypi.org`):
//!   agentd parses them from settings, sandboxd's filtering proxy matches connections against
//!   them.
//! - `modes`: the first arguments that select sandboxd's hidden modes agentd starts it in
//!   (the local sandbox's keeper, the egress proxy).
//! - `shell`: quoting a string as one bash word (sandboxd's set-up line, agentd's workspace
//!   commands).
//! - `timeout`: the range of durations an action or a setting may ask for; agentd refuses a
//!   model's timeout outside it before sandboxd would.
//! - `tools`: the sandbox's tools as a model sees them (names, descriptions, schemas) and how a
//!   call's arguments become an action: the CodeAct agent offers them to its LLM, sandboxd's
//!   MCP server to any MCP host.
//! - `mcp`: the checks of a stdio MCP server's settings (agentd's `[mcp]`, sandboxd's
//!   `/update_mcp_server`) and the deadline of every MCP request, for agentd's MCP client and
//!   sandboxd's MCP proxy.
//! - `render`: the text a model reads of a command's, a cell's or an edit's observation, for
//!   the same two.

mod egress;
mod hex;
mod mcp;
pub mod modes;
mod procstat;
mod pyrepr;
mod random;
mod render;
mod shell;
mod timeout;
mod tools;
mod truncate;

pub use egress::{DomainRule, DomainRuleError, normalize_host, split_port};
pub use hex::hex;
pub use mcp::{MCP_REQUEST_TIMEOUT, McpServerError, check_stdio_server, mcp_timeout_message};
pub use procstat::ProcStat;
pub use pyrepr::py_repr_str;
pub use random::{RandomError, random_hex};
pub use render::{IPYTHON_IMAGE_LINE, render_edit, render_ipython, render_run};
pub use shell::shell_quote;
pub use timeout::{MAX_TIMEOUT_SECONDS, TimeoutError, timeout_duration};
pub use tools::{
    EXECUTE_BASH, EXECUTE_IPYTHON_CELL, STR_REPLACE_EDITOR, ToolAction, ToolArgs, ToolCallError,
    ToolSpec, sandbox_tool_action, sandbox_tools,
};
pub use truncate::{MAX_OBSERVATION_CHARS, TRUNCATION_NOTICE, truncate_middle};
