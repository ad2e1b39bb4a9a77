//! Microagent files (docs/protocol.md §12.3): markdown with optional YAML front matter between
//! two `---` lines; the body is the microagent's content.
//!
//! Front-matter keys (others are ignored): `name` (default `default`), `type` (`repo`,
//! `knowledge` or `task`; checked, but the kind is *inferred*), `version` (numbers become
//! strings), `agent`, `triggers` (list of strings), `inputs` (list of `{name, description}`),
//! `mcp_tools` (must name `stdio_servers`). The kind: `inputs` → task (trigger `/{name}` added,
//! the ask-for-inputs sentence appended to the content); else `triggers` → knowledge; else repo
//! (always on). A file's name, when it comes from a microagents directory, is its path below
//! that directory without `.md`. `.openhands_instructions` (`repo_legacy`), `.cursorrules`
//! (`cursorrules`) and `AGENTS.md`/`agents.md`/`agent.md` (`agents`) are repo microagents whose
//! whole file is the content.
//!
//! Every file is hostile input: a malformed one is a [`MicroagentError`] naming the file, which
//! the loader reports and skips. YAML aliases are refused (their expansion is unbounded), and
//! so are files over [`MAX_FILE_BYTES`].

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;
use yaml_rust2::{Yaml, YamlLoader};

/// The sentence appended to a task microagent's content (the reference's, verbatim).
pub(crate) const TASK_INPUTS_PROMPT: &str = "\n\nIf the user didn't provide any of these variables, ask the user to provide them first before the agent can proceed with the task.";

/// The largest microagent file read.
pub(crate) const MAX_FILE_BYTES: usize = 1 << 20;

/// What a microagent is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Always on: its content is part of the repository instructions.
    Repo,
    /// Shown when one of its triggers is in a message.
    Knowledge,
    /// A knowledge microagent triggered by `/{name}` that needs inputs from the user.
    Task,
}

/// An input a task microagent needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Input {
    /// The variable (`${name}` in the content).
    pub(crate) name: String,
    /// What to ask for.
    pub(crate) description: String,
}

/// One microagent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Microagent {
    /// Its name (microagents of one kind with the same name replace each other).
    pub(crate) name: String,
    /// Its kind.
    pub(crate) kind: Kind,
    /// What the agent is shown.
    pub(crate) content: String,
    /// Knowledge and task: the words that show it.
    pub(crate) triggers: Vec<String>,
    /// Task: what it needs.
    pub(crate) inputs: Vec<Input>,
    /// Where it came from (a path in the sandbox, or `built-in NAME.md`).
    pub(crate) source: String,
}

/// A file that is not a usable microagent; retrying cannot help, fix the file. The text is the
/// reference's form: `Error loading microagent from {file}: {problem}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Error loading microagent from {file}: {problem}")]
pub struct MicroagentError {
    /// The file.
    pub file: String,
    /// What is wrong with it.
    pub problem: String,
}

impl MicroagentError {
    pub(crate) fn new(file: &str, problem: impl Into<String>) -> MicroagentError {
        MicroagentError {
            file: file.to_string(),
            problem: problem.into(),
        }
    }
}

/// The name of a third-party instructions file (`.cursorrules`, `AGENTS.md`, `agent.md`, any
/// case), if `file_name` is one.
pub(crate) fn third_party_name(file_name: &str) -> Option<&'static str> {
    match file_name.to_lowercase().as_str() {
        ".cursorrules" => Some("cursorrules"),
        "agents.md" | "agent.md" => Some("agents"),
        _ => None,
    }
}

impl Microagent {
    /// A repo microagent whose content is the whole of `text` (instructions files).
    pub(crate) fn whole_file(name: &str, file: &str, text: &str) -> Microagent {
        Microagent {
            name: name.to_string(),
            kind: Kind::Repo,
            content: text.to_string(),
            triggers: Vec::new(),
            inputs: Vec::new(),
            source: file.to_string(),
        }
    }

    /// Parses the microagent file `file` (a path, for messages) whose text is `text`; its name
    /// is `derived_name` when given (the path below a microagents directory), else the front
    /// matter's.
    pub(crate) fn parse(
        file: &str,
        derived_name: Option<&str>,
        text: &str,
    ) -> Result<Microagent, MicroagentError> {
        if text.len() > MAX_FILE_BYTES {
            return Err(MicroagentError::new(
                file,
                format!("the file is larger than {MAX_FILE_BYTES} bytes"),
            ));
        }
        let file_name = file.rsplit('/').next().unwrap_or(file);
        let (front, content) = split_front_matter(text);
        let metadata = match front {
            Some(front) => Metadata::parse(front).map_err(|problem| {
                MicroagentError::new(
                    file,
                    format!("Error validating microagent metadata in {file_name}: {problem}"),
                )
            })?,
            None => Metadata::default(),
        };
        let Metadata {
            name,
            mut triggers,
            inputs,
        } = metadata;
        let mut content = content.to_string();
        let kind = if !inputs.is_empty() {
            let slash = format!("/{name}");
            if !triggers.contains(&slash) {
                triggers.push(slash);
            }
            content.push_str(TASK_INPUTS_PROMPT);
            Kind::Task
        } else if !triggers.is_empty() {
            Kind::Knowledge
        } else {
            Kind::Repo
        };
        Ok(Microagent {
            name: derived_name.map_or(name, str::to_string),
            kind,
            content,
            triggers,
            inputs,
            source: file.to_string(),
        })
    }
}

/// The front matter (if the text opens with a `---` line and has a closing one) and the body,
/// both as python-frontmatter splits them: the text is trimmed, a boundary is a line of three
/// or more dashes and optional white space, and the body is trimmed.
fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let text = text.trim();
    let is_boundary = |line: &str| {
        let dashes = line.len() - line.trim_start_matches('-').len();
        dashes >= 3 && line[dashes..].trim().is_empty()
    };
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return (None, text);
    };
    if !is_boundary(first) {
        return (None, text);
    }
    let mut offset = first.len();
    for line in lines {
        if is_boundary(line) {
            let front = &text[first.len()..offset];
            return (Some(front), text[offset + line.len()..].trim());
        }
        offset += line.len();
    }
    (None, text)
}

/// What the front matter says (the keys that matter here).
#[derive(Debug)]
struct Metadata {
    name: String,
    triggers: Vec<String>,
    inputs: Vec<Input>,
}

impl Default for Metadata {
    fn default() -> Metadata {
        Metadata {
            name: "default".to_string(),
            triggers: Vec::new(),
            inputs: Vec::new(),
        }
    }
}

/// Sees whether a YAML text uses aliases, before it is loaded (loading expands them).
#[derive(Default)]
struct AliasCheck {
    alias: bool,
}

impl MarkedEventReceiver for AliasCheck {
    fn on_event(&mut self, event: Event, _mark: Marker) {
        if matches!(event, Event::Alias(_)) {
            self.alias = true;
        }
    }
}

impl Metadata {
    fn parse(front: &str) -> Result<Metadata, String> {
        let mut check = AliasCheck::default();
        Parser::new_from_str(front)
            .load(&mut check, true)
            .map_err(|e| format!("the front matter is not valid YAML: {e}"))?;
        if check.alias {
            return Err("YAML aliases (*name) are not allowed in the front matter".to_string());
        }
        let documents = YamlLoader::load_from_str(front)
            .map_err(|e| format!("the front matter is not valid YAML: {e}"))?;
        let mut metadata = Metadata::default();
        let map = match documents.into_iter().next() {
            None | Some(Yaml::Null) => return Ok(metadata),
            Some(Yaml::Hash(map)) => map,
            Some(_) => return Err("the front matter is not a mapping of keys to values".into()),
        };
        let field = |key: &str| map.get(&Yaml::String(key.to_string()));
        if let Some(value) = field("name") {
            metadata.name = string(value).ok_or("`name` must be a string")?;
        }
        if let Some(value) = field("type") {
            let kind = string(value).ok_or("`type` must be a string")?;
            if !matches!(kind.as_str(), "knowledge" | "repo" | "task") {
                return Err(format!(
                    "Invalid \"type\" value: \"{kind}\". Valid types are: \"knowledge\", \"repo\", \"task\""
                ));
            }
        }
        if let Some(value) = field("version") {
            match value {
                Yaml::String(_) | Yaml::Integer(_) | Yaml::Real(_) => {}
                _ => return Err("`version` must be a string or a number".into()),
            }
        }
        if let Some(value) = field("agent") {
            string(value).ok_or("`agent` must be a string")?;
        }
        match field("triggers") {
            None | Some(Yaml::Null) => {}
            Some(Yaml::Array(items)) => {
                for item in items {
                    metadata
                        .triggers
                        .push(string(item).ok_or("`triggers` must be a list of strings")?);
                }
            }
            Some(_) => return Err("`triggers` must be a list of strings".into()),
        }
        match field("inputs") {
            None | Some(Yaml::Null) => {}
            Some(Yaml::Array(items)) => {
                for item in items {
                    metadata.inputs.push(input(item)?);
                }
            }
            Some(_) => return Err("`inputs` must be a list of {name, description}".into()),
        }
        match field("mcp_tools") {
            None | Some(Yaml::Null) => {}
            Some(Yaml::Hash(tools)) => {
                let stdio = tools.get(&Yaml::String("stdio_servers".to_string()));
                if !matches!(stdio, Some(Yaml::Array(servers)) if !servers.is_empty()) {
                    return Err(format!(
                        "Microagent {} has MCP tools configuration but no stdio servers. Only stdio servers are currently supported.",
                        metadata.name
                    ));
                }
            }
            Some(_) => return Err("`mcp_tools` must be a mapping".into()),
        }
        Ok(metadata)
    }
}

/// A scalar as the text it is written as, if it is a string.
fn string(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn input(item: &Yaml) -> Result<Input, String> {
    const BAD: &str = "each of `inputs` must have a string `name` and `description`";
    let Yaml::Hash(map) = item else {
        return Err(BAD.into());
    };
    let get = |key: &str| {
        map.get(&Yaml::String(key.to_string()))
            .and_then(string)
            .ok_or_else(|| BAD.to_string())
    };
    Ok(Input {
        name: get("name")?,
        description: get("description")?,
    })
}

#[cfg(test)]
mod tests;
