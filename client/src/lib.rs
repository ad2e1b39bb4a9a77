//! Typed async client for sandboxd's HTTP API (OpenHands V0 "action execution server"), and the
//! helpers behind the `sbx` command-line tool.
//!
//! * [`SandboxClient`]: one method per endpoint (`/alive`, `/server_info`, `/execute_action`,
//!   `/list_files`, `/upload_file`, `/download_files`) plus `run`/`read`/`write`/`edit`
//!   shortcuts, over TCP (`http://host:port`) or a Unix socket (`unix:/path.sock`, see
//!   [`Target`]). Deadlines follow the stock client (docs/protocol.md §2): 5 s for `/alive`, the
//!   action's `timeout` + 5 s for `/execute_action`, and so on.
//! * [`ClientError`]: what went wrong and whether a retry can help.
//! * [`ObservationExt`]: exit codes and display text of observations.
//! * [`RuntimeApiClient`]: the runtime API (control plane) that `agentd serve` serves and
//!   OpenHands' `RemoteRuntime` speaks: start, stop, pause, resume sandboxes by session.
//!
//! Wire types come from the `protocol` crate, re-exported as [`protocol`].
#![deny(missing_docs)]

pub mod archive;
mod client;
mod error;
pub mod render;
mod runtime_api;

pub use client::{
    ALIVE_TIMEOUT, API_KEY_HEADER, CONNECT_TIMEOUT, DEFAULT_ACTION_TIMEOUT, DOWNLOAD_TIMEOUT,
    EXECUTE_TIMEOUT_MARGIN, EventStream, ExecuteOptions, Executed, LIST_FILES_TIMEOUT,
    SERVER_INFO_TIMEOUT, SHELL_TIMEOUT, SandboxClient, Target, TerminalOutput, TerminalSocket,
    UPDATE_MCP_SERVER_TIMEOUT, UPLOAD_TIMEOUT, execute_http_timeout, parse_base_url, run_action,
};
pub use error::ClientError;
pub use protocol;
pub use render::{ObservationExt, exit_status};
pub use runtime_api::{RUNTIME_API_TIMEOUT, RuntimeApiClient};
