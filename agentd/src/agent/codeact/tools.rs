//! The CodeAct agent's tools: their names, descriptions and JSON schemas, as the model sees
//! them. The descriptions are written for the model: what the tool does, what the sandbox
//! answers, and how to recover from the usual mistakes (a command that does not end, an
//! `old_str` that is not unique). The sandbox's own tools (`execute_bash`,
//! `execute_ipython_cell`, `str_replace_editor`) are `sandbox_common`'s, which sandboxd's MCP
//! server offers too; `think` and `finish` are the agent's.

use protocol::llm::Tool;
use serde_json::{Value, json};

/// Logs a thought.
pub(crate) const THINK: &str = "think";
/// Ends the task.
pub(crate) const FINISH: &str = "finish";
/// Runs BrowserGym actions in the sandbox's browser.
pub(crate) const BROWSER: &str = "browser";

/// Searches file contents (`ReadOnlyAgent`).
pub(crate) const GREP: &str = "grep";
/// Finds files by name (`ReadOnlyAgent`).
pub(crate) const GLOB: &str = "glob";
/// Views a file or directory (`ReadOnlyAgent`).
pub(crate) const VIEW: &str = "view";
/// Asks for the history to be condensed.
pub(crate) const REQUEST_CONDENSATION: &str = "request_condensation";
/// Plans and views the agent's task list.
pub(crate) const TASK_TRACKER: &str = "task_tracker";
/// Hands a sub-task to another agent.
pub(crate) const DELEGATE: &str = "delegate_to_agent";

/// Which tools the agent offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSet {
    /// Offer `execute_ipython_cell` (the sandbox needs a Python with ipykernel).
    pub ipython: bool,
    /// Offer `think`.
    pub think: bool,
    /// Offer `browser` (the sandbox needs Chromium: the image from `images/browser/build.sh`).
    pub browser: bool,
    /// Offer `delegate_to_agent` (the run can start delegates).
    pub delegate: bool,
    /// Offer `task_tracker`.
    pub task_tracker: bool,
    /// Offer `request_condensation`.
    pub condensation_request: bool,
}

impl Default for ToolSet {
    fn default() -> ToolSet {
        ToolSet {
            ipython: true,
            think: true,
            browser: false,
            delegate: false,
            task_tracker: false,
            condensation_request: false,
        }
    }
}

/// What an agent built on the CodeAct loop may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolProfile {
    /// The CodeAct agent: the sandbox's tools (bash, IPython, the editor).
    #[default]
    CodeAct,
    /// `ReadOnlyAgent`: `think`, `finish`, `grep`, `glob`, `view`; it can never write.
    ReadOnly,
    /// `LocAgent`: `finish` and its code searches (`search_code_snippets`,
    /// `get_entity_contents`, `explore_tree_structure`); it can never write.
    Loc,
}

/// The tools of `profile` (and `set`, for the CodeAct agent), in the order the model sees them.
pub(crate) fn tools_of(profile: ToolProfile, set: ToolSet) -> Vec<Tool> {
    match profile {
        ToolProfile::CodeAct => tools(set),
        ToolProfile::ReadOnly => vec![think(), finish(), grep(), glob(), view()],
        ToolProfile::Loc => std::iter::once(finish())
            .chain(crate::agent::loc::tools())
            .collect(),
    }
}

/// The CodeAct agent's tools of `set`, in the order the model sees them.
pub(crate) fn tools(set: ToolSet) -> Vec<Tool> {
    let mut tools: Vec<Tool> = sandbox_common::sandbox_tools(set.ipython)
        .into_iter()
        .map(|spec| {
            Tool::function(
                spec.name,
                spec.description,
                with_security_risk(spec.parameters),
            )
        })
        .collect();
    if set.think {
        tools.push(think());
    }
    if set.task_tracker {
        tools.push(task_tracker());
    }
    if set.condensation_request {
        tools.push(Tool::function(
            REQUEST_CONDENSATION,
            "Ask for the conversation history to be condensed (summarised or shortened) when it \
             has grown long and much of it no longer matters. Takes no arguments.",
            json!({"type": "object", "properties": {}}),
        ));
    }
    if set.delegate {
        tools.push(delegate());
    }
    tools.push(finish());
    if set.browser {
        tools.push(browser());
    }
    tools
}

fn grep() -> Tool {
    Tool::function(
        GREP,
        "Search file contents for a regular expression (ripgrep, case-insensitive). Returns the \
         paths of the matching files, most recently modified first, at most 100.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression."},
                "path": {"type": "string", "description": "The directory to search (default: the current one)."},
                "include": {"type": "string", "description": "Only files matching this glob, e.g. `*.py`."}
            },
            "required": ["pattern"]
        }),
    )
}

fn glob() -> Tool {
    Tool::function(
        GLOB,
        "Find files whose path matches a glob pattern (e.g. `**/*.rs`). Returns the paths, most \
         recently modified first, at most 100.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob pattern."},
                "path": {"type": "string", "description": "The directory to search (default: the current one)."}
            },
            "required": ["pattern"]
        }),
    )
}

fn view() -> Tool {
    Tool::function(
        VIEW,
        "View a file with line numbers, or list a directory two levels deep.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute path of the file or directory."},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "description": "`[first, last]` lines of a file, from 1; `[first, -1]` to the end."
                }
            },
            "required": ["path"]
        }),
    )
}

fn task_tracker() -> Tool {
    Tool::function(
        TASK_TRACKER,
        "Keep a plan of the task as a list of items: `plan` replaces the list (every item with \
         its status), `view` shows it. Use it for work of several steps: plan first, mark an \
         item `in_progress` when you start it and `done` when it is verified.",
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": ["view", "plan"], "description": "`plan` sets the list, `view` shows it."},
                "task_list": {
                    "type": "array",
                    "description": "`plan`: the whole list.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "title": {"type": "string"},
                            "status": {"type": "string", "enum": ["todo", "in_progress", "done"]},
                            "notes": {"type": "string"}
                        },
                        "required": ["id", "title", "status"]
                    }
                }
            },
            "required": ["command"]
        }),
    )
}

fn delegate() -> Tool {
    Tool::function(
        DELEGATE,
        "Hand a sub-task to another agent and get its answer back. `ReadOnlyAgent` explores and \
         answers questions about the code (view, grep, glob) and can never change anything; \
         `LocAgent` finds where in a Python repository an issue or a feature belongs (the \
         files, classes and functions, through an index of the code and its calls, imports \
         and inheritance) and can never change anything; `BrowsingAgent` browses the web and \
         answers from what it finds; `DummyAgent` runs a fixed demonstration. The agent works \
         on the same sandbox; its steps count against this task's limits.",
        json!({
            "type": "object",
            "properties": {
                "agent": {
                    "type": "string",
                    "enum": crate::agent::DELEGATE_AGENTS,
                    "description": "The agent to delegate to."
                },
                "task": {"type": "string", "description": "What the agent should do, completely stated."}
            },
            "required": ["agent", "task"]
        }),
    )
}

/// The argument in which the model says how risky a call of a sandbox tool is: the
/// reference's, and required as it is there (`execute_bash`, `execute_ipython_cell`,
/// `str_replace_editor`, `browser`), with or without confirmation mode. What a call without it
/// gets is the reference's too: a native call is taken with its risk unknown (its function
/// calling checks only the tool's own arguments, then sets the risk if the value is one of
/// the levels and logs any other value), while a prompted call is refused, as its converter
/// refuses any call that lacks a required parameter or gives a value outside an `enum`.
pub(crate) const SECURITY_RISK: &str = "security_risk";

/// `parameters` with the [`SECURITY_RISK`] argument added, and required.
fn with_security_risk(mut parameters: Value) -> Value {
    if let Some(properties) = parameters["properties"].as_object_mut() {
        properties.insert(
            SECURITY_RISK.to_string(),
            json!({
                "type": "string",
                "description": "The LLM's assessment of the safety risk of this action. See \
            the SECURITY_RISK_ASSESSMENT section in the system prompt for risk level definitions.",
                "enum": ["LOW", "MEDIUM", "HIGH"]
            }),
        );
    }
    match parameters["required"].as_array_mut() {
        Some(required) => required.push(json!(SECURITY_RISK)),
        None => parameters["required"] = json!([SECURITY_RISK]),
    }
    parameters
}

const THINK_DESCRIPTION: &str = "\
Write down a thought: reasoning about the problem, a plan, what a result means, or which of \
several fixes is best. It changes nothing in the sandbox and returns nothing new; use it when \
working something out helps before acting.";

fn think() -> Tool {
    Tool::function(
        THINK,
        THINK_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "thought": {
                    "type": "string",
                    "description": "The thought."
                }
            },
            "required": ["thought"]
        }),
    )
}

const FINISH_DESCRIPTION: &str = "\
End the task: call it when the task is done, or when it cannot be done. The message tells the \
user what was done and how it was checked, or why it could not be done.";

fn finish() -> Tool {
    Tool::function(
        FINISH,
        FINISH_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "A summary for the user: what was done and how it was \
        verified, or what is missing and why."
                }
            },
            "required": ["message"]
        }),
    )
}

/// The reference's `browser` tool (`openhands/agenthub/codeact_agent/tools/browser.py`), less
/// its file viewer, which sandboxd does not serve.
const BROWSER_DESCRIPTION: &str = "\
Interact with the browser using Python code. Use it ONLY when you need to interact with a webpage.

See the description of \"code\" parameter for more details.

Multiple actions can be provided at once, but will be executed sequentially without any feedback from the page.
More than 2-3 actions usually leads to failure or unexpected behavior. Example:
fill('a12', 'example with \"quotes\"')
click('a51')
click('48', button='middle', modifiers=['Shift'])
";

fn browser() -> Tool {
    let code = format!(
        "The Python code that interacts with the browser.\n{}",
        include_str!("browser_tool.md")
    );
    Tool::function(
        BROWSER,
        BROWSER_DESCRIPTION,
        with_security_risk(json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": code}
            },
            "required": ["code"]
        })),
    )
}

#[cfg(test)]
mod tests;
