//! The workspace's microagents, read **in the sandbox** through the runtime (listings with the
//! client's `list_files`, files with `read` actions that are not recorded), never from the
//! host's disk: the sandbox's files are the ones the agent works on, wherever it runs.
//!
//! In order (a later microagent of the same kind and name replaces an earlier one):
//! 1. `WORKDIR/.openhands_instructions`, else `REPO/.openhands_instructions` (`repo_legacy`);
//! 2. `REPO/.cursorrules` and the first of `AGENTS.md`, `agents.md`, `AGENT.md`, `agent.md` in
//!    `REPO` (the repository's own root: the reference looks two levels above a host
//!    temporary directory instead, missing them and reading unrelated host files);
//! 3. every `*.md` but `README.md` below `REPO/.openhands/microagents/`, in path order, named
//!    after its path there without `.md`.
//!
//! `REPO` is the repository's directory, or the working directory when there is none. A file
//! that cannot be read or parsed is a problem reported with its path and skipped; the walk is
//! bounded in depth and in files.

use protocol::action::FileReadArgs;
use protocol::{Action, ActionKind, ObservationKind};

use crate::recall::microagent::{Microagent, MicroagentError, third_party_name};
use crate::runtime::Runtime;

/// The deepest directory below `.openhands/microagents` looked into.
const MAX_DEPTH: usize = 8;
/// The most microagent files read from one workspace.
const MAX_FILES: usize = 256;

/// Where the microagents of a workspace are.
pub(crate) const MICROAGENTS_DIR: &str = ".openhands/microagents";

/// What loading found.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The microagents, in load order.
    pub(crate) microagents: Vec<Microagent>,
    /// Files that were skipped, and why.
    pub(crate) problems: Vec<MicroagentError>,
}

/// The microagents of the workspace at `working_dir` whose repository is at `repo_root` (both
/// absolute paths in the sandbox).
pub(crate) async fn workspace_microagents(
    runtime: &Runtime,
    working_dir: &str,
    repo_root: &str,
) -> Loaded {
    let mut loaded = Loaded::default();
    let mut legacy = None;
    for dir in [working_dir, repo_root] {
        let path = join(dir, ".openhands_instructions");
        match read(runtime, &path).await {
            Ok(Some(text)) => {
                legacy = Some(Microagent::whole_file("repo_legacy", &path, &text));
                break;
            }
            Ok(None) => {}
            Err(problem) => loaded.problems.push(problem),
        }
        if working_dir == repo_root {
            break;
        }
    }
    loaded.microagents.extend(legacy);

    match runtime.client().list_files(Some(repo_root)).await {
        Ok(names) => {
            let agents = ["AGENTS.md", "agents.md", "AGENT.md", "agent.md"]
                .into_iter()
                .find(|n| names.iter().any(|x| x == n));
            let cursor = names
                .iter()
                .any(|n| n == ".cursorrules")
                .then_some(".cursorrules");
            for name in cursor.into_iter().chain(agents) {
                let path = join(repo_root, name);
                let agent_name = third_party_name(name).unwrap_or(name);
                match read(runtime, &path).await {
                    Ok(Some(text)) => loaded
                        .microagents
                        .push(Microagent::whole_file(agent_name, &path, &text)),
                    Ok(None) => {}
                    Err(problem) => loaded.problems.push(problem),
                }
            }
        }
        Err(e) => loaded.problems.push(MicroagentError::new(
            repo_root,
            format!("cannot list it: {e}"),
        )),
    }

    let dir = join(repo_root, MICROAGENTS_DIR);
    let files = markdown_files(runtime, &dir, &mut loaded.problems).await;
    for relative in files {
        let path = join(&dir, &relative);
        let name = relative.strip_suffix(".md").unwrap_or(&relative);
        match read(runtime, &path).await {
            Ok(Some(text)) => match Microagent::parse(&path, Some(name), &text) {
                Ok(agent) => loaded.microagents.push(agent),
                Err(problem) => loaded.problems.push(problem),
            },
            Ok(None) => {}
            Err(problem) => loaded.problems.push(problem),
        }
    }
    loaded
}

/// The `*.md` files below `dir` but `README.md`, as paths relative to it, sorted.
async fn markdown_files(
    runtime: &Runtime,
    dir: &str,
    problems: &mut Vec<MicroagentError>,
) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![(String::new(), 0usize)];
    while let Some((relative, depth)) = pending.pop() {
        let absolute = if relative.is_empty() {
            dir.to_string()
        } else {
            join(dir, &relative)
        };
        let names = match runtime.client().list_files(Some(&absolute)).await {
            Ok(names) => names,
            Err(e) => {
                problems.push(MicroagentError::new(
                    &absolute,
                    format!("cannot list it: {e}"),
                ));
                continue;
            }
        };
        for name in names {
            let path = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            if let Some(sub) = path.strip_suffix('/') {
                if depth + 1 < MAX_DEPTH {
                    pending.push((sub.to_string(), depth + 1));
                } else {
                    problems.push(MicroagentError::new(
                        &join(dir, sub),
                        format!("deeper than {MAX_DEPTH} directories: not read"),
                    ));
                }
            } else if name.ends_with(".md") && name != "README.md" {
                files.push(path);
            }
        }
    }
    files.sort();
    if files.len() > MAX_FILES {
        problems.push(MicroagentError::new(
            dir,
            format!(
                "{} microagent files; only the first {MAX_FILES} are read",
                files.len()
            ),
        ));
        files.truncate(MAX_FILES);
    }
    files
}

/// The text of the file at `path` in the sandbox; `None` when there is none.
pub(crate) async fn read(runtime: &Runtime, path: &str) -> Result<Option<String>, MicroagentError> {
    let action = Action::from(ActionKind::Read(FileReadArgs::new(path)));
    let observation = runtime.execute(&action).await;
    match observation.kind {
        ObservationKind::Read(_) => Ok(Some(observation.content)),
        ObservationKind::Error(_)
            if observation.content.starts_with("File not found")
                || observation.content.starts_with("Path is a directory") =>
        {
            Ok(None)
        }
        _ => Err(MicroagentError::new(
            path,
            format!("cannot read it: {}", observation.content),
        )),
    }
}

/// `dir/name`.
pub(crate) fn join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}
