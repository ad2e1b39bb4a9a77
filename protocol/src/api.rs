//! Request and response bodies of sandboxd's HTTP endpoints other than the events themselves.

use serde::{Deserialize, Serialize};

use crate::Action;

/// Body of `POST /execute_action`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecuteActionRequest {
    /// The action to run.
    pub action: Action,
}

/// Body of `GET /alive`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AliveResponse {
    /// Always `"ok"`.
    pub status: String,
}

/// Body of `POST /processes/kill_all` (a sandboxd extension): what was done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KillAllResponse {
    /// How many processes the agent had started were killed (the shells and the IPython
    /// kernel are kept).
    pub killed: usize,
}

/// Body of every error answer: `{"detail": ...}`, plus validation details on 422.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// What went wrong, for a person.
    pub detail: String,
    /// Validation details (422 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<String>,
}

/// Body of `POST /list_files`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListFilesRequest {
    /// Directory to list; absent means the initial working directory, relative is joined to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Body of a successful `POST /upload_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadResponse {
    /// Name of the uploaded file as the client sent it.
    pub filename: String,
    /// Destination directory, as given.
    pub destination: String,
    /// Whether the upload was a zip to extract.
    pub recursive: bool,
}

/// Body of `GET /server_info`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Seconds since the server started.
    pub uptime: f64,
    /// Seconds since the last `/execute_action`.
    pub idle_time: f64,
    /// Resource use of the server process and its disk.
    pub resources: Resources,
    /// The sandbox's app ports (`APP_PORT_1`, `APP_PORT_2`... of its environment, in order):
    /// where the agent's servers listen to be reachable from outside (an addition to the
    /// reference's keys; absent when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app_ports: Vec<u16>,
}

/// Resource figures in `ServerInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// CPU use of the server process since the previous call, in percent of one core.
    pub cpu_percent: f64,
    /// Memory of the server process.
    pub memory: MemoryInfo,
    /// The file system of the working directory.
    pub disk: DiskInfo,
    /// Bytes read and written by the server process.
    pub io: IoInfo,
}

/// Memory figures in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryInfo {
    /// Resident set size.
    pub rss: u64,
    /// Virtual memory size.
    pub vms: u64,
    /// `rss` as a percentage of the machine's memory.
    pub percent: f64,
}

/// Disk figures in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskInfo {
    /// Size of the file system.
    pub total: u64,
    /// Bytes in use.
    pub used: u64,
    /// Bytes available to unprivileged users.
    pub free: u64,
    /// `used` as a percentage of `used + free`.
    pub percent: f64,
}

/// I/O counters in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoInfo {
    /// Bytes read from storage.
    pub read_bytes: u64,
    /// Bytes written to storage.
    pub write_bytes: u64,
}

/// Body of `POST /configure`, the one request a sandboxd started with `--await-configuration`
/// answers (sent by the runtime API service that pre-started it, with the configuration key as
/// `X-Session-API-Key`). sandboxd then re-executes itself with these arguments and this
/// environment, as if it had been started that way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigureRequest {
    /// sandboxd's command-line arguments (without the program name), e.g.
    /// `["8000", "--working-dir", "/workspace", "--host", "0.0.0.0"]`.
    pub args: Vec<String>,
    /// Environment variables added to (or replacing) sandboxd's own, `SESSION_API_KEY` included.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

/// One stdio MCP server, as `POST /update_mcp_server` lists them (a JSON array of these,
/// sorted by `name`; OpenHands posts the union of every server it has sent) and as an agent
/// host's settings name them: the program the sandbox runs, speaking MCP on its stdin and
/// stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStdioServer {
    /// Its name: letters, digits, `-` and `_`.
    pub name: String,
    /// The program: one executable, no spaces (its arguments go in `args`).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment on top of the sandbox's.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

/// Body of a `200` answer to `POST /update_mcp_server`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateMcpServerResponse {
    /// `MCP server updated successfully`.
    pub detail: String,
    /// Why servers did not start (one paragraph each, with their stderr), `""` when all did.
    pub router_error_log: String,
}

/// Request header carrying an idempotency key (a sandboxd extension): `/execute_action` and
/// `/execute_action/stream` run an action once per key within the sandbox's lifetime, and a
/// request that repeats the key gets the first answer (waiting for it while it is made). The
/// key is 1 to 255 visible ASCII characters; the same key with a different request is refused
/// with 422.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// Request header of a conditional `write` or `edit` (a sandboxd extension): the content hash
/// the caller last read (the `ETag` of a `read` answer, `"sha256:HEX"`). When the file's
/// content is no longer that, the action is refused with 412 and the file is left alone.
pub const IF_MATCH_HEADER: &str = "if-match";

/// Response header of `read` and of a successful `write` or `edit` (a sandboxd extension): the
/// file's content hash, `"sha256:HEX"` (HEX: the SHA-256 of its bytes, lower case), quoted as
/// HTTP entity tags are.
pub const ETAG_HEADER: &str = "etag";

/// One line of an NDJSON stream (a sandboxd extension): `POST /execute_action/stream` sends
/// `output` lines while the action runs, then one `observation` (the one `/execute_action`
/// would have answered) or one `error`; `GET /shells/{id}/attach` sends `output` lines and
/// `end` when the command ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Output as it was produced: whole rendered lines of a command, text of a cell.
    Output {
        /// The text.
        data: String,
        /// Bytes of output before `data` that this reader missed (it fell more than the
        /// kept output behind); absent when none.
        #[serde(default, skip_serializing_if = "is_zero")]
        skipped: u64,
    },
    /// The action's observation: the stream's last line.
    Observation {
        /// The observation, as `/execute_action` answers it.
        observation: Box<crate::Observation>,
    },
    /// The action was refused after the stream began (a failed `If-Match`, a reused key):
    /// the stream's last line, with the status `/execute_action` would have answered.
    Error {
        /// The HTTP status `/execute_action` would have answered.
        status: u16,
        /// What went wrong.
        detail: String,
    },
    /// The attached command ended: the stream's last line.
    End,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The media type of sandboxd's streams: one JSON value per line.
pub const NDJSON_CONTENT_TYPE: &str = "application/x-ndjson";

/// Body of `POST /shells` (a sandboxd extension): a new named bash shell, with its own working
/// directory, environment and history. `run` actions name it in the body of
/// `/execute_action` (`{"action": ..., "shell": ID}`); without a name they run in the
/// `default` shell, the reference's persistent session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreateShellRequest {
    /// The shell's id: 1 to 64 letters, digits, `-`, `_` and `.`; made up when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its first working directory; relative to the sandbox's working directory; that
    /// directory when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Variables exported in it, on top of the sandbox's environment.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
}

/// A bash shell as `POST /shells` and `GET /shells` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShellInfo {
    /// Its id (`default`: the main shell).
    pub id: String,
    /// Its working directory after its last command.
    pub cwd: Option<String>,
    /// Whether a command runs in it now.
    pub running: bool,
}

/// One process of the sandbox as `GET /processes` lists it (a sandboxd extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Parent's process id.
    pub ppid: u32,
    /// Process group id.
    pub pgid: u32,
    /// Real user id.
    pub uid: u32,
    /// The command line (arguments joined by spaces), or `[NAME]` when it has none.
    pub command: String,
    /// CPU use over its lifetime, in percent of one core.
    pub cpu_percent: f64,
    /// Resident memory in bytes.
    pub memory_bytes: u64,
    /// When it started, in seconds since the Unix epoch.
    pub started_at: f64,
    /// One of sandboxd's own shells or its IPython kernel (kept by `/processes/kill_all`),
    /// rather than something the agent started.
    pub sandbox: bool,
}

/// Body of `POST /processes/{pid}/signal` (a sandboxd extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalRequest {
    /// The signal.
    pub signal: SignalSpec,
    /// Also every descendant of the process.
    #[serde(default)]
    pub tree: bool,
}

/// Body of the answer of `POST /processes/{pid}/signal`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SignalResponse {
    /// The processes that were sent the signal.
    pub signaled: Vec<u32>,
}

/// A signal as a request names it: a number, or a name with or without `SIG` in any case
/// (`TERM`, `SIGKILL`, `int`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SignalSpec {
    /// Its number.
    Number(i32),
    /// Its name.
    Name(String),
}

/// Body of `POST /terminals` (a sandboxd extension): a program on a pseudo-terminal of its
/// own, as the sandbox user, for people and UIs to attach to over WebSocket
/// (`GET /terminals/{id}/ws`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreateTerminalRequest {
    /// The terminal's id (as a shell's: 1 to 64 letters, digits, `-`, `_`, `.`); made up when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The program and its arguments; an interactive login bash when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Its working directory, relative to the sandbox's; that directory when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Variables on top of the sandbox's environment.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// Columns (default 80).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cols: Option<u16>,
    /// Rows (default 24).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u16>,
}

/// A terminal as `POST /terminals` and `GET /terminals` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerminalInfo {
    /// Its id.
    pub id: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The program's pid.
    pub pid: u32,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// The program's exit status once it ended (128 + N for signal N).
    pub exit_code: Option<i64>,
}

/// A text message a client sends on a terminal's WebSocket (binary messages are input bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TerminalInput {
    /// Text typed into the terminal.
    Input {
        /// The text.
        data: String,
    },
    /// The terminal's new size.
    Resize {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// A signal to the terminal's foreground process group.
    Signal {
        /// The signal.
        signal: SignalSpec,
    },
}

/// A text message sandboxd sends on a terminal's WebSocket (binary messages are output
/// bytes; the scroll-back first, then live output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TerminalEvent {
    /// Output this client missed: older than the scroll-back, or it fell that far behind.
    Skipped {
        /// How many bytes.
        bytes: u64,
    },
    /// The program ended and all its output was sent: the last message.
    Exit {
        /// Its exit status (128 + N for signal N).
        code: i64,
    },
    /// A message of the client's was refused; the connection stays.
    Error {
        /// Why.
        detail: String,
    },
}
