//! The CodeAct agent's tools: their names, descriptions and JSON schemas, as the model sees
//! them. The descriptions are written for the model: what the tool does, what the sandbox
//! answers, and how to recover from the usual mistakes (a command that does not end, an
//! `old_str` that is not unique).

use protocol::llm::{FunctionDef, Tool};
use serde_json::{Value, json};

/// Runs a bash command in the sandbox's persistent shell.
pub(crate) const EXECUTE_BASH: &str = "execute_bash";
/// Runs a cell in the sandbox's IPython kernel.
pub(crate) const EXECUTE_IPYTHON_CELL: &str = "execute_ipython_cell";
/// Views, creates and edits files.
pub(crate) const STR_REPLACE_EDITOR: &str = "str_replace_editor";
/// Logs a thought.
pub(crate) const THINK: &str = "think";
/// Ends the task.
pub(crate) const FINISH: &str = "finish";

/// Which tools the agent offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSet {
    /// Offer `execute_ipython_cell` (the sandbox needs a Python with ipykernel).
    pub ipython: bool,
    /// Offer `think`.
    pub think: bool,
}

impl Default for ToolSet {
    fn default() -> ToolSet {
        ToolSet {
            ipython: true,
            think: true,
        }
    }
}

/// The tools of `set`, in the order the model sees them.
pub(crate) fn tools(set: ToolSet) -> Vec<Tool> {
    let mut tools = vec![execute_bash()];
    if set.ipython {
        tools.push(execute_ipython_cell());
    }
    tools.push(str_replace_editor());
    if set.think {
        tools.push(think());
    }
    tools.push(finish());
    tools
}

fn tool(name: &str, description: &str, parameters: Value) -> Tool {
    Tool {
        kind: "function".to_string(),
        function: FunctionDef {
            name: name.to_string(),
            description: description.to_string(),
            parameters,
        },
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

fn execute_bash() -> Tool {
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

fn execute_ipython_cell() -> Tool {
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

fn str_replace_editor() -> Tool {
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

const THINK_DESCRIPTION: &str = "\
Write down a thought: reasoning about the problem, a plan, what a result means, or which of \
several fixes is best. It changes nothing in the sandbox and returns nothing new; use it when \
working something out helps before acting.";

fn think() -> Tool {
    tool(
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
    tool(
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

#[cfg(test)]
mod tests;
