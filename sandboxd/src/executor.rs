//! The one component that owns sandbox state: the bash shell, the editor's history, the
//! stdio MCP servers and the paths actions resolve against. It dispatches each decoded
//! [`Action`] to its family.
//!
//! Locking is per resource (docs/protocol.md §11): `run` actions queue on the bash shell only, file
//! actions run on blocking threads and never wait behind a command, `is_static` commands get a
//! shell of their own, and `run_ipython` cells queue on the kernel actor only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use protocol::action::{ActionKind, CmdRunArgs};
use protocol::{Action, Observation};

use crate::agent_procs;
use crate::bash::{BashShell, ShellConfig, ShellError};
use crate::browser::{Browser, BrowserConfig};
use crate::feed::{FeedReader, Tap};
use crate::files::{self, Editor, FileContext};
use crate::ipython::{IPython, IPythonConfig};
use crate::mcp::{Launch, McpServers};
use crate::observations;
use crate::processes;
use crate::shells::{Shells, UnknownShell};
use crate::terminals::{TerminalConfig, TerminalError, Terminals};
use crate::user::RunAs;

/// What the executor needs to start.
#[derive(Debug, Clone)]
pub(crate) struct ExecutorConfig {
    /// `--working-dir`, absolute.
    pub(crate) working_dir: PathBuf,
    /// The user shells run as.
    pub(crate) run_as: Option<RunAs>,
    /// Start login shells.
    pub(crate) login_shell: bool,
    /// No-output timeout of non-blocking commands.
    pub(crate) no_change_timeout: Duration,
    /// Where full command outputs are kept.
    pub(crate) output_dir: PathBuf,
    /// The bytes the full-output files in `output_dir` may take together.
    pub(crate) output_budget: u64,
    /// `--plugins`: `jupyter` starts the kernel at once (else on first use), `agent_skills`
    /// loads OpenHands' skills into it.
    pub(crate) plugins: Vec<String>,
    /// `--python`: the interpreter that runs the IPython kernel (default `python3` on `PATH`).
    pub(crate) python: Option<PathBuf>,
    /// Which processes count as the agent's (`C-c` at the prompt, [`Executor::kill_all`]).
    pub(crate) agent_processes: agent_procs::Scope,
    /// `--enable-browser` / `--no-enable-browser`.
    pub(crate) browser: bool,
    /// `--chromium`: the browser's program (default `chromium` on `PATH`).
    pub(crate) chromium: Option<PathBuf>,
}

/// Errors starting the executor.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The output directory could not be made (no retry helps: fix the path or permissions).
    #[error("cannot create the output directory {0}: {1}")]
    OutputDir(PathBuf, std::io::Error),
    /// The main bash shell did not start.
    #[error(transparent)]
    Bash(#[from] ShellError),
}

/// Owner of the sandbox's execution state.
#[derive(Debug)]
pub(crate) struct Executor {
    working_dir: PathBuf,
    shell_config: Arc<ShellConfig>,
    shells: Shells,
    editor: Arc<Editor>,
    owner: Option<(u32, u32)>,
    ipython: IPython,
    /// How kernels are started (kept to start them anew with a caller's environment).
    kernels: IPythonConfig,
    /// The stdio MCP servers the sandbox runs for its host.
    mcp: Arc<McpServers>,
    /// How the browser is started (kept to start it with a caller's environment).
    browsers: BrowserConfig,
    /// The browser behind `browse` and `browse_interactive`, started on first use.
    browser: Browser,
    /// Held while a `write` or `edit` checks its file's content hash and changes it, so that
    /// two conditional actions on one file cannot both pass their check.
    file_writes: Arc<std::sync::Mutex<()>>,
    /// The terminals people and UIs attach to.
    terminals: Terminals,
}

/// What a request asks of its action besides the action itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct Conditions {
    /// The content hash (`sha256:HEX`) a `write` or `edit` expects its file to have.
    pub(crate) if_match: Option<String>,
    /// The shell a `run` runs in and relative paths resolve in (`None`: the default one).
    pub(crate) shell: Option<String>,
}

/// An action's observation with what the HTTP layer says beside it.
#[derive(Debug)]
pub(crate) struct Executed {
    /// The observation.
    pub(crate) observation: Observation,
    /// The content hash of the file a `read` read or a `write` or `edit` left (its `ETag`).
    pub(crate) content_hash: Option<String>,
}

/// Why an action was not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// A conditional action whose file is no longer what the caller read.
    #[error("{0}")]
    Precondition(String),
    /// The shell it names does not exist.
    #[error(transparent)]
    Shell(#[from] UnknownShell),
}

impl Executor {
    /// Starts the main bash shell.
    pub(crate) async fn start(config: ExecutorConfig) -> Result<Self, StartError> {
        std::fs::create_dir_all(&config.output_dir)
            .map_err(|e| StartError::OutputDir(config.output_dir.clone(), e))?;
        let owner = config.run_as.as_ref().map(|u| (u.uid, u.gid));
        if let Some((uid, gid)) = owner {
            // The agent must be able to read its own command outputs.
            let _ = std::os::unix::fs::chown(&config.output_dir, Some(uid), Some(gid));
        }
        let has_plugin = |name: &str| config.plugins.iter().any(|p| p == name);
        // A bare name is looked up on PATH; a relative path is taken from sandboxd's directory,
        // not from the kernel's.
        let python = match &config.python {
            Some(p) if p.is_relative() && p.components().count() > 1 => {
                std::path::absolute(p).unwrap_or_else(|_| p.clone())
            }
            Some(p) => p.clone(),
            None => PathBuf::from("python3"),
        };
        let kernels = IPythonConfig {
            python: python.to_string_lossy().into_owned(),
            run_as: config.run_as.clone(),
            agent_skills: has_plugin("agent_skills"),
            env: BTreeMap::new(),
        };
        let browsers = BrowserConfig {
            enabled: config.browser,
            chromium: config.chromium.as_ref().map_or_else(
                || "chromium".to_owned(),
                |p| {
                    std::path::absolute(p)
                        .unwrap_or_else(|_| p.clone())
                        .to_string_lossy()
                        .into_owned()
                },
            ),
            run_as: config.run_as.clone(),
            env: BTreeMap::new(),
            working_dir: config.working_dir.clone(),
            viewport: crate::browser::Viewport {
                width: 1280,
                height: 720,
            },
        };
        let browser = Browser::new(browsers.clone());
        let ipython = IPython::spawn(kernels.clone());
        let shells = Arc::new(ShellConfig {
            run_as: config.run_as,
            login: config.login_shell,
            no_change_timeout: config.no_change_timeout,
            output_dir: config.output_dir,
            command_seq: AtomicU64::new(1),
            spool_budget: crate::bash::SpoolBudget::new(config.output_budget),
            env: std::sync::RwLock::default(),
            agent_processes: config.agent_processes,
        });
        let terminals = Terminals::new(TerminalConfig {
            run_as: shells.run_as.clone(),
            working_dir: config.working_dir.clone(),
        });
        let bash = BashShell::start(shells.clone(), config.working_dir.clone()).await?;
        if has_plugin("jupyter") {
            // In the background: `/alive` does not wait for it; a first cell does. Only once
            // the shell is ready: the kernel's imports take a core for a second, and would
            // slow the shell's start, which `/alive` (and so the first observation) waits for.
            ipython.boot(config.working_dir.clone());
        }
        let shell_config = shells.clone();
        let shells = Shells::new(shells, config.working_dir.clone(), bash);
        Ok(Executor {
            working_dir: config.working_dir,
            shell_config,
            shells,
            editor: Arc::new(Editor::new()),
            owner,
            ipython,
            kernels,
            mcp: Arc::default(),
            browsers,
            browser,
            file_writes: Arc::default(),
            terminals,
        })
    }

    /// Gives a pre-started executor its caller's configuration in place: `env` exported into
    /// the running shell (one hidden command) and given to every later shell and kernel, and
    /// the `plugins` started. `Err` says why the shell did not take the environment (the
    /// caller then starts sandboxd anew with it).
    pub(crate) async fn configure(
        &mut self,
        env: &BTreeMap<String, String>,
        plugins: &[String],
        browser: bool,
    ) -> Result<(), String> {
        if !env.is_empty() {
            let mut args = CmdRunArgs::new(crate::configure::export_command(env));
            args.hidden = true;
            let obs = self
                .shells
                .default_shell()
                .run(args, Some(30.0), None)
                .await;
            if crate::configure::exit_code(&obs) != Some(0) {
                return Err(format!(
                    "the shell did not take the environment: {}",
                    obs.content.trim()
                ));
            }
        }
        *self
            .shell_config
            .env
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = env.clone();
        let has_plugin = |name: &str| plugins.iter().any(|p| p == name);
        self.kernels.env = env.clone();
        self.kernels.agent_skills = has_plugin("agent_skills");
        self.ipython = IPython::spawn(self.kernels.clone());
        if has_plugin("jupyter") {
            self.ipython.boot(self.working_dir.clone());
        }
        self.browsers.env = env.clone();
        self.browsers.enabled = browser;
        self.browser = Browser::new(self.browsers.clone());
        Ok(())
    }

    /// Makes `servers` the sandbox's stdio MCP servers (see [`McpServers::update`]): they run
    /// as the sandbox user, in its working directory, with its environment under their own.
    pub(crate) async fn update_mcp_servers(
        &self,
        servers: Vec<protocol::api::McpStdioServer>,
    ) -> Result<String, sandbox_common::McpServerError> {
        let launch = Launch {
            run_as: self.shell_config.run_as.clone(),
            cwd: self.working_dir.clone(),
            env: self
                .shell_config
                .env
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        };
        self.mcp.update(servers, launch).await
    }

    /// The stdio MCP servers, for the proxy.
    pub(crate) fn mcp_servers(&self) -> Arc<McpServers> {
        self.mcp.clone()
    }

    /// Kills every process the agent started except the shells and the kernel (see
    /// [`agent_procs`]); returns how many.
    pub(crate) fn kill_all(&self) -> usize {
        agent_procs::kill_all(self.shell_config.agent_processes)
    }

    /// The sandbox's processes (see [`processes::list`]). Blocking.
    pub(crate) fn processes(&self) -> Vec<protocol::api::ProcessInfo> {
        processes::list(self.shell_config.agent_processes)
    }

    /// Sends `signal` to one of the sandbox's processes, or its whole tree (see
    /// [`processes::signal`]). Blocking.
    pub(crate) fn signal(
        &self,
        pid: u32,
        signal: &protocol::api::SignalSpec,
        tree: bool,
    ) -> Result<Vec<u32>, processes::SignalError> {
        let signal = processes::parse_signal(signal)?;
        processes::signal(self.shell_config.agent_processes, pid, signal, tree)
    }

    /// Where the full-output files of commands are.
    pub(crate) fn output_dir(&self) -> &Path {
        &self.shell_config.output_dir
    }

    /// The initial working directory.
    pub(crate) fn working_dir(&self) -> &Path {
        &self.working_dir
    }

    /// Uid and gid that new files should belong to, when sandboxd runs as root for a user.
    pub(crate) fn owner(&self) -> Option<(u32, u32)> {
        self.owner
    }

    /// Whether actions can run: `Err` says which actor cannot serve and why.
    pub(crate) fn health(&self) -> Result<(), String> {
        self.shells.default_shell().health()?;
        self.ipython.health()
    }

    /// The sandbox's terminals.
    pub(crate) fn terminals(&self) -> &Terminals {
        &self.terminals
    }

    /// Starts a terminal with the sandbox's environment under its own. Blocking (forks).
    pub(crate) fn create_terminal(
        &self,
        request: protocol::api::CreateTerminalRequest,
    ) -> Result<protocol::api::TerminalInfo, TerminalError> {
        let env = self
            .shell_config
            .env
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        self.terminals.create(request, &env)
    }

    /// The sandbox's shells.
    pub(crate) fn shells(&self) -> &Shells {
        &self.shells
    }

    /// Executes one action and returns its observation, with `cause` and `tool_call_metadata`
    /// taken from the action. Only runnable types other than `call_tool_mcp` (which the host
    /// runs) may be passed (see [`protocol::ActionType::is_runnable`]).
    pub(crate) async fn execute(&self, action: Action) -> Observation {
        self.execute_tapped(action, None, self.shells.default_shell())
            .await
    }

    /// [`Executor::execute`] in `shell`, handing the live output of a `run` or `run_ipython`
    /// to `tap`.
    async fn execute_tapped(
        &self,
        action: Action,
        tap: Option<Tap>,
        shell: &BashShell,
    ) -> Observation {
        let mut obs = if let Some(refusal) = refuse_timeout(&action) {
            refusal
        } else {
            self.dispatch(action.kind, action.timeout, tap, shell).await
        };
        obs.cause = action.id.filter(|id| *id >= 0);
        obs.tool_call_metadata = action.tool_call_metadata;
        obs
    }

    /// Like [`Executor::execute`], with the request's `conditions` and the content hash of the
    /// file a file action touched. A `run` runs in the shell `conditions` names, and relative
    /// paths resolve in its directory. A `write` or `edit` whose `if_match` is not its file's
    /// content hash is refused and does nothing. `tap` gets the live output of a `run` or
    /// `run_ipython` once it runs (never for other actions).
    pub(crate) async fn execute_with(
        &self,
        action: Action,
        conditions: Conditions,
        tap: Option<Tap>,
    ) -> Result<Executed, Refused> {
        let shell = self.shells.get(conditions.shell.as_deref())?;
        let path = match &action.kind {
            ActionKind::Read(args) => args.path.clone(),
            ActionKind::Write(args) => args.path.clone(),
            ActionKind::Edit(args) => args.path.clone(),
            _ => {
                return Ok(Executed {
                    observation: self.execute_tapped(action, tap, &shell).await,
                    content_hash: None,
                });
            }
        };
        let (cause, metadata) = (action.id.filter(|id| *id >= 0), action.tool_call_metadata);
        let writes = self.file_writes.clone();
        let kind = action.kind;
        let outcome = self
            .with_files(&shell, move |ctx, editor| {
                let abs = files::resolve(&path, ctx.cwd);
                let abs = Path::new(&abs);
                if let ActionKind::Read(args) = &kind {
                    // The hash of what was read: a file that changed meanwhile gets none.
                    let before = files::content_hash(abs);
                    let observation = files::read(args, ctx, editor);
                    let after = files::content_hash(abs);
                    let content_hash = before.filter(|b| Some(b) == after.as_ref());
                    return Ok(Executed {
                        observation,
                        content_hash,
                    });
                }
                let _held = writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(expected) = &conditions.if_match {
                    let now = files::content_hash(abs);
                    if now.as_ref() != Some(expected) {
                        let what = match now {
                            Some(now) => format!("its content hash is now {now}"),
                            None => "it is no longer a readable regular file".to_owned(),
                        };
                        return Err(Refused::Precondition(format!(
                            "{} changed since it was read: {what}, not {expected}. The action was not run: read the file again and retry.",
                            abs.display()
                        )));
                    }
                }
                let observation = match &kind {
                    ActionKind::Write(args) => files::write(args, ctx),
                    ActionKind::Edit(args) => editor.edit(args, ctx),
                    _ => observations::error("ERROR: not a file action."),
                };
                Ok(Executed {
                    observation,
                    content_hash: files::content_hash(abs),
                })
            })
            .await;
        let mut executed = match outcome {
            Some(outcome) => outcome?,
            None => Executed {
                observation: observations::error("ERROR: the file action failed unexpectedly."),
                content_hash: None,
            },
        };
        executed.observation.cause = cause;
        executed.observation.tool_call_metadata = metadata;
        Ok(executed)
    }

    /// Runs one action of a runnable kind.
    async fn dispatch(
        &self,
        kind: ActionKind,
        timeout: Option<f64>,
        tap: Option<Tap>,
        shell: &BashShell,
    ) -> Observation {
        match kind {
            ActionKind::Run(args) => self.run(args, timeout, tap, shell).await,
            ActionKind::RunIpython(args) => {
                let cwd = self.shells.cwd(shell);
                self.ipython.run(args, timeout, cwd, tap).await
            }
            ActionKind::Read(args) => {
                self.file_action(shell, move |ctx, editor| files::read(&args, ctx, editor))
                    .await
            }
            ActionKind::Write(args) => {
                self.file_action(shell, move |ctx, _| files::write(&args, ctx))
                    .await
            }
            ActionKind::Edit(args) => {
                self.file_action(shell, move |ctx, editor| editor.edit(&args, ctx))
                    .await
            }
            ActionKind::Browse(args) => self.browser.browse(args, timeout).await,
            ActionKind::BrowseInteractive(args) => self.browser.interact(args, timeout).await,
            other => observations::error(format!(
                "Action {} cannot be executed in a sandbox.",
                other.action_type().as_str()
            )),
        }
    }

    /// Runs a file action on a blocking thread, resolving paths against `shell`'s current
    /// directory at the moment the action arrived. `None`: it panicked (logged).
    async fn with_files<T, F>(&self, shell: &BashShell, op: F) -> Option<T>
    where
        F: FnOnce(&FileContext<'_>, &Editor) -> T + Send + 'static,
        T: Send + 'static,
    {
        let cwd = self.shells.cwd(shell);
        let (initial, owner) = (self.working_dir.clone(), self.owner);
        let editor = self.editor.clone();
        let task = tokio::task::spawn_blocking(move || {
            let ctx = FileContext {
                cwd: &cwd,
                initial_dir: &initial,
                owner,
            };
            op(&ctx, &editor)
        });
        match task.await {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::error!(error = %e, "file action failed");
                None
            }
        }
    }

    /// [`Executor::with_files`] for an action that answers with an observation.
    async fn file_action<F>(&self, shell: &BashShell, op: F) -> Observation
    where
        F: FnOnce(&FileContext<'_>, &Editor) -> Observation + Send + 'static,
    {
        self.with_files(shell, op)
            .await
            .unwrap_or_else(|| observations::error("ERROR: the file action failed unexpectedly."))
    }

    /// A reader of the output of the command running in shell `id`, from the oldest line
    /// kept; `None` when none runs.
    pub(crate) fn attach(&self, id: &str) -> Result<Option<FeedReader>, UnknownShell> {
        Ok(self.shells.get(Some(id))?.attach())
    }

    async fn run(
        &self,
        args: CmdRunArgs,
        timeout: Option<f64>,
        tap: Option<Tap>,
        shell: &BashShell,
    ) -> Observation {
        if !args.is_static {
            return shell.run(args, timeout, tap).await;
        }
        // A fresh shell for this one command; dropping the handle kills it and its children.
        let cwd = args
            .cwd
            .as_deref()
            .map_or_else(|| self.working_dir.clone(), |c| self.working_dir.join(c));
        // Not silently somewhere else (issue 14.10b).
        if !cwd.is_dir() {
            let what = if cwd.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            return observations::run_refused(
                args.command.trim(),
                args.hidden,
                format!(
                    "ERROR: The command was not run: its working directory {} {what}.",
                    cwd.display()
                ),
            );
        }
        match BashShell::start(self.shell_config.clone(), cwd).await {
            Ok(session) => session.run(args, timeout, tap).await,
            Err(e) => {
                tracing::error!(error = %e, "cannot start a static shell");
                observations::run(
                    args.command.trim(),
                    format!("ERROR: cannot start bash: {e}"),
                    protocol::CmdOutputMetadata::default(),
                    args.hidden,
                    None,
                )
            }
        }
    }
}

/// The refusal of a `run` or `run_ipython` whose `timeout` is out of range (negative, huge, not
/// a number): refused at the edge, so that no deadline is ever computed from it.
fn refuse_timeout(action: &Action) -> Option<Observation> {
    let error = sandbox_common::timeout_duration(action.timeout?).err()?;
    let message = format!("ERROR: Invalid timeout: {error}");
    match &action.kind {
        ActionKind::Run(args) => Some(observations::run_refused(
            args.command.trim(),
            args.hidden,
            message,
        )),
        ActionKind::RunIpython(_) => Some(observations::error(message)),
        _ => None,
    }
}
