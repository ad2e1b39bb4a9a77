//! The sandbox's tools as a model sees them, one home for both of their hosts: the CodeAct
//! agent offers them to its LLM, sandboxd's MCP server offers them to any MCP host. For each
//! tool: its name, description and JSON schema ([`sandbox_tools`]), and how a call's
//! arguments become the action the sandbox runs ([`sandbox_tool_action`]), with the texts that
//! tell the model what to fix when they do not fit ([`ToolCallError`]).

use protocol::ActionKind;
use protocol::action::{
    CmdRunArgs, FileEditArgs, FileReadArgs, FileReadSource, IPythonRunCellArgs,
};
use serde_json::{Map, Value, json};

/// Runs a bash command in the sandbox's persistent shell.
pub const EXECUTE_BASH: &str = "execute_bash";
/// Runs a cell in the sandbox's IPython kernel.
pub const EXECUTE_IPYTHON_CELL: &str = "execute_ipython_cell";
/// Views, creates and edits files.
pub const STR_REPLACE_EDITOR: &str = "str_replace_editor";

/// One tool: what the model reads about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: &'static str,
    /// What it does, written for the model.
    pub description: &'static str,
    /// The JSON schema of its arguments (an `object`).
    pub parameters: Value,
}

/// A call the sandbox cannot run as it is: the text tells the model what to fix. Retrying the
/// same call cannot help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolCallError(pub String);

/// The action a call of one of the sandbox's tools asks for, with its hard timeout in seconds
/// (`None`: the sandbox's no-output timeout applies).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAction {
    /// The action's type and arguments.
    pub kind: ActionKind,
    /// The action's `timeout`.
    pub timeout: Option<f64>,
}

/// `execute_bash`, then `execute_ipython_cell` when `ipython`, then `str_replace_editor`.
pub fn sandbox_tools(ipython: bool) -> Vec<ToolSpec> {
    let mut tools = vec![execute_bash()];
    if ipython {
        tools.push(execute_ipython_cell());
    }
    tools.push(str_replace_editor());
    tools
}

/// The action of a call of `tool` (one of [`sandbox_tools`]) with `args`; `None` when `tool`
/// is not one of them.
pub fn sandbox_tool_action(
    tool: &str,
    args: &ToolArgs<'_>,
) -> Option<Result<ToolAction, ToolCallError>> {
    let action = match tool {
        EXECUTE_BASH => bash_action(args),
        EXECUTE_IPYTHON_CELL => args.required_str("code").map(|code| ToolAction {
            kind: ActionKind::RunIpython(IPythonRunCellArgs::new(code)),
            timeout: None,
        }),
        STR_REPLACE_EDITOR => editor_action(args).map(|kind| ToolAction {
            kind,
            timeout: None,
        }),
        _ => return None,
    };
    Some(action)
}

fn tool(name: &'static str, description: &'static str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name,
        description,
        parameters,
    }
}

const BASH_DESCRIPTION: &str = "\
Run a bash command in the sandbox's terminal. The shell is persistent: the working directory, \
environment variables and background jobs stay from one call to the next.
* One command per call. To run several, chain them with `&&` or `;`.
* Long-running programs (servers, watchers): start them in the background with their output \
sent to a file, e.g. `python3 app.py > server.log 2>&1 &`, then look at the file.
* A command that is still running after a while of no output returns what it printed so far \
with exit code -1. Then call again with `is_input` set to `true` and either an empty `command` \
to see more output, text to send to the program's standard input, or a control key \
(`C-c` interrupts, `C-d` ends input, `C-z` suspends).
* Use `timeout` for commands known to take long (a build, a test suite): the command may then \
run that many seconds before it is interrupted.
* Output longer than 30,000 characters is cut in the middle; the observation names a file with \
the whole output. Prefer quiet flags and filters (`| tail -n 50`, `grep`) for verbose commands.";

fn execute_bash() -> ToolSpec {
    tool(
        EXECUTE_BASH,
        BASH_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command to run. With `is_input` = `true`: text for \
        the running program, a control key such as `C-c`, or empty to see more of its output."
                },
                "is_input": {
                    "type": "string",
                    "enum": ["true", "false"],
                    "description": "`true` sends `command` to the program that is still \
        running instead of starting a new command. Default `false`."
                },
                "timeout": {
                    "type": "number",
                    "description": "Seconds the command may run before it is interrupted. \
        Without it, a command that prints nothing for a while returns early with exit code -1 and \
        keeps running."
                }
            },
            "required": ["command"]
        }),
    )
}

const IPYTHON_DESCRIPTION: &str = "\
Run a cell of Python code in the sandbox's IPython kernel. Variables, imports and definitions \
stay from one cell to the next (but are not visible to bash). Magic commands work, e.g. \
`%pip install requests`. The cell's output, the value of its last expression and displayed \
images are returned.";

fn execute_ipython_cell() -> ToolSpec {
    tool(
        EXECUTE_IPYTHON_CELL,
        IPYTHON_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The Python code to run."
                }
            },
            "required": ["code"]
        }),
    )
}

const EDITOR_DESCRIPTION: &str = "\
View, create and edit files in the sandbox. Paths must be absolute.
* `view` on a file shows it with line numbers (`cat -n`), optionally only `view_range`; on a \
directory it lists files and directories two levels deep, hidden ones left out.
* `create` writes a new file with `file_text`; it refuses a path that exists.
* `str_replace` replaces `old_str` with `new_str` (empty if left out). `old_str` must match \
exactly one place in the file, whitespace and indentation included: include enough \
surrounding lines to make it unique.
* `insert` inserts `new_str` after line `insert_line` (0 inserts at the top).
* `undo_edit` reverts the last edit of the file.
* Long results are cut and marked `<response clipped>`; view a range instead.";

fn str_replace_editor() -> ToolSpec {
    tool(
        STR_REPLACE_EDITOR,
        EDITOR_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
                    "description": "What to do: `view`, `create`, `str_replace`, `insert` or \
        `undo_edit`."
                },
                "path": {
                    "type": "string",
                    "description": "Absolute path of the file or directory, e.g. \
        `/workspace/main.py`."
                },
                "file_text": {
                    "type": "string",
                    "description": "`create`: the content of the new file."
                },
                "old_str": {
                    "type": "string",
                    "description": "`str_replace`: the exact text to replace; it must occur \
        exactly once."
                },
                "new_str": {
                    "type": "string",
                    "description": "`str_replace`: the replacement (empty if left out). \
        `insert`: the text to insert."
                },
                "insert_line": {
                    "type": "integer",
                    "description": "`insert`: the line after which `new_str` goes (0 for the \
        top of the file)."
                },
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "description": "`view` of a file: `[first, last]` line numbers, counted \
        from 1; `[first, -1]` shows from `first` to the end."
                }
            },
            "required": ["command", "path"]
        }),
    )
}

fn bash_action(args: &ToolArgs<'_>) -> Result<ToolAction, ToolCallError> {
    let mut run = CmdRunArgs::new(args.required_str("command")?);
    run.is_input = args.flag("is_input")?;
    let mut timeout = None;
    if let Some(seconds) = args.number("timeout")? {
        if seconds <= 0.0 {
            return Err(args.invalid("timeout", "must be a positive number of seconds"));
        }
        // What the sandbox would refuse (issue 14.1), the model hears here as a call to fix.
        if let Err(e) = crate::timeout_duration(seconds) {
            return Err(args.invalid("timeout", &e.to_string()));
        }
        // A hard timeout: the command runs that long even when it prints nothing.
        timeout = Some(seconds);
        run.blocking = true;
    }
    Ok(ToolAction {
        kind: ActionKind::Run(run),
        timeout,
    })
}

/// `str_replace_editor`: `view` reads through the editor, every other command edits.
fn editor_action(args: &ToolArgs<'_>) -> Result<ActionKind, ToolCallError> {
    let command = args.required_str("command")?;
    let path = args.required_str("path")?;
    let view_range = match args.get("view_range") {
        None => None,
        Some(range) => Some(
            range
                .as_array()
                .filter(|items| items.len() == 2)
                .and_then(|items| items.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| args.invalid("view_range", "must be two integers"))?,
        ),
    };
    if command == "view" {
        let mut read = FileReadArgs::new(path);
        read.impl_source = FileReadSource::OhAci;
        read.view_range = view_range;
        return Ok(ActionKind::Read(read));
    }
    let mut edit = FileEditArgs::new(path, command);
    edit.file_text = args.optional_str("file_text")?;
    edit.old_str = args.optional_str("old_str")?;
    edit.new_str = args.optional_str("new_str")?;
    edit.insert_line = match args.get("insert_line") {
        None => None,
        Some(line @ Value::Number(_)) => Some(line.clone()),
        Some(Value::String(text)) if text.trim().parse::<i64>().is_ok() => {
            Some(Value::String(text.trim().to_string()))
        }
        Some(_) => return Err(args.invalid("insert_line", "must be an integer")),
    };
    edit.view_range = view_range;
    Ok(ActionKind::Edit(edit))
}

/// A call's arguments, with errors that name the tool.
#[derive(Debug, Clone)]
pub struct ToolArgs<'a> {
    tool: &'a str,
    map: Map<String, Value>,
}

impl<'a> ToolArgs<'a> {
    /// The arguments of a call of `tool`, given as JSON text (empty text: none).
    pub fn parse(tool: &'a str, text: &str) -> Result<ToolArgs<'a>, ToolCallError> {
        let text = if text.trim().is_empty() { "{}" } else { text };
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(ToolArgs { tool, map }),
            Ok(_) => Err(ToolCallError(format!(
                "The arguments of the tool call {tool} must be a JSON object, got: {text}"
            ))),
            Err(e) => Err(ToolCallError(format!(
                "Failed to parse the arguments of the tool call {tool} as JSON ({e}): {text}"
            ))),
        }
    }

    /// The arguments of a call of `tool`, already decoded.
    pub fn new(tool: &'a str, map: Map<String, Value>) -> ToolArgs<'a> {
        ToolArgs { tool, map }
    }

    /// All the arguments, as given.
    pub fn into_map(self) -> Map<String, Value> {
        self.map
    }

    /// An argument; `null` counts as absent.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// The error for argument `name` that has the wrong form (`problem`).
    pub fn invalid(&self, name: &str, problem: &str) -> ToolCallError {
        ToolCallError(format!(
            "Invalid argument \"{name}\" in tool call {}: {problem}.",
            self.tool
        ))
    }

    /// A string argument that must be there.
    pub fn required_str(&self, name: &str) -> Result<String, ToolCallError> {
        self.optional_str(name)?.ok_or_else(|| {
            ToolCallError(format!(
                "Missing required argument \"{name}\" in tool call {}",
                self.tool
            ))
        })
    }

    /// A string argument; numbers and booleans are taken as their text (models write
    /// `"insert_line": 3` and `"command": 42` alike).
    pub fn optional_str(&self, name: &str) -> Result<Option<String>, ToolCallError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(_) => Err(self.invalid(name, "must be a string")),
        }
    }

    /// `"true"`/`"false"` (the schema's enum) or a JSON boolean; absent is false.
    pub fn flag(&self, name: &str) -> Result<bool, ToolCallError> {
        match self.get(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") || s.is_empty() => Ok(false),
            Some(_) => Err(self.invalid(name, "must be `true` or `false`")),
        }
    }

    /// A number argument (also as text).
    pub fn number(&self, name: &str) -> Result<Option<f64>, ToolCallError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(Value::String(s)) => s
                .trim()
                .parse::<f64>()
                .map(Some)
                .map_err(|_| self.invalid(name, "must be a number")),
            Some(_) => Err(self.invalid(name, "must be a number")),
        }
    }
}

#[cfg(test)]
mod tests;
