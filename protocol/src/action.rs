//! Actions: what an agent (or user) asks for. Runnable ones travel to sandboxd in
//! `POST /execute_action`; the others live only in the host's event stream.
//!
//! JSON shape: `{"id"?, "timestamp"?, "source"?, "message"?, "cause"?, "action": TYPE,
//! "tool_call_metadata"?, "llm_metrics"?, "args": {...}, "timeout"?}`. Unknown keys, in `args` and
//! at the top level, are ignored on decode.

use serde::{Deserialize, Serialize};

use crate::event::{EventSource, ToolCallMetadata};

/// One action event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Event id in the stream; absent when not yet stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// ISO-8601 time the event was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Who produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EventSource>,
    /// A one-line description for people (`Running command: ls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Id of the event that caused this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<i64>,
    /// The action type (`action`) and its arguments (`args`).
    #[serde(flatten)]
    pub kind: ActionKind,
    /// The LLM tool call this action came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_metadata: Option<ToolCallMetadata>,
    /// Token and cost figures of the LLM call behind the action, kept opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_metrics: Option<serde_json::Value>,
    /// Hard timeout in seconds; `None` means no limit (docs/protocol.md §3.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Whether the user confirmed a runnable action whose args have no `confirmation_state`
    /// (every one but `run` and `run_ipython`): agentd's key, which the reference (and
    /// sandboxd) ignore. Absent means confirmed. Read and set it through
    /// [`Action::confirmation_state`] and [`Action::set_confirmation_state`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_state: Option<ConfirmationState>,
}

impl From<ActionKind> for Action {
    fn from(kind: ActionKind) -> Self {
        Action {
            id: None,
            timestamp: None,
            source: None,
            message: None,
            cause: None,
            kind,
            tool_call_metadata: None,
            llm_metrics: None,
            timeout: None,
            confirmation_state: None,
        }
    }
}

impl Action {
    /// Whether the user confirmed this action: `run` and `run_ipython` say so in their args
    /// (as the reference does), the other types in the top-level `confirmation_state`.
    pub fn confirmation_state(&self) -> ConfirmationState {
        match &self.kind {
            ActionKind::Run(args) => args.confirmation_state,
            ActionKind::RunIpython(args) => args.confirmation_state,
            _ => self.confirmation_state.unwrap_or_default(),
        }
    }

    /// Sets [`Action::confirmation_state`] where the action's type keeps it.
    pub fn set_confirmation_state(&mut self, state: ConfirmationState) {
        match &mut self.kind {
            ActionKind::Run(args) => args.confirmation_state = state,
            ActionKind::RunIpython(args) => args.confirmation_state = state,
            _ => self.confirmation_state = (state != ConfirmationState::Confirmed).then_some(state),
        }
    }
}

/// Every action type the protocol knows, runnable in a sandbox or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs, reason = "the variant names are the wire names")]
pub enum ActionType {
    Null,
    Run,
    RunIpython,
    Browse,
    BrowseInteractive,
    Read,
    Write,
    Edit,
    Think,
    Finish,
    Reject,
    Delegate,
    Recall,
    ChangeAgentState,
    Message,
    System,
    Condensation,
    CondensationRequest,
    #[serde(rename = "call_tool_mcp")]
    Mcp,
    TaskTracking,
    LoopRecovery,
}

impl ActionType {
    /// All types, in the order the reference lists them.
    pub const ALL: [ActionType; 21] = [
        ActionType::Null,
        ActionType::Run,
        ActionType::RunIpython,
        ActionType::Browse,
        ActionType::BrowseInteractive,
        ActionType::Read,
        ActionType::Write,
        ActionType::Edit,
        ActionType::Think,
        ActionType::Finish,
        ActionType::Reject,
        ActionType::Delegate,
        ActionType::Recall,
        ActionType::ChangeAgentState,
        ActionType::Message,
        ActionType::System,
        ActionType::Condensation,
        ActionType::CondensationRequest,
        ActionType::Mcp,
        ActionType::TaskTracking,
        ActionType::LoopRecovery,
    ];

    /// The wire name (`"run_ipython"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionType::Null => "null",
            ActionType::Run => "run",
            ActionType::RunIpython => "run_ipython",
            ActionType::Browse => "browse",
            ActionType::BrowseInteractive => "browse_interactive",
            ActionType::Read => "read",
            ActionType::Write => "write",
            ActionType::Edit => "edit",
            ActionType::Think => "think",
            ActionType::Finish => "finish",
            ActionType::Reject => "reject",
            ActionType::Delegate => "delegate",
            ActionType::Recall => "recall",
            ActionType::ChangeAgentState => "change_agent_state",
            ActionType::Message => "message",
            ActionType::System => "system",
            ActionType::Condensation => "condensation",
            ActionType::CondensationRequest => "condensation_request",
            ActionType::Mcp => "call_tool_mcp",
            ActionType::TaskTracking => "task_tracking",
            ActionType::LoopRecovery => "loop_recovery",
        }
    }

    /// Whether actions of this type are runnable: they go to a sandbox, which answers each with
    /// one observation. The runnable types are `run`, `run_ipython`, `read`, `write`, `edit`,
    /// `browse`, `browse_interactive` and `call_tool_mcp`; the others (`think`, `message`,
    /// `finish`, ...) live only in the agent host's event stream. agentd's runtime executes
    /// exactly the runnable ones (it answers any other with an error observation), and its
    /// controller waits for a runnable action's observation before the next step.
    ///
    /// `call_tool_mcp` is runnable but never sent to a sandbox: the agent host calls the MCP
    /// tool itself (stdio servers run in the sandbox, behind its MCP proxy) and answers with
    /// an `mcp` observation. sandboxd refuses it in `/execute_action` as the reference does, as
    /// it refuses a non-runnable type (HTTP 500, `'ActionExecutor' object has no attribute
    /// 'call_tool_mcp'`).
    ///
    /// [`ActionKind::is_runnable`] is the same predicate on a decoded action; this one exists
    /// for a server that must decide before it decodes the arguments.
    pub const fn is_runnable(self) -> bool {
        matches!(
            self,
            ActionType::Run
                | ActionType::RunIpython
                | ActionType::Read
                | ActionType::Write
                | ActionType::Edit
                | ActionType::Browse
                | ActionType::BrowseInteractive
                | ActionType::Mcp
        )
    }

    /// Whether sandboxd runs an action of this type: every runnable type but `call_tool_mcp`,
    /// which the host runs itself ([`ActionType::is_runnable`]).
    pub const fn runs_in_sandbox(self) -> bool {
        self.is_runnable() && !matches!(self, ActionType::Mcp)
    }
}

/// The action type with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "args", rename_all = "snake_case")]
#[allow(
    missing_docs,
    reason = "each variant is named after its wire type and documented on its args"
)]
pub enum ActionKind {
    Run(CmdRunArgs),
    RunIpython(IPythonRunCellArgs),
    Read(FileReadArgs),
    Write(FileWriteArgs),
    Edit(FileEditArgs),
    Browse(BrowseUrlArgs),
    BrowseInteractive(BrowseInteractiveArgs),
    Message(MessageArgs),
    System(SystemMessageArgs),
    Think(ThinkArgs),
    Finish(FinishArgs),
    Reject(RejectArgs),
    Delegate(DelegateArgs),
    Recall(RecallArgs),
    ChangeAgentState(ChangeAgentStateArgs),
    Null(EmptyArgs),
    Condensation(CondensationArgs),
    CondensationRequest(EmptyArgs),
    #[serde(rename = "call_tool_mcp")]
    Mcp(McpArgs),
    TaskTracking(TaskTrackingArgs),
    LoopRecovery(LoopRecoveryArgs),
}

impl ActionKind {
    /// Whether this action is runnable: it goes to a sandbox, which answers it with one
    /// observation. The set of runnable types, and the one of them the host runs itself
    /// (`call_tool_mcp`), are documented on [`ActionType::is_runnable`], the single definition.
    pub const fn is_runnable(&self) -> bool {
        self.action_type().is_runnable()
    }

    /// The risk estimate of an action whose args carry one (`run`, `run_ipython`, `read`,
    /// `write`, `edit`, `call_tool_mcp`).
    pub const fn security_risk(&self) -> Option<SecurityRisk> {
        match self {
            ActionKind::Run(a) => Some(a.security_risk),
            ActionKind::RunIpython(a) => Some(a.security_risk),
            ActionKind::Read(a) => Some(a.security_risk),
            ActionKind::Write(a) => Some(a.security_risk),
            ActionKind::Edit(a) => Some(a.security_risk),
            ActionKind::Mcp(a) => Some(a.security_risk),
            _ => None,
        }
    }

    /// Sets the risk estimate of an action whose args carry one; the others are left as they
    /// are.
    pub fn set_security_risk(&mut self, risk: SecurityRisk) {
        match self {
            ActionKind::Run(a) => a.security_risk = risk,
            ActionKind::RunIpython(a) => a.security_risk = risk,
            ActionKind::Read(a) => a.security_risk = risk,
            ActionKind::Write(a) => a.security_risk = risk,
            ActionKind::Edit(a) => a.security_risk = risk,
            ActionKind::Mcp(a) => a.security_risk = risk,
            _ => {}
        }
    }

    /// The wire type of this action.
    pub const fn action_type(&self) -> ActionType {
        match self {
            ActionKind::Run(_) => ActionType::Run,
            ActionKind::RunIpython(_) => ActionType::RunIpython,
            ActionKind::Read(_) => ActionType::Read,
            ActionKind::Write(_) => ActionType::Write,
            ActionKind::Edit(_) => ActionType::Edit,
            ActionKind::Browse(_) => ActionType::Browse,
            ActionKind::BrowseInteractive(_) => ActionType::BrowseInteractive,
            ActionKind::Message(_) => ActionType::Message,
            ActionKind::System(_) => ActionType::System,
            ActionKind::Think(_) => ActionType::Think,
            ActionKind::Finish(_) => ActionType::Finish,
            ActionKind::Reject(_) => ActionType::Reject,
            ActionKind::Delegate(_) => ActionType::Delegate,
            ActionKind::Recall(_) => ActionType::Recall,
            ActionKind::ChangeAgentState(_) => ActionType::ChangeAgentState,
            ActionKind::Null(_) => ActionType::Null,
            ActionKind::Condensation(_) => ActionType::Condensation,
            ActionKind::CondensationRequest(_) => ActionType::CondensationRequest,
            ActionKind::Mcp(_) => ActionType::Mcp,
            ActionKind::TaskTracking(_) => ActionType::TaskTracking,
            ActionKind::LoopRecovery(_) => ActionType::LoopRecovery,
        }
    }
}

/// Whether the user confirmed a risky action.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationState {
    /// Confirmed (the default): run it.
    #[default]
    Confirmed,
    /// Rejected by the user; the host never sends it.
    Rejected,
    /// Waiting for the user; the host never sends it.
    AwaitingConfirmation,
}

/// The security analyser's risk estimate: −1 unknown, 0 low, 1 medium, 2 high.
pub type SecurityRisk = i64;

const fn unknown_risk() -> SecurityRisk {
    -1
}
const fn yes() -> bool {
    true
}
const fn minus_one() -> i64 {
    -1
}
const fn one() -> i64 {
    1
}
fn oh_aci() -> String {
    "oh_aci".to_owned()
}

/// `run`: a bash command in the sandbox's persistent shell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmdRunArgs {
    /// The command; `""` fetches more output of the running command.
    pub command: String,
    /// Send `command` as input to the running program instead of running it.
    #[serde(default)]
    pub is_input: bool,
    /// The agent's reasoning.
    #[serde(default)]
    pub thought: String,
    /// When true, the no-output timeout does not apply; only `timeout`.
    #[serde(default)]
    pub blocking: bool,
    /// Run in a fresh shell that does not touch the main session.
    #[serde(default)]
    pub is_static: bool,
    /// Working directory of an `is_static` command.
    #[serde(default)]
    pub cwd: Option<String>,
    /// An internal command of the host: no truncation, `extras.hidden` true.
    #[serde(default)]
    pub hidden: bool,
    /// Confirmation state.
    #[serde(default)]
    pub confirmation_state: ConfirmationState,
    /// Risk estimate.
    #[serde(default = "unknown_risk")]
    pub security_risk: SecurityRisk,
}

impl CmdRunArgs {
    /// A plain command with every other argument at its default.
    pub fn new(command: impl Into<String>) -> Self {
        CmdRunArgs {
            command: command.into(),
            is_input: false,
            thought: String::new(),
            blocking: false,
            is_static: false,
            cwd: None,
            hidden: false,
            confirmation_state: ConfirmationState::Confirmed,
            security_risk: -1,
        }
    }
}

/// `run_ipython`: a cell in the sandbox's IPython kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IPythonRunCellArgs {
    /// The cell's code.
    pub code: String,
    /// The agent's reasoning.
    #[serde(default)]
    pub thought: String,
    /// Append the working directory and interpreter lines to the output.
    #[serde(default = "yes")]
    pub include_extra: bool,
    /// Confirmation state.
    #[serde(default)]
    pub confirmation_state: ConfirmationState,
    /// Risk estimate.
    #[serde(default = "unknown_risk")]
    pub security_risk: SecurityRisk,
    /// Unused by the server.
    #[serde(default)]
    pub kernel_init_code: String,
}

impl IPythonRunCellArgs {
    /// A cell of `code` with every other argument at its default (the working directory and
    /// interpreter lines included).
    pub fn new(code: impl Into<String>) -> Self {
        IPythonRunCellArgs {
            code: code.into(),
            thought: String::new(),
            include_extra: yes(),
            confirmation_state: ConfirmationState::Confirmed,
            security_risk: unknown_risk(),
            kernel_init_code: String::new(),
        }
    }
}

/// Which implementation serves a `read` or `edit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileReadSource {
    /// Plain line-range read.
    #[default]
    Default,
    /// The `oh_aci` editor's `view`.
    OhAci,
}

/// `read`: a file's lines, or the editor's view of a file or directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileReadArgs {
    /// The path; relative paths resolve against the shell's working directory (default mode).
    pub path: String,
    /// First line, 0-based.
    #[serde(default)]
    pub start: i64,
    /// End line, exclusive; −1 means to the end.
    #[serde(default = "minus_one")]
    pub end: i64,
    /// The agent's reasoning.
    #[serde(default)]
    pub thought: String,
    /// Which implementation reads.
    #[serde(default)]
    pub impl_source: FileReadSource,
    /// `[first, last]` lines, 1-based, for `oh_aci`.
    #[serde(default)]
    pub view_range: Option<Vec<i64>>,
    /// Risk estimate.
    #[serde(default = "unknown_risk")]
    pub security_risk: SecurityRisk,
}

impl FileReadArgs {
    /// A whole-file read with every other argument at its default.
    pub fn new(path: impl Into<String>) -> Self {
        FileReadArgs {
            path: path.into(),
            start: 0,
            end: -1,
            thought: String::new(),
            impl_source: FileReadSource::Default,
            view_range: None,
            security_risk: -1,
        }
    }
}

/// `write`: replace a file's lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileWriteArgs {
    /// The path; relative paths resolve against the shell's working directory.
    pub path: String,
    /// The text to write.
    pub content: String,
    /// First line replaced, 0-based.
    #[serde(default)]
    pub start: i64,
    /// End of the replaced lines, exclusive; −1 means to the end.
    #[serde(default = "minus_one")]
    pub end: i64,
    /// The agent's reasoning.
    #[serde(default)]
    pub thought: String,
    /// Risk estimate.
    #[serde(default = "unknown_risk")]
    pub security_risk: SecurityRisk,
}

impl FileWriteArgs {
    /// A whole-file write with every other argument at its default.
    pub fn new(path: impl Into<String>, content: impl Into<String>) -> Self {
        FileWriteArgs {
            path: path.into(),
            content: content.into(),
            start: 0,
            end: -1,
            thought: String::new(),
            security_risk: -1,
        }
    }
}

/// `edit`: one command of the `oh_aci` file editor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEditArgs {
    /// Absolute path of the file or directory.
    pub path: String,
    /// `view`, `create`, `str_replace`, `insert` or `undo_edit`; kept as text so that an unknown
    /// command gets the editor's own message.
    #[serde(default)]
    pub command: String,
    /// Content of a `create`.
    #[serde(default)]
    pub file_text: Option<String>,
    /// Text to replace (`str_replace`).
    #[serde(default)]
    pub old_str: Option<String>,
    /// Replacement (`str_replace`) or inserted text (`insert`).
    #[serde(default)]
    pub new_str: Option<String>,
    /// Line after which `insert` inserts: an integer, or a string holding one.
    #[serde(default)]
    pub insert_line: Option<serde_json::Value>,
    /// Content for the LLM-based editor (unused here).
    #[serde(default)]
    pub content: String,
    /// Start line for the LLM-based editor (unused here).
    #[serde(default = "one")]
    pub start: i64,
    /// End line for the LLM-based editor (unused here).
    #[serde(default = "minus_one")]
    pub end: i64,
    /// The agent's reasoning.
    #[serde(default)]
    pub thought: String,
    /// Must be `oh_aci` in a sandbox.
    #[serde(default = "oh_aci")]
    pub impl_source: String,
    /// `[first, last]` lines of a `view`.
    #[serde(default)]
    pub view_range: Option<Vec<i64>>,
    /// Risk estimate.
    #[serde(default = "unknown_risk")]
    pub security_risk: SecurityRisk,
}

impl FileEditArgs {
    /// An editor command on `path` with every argument empty.
    pub fn new(path: impl Into<String>, command: impl Into<String>) -> Self {
        FileEditArgs {
            path: path.into(),
            command: command.into(),
            file_text: None,
            old_str: None,
            new_str: None,
            insert_line: None,
            content: String::new(),
            start: 1,
            end: -1,
            thought: String::new(),
            impl_source: oh_aci(),
            view_range: None,
            security_risk: -1,
        }
    }
}

/// `browse`: open a URL (not supported by sandboxd).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowseUrlArgs {
    /// The URL.
    pub url: String,
    /// Return the accessibility tree.
    pub return_axtree: bool,
    /// The agent's reasoning.
    pub thought: String,
}

/// `browse_interactive`: browser actions (not supported by sandboxd).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowseInteractiveArgs {
    /// BrowserGym action text.
    pub browser_actions: String,
    /// Message for the user.
    pub browsergym_send_msg_to_user: String,
    /// Return the accessibility tree.
    pub return_axtree: bool,
    /// The agent's reasoning.
    pub thought: String,
}

/// `message`: text between user and agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MessageArgs {
    /// The text.
    pub content: String,
    /// Attached images.
    pub image_urls: Option<Vec<String>>,
    /// Attached files.
    pub file_urls: Option<Vec<String>>,
    /// Whether the agent now waits for the user.
    pub wait_for_response: bool,
}

/// `system`: the system prompt and tools the agent was given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SystemMessageArgs {
    /// The system prompt.
    pub content: String,
    /// Tool schemas.
    pub tools: Option<Vec<serde_json::Value>>,
    /// Version of the host.
    pub openhands_version: Option<String>,
    /// Agent class name.
    pub agent_class: Option<String>,
}

/// `think`: a thought logged by the agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThinkArgs {
    /// The thought.
    pub thought: String,
}

/// `finish`: the agent says the task is done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FinishArgs {
    /// The closing message.
    pub final_thought: String,
    /// Structured outputs.
    pub outputs: serde_json::Map<String, serde_json::Value>,
    /// The agent's reasoning.
    pub thought: String,
}

/// `reject`: the agent refuses the task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RejectArgs {
    /// Structured outputs.
    pub outputs: serde_json::Map<String, serde_json::Value>,
    /// The agent's reasoning.
    pub thought: String,
}

/// `delegate`: hand a sub-task to another agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DelegateArgs {
    /// Agent class.
    pub agent: String,
    /// Its inputs.
    pub inputs: serde_json::Map<String, serde_json::Value>,
    /// The agent's reasoning.
    pub thought: String,
}

/// `recall`: ask memory for knowledge (workspace context, microagents).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecallArgs {
    /// `workspace_context` or `knowledge`.
    pub recall_type: String,
    /// The text to match.
    pub query: String,
    /// The agent's reasoning.
    pub thought: String,
}

/// `change_agent_state`: the agent asks for a new state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChangeAgentStateArgs {
    /// The new state's wire name.
    pub agent_state: String,
    /// The agent's reasoning.
    pub thought: String,
}

/// Arguments of actions that take none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyArgs {}

/// `condensation`: part of the history is forgotten, optionally replaced by a summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CondensationArgs {
    /// Ids of forgotten events.
    pub forgotten_event_ids: Option<Vec<i64>>,
    /// First forgotten id of a range.
    pub forgotten_events_start_id: Option<i64>,
    /// Last forgotten id of a range.
    pub forgotten_events_end_id: Option<i64>,
    /// The summary that replaces them.
    pub summary: Option<String>,
    /// Where in the history the summary goes.
    pub summary_offset: Option<i64>,
}

/// `call_tool_mcp`: a call of an MCP tool. The agent host calls it (the sandbox never sees
/// it), and answers with an `mcp` observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpArgs {
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// The agent's reasoning.
    pub thought: String,
    /// Risk estimate.
    pub security_risk: SecurityRisk,
}

impl Default for McpArgs {
    fn default() -> Self {
        McpArgs {
            name: String::new(),
            arguments: serde_json::Map::new(),
            thought: String::new(),
            security_risk: unknown_risk(),
        }
    }
}

/// `task_tracking`: the agent's task list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskTrackingArgs {
    /// `view` or `plan`.
    pub command: String,
    /// The tasks.
    pub task_list: Vec<serde_json::Value>,
    /// The agent's reasoning.
    pub thought: String,
}

/// `loop_recovery`: how to get out of a detected loop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopRecoveryArgs {
    /// The option chosen.
    pub option: i64,
}
