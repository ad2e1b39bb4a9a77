//! The sandbox's workspace made ready before the agent's first step (the reference's
//! `initialize_repository_for_runtime`, `add_env_vars` and `create_memory`, docs/protocol.md
//! §12.6), all of it in the sandbox, through the runtime:
//!
//! 1. the secrets exported in the shell (and the IPython kernel's `os.environ`), by commands
//!    that are not recorded;
//! 2. the repository: cloned with git into the working directory (`--repo`; the token, from an
//!    environment variable of agentd, in the clone URL only, and masked like every secret), a
//!    branch checked out (the one asked for, else a new `openhands-workspace-XXXXXXXX`), or
//!    found in the workspace (`--repo-dir`); the shell moves into it. A clone already there (a
//!    resumed run) is kept;
//! 3. `.openhands/setup.sh` of the repository (or of the working directory), when there is
//!    one: sourced **once**, as a hidden `run` recorded with its observation (source
//!    environment; the reference records it and also runs it directly, so it runs twice);
//! 4. `.openhands/pre-commit.sh`, when there is one in a git repository: installed as the
//!    pre-commit hook, an existing foreign hook kept as `pre-commit.local` and run first (the
//!    reference keeps it but never runs it);
//! 5. the workspace's microagents loaded ([`microagents`]).

mod microagents;

use std::collections::BTreeMap;

use protocol::action::{CmdRunArgs, FileWriteArgs, IPythonRunCellArgs};
use protocol::{Action, ActionKind, EventSource, Observation, ObservationKind};
use sandbox_common::shell_quote;

use crate::events::{EventLogError, EventStream};
use crate::runtime::Runtime;
use crate::secrets::{Secret, SecretMask};
use microagents::Loaded;

/// The hard timeout of `setup.sh` and of a clone (the reference's 600 s for `setup.sh`).
const SETUP_TIMEOUT_SECONDS: f64 = 600.0;
/// The hard timeout of the small commands around them.
const COMMAND_TIMEOUT_SECONDS: f64 = 60.0;

/// The setup script, relative to the repository.
pub(crate) const SETUP_SCRIPT: &str = ".openhands/setup.sh";
/// The pre-commit script, relative to the repository.
pub(crate) const PRE_COMMIT_SCRIPT: &str = ".openhands/pre-commit.sh";
/// The line that marks a pre-commit hook as ours (the reference's, so either recognises it).
const HOOK_MARKER: &str = "This hook was installed by OpenHands";

/// The git pre-commit hook that runs `.openhands/pre-commit.sh` (after a kept foreign hook).
const PRE_COMMIT_HOOK: &str = r#"#!/bin/bash
# This hook was installed by OpenHands
# It calls the pre-commit script in the .openhands directory

if [ -x ".git/hooks/pre-commit.local" ]; then
    ".git/hooks/pre-commit.local" || exit $?
fi
if [ -x ".openhands/pre-commit.sh" ]; then
    source ".openhands/pre-commit.sh"
    exit $?
else
    echo "Warning: .openhands/pre-commit.sh not found or not executable"
    exit 0
fi
"#;

/// Why the workspace could not be made ready. Retrying helps only if the cause is transient
/// (a network failure during a clone).
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// `--repo` is neither `OWNER/NAME` nor a URL.
    #[error("repository {0:?}: give OWNER/NAME or a git URL (https://, http://, file://, ssh://)")]
    BadRepository(String),
    /// A command in the sandbox failed (its output, secrets masked, follows).
    #[error("{what} failed: {output}")]
    Command {
        /// What was done.
        what: String,
        /// Its output.
        output: String,
    },
    /// The setup step could not be recorded.
    #[error(transparent)]
    EventLog(#[from] EventLogError),
}

/// Where the repository comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoOrigin {
    /// Cloned from this URL (without credentials), with this token, onto this branch.
    Clone {
        /// The URL.
        url: String,
        /// The token, put into an http(s) URL's user part for the clone; also a secret.
        token: Option<Secret>,
        /// The branch to check out; default: a new `openhands-workspace-XXXXXXXX`.
        branch: Option<String>,
    },
    /// Already in the workspace, at this path relative to the working directory.
    Dir(String),
}

/// The repository the agent works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// `owner/name`, as the agent is told.
    pub name: String,
    /// Where it comes from.
    pub origin: RepoOrigin,
}

impl Repository {
    /// `--repo SPEC`: `OWNER/NAME` (on `host`, default `github.com`) or a git URL. The token is
    /// read from `token_env` if given, else from the host's usual variable (`GITHUB_TOKEN`,
    /// `GITLAB_TOKEN`, `BITBUCKET_TOKEN`), through `env`.
    pub fn clone_of(
        spec: &str,
        host: Option<&str>,
        branch: Option<String>,
        token_env: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Repository, WorkspaceError> {
        let bad = || WorkspaceError::BadRepository(spec.to_string());
        let spec = spec.trim();
        let (url, url_host, path) = match spec.split_once("://") {
            Some((scheme, rest)) => {
                if !matches!(scheme, "https" | "http" | "file" | "ssh" | "git") {
                    return Err(bad());
                }
                let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
                (spec.to_string(), host.to_string(), path.to_string())
            }
            None => {
                let mut parts = spec.split('/');
                let (Some(owner), Some(name), None) = (parts.next(), parts.next(), parts.next())
                else {
                    return Err(bad());
                };
                let valid = |s: &str| {
                    !s.is_empty()
                        && !s.starts_with('.')
                        && s.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                };
                if !valid(owner) || !valid(name) {
                    return Err(bad());
                }
                let host = host.unwrap_or("github.com");
                (
                    format!("https://{host}/{spec}.git"),
                    host.to_string(),
                    spec.to_string(),
                )
            }
        };
        let path = path.trim_end_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let name = match segments.as_slice() {
            [.., owner, name] => format!("{owner}/{name}"),
            [name] => (*name).to_string(),
            [] => return Err(bad()),
        };
        let host_name = url_host
            .rsplit('@')
            .next()
            .unwrap_or_default()
            .split(':')
            .next()
            .unwrap_or_default()
            .to_lowercase();
        let variable = token_env.map(str::to_string).or_else(|| {
            if host_name == "github.com" {
                Some("GITHUB_TOKEN".into())
            } else if host_name.contains("gitlab") {
                Some("GITLAB_TOKEN".into())
            } else if host_name == "bitbucket.org" {
                Some("BITBUCKET_TOKEN".into())
            } else {
                None
            }
        });
        let token = match variable {
            Some(variable) => match env(&variable).filter(|t| !t.is_empty()) {
                Some(value) => Some(
                    Secret::new(
                        &variable,
                        value,
                        &format!("a token for {host_name} (git and its API)"),
                    )
                    .map_err(|e| WorkspaceError::BadRepository(e.to_string()))?,
                ),
                None => None,
            },
            None => None,
        };
        Ok(Repository {
            name,
            origin: RepoOrigin::Clone { url, token, branch },
        })
    }

    /// The directory it is (or is cloned) in, relative to the working directory.
    pub(crate) fn directory(&self) -> String {
        match &self.origin {
            RepoOrigin::Dir(dir) => dir.trim_end_matches('/').to_string(),
            RepoOrigin::Clone { .. } => self
                .name
                .rsplit('/')
                .next()
                .unwrap_or(&self.name)
                .to_string(),
        }
    }
}

/// The clone URL with `token` in its user part (http and https only), as each host expects
/// it: GitHub `x-access-token:TOKEN`, GitLab `oauth2:TOKEN`, Bitbucket `x-token-auth:TOKEN`,
/// others `oauth2:TOKEN`.
pub(crate) fn authenticated_url(url: &str, token: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    if !matches!(scheme, "http" | "https") {
        return url.to_string();
    }
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    let host = rest.split('/').next().unwrap_or_default().to_lowercase();
    let user = if host == "github.com" {
        "x-access-token"
    } else if host == "bitbucket.org" {
        "x-token-auth"
    } else {
        "oauth2"
    };
    format!("{scheme}://{user}:{token}@{rest}")
}

/// What the agent works with, and how the workspace is made ready.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceSpec {
    /// The repository, if any.
    pub repository: Option<Repository>,
    /// Custom secrets (a clone's token is added to them).
    pub secrets: Vec<Secret>,
    /// Inputs of task microagents, given up front (`--input NAME=VALUE`).
    pub inputs: BTreeMap<String, String>,
    /// Instructions for this run, shown with the workspace context.
    pub conversation_instructions: String,
    /// Microagents not to use, by name.
    pub disabled_microagents: Vec<String>,
}

impl WorkspaceSpec {
    /// Every secret: the custom ones and the clone's token.
    pub fn all_secrets(&self) -> Vec<Secret> {
        let mut secrets = self.secrets.clone();
        if let Some(Repository {
            origin: RepoOrigin::Clone {
                token: Some(token), ..
            },
            ..
        }) = &self.repository
            && !secrets.iter().any(|s| s.name == token.name)
        {
            secrets.push(token.clone());
        }
        secrets
    }
}

/// The workspace, ready.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// The sandbox's working directory (before the shell moved into the repository).
    pub(crate) working_dir: String,
    /// The repository's name, directory (relative) and branch, when there is one.
    pub(crate) repository: Option<(String, String, String)>,
    /// The workspace's microagents.
    pub(crate) loaded: Loaded,
}

/// Makes the workspace ready (see the module documentation); the setup script's run is
/// recorded on `stream`.
pub(crate) async fn prepare(
    runtime: &Runtime,
    stream: &EventStream,
    spec: &WorkspaceSpec,
) -> Result<Prepared, WorkspaceError> {
    let mask = stream.mask();
    let secrets = spec.all_secrets();
    export_secrets(runtime, &secrets, &mask).await?;
    let working_dir = match working_dir(runtime, &mask).await {
        Ok(dir) => dir,
        // A sandbox that cannot say where it works (a reused one still busy with a command)
        // can still run the agent; without a repository to set up, the workspace's files are
        // left unread.
        Err(e) if spec.repository.is_none() => {
            tracing::warn!(error = %e, "the workspace's scripts and microagents are not read");
            return Ok(Prepared::default());
        }
        Err(e) => return Err(e),
    };
    let mut repo_root = working_dir.clone();
    let mut repository = None;
    if let Some(repo) = &spec.repository {
        let directory = repo.directory();
        repo_root = microagents::join(&working_dir, &directory);
        let branch = set_up_repository(runtime, repo, &repo_root, &mask).await?;
        repository = Some((repo.name.clone(), directory, branch));
    }
    run_setup_script(runtime, stream, &repo_root).await?;
    install_pre_commit_hook(runtime, &repo_root, &mask).await?;
    let loaded = microagents::workspace_microagents(runtime, &working_dir, &repo_root).await;
    Ok(Prepared {
        working_dir,
        repository,
        loaded,
    })
}

/// A hidden `run` of `command` with a hard timeout, not recorded.
fn command(command: &str, timeout: f64) -> Action {
    let mut args = CmdRunArgs::new(command);
    args.blocking = true;
    args.hidden = true;
    let mut action = Action::from(ActionKind::Run(args));
    action.timeout = Some(timeout);
    action
}

/// Runs `command` (not recorded); `Err` with its masked output unless it exits with 0.
async fn run(
    runtime: &Runtime,
    what: &str,
    line: &str,
    timeout: f64,
    mask: &SecretMask,
) -> Result<Observation, WorkspaceError> {
    let observation = runtime.execute(&command(line, timeout)).await;
    match &observation.kind {
        ObservationKind::Run(extras) if extras.metadata.exit_code == 0 => Ok(observation),
        _ => Err(WorkspaceError::Command {
            what: what.to_string(),
            output: mask.mask(observation.content.trim()).into_owned(),
        }),
    }
}

/// Exports each secret in the shell and in the IPython kernel's environment. Neither command
/// is recorded; a kernel that cannot start is only logged (bash has the variables).
async fn export_secrets(
    runtime: &Runtime,
    secrets: &[Secret],
    mask: &SecretMask,
) -> Result<(), WorkspaceError> {
    if secrets.is_empty() {
        return Ok(());
    }
    let line = secrets
        .iter()
        .map(|s| format!("export {}={}", s.name, shell_quote(&s.value)))
        .collect::<Vec<_>>()
        .join("; ");
    run(
        runtime,
        "exporting the secrets",
        &line,
        COMMAND_TIMEOUT_SECONDS,
        mask,
    )
    .await?;
    let values: serde_json::Map<String, serde_json::Value> = secrets
        .iter()
        .map(|s| (s.name.clone(), serde_json::Value::String(s.value.clone())))
        .collect();
    let code = format!(
        "import os\nos.environ.update({})",
        serde_json::Value::Object(values)
    );
    let mut cell = Action::from(ActionKind::RunIpython(IPythonRunCellArgs {
        include_extra: false,
        ..IPythonRunCellArgs::new(code)
    }));
    cell.timeout = Some(COMMAND_TIMEOUT_SECONDS);
    let observation = runtime.execute(&cell).await;
    if !matches!(observation.kind, ObservationKind::RunIpython(_)) {
        tracing::warn!(
            output = %mask.mask(&observation.content),
            "the secrets are in the shell's environment but not in the IPython kernel's"
        );
    }
    tracing::info!(
        names = ?secrets.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        "secrets exported in the sandbox"
    );
    Ok(())
}

/// The shell's working directory.
async fn working_dir(runtime: &Runtime, mask: &SecretMask) -> Result<String, WorkspaceError> {
    let observation = run(
        runtime,
        "finding the working directory",
        "pwd",
        COMMAND_TIMEOUT_SECONDS,
        mask,
    )
    .await?;
    let ObservationKind::Run(extras) = &observation.kind else {
        return Ok(observation.content.trim().to_string());
    };
    Ok(extras
        .metadata
        .working_dir
        .clone()
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| observation.content.trim().to_string()))
}

/// Clones (unless already there) or finds the repository at `root`, moves the shell into it,
/// and returns its branch.
async fn set_up_repository(
    runtime: &Runtime,
    repo: &Repository,
    root: &str,
    mask: &SecretMask,
) -> Result<String, WorkspaceError> {
    let quoted = shell_quote(root);
    match &repo.origin {
        RepoOrigin::Clone { url, token, branch } => {
            let present = runtime
                .client()
                .list_files(Some(root))
                .await
                .is_ok_and(|names| names.iter().any(|n| n == ".git/"));
            if present {
                tracing::info!(repository = %repo.name, directory = %root, "the repository is already cloned");
                run(
                    runtime,
                    "entering the repository",
                    &format!("cd {quoted}"),
                    COMMAND_TIMEOUT_SECONDS,
                    mask,
                )
                .await?;
            } else {
                let url = match token {
                    Some(token) => authenticated_url(url, &token.value),
                    None => url.clone(),
                };
                tracing::info!(repository = %repo.name, directory = %root, "cloning the repository");
                run(
                    runtime,
                    &format!("cloning {}", repo.name),
                    &format!("git clone {} {quoted}", shell_quote(&url)),
                    SETUP_TIMEOUT_SECONDS,
                    mask,
                )
                .await?;
                let checkout = match branch {
                    Some(branch) => format!("git checkout {}", shell_quote(branch)),
                    None => {
                        let suffix =
                            sandbox_common::random_hex(4).map_err(|e| WorkspaceError::Command {
                                what: "naming the work branch".into(),
                                output: e.to_string(),
                            })?;
                        format!("git checkout -b openhands-workspace-{suffix}")
                    }
                };
                run(
                    runtime,
                    "checking out the branch",
                    &format!("cd {quoted} && {checkout}"),
                    COMMAND_TIMEOUT_SECONDS,
                    mask,
                )
                .await?;
            }
        }
        RepoOrigin::Dir(_) => {
            run(
                runtime,
                &format!("entering the repository directory {root}"),
                &format!("cd {quoted}"),
                COMMAND_TIMEOUT_SECONDS,
                mask,
            )
            .await?;
        }
    }
    let observation = runtime
        .execute(&command(
            "git rev-parse --abbrev-ref HEAD 2>/dev/null",
            COMMAND_TIMEOUT_SECONDS,
        ))
        .await;
    Ok(match &observation.kind {
        ObservationKind::Run(extras) if extras.metadata.exit_code == 0 => {
            observation.content.trim().to_string()
        }
        _ => String::new(),
    })
}

/// The path of the script `name` of the workspace at `root`, when the sandbox can read it (the
/// reference's test for the setup and pre-commit scripts).
async fn readable_script(runtime: &Runtime, root: &str, name: &str) -> Option<String> {
    let path = microagents::join(root, name);
    matches!(microagents::read(runtime, &path).await, Ok(Some(_))).then_some(path)
}

/// Sources `.openhands/setup.sh` of `root` once, recorded as a hidden `run` from the
/// environment with its observation. A failing script is logged; the run goes on.
async fn run_setup_script(
    runtime: &Runtime,
    stream: &EventStream,
    root: &str,
) -> Result<(), WorkspaceError> {
    let Some(path) = readable_script(runtime, root, SETUP_SCRIPT).await else {
        return Ok(());
    };
    tracing::info!(script = %path, "running the workspace's setup script");
    let line = format!(
        "cd {} && chmod +x {SETUP_SCRIPT} && source {SETUP_SCRIPT}",
        shell_quote(root)
    );
    let stored = stream.add(
        command(&line, SETUP_TIMEOUT_SECONDS),
        EventSource::Environment,
    )?;
    let protocol::Event::Action(action) = &*stored else {
        return Ok(());
    };
    let observation = runtime.execute(action).await;
    if let ObservationKind::Run(extras) = &observation.kind
        && extras.metadata.exit_code != 0
    {
        tracing::warn!(exit_code = extras.metadata.exit_code, script = %path, "the setup script failed");
    }
    stream.add(observation, EventSource::Environment)?;
    Ok(())
}

/// Installs `.openhands/pre-commit.sh` of the git repository at `root` as its pre-commit hook.
/// Failures are logged: the agent can work without the hook.
async fn install_pre_commit_hook(
    runtime: &Runtime,
    root: &str,
    mask: &SecretMask,
) -> Result<(), WorkspaceError> {
    let Some(script) = readable_script(runtime, root, PRE_COMMIT_SCRIPT).await else {
        return Ok(());
    };
    let is_repository = runtime
        .client()
        .list_files(Some(root))
        .await
        .is_ok_and(|names| names.iter().any(|n| n == ".git/"));
    if !is_repository {
        tracing::warn!(script = %script, "not a git repository: the pre-commit hook is not installed");
        return Ok(());
    }
    let hooks = microagents::join(root, ".git/hooks");
    let hook = microagents::join(&hooks, "pre-commit");
    let mut steps = vec![format!(
        "mkdir -p {} && chmod +x {}",
        shell_quote(&hooks),
        shell_quote(&script)
    )];
    if let Ok(Some(existing)) = microagents::read(runtime, &hook).await
        && !existing.contains(HOOK_MARKER)
    {
        let local = shell_quote(&format!("{hook}.local"));
        steps.push(format!(
            "mv {} {local} && chmod +x {local}",
            shell_quote(&hook)
        ));
    }
    for step in steps {
        if let Err(e) = run(
            runtime,
            "installing the pre-commit hook",
            &step,
            COMMAND_TIMEOUT_SECONDS,
            mask,
        )
        .await
        {
            tracing::warn!(error = %e, "the pre-commit hook is not installed");
            return Ok(());
        }
    }
    let mut write = Action::from(ActionKind::Write(FileWriteArgs::new(
        &hook,
        PRE_COMMIT_HOOK,
    )));
    write.timeout = Some(COMMAND_TIMEOUT_SECONDS);
    let written = runtime.execute(&write).await;
    if !matches!(written.kind, ObservationKind::Write(_)) {
        tracing::warn!(output = %mask.mask(&written.content), "the pre-commit hook could not be written");
        return Ok(());
    }
    if let Err(e) = run(
        runtime,
        "installing the pre-commit hook",
        &format!("chmod +x {}", shell_quote(&hook)),
        COMMAND_TIMEOUT_SECONDS,
        mask,
    )
    .await
    {
        tracing::warn!(error = %e, "the pre-commit hook is not executable");
        return Ok(());
    }
    tracing::info!(hook = %hook, "the pre-commit hook is installed");
    Ok(())
}

#[cfg(test)]
mod tests;
