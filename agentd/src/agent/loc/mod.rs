//! LocAgent (the reference's code-localisation agent): the CodeAct loop with tools that only
//! search the repository's Python code — `search_code_snippets`, `get_entity_contents`,
//! `explore_tree_structure` — and `finish` with the locations found. It has no tool that
//! writes, and ignores the run's MCP tools.
//!
//! A call of a search tool becomes a `run_ipython` cell `print({name}(**{arguments}))`, the
//! arguments as Python's `repr()` of the dict they decode to ([`python`]), as the reference's
//! function calling writes it. The functions are agentd's own, `locagent.py` (embedded here),
//! which indexes the kernel's working directory with `ast` on first use and keeps the index
//! in the kernel. [`KernelFunctions`] puts the module's definition in front of the first such
//! cell an agent runs, and of the next one after a cell found the functions missing (a kernel
//! replaced since, its state lost); a definition the kernel has already is not run again.

mod python;

use std::sync::Arc;

use protocol::llm::Tool;
use protocol::{Action, ActionKind, Event, EventSource, ObservationKind};
use sandbox_common::{ToolArgs, ToolCallError};
use serde_json::json;
use sha2::{Digest, Sha256};

use python::PyValue;

/// LocAgent's system prompt.
pub(crate) const SYSTEM_PROMPT: &str = include_str!("system_prompt.md");

/// The functions' module, run in the sandbox's kernel.
const MODULE_SOURCE: &str = include_str!("locagent.py");
/// Its name in the kernel's `sys.modules`.
const MODULE_NAME: &str = "agentd_locagent";
/// The first line of a cell that defines the module.
const DEFINITION_MARKER: &str = "# agentd: LocAgent's search functions (module agentd_locagent), defined if the kernel lacks them";

/// Searches the code by entity id, name, keywords or line numbers.
pub(crate) const SEARCH_CODE_SNIPPETS: &str = "search_code_snippets";
/// Shows entities' code.
pub(crate) const GET_ENTITY_CONTENTS: &str = "get_entity_contents";
/// Walks the code graph around entities.
pub(crate) const EXPLORE_TREE_STRUCTURE: &str = "explore_tree_structure";
/// The tools whose calls are cells.
pub(crate) const FUNCTIONS: [&str; 3] = [
    SEARCH_CODE_SNIPPETS,
    GET_ENTITY_CONTENTS,
    EXPLORE_TREE_STRUCTURE,
];

/// The search tools, in the order the model sees them (after `finish`, as the reference
/// lists them).
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        Tool::function(
            SEARCH_CODE_SNIPPETS,
            "Search the repository's Python code. Each search term is looked up as an entity id \
             (`src/app.py`, `src/app.py:Server.start`), else as a name (`Server`, `start`, \
             `Server.start`, `app.py`), else by its words: the blocks of code whose identifiers \
             match them best (`http request` finds `parseHTTPRequest` and \
             `parse_http_request`). Short entities are shown whole, long ones as an outline. \
             With `line_nums`, `file_path_or_pattern` names one file, and each line is shown in \
             the class or function that holds it (or with the lines around it). Give \
             `search_terms`, `line_nums`, or both.\n\
             Examples: search_code_snippets(search_terms=[\"OrderForm\", \"invalid quantity\"]); \
             search_code_snippets(line_nums=[120, 164], file_path_or_pattern=\"src/orders.py\")",
            json!({
                "type": "object",
                "properties": {
                    "search_terms": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Entity ids, names, keywords or code fragments; each is searched on its own."
                    },
                    "line_nums": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "description": "Line numbers (from 1) in the one file `file_path_or_pattern` names."
                    },
                    "file_path_or_pattern": {
                        "type": "string",
                        "description": "The files to search: a file, a directory or a glob (`src/**/*.py`); with `line_nums`, one file. Default: every Python file.",
                        "default": "**/*.py"
                    }
                },
                "required": []
            }),
        ),
        Tool::function(
            GET_ENTITY_CONTENTS,
            "Show the code of entities, with line numbers: whole files (`src/app.py`), classes \
             and functions (`src/app.py:Server.start`, the qualified name after the colon), or \
             what a directory (`src/`, the root `/`) holds. An entity longer than 400 lines is \
             cut; search_code_snippets with `line_nums` shows the rest.",
            json!({
                "type": "object",
                "properties": {
                    "entity_names": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Entity ids: `file_path` for a file, `file_path:QualifiedName` for a class or function, `dir/` for a directory."
                    }
                },
                "required": ["entity_names"]
            }),
        ),
        Tool::function(
            EXPLORE_TREE_STRUCTURE,
            "Walk the repository's code graph from entities and show what surrounds them, as \
             trees. Entities: directories (`src/`; the root is `/`), files, classes and \
             functions (`file_path:QualifiedName`). Dependencies: `contains` (a directory its \
             files, a file its classes and functions, a class its methods), `imports`, \
             `invokes` (calls and instantiations, and decorators; names are resolved \
             statically: definitions, imports, `self`, `super()`) and `inherits` (a class its \
             bases). `downstream` follows an entity's own dependencies (what it contains, \
             imports, invokes, inherits from); `upstream` the dependencies on it (what \
             contains, imports, invokes or inherits from it); `both` both.\n\
             Examples: the layout, two levels deep: explore_tree_structure(start_entities=[\"/\"], \
             traversal_depth=2, dependency_type_filter=[\"contains\"]); the callers of a \
             function: explore_tree_structure(start_entities=[\"src/db.py:connect\"], \
             direction=\"upstream\", dependency_type_filter=[\"invokes\"]); a class hierarchy: \
             explore_tree_structure(start_entities=[\"src/shapes.py:Shape\"], direction=\"both\", \
             traversal_depth=-1, dependency_type_filter=[\"inherits\"])",
            json!({
                "type": "object",
                "properties": {
                    "start_entities": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Where to start: entity ids (`src/app.py:Server`, `src/app.py`, `src/`, `/`)."
                    },
                    "direction": {
                        "type": "string",
                        "enum": ["upstream", "downstream", "both"],
                        "description": "`downstream`: what the entities depend on; `upstream`: what depends on them; `both`.",
                        "default": "downstream"
                    },
                    "traversal_depth": {
                        "type": "integer",
                        "description": "How many edges deep to go; -1 for no limit.",
                        "default": 2
                    },
                    "entity_type_filter": {
                        "type": ["array", "null"],
                        "items": {"type": "string"},
                        "description": "Only entities of these types: `directory`, `file`, `class`, `function`. Default: all.",
                        "default": null
                    },
                    "dependency_type_filter": {
                        "type": ["array", "null"],
                        "items": {"type": "string"},
                        "description": "Only dependencies of these types: `contains`, `imports`, `invokes`, `inherits`. Default: all.",
                        "default": null
                    }
                },
                "required": ["start_entities"]
            }),
        ),
    ]
}

/// The cell a call of `function` (one of [`FUNCTIONS`]) with `arguments` (the call's JSON
/// text) runs: `print({function}(**{arguments as a Python dict}))`. The arguments are
/// literals, so no call can run other code; the functions answer wrong ones with a text.
pub(crate) fn cell_code(function: &str, arguments: &str) -> Result<String, ToolCallError> {
    // The shared checks and their texts: a JSON object (empty text: none).
    ToolArgs::parse(function, arguments)?;
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let arguments = serde_json::from_str::<PyValue>(text).map_err(|e| {
        ToolCallError(format!(
            "Failed to parse the arguments of the tool call {function} as JSON ({e}): {text}"
        ))
    })?;
    Ok(format!("print({function}(**{}))", arguments.repr()))
}

/// Whether `code` is the cell of a LocAgent call.
fn is_function_cell(code: &str) -> bool {
    FUNCTIONS.iter().any(|function| {
        code.strip_prefix("print(")
            .and_then(|rest| rest.strip_prefix(function))
            .is_some_and(|rest| rest.starts_with("(**"))
    })
}

/// Keeps LocAgent's functions defined in the kernel its cells run in (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct KernelFunctions {
    /// This agent has sent the definition.
    sent: bool,
}

impl KernelFunctions {
    /// Puts the module's definition in front of `action` when it is a cell of a LocAgent call
    /// and the kernel may lack the functions: this agent has not defined them yet, or a cell
    /// in `history` since its last definition found them missing.
    pub(crate) fn prepare(&mut self, action: &mut Action, history: &[Arc<Event>]) {
        let ActionKind::RunIpython(cell) = &mut action.kind else {
            return;
        };
        if !is_function_cell(&cell.code) || (self.sent && !missing_since_defined(history)) {
            return;
        }
        tracing::debug!("defining LocAgent's functions in the kernel");
        cell.code = format!("{}\n{}", definition(), cell.code);
        self.sent = true;
    }
}

/// Whether a cell's observation after the newest definition in `history` says one of the
/// functions is not defined (the kernel was replaced: sandboxd says its state was lost, and
/// the cell's call fails).
fn missing_since_defined(history: &[Arc<Event>]) -> bool {
    for event in history.iter().rev() {
        match &**event {
            Event::Action(action) if action.source == Some(EventSource::Agent) => {
                if let ActionKind::RunIpython(cell) = &action.kind
                    && cell.code.starts_with(DEFINITION_MARKER)
                {
                    return false;
                }
            }
            Event::Observation(observation)
                if matches!(observation.kind, ObservationKind::RunIpython(_)) =>
            {
                let missing = FUNCTIONS.iter().any(|function| {
                    observation
                        .content
                        .contains(&format!("NameError: name '{function}' is not defined"))
                });
                if missing {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// The code that defines the module in the kernel, unless the kernel has this very version,
/// and imports the functions into the kernel's namespace. The source is a raw string, so
/// that the event log shows it as it is.
fn definition() -> String {
    let digest = sandbox_common::hex(&Sha256::digest(MODULE_SOURCE.as_bytes())[..8]);
    let source = if MODULE_SOURCE.contains("'''") || MODULE_SOURCE.ends_with('\\') {
        python::str_repr(MODULE_SOURCE)
    } else {
        format!("r'''{MODULE_SOURCE}'''")
    };
    let functions = FUNCTIONS.join(", ");
    format!(
        "{DEFINITION_MARKER}\n\
         import sys as _agentd_sys, types as _agentd_types\n\
         if getattr(_agentd_sys.modules.get('{MODULE_NAME}'), 'DIGEST', None) != '{digest}':\n    \
             _agentd_module = _agentd_types.ModuleType('{MODULE_NAME}')\n    \
             exec(compile({source}, '{MODULE_NAME}.py', 'exec'), _agentd_module.__dict__)\n    \
             _agentd_module.DIGEST = '{digest}'\n    \
             _agentd_sys.modules['{MODULE_NAME}'] = _agentd_module\n    \
             del _agentd_module\n\
         from {MODULE_NAME} import {functions}\n\
         del _agentd_sys, _agentd_types"
    )
}

#[cfg(test)]
mod tests;
