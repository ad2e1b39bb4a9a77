//! Observations: what the environment answers to an action.
//!
//! JSON shape: `{"id"?, "timestamp"?, "source"?, "message", "cause"?, "observation": TYPE,
//! "tool_call_metadata"?, "llm_metrics"?, "extras": {...}, "content", "success"?}`. OpenHands'
//! client turns every `extras` key into a constructor keyword, so each extras struct has exactly
//! the reference's key set: adding a key breaks the client for every type except `run`.

use serde::{Deserialize, Serialize};

use crate::event::{EventSource, ToolCallMetadata};

/// One observation event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Event id in the stream; absent when not yet stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// ISO-8601 time the event was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Who produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EventSource>,
    /// A one-line description for people.
    #[serde(default)]
    pub message: String,
    /// Id of the action this observation answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<i64>,
    /// The observation type (`observation`) and its extras (`extras`).
    #[serde(flatten)]
    pub kind: ObservationKind,
    /// The tool call of the action this observation answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_metadata: Option<ToolCallMetadata>,
    /// LLM token and cost figures, kept opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_metrics: Option<serde_json::Value>,
    /// The text the agent reads.
    #[serde(default)]
    pub content: String,
    /// Whether a command succeeded; only `run` and `run_ipython` carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
}

impl Observation {
    /// An observation of `kind` with `content`, not yet stored: no id, time, source, cause,
    /// message or `success`.
    pub fn new(kind: ObservationKind, content: impl Into<String>) -> Observation {
        Observation {
            id: None,
            timestamp: None,
            source: None,
            message: String::new(),
            cause: None,
            kind,
            tool_call_metadata: None,
            llm_metrics: None,
            content: content.into(),
            success: None,
        }
    }
}

/// The observation type with its extras.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "observation", content = "extras", rename_all = "snake_case")]
#[allow(
    missing_docs,
    reason = "each variant is named after its wire type and documented on its extras"
)]
pub enum ObservationKind {
    Run(CmdOutputExtras),
    RunIpython(IPythonRunCellExtras),
    Read(FileReadExtras),
    Write(FileWriteExtras),
    Edit(FileEditExtras),
    Error(ErrorExtras),
    AgentStateChanged(AgentStateChangedExtras),
    Null(EmptyExtras),
    Think(EmptyExtras),
    Success(EmptyExtras),
    UserRejected(EmptyExtras),
    Recall(RecallExtras),
    /// A summary of forgotten events (OpenHands' `AgentCondensationObservation`): never in a
    /// stream, only in the view an agent builds from a `condensation` action's `summary`.
    Condense(EmptyExtras),
    /// The answer to a `call_tool_mcp` action (OpenHands' `MCPObservation`); `content` is the
    /// tool's result as JSON (docs/protocol.md §13).
    Mcp(McpExtras),
    /// The answer to `browse` and `browse_interactive` (OpenHands' `BrowserOutputObservation`;
    /// docs/protocol.md §14).
    Browse(BrowserOutputExtras),
    /// The answer to a `delegate` action (OpenHands' `AgentDelegateObservation`): what the
    /// delegate finished with.
    Delegate(DelegateExtras),
    /// The answer to a `task_tracking` action (OpenHands' `TaskTrackingObservation`).
    TaskTracking(TaskTrackingExtras),
}

/// Extras of a `task_tracking` observation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskTrackingExtras {
    /// `view` or `plan`.
    pub command: String,
    /// The tasks a `plan` set (`[]` for `view`).
    pub task_list: Vec<serde_json::Value>,
}

/// Extras of a `delegate` observation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DelegateExtras {
    /// The delegate's outputs (its `finish` or `reject` outputs).
    pub outputs: serde_json::Map<String, serde_json::Value>,
}

impl ObservationKind {
    /// The wire type (`observation` value).
    pub fn type_name(&self) -> &'static str {
        match self {
            ObservationKind::Run(_) => "run",
            ObservationKind::RunIpython(_) => "run_ipython",
            ObservationKind::Read(_) => "read",
            ObservationKind::Write(_) => "write",
            ObservationKind::Edit(_) => "edit",
            ObservationKind::Error(_) => "error",
            ObservationKind::AgentStateChanged(_) => "agent_state_changed",
            ObservationKind::Null(_) => "null",
            ObservationKind::Think(_) => "think",
            ObservationKind::Success(_) => "success",
            ObservationKind::UserRejected(_) => "user_rejected",
            ObservationKind::Recall(_) => "recall",
            ObservationKind::Condense(_) => "condense",
            ObservationKind::Mcp(_) => "mcp",
            ObservationKind::Browse(_) => "browse",
            ObservationKind::Delegate(_) => "delegate",
            ObservationKind::TaskTracking(_) => "task_tracking",
        }
    }
}

/// Extras of a `run` observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmdOutputExtras {
    /// The command as received (after whitespace trimming).
    pub command: String,
    /// What the shell reported.
    pub metadata: CmdOutputMetadata,
    /// Echo of the action's `hidden`.
    #[serde(default)]
    pub hidden: bool,
    /// sandboxd's own addition: a file in the sandbox holding the command's whole output, so
    /// nothing is lost to truncation. The `run` constructor accepts extra keywords.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// What the shell reported about a command; defaults mean "not finished".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmdOutputMetadata {
    /// `$?`, or −1 while running.
    pub exit_code: i64,
    /// `$!`: the most recent background job, or −1.
    pub pid: i64,
    /// `\u` of the shell.
    pub username: Option<String>,
    /// `\h` of the shell.
    pub hostname: Option<String>,
    /// The shell's working directory after the command.
    pub working_dir: Option<String>,
    /// `which python`, or `""` when there is none.
    pub py_interpreter_path: Option<String>,
    /// Text shown before `content` (continuation and truncation notices).
    pub prefix: String,
    /// Text shown after `content` (exit code and timeout notices).
    pub suffix: String,
}

impl Default for CmdOutputMetadata {
    fn default() -> Self {
        CmdOutputMetadata {
            exit_code: -1,
            pid: -1,
            username: None,
            hostname: None,
            working_dir: None,
            py_interpreter_path: None,
            prefix: String::new(),
            suffix: String::new(),
        }
    }
}

/// Extras of a `run_ipython` observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IPythonRunCellExtras {
    /// The cell's code.
    pub code: String,
    /// `data:image/png;base64,...` URLs of displayed images, or null when none.
    pub image_urls: Option<Vec<String>>,
}

/// Extras of a `read` observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileReadExtras {
    /// The path read (absolute in default mode, as given with `oh_aci`).
    pub path: String,
    /// `default` or `oh_aci`.
    pub impl_source: crate::action::FileReadSource,
}

/// Extras of a `write` observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileWriteExtras {
    /// The absolute path written.
    pub path: String,
}

/// Extras of an `edit` observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEditExtras {
    /// The path, as given.
    pub path: String,
    /// Always false in the reference.
    pub prev_exist: bool,
    /// The action's `old_str`.
    pub old_content: Option<String>,
    /// The action's `new_str`.
    pub new_content: Option<String>,
    /// Always `oh_aci`.
    pub impl_source: String,
    /// Unified diff (zero context) of the file before and after; `""` when nothing changed.
    pub diff: Option<String>,
    /// Always null.
    #[serde(rename = "_diff_cache")]
    pub diff_cache: Option<serde_json::Value>,
}

/// Extras of an `error` observation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErrorExtras {
    /// A machine-readable error id, `""` when none.
    pub error_id: String,
}

/// Extras of an `agent_state_changed` observation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentStateChangedExtras {
    /// The new state's wire name.
    pub agent_state: String,
    /// Why, when known.
    #[serde(default)]
    pub reason: String,
}

/// Extras of an `mcp` observation: the call it answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpExtras {
    /// The tool's name.
    pub name: String,
    /// The call's arguments.
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// Extras of a `browse` observation, in the reference's key order (its client passes each key to
/// `BrowserOutputObservation`'s constructor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowserOutputExtras {
    /// The page's URL after the step.
    pub url: String,
    /// `browse` or `browse_interactive`.
    pub trigger_by_action: String,
    /// The viewport as a `data:image/png;base64,` URL.
    pub screenshot: String,
    /// Where the screenshot was saved; sandboxd leaves no files behind, so always null.
    pub screenshot_path: Option<String>,
    /// The screenshot with each interactive element's bid drawn on it (data URL), or empty.
    pub set_of_marks: String,
    /// Whether the last browser action failed (`last_browser_action_error` is not empty).
    pub error: bool,
    /// Images of the goal (BrowserGym benchmarks only; always empty).
    pub goal_image_urls: Vec<serde_json::Value>,
    /// The URLs of the open tabs.
    pub open_pages_urls: Vec<String>,
    /// Which of them is active.
    pub active_page_index: i64,
    /// The DOM snapshot (with `return_axtree` only).
    pub dom_object: serde_json::Value,
    /// The raw accessibility tree, each node with its `browsergym_id` (with `return_axtree`).
    pub axtree_object: serde_json::Value,
    /// Per bid: visibility, bounding box, clickable, set of marks (with `return_axtree`).
    pub extra_element_properties: serde_json::Value,
    /// The action text that ran last.
    pub last_browser_action: String,
    /// Why it failed (`TYPE: message`, as BrowserGym reports), or empty.
    pub last_browser_action_error: String,
    /// The bid of the element that has the focus, or empty.
    pub focused_element_bid: String,
    /// Whether the tree in `content` shows only the visible part of the page.
    pub filter_visible_only: bool,
}

impl Default for BrowserOutputExtras {
    fn default() -> Self {
        BrowserOutputExtras {
            url: String::new(),
            trigger_by_action: String::new(),
            screenshot: String::new(),
            screenshot_path: None,
            set_of_marks: String::new(),
            error: false,
            goal_image_urls: Vec::new(),
            open_pages_urls: Vec::new(),
            active_page_index: -1,
            dom_object: serde_json::Value::Object(serde_json::Map::new()),
            axtree_object: serde_json::Value::Object(serde_json::Map::new()),
            extra_element_properties: serde_json::Value::Object(serde_json::Map::new()),
            last_browser_action: String::new(),
            last_browser_action_error: String::new(),
            focused_element_bid: String::new(),
            filter_visible_only: false,
        }
    }
}

/// Extras of observations that carry none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyExtras {}

/// Extras of a `recall` observation: what the memory found for a `recall` action (workspace
/// context at the start of a task, or microagent knowledge triggered by a message).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecallExtras {
    /// `workspace_context` or `knowledge`.
    pub recall_type: String,
    /// Repository name, when a repository is checked out.
    pub repo_name: String,
    /// Where the repository is.
    pub repo_directory: String,
    /// The branch checked out, when known.
    pub repo_branch: String,
    /// The repository's instructions (its microagent).
    pub repo_instructions: String,
    /// Hosts the runtime exposes, with their ports.
    pub runtime_hosts: serde_json::Map<String, serde_json::Value>,
    /// Extra instructions for the agent.
    pub additional_agent_instructions: String,
    /// Today's date.
    pub date: String,
    /// Descriptions of secrets the agent may use.
    pub custom_secrets_descriptions: serde_json::Map<String, serde_json::Value>,
    /// Instructions for this conversation.
    pub conversation_instructions: String,
    /// The sandbox's working directory.
    pub working_dir: String,
    /// Triggered microagents: `[{"name", "trigger", "content"}]`.
    pub microagent_knowledge: Vec<serde_json::Value>,
}
