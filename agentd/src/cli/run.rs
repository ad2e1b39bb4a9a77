//! `agentd run`: one headless run, new, resumed or replayed, with live progress.

use std::io::Write;
use std::path::PathBuf;

use agentd::AGENT_SERVICE;
use agentd::docker::{SandboxConfig, SandboxUser, choose_user};
use agentd::{Agent, AgentFactory, ReplayAgent, ToolProfile};
use agentd::{AnalyzerKind, LlmRegistry, McpSettings, Outcome, ToolCalling};
use agentd::{FileConfig, RemoteEntry, default_sessions_dir, new_session_id};
use agentd::{LogMask, RepoOrigin, Repository, Secret, SecretMask, WorkspaceSpec};
use agentd::{RemoteApiConfig, RuntimeConfig, RuntimeKind};
use agentd::{RunSpec, STATE_FILE, State, run_session, session_dir};
use agentd::{render_event, trajectories as trajectory};
use anyhow::Context;
use clap::Args;
use protocol::{Action, AgentState, Event, ObservationKind};

use super::input::{self, InputMode, SeenState};
use super::settings::{codeact, docker_settings, llm_config, max_iterations, security_config};
use super::{DiskSize, USAGE, set};

/// Exit status when a replay saw other observations than its recording.
const REPLAY_DIFFERS: u8 = 3;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task for the agent.
    #[arg(long, conflicts_with = "task_file")]
    task: Option<String>,
    /// Read the task from a file.
    #[arg(long, value_name = "FILE")]
    task_file: Option<PathBuf>,
    /// Re-execute a recorded trajectory's agent actions in a fresh sandbox and report where the
    /// observations differ (exit status 3). Its task is used unless --task is given.
    #[arg(long, value_name = "FILE", conflicts_with = "script")]
    replay: Option<PathBuf>,
    /// Run a scripted agent: a JSON array of actions, played in order, then `finish`. Without
    /// --script or --replay, the CodeAct agent runs with the LLM given by --model.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// The agent that runs with the LLM: `CodeActAgent`, `LocAgent` (finds where in a Python
    /// repository a task belongs, never writes; its searches run in the sandbox's kernel) or
    /// `BrowsingAgent` (the reference's: BrowserGym actions only; the sandbox needs Chromium).
    #[arg(long, env = "AGENTD_AGENT", default_value = "CodeActAgent",
          value_parser = ["CodeActAgent", "LocAgent", "BrowsingAgent"])]
    agent: String,
    /// The CodeAct agent's model, as its server names it.
    #[arg(long, env = "LLM_MODEL")]
    model: Option<String>,
    /// The model's OpenAI-compatible endpoint (`.../v1`; default OpenAI's).
    #[arg(long, env = "LLM_BASE_URL", value_name = "URL")]
    base_url: Option<String>,
    /// The endpoint's API key.
    #[arg(long, env = "LLM_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Tool calling: native (`tools` in the request) or prompted (tools described in the
    /// system prompt); default by model name.
    #[arg(long, value_enum)]
    tool_calling: Option<ToolCalling>,
    /// Write each request sent to the model, as sent, to DIR (one numbered JSON file each).
    #[arg(long, value_name = "DIR")]
    dump_requests: Option<PathBuf>,
    /// Where the sandbox runs.
    #[arg(long, env = "AGENTD_RUNTIME", value_enum)]
    runtime: Option<RuntimeKind>,
    /// Iteration limit (default 500).
    #[arg(long, env = "AGENTD_MAX_ITERATIONS")]
    max_iterations: Option<u32>,
    /// Budget limit in USD.
    #[arg(long, env = "AGENTD_MAX_BUDGET")]
    max_budget: Option<f64>,
    /// Session id of a new run (default: time + random suffix).
    #[arg(long, conflicts_with = "resume")]
    session: Option<String>,
    /// Continue this session where it stopped (pass the same --script or --replay).
    #[arg(long, value_name = "SESSION")]
    resume: Option<String>,
    /// Write the session's events as a trajectory (JSON array) when the run ends.
    #[arg(long, value_name = "FILE")]
    save_trajectory: Option<PathBuf>,
    /// Print events as JSON lines instead of readable blocks.
    #[arg(long)]
    json: bool,
    /// Settings file (TOML); flags and environment variables override it.
    #[arg(long, env = "AGENTD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where sessions are kept (default: $XDG_STATE_HOME/agentd/sessions).
    #[arg(long, env = "AGENTD_SESSIONS_DIR", value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
    /// Host directory the sandbox works in (local: the current directory; docker: mounted at
    /// /workspace).
    #[arg(long, env = "AGENTD_WORKSPACE", value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The sandboxd binary (local runtime, and for images).
    #[arg(long = "sandboxd", env = "AGENTD_SANDBOXD_BIN", value_name = "PATH")]
    sandboxd: Option<PathBuf>,
    /// Docker runtime: the sandbox or base image.
    #[arg(long, env = "AGENTD_IMAGE")]
    image: Option<String>,
    /// Docker runtime: the sandbox user's UID or UID:GID (default: the workspace's owner, so
    /// that what the agent writes belongs to the project's owner; without a workspace 1000).
    #[arg(long, env = "AGENTD_SANDBOX_UID", value_name = "UID[:GID]")]
    sandbox_uid: Option<SandboxUser>,
    /// Docker runtime: allow a sandbox that runs as root (a workspace owned by root, or
    /// --sandbox-uid 0); refused otherwise.
    #[arg(long, env = "AGENTD_ALLOW_ROOT")]
    allow_root: bool,
    /// Docker runtime: let the sandbox user use sudo (no-new-privileges off, the capabilities
    /// root needs to install packages); default off: sudo says the policy forbids it.
    #[arg(long, env = "AGENTD_SUDO")]
    sudo: bool,
    /// Docker runtime: the most the sandbox may write, e.g. 10g (the default), or `none`.
    #[arg(long, env = "AGENTD_DISK", value_name = "SIZE|none")]
    disk: Option<DiskSize>,
    /// Remote runtime: sandboxd's URL.
    #[arg(long, env = "SANDBOX_URL")]
    remote_url: Option<String>,
    /// Remote runtime: its session API key.
    #[arg(long, env = "SESSION_API_KEY", hide_env_values = true)]
    remote_api_key: Option<String>,
    /// Remote runtime through a runtime API service (`agentd serve`): its URL. The sandbox is
    /// started by session id (a running one of that session is reused).
    #[arg(long, env = "SANDBOX_REMOTE_RUNTIME_API_URL")]
    remote_api_url: Option<String>,
    /// The runtime API service's key (sent as X-API-Key).
    #[arg(long, env = "SANDBOX_API_KEY", hide_env_values = true)]
    sandbox_api_key: Option<String>,
    /// Leave the runtime API service's sandbox running when the run ends (a later run of the
    /// session reuses it).
    #[arg(long)]
    keep_sandbox: bool,
    /// An MCP server the host reaches over HTTP with Server-Sent Events (repeatable; added to
    /// `[mcp] sse_servers`).
    #[arg(long = "mcp-sse", value_name = "URL")]
    mcp_sse: Vec<String>,
    /// An MCP server the host reaches over streamable HTTP (repeatable; added to `[mcp]
    /// shttp_servers`).
    #[arg(long = "mcp-shttp", value_name = "URL")]
    mcp_shttp: Vec<String>,
    /// A stdio MCP server the sandbox runs, `NAME=COMMAND [ARGS...]` in shell-like words
    /// (repeatable; added to `[mcp] stdio_servers`).
    #[arg(long = "mcp-stdio", value_name = "NAME=COMMAND ARGS")]
    mcp_stdio: Vec<String>,
    /// The repository to work on: OWNER/NAME (on GitHub) or a git URL, cloned with git into the
    /// sandbox's working directory (a clone already there is kept); with --repo-dir, its name
    /// only. The token for an https URL comes from --git-token-env, else GITHUB_TOKEN,
    /// GITLAB_TOKEN or BITBUCKET_TOKEN by host; it is exported in the sandbox and masked.
    #[arg(long, env = "AGENTD_REPO", value_name = "OWNER/NAME|URL")]
    repo: Option<String>,
    /// The repository is already in the workspace at PATH (relative to the sandbox's working
    /// directory): nothing is cloned.
    #[arg(long, env = "AGENTD_REPO_DIR", value_name = "PATH")]
    repo_dir: Option<String>,
    /// The branch to check out after cloning (default: a new openhands-workspace-XXXXXXXX).
    #[arg(long, requires = "repo")]
    branch: Option<String>,
    /// The environment variable of agentd that holds the clone's token.
    #[arg(long, value_name = "VAR", requires = "repo")]
    git_token_env: Option<String>,
    /// A secret for the agent: the value of agentd's environment variable NAME, exported under
    /// that name in the sandbox's shell, described to the agent by name (and DESCRIPTION), and
    /// masked as <secret_hidden> in events, logs, trajectories and LLM requests. Repeatable;
    /// also [secrets.NAME] in the settings file.
    #[arg(long = "secret", value_name = "NAME[=DESCRIPTION]")]
    secrets: Vec<String>,
    /// An input of a task microagent (`/name`), so that a headless run need not ask for it.
    /// Repeatable.
    #[arg(long = "input", value_name = "NAME=VALUE")]
    inputs: Vec<String>,
    /// Instructions for this run, shown to the agent with the workspace context.
    #[arg(long, value_name = "TEXT")]
    conversation_instructions: Option<String>,
    /// Confirmation mode: runnable actions that are not low-risk (all of them without a
    /// security analyzer) wait for the user's confirmation: y/n on the terminal, or with
    /// --json a `change_agent_state` action (`user_confirmed`/`user_rejected`) on stdin.
    #[arg(long, env = "AGENTD_CONFIRM")]
    confirm: bool,
    /// Which security analyzer gives actions their risk: `llm` (the risk the model declares)
    /// or `rules` (agentd's rule table); default: `[security] security_analyzer`, else none.
    #[arg(long, env = "AGENTD_SECURITY_ANALYZER", value_enum)]
    security_analyzer: Option<AnalyzerKind>,
    /// The user talks to the agent: messages typed on stdin (a line ending with \ goes on,
    /// /exit stops), the agent's questions wait for the answer. Implied for a new run without
    /// a task. With --json, stdin carries actions as JSON lines.
    #[arg(long)]
    interactive: bool,
}

/// A mistake in the flags or the settings: said on stderr, and the exit status is [`USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Usage(String);

/// The agent of a run, and what it brings: the agents it may delegate to, the run's models.
struct ChosenAgent {
    agent: Box<dyn Agent>,
    delegates: Option<AgentFactory>,
    llms: Option<LlmRegistry>,
}

pub async fn run(args: RunArgs, log_mask: &LogMask) -> anyhow::Result<u8> {
    match run_checked(args, log_mask).await {
        Err(e) => match e.downcast::<Usage>() {
            Ok(Usage(message)) => usage(&message),
            Err(e) => Err(e),
        },
        done => done,
    }
}

/// The run: its settings made (a [`Usage`] error for a mistake in them), the session run, its
/// outcome reported; the exit status.
async fn run_checked(args: RunArgs, log_mask: &LogMask) -> anyhow::Result<u8> {
    let file = super::settings(args.config.as_deref())?;
    let workspace = workspace_spec(&args, &file).map_err(Usage)?;
    let mask = SecretMask::new(&workspace.all_secrets());
    log_mask.set(mask.clone());
    let recorded = match &args.replay {
        Some(path) => Some(trajectory::load(path)?),
        None => None,
    };
    let ChosenAgent {
        agent,
        delegates,
        llms,
    } = choose_agent(&args, &file, &mask, recorded.as_deref())?;
    let interactive = args.interactive
        || (args.resume.is_none()
            && args.task.is_none()
            && args.task_file.is_none()
            && recorded.is_none());
    let mode = if args.json {
        InputMode::Json
    } else {
        InputMode::Terminal
    };
    let security = security_config(args.security_analyzer, args.confirm, &file).map_err(Usage)?;
    let task = task_of(&args, recorded.as_deref(), interactive, mode).await?;
    if args.resume.is_none() && task.is_none() {
        return usage("a new run needs --task, --task-file or a --replay trajectory with a task");
    }
    let mcp = mcp_settings(&args, &file)?;
    let mut runtime = runtime_config(&args, &file, &mask)?;

    let sessions_dir = args
        .sessions_dir
        .clone()
        .or(file.sessions_dir.clone())
        .unwrap_or_else(default_sessions_dir);
    let session_id = match args.resume.clone().or(args.session.clone()) {
        Some(id) => id,
        None => new_session_id().context("cannot make a session id")?,
    };
    runtime.remote_api = remote_api(&args, &file, &session_id, &runtime)?;
    let spec = RunSpec {
        session_id: session_id.clone(),
        sessions_dir,
        task,
        resume: args.resume.is_some(),
        agent,
        runtime,
        max_iterations: max_iterations(args.max_iterations, &file),
        max_budget: args.max_budget.or(file.max_budget),
        stop_on_signals: true,
        mcp,
        workspace,
        user_actions: None,
        interactive,
        security,
        delegates,
        llms,
    };
    let seen = SeenState::new();
    let mut spec = spec;
    // A resumed run in confirmation mode stays in it (its state says so).
    let saved_confirmation_mode = spec.resume
        && State::load(&session_dir(&spec.sessions_dir, &session_id).join(STATE_FILE))
            .is_ok_and(|state| state.confirmation_mode);
    if interactive || spec.security.confirmation_mode || saved_confirmation_mode {
        spec.user_actions = Some(input::spawn(mode, seen.clone(), interactive));
    }
    let json = args.json;
    eprintln!("agentd: session {session_id}");
    let outcome = run_session(spec, move |event| {
        print_event(event, json);
        if let Event::Observation(o) = event
            && let ObservationKind::AgentStateChanged(extras) = &o.kind
            && let Some(state) = AgentState::parse(&extras.agent_state)
        {
            seen.set(state);
            if !json && let Some(prompt) = input::prompt(state, interactive) {
                eprintln!("{prompt}");
            }
        }
    })
    .await?;

    let all_failed = report(&outcome, &session_id, &mask);
    if let Some(path) = &args.save_trajectory {
        trajectory::save(path, &outcome.stream.all(), &mask)?;
        eprintln!("agentd: trajectory saved to {}", path.display());
    }
    if let Some(recorded) = recorded
        && replay_differs(&recorded, &outcome)
    {
        return Ok(REPLAY_DIFFERS);
    }
    // Leaving an interactive run with /exit is its normal end.
    let left = interactive && outcome.state.agent_state == AgentState::Stopped;
    Ok(if (outcome.finished() && !all_failed) || left {
        0
    } else {
        1
    })
}

/// The run's agent: a replay of the recording or of `--script`'s actions, else
/// the model's agent (`--agent`: CodeAct, `LocAgent` or `BrowsingAgent`) with the run's
/// registry of models.
fn choose_agent(
    args: &RunArgs,
    file: &FileConfig,
    mask: &SecretMask,
    recorded: Option<&[Event]>,
) -> anyhow::Result<ChosenAgent> {
    let replay = |agent: ReplayAgent| ChosenAgent {
        agent: Box::new(agent),
        delegates: None,
        llms: None,
    };
    if let Some(events) = recorded {
        return Ok(replay(ReplayAgent::from_events(events)));
    }
    if let Some(path) = &args.script {
        let text =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let actions: Vec<Action> = serde_json::from_slice(&text)
            .with_context(|| format!("{} is not a JSON array of actions", path.display()))?;
        return Ok(replay(ReplayAgent::new(actions)));
    }
    let mut llm = llm_config(
        file,
        args.model.clone(),
        args.base_url.clone(),
        args.api_key.clone(),
        args.tool_calling,
    );
    if args.dump_requests.is_some() {
        llm.dump_requests_folder = args.dump_requests.clone();
    }
    if llm.model.trim().is_empty() {
        return Err(Usage(
            "no agent: pass --model (or set LLM_MODEL, or [llm] model in --config) for                      the CodeAct agent, or --script FILE or --replay FILE".to_string(),
        )
        .into());
    }
    let registry = LlmRegistry::default();
    if args.agent == "BrowsingAgent" {
        let model = llm.model.clone();
        let llm = registry
            .get(AGENT_SERVICE, Some(&llm))
            .with_context(|| format!("cannot set up the model {model}"))?
            .with_secret_mask(mask.clone());
        return Ok(ChosenAgent {
            agent: Box::new(agentd::BrowsingAgent::new(llm)),
            delegates: None,
            llms: Some(registry),
        });
    }
    let profile = if args.agent == "LocAgent" {
        ToolProfile::Loc
    } else {
        ToolProfile::CodeAct
    };
    let (agent, factory) = codeact(&registry, llm, file, mask.clone(), profile)?;
    Ok(ChosenAgent {
        agent: Box::new(agent),
        delegates: Some(factory),
        llms: Some(registry),
    })
}

/// The task of a new run: `--task`, `--task-file`, the recording's, or one typed at the start
/// of an interactive run (`None` for a resumed run without one).
async fn task_of(
    args: &RunArgs,
    recorded: Option<&[Event]>,
    interactive: bool,
    mode: InputMode,
) -> anyhow::Result<Option<String>> {
    Ok(match (&args.task, &args.task_file, recorded) {
        (Some(task), _, _) => Some(task.clone()),
        (None, Some(path), _) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        ),
        (None, None, Some(events)) => trajectory::task(events),
        (None, None, None) if interactive && args.resume.is_none() => {
            match tokio::task::spawn_blocking(move || input::read_task(mode)).await? {
                Some(task) => Some(task),
                None => {
                    return Err(
                        Usage("no task: the input ended before one was given".to_string()).into(),
                    );
                }
            }
        }
        (None, None, None) => None,
    })
}

/// The run's MCP servers: the file's `[mcp]` and the `--mcp-*` flags.
fn mcp_settings(args: &RunArgs, file: &FileConfig) -> Result<McpSettings, Usage> {
    let mut mcp = file.mcp.clone().unwrap_or_default();
    mcp.sse_servers
        .extend(args.mcp_sse.iter().cloned().map(RemoteEntry::Url));
    mcp.shttp_servers
        .extend(args.mcp_shttp.iter().cloned().map(RemoteEntry::Url));
    args.mcp_stdio
        .iter()
        .try_for_each(|text| mcp.add_stdio(text))
        .and_then(|()| mcp.settings())
        .map_err(|e| Usage(e.to_string()))
}

/// Where the run's sandbox is and how it is made: the runtime, the workspace, the Docker
/// sandbox's settings (a sandbox user the policy refuses is refused here, before the session
/// exists), and a running command's output shown live unless `--json`.
fn runtime_config(
    args: &RunArgs,
    file: &FileConfig,
    mask: &SecretMask,
) -> anyhow::Result<RuntimeConfig> {
    let mut docker = SandboxConfig::default();
    set(
        &mut docker.image,
        args.image.clone().or(file.docker.image.clone()),
    );
    docker_settings(file, &mut docker)?;
    let mut runtime = RuntimeConfig {
        kind: args.runtime.or(file.runtime).unwrap_or_default(),
        workspace: args.workspace.clone().or(file.workspace.clone()),
        sandboxd_binary: args.sandboxd.clone().or(file.sandboxd.clone()),
        remote_url: args.remote_url.clone().or(file.remote.url.clone()),
        remote_api_key: args.remote_api_key.clone().or(file.remote.api_key.clone()),
        docker,
        ..RuntimeConfig::default()
    };
    // A local sandbox gets the browser only when the agent browses.
    // A run that browses, or may delegate to the BrowsingAgent, gets the browser.
    if !args.json {
        // A running command's output, live, on the terminal; the observation follows on
        // stdout when it ends.
        // Secret values masked, as everywhere else (sandboxd sends whole lines).
        let mask = mask.clone();
        runtime.on_output = Some(agentd::OutputListener(std::sync::Arc::new(
            move |chunk: &str| {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(mask.mask(chunk).as_bytes());
                let _ = err.flush();
            },
        )));
    }
    runtime.local.browser = args.agent == "BrowsingAgent"
        || file.agent.browsing.unwrap_or(false)
        || file.agent.delegation.unwrap_or(false);
    let docker = &mut runtime.docker;
    docker.user = match (args.sandbox_uid, &file.docker.uid) {
        (Some(user), _) => Some(user),
        (None, Some(text)) => Some(text.parse().map_err(anyhow::Error::msg)?),
        (None, None) => None,
    };
    docker.allow_root = args.allow_root || file.docker.allow_root.unwrap_or(false);
    docker.sudo = args.sudo || file.docker.sudo.unwrap_or(false);
    if let Some(DiskSize(bytes)) = args.disk {
        docker.disk_bytes = bytes;
    }
    if runtime.kind == RuntimeKind::Docker {
        // Refused before the session exists: a sandbox that could not write its workspace, or
        // one as root against the policy, would fail every action of the run.
        let workspace = match &runtime.workspace {
            Some(dir) => Some(std::path::absolute(dir)?),
            None => None,
        };
        let docker = &runtime.docker;
        if let Err(e) = choose_user(workspace.as_deref(), docker.user, docker.allow_root) {
            return Err(Usage(e.to_string()).into());
        }
    }
    Ok(runtime)
}

/// The runtime API service the sandbox comes from, when `--remote-api-url` names one (its key
/// is needed then).
fn remote_api(
    args: &RunArgs,
    file: &FileConfig,
    session_id: &str,
    runtime: &RuntimeConfig,
) -> Result<Option<RemoteApiConfig>, Usage> {
    let Some(url) = args.remote_api_url.clone().or(file.remote.api_url.clone()) else {
        return Ok(None);
    };
    let Some(api_key) = args
        .sandbox_api_key
        .clone()
        .or(file.remote.service_api_key.clone())
    else {
        return Err(Usage(
            "the runtime API needs its key: --sandbox-api-key, SANDBOX_API_KEY or [remote] service_api_key".to_string(),
        ));
    };
    Ok(Some(RemoteApiConfig {
        url,
        api_key,
        session_id: session_id.to_string(),
        image: runtime.docker.image.clone(),
        environment: Default::default(),
        plugins: Vec::new(),
        keep: args.keep_sandbox || file.remote.keep.unwrap_or(false),
    }))
}

/// Says on stderr how the run ended: its state, its models' use, the actions that failed.
/// Whether every action it ran failed.
fn report(outcome: &Outcome, session_id: &str, mask: &SecretMask) -> bool {
    let state = &outcome.state;
    eprintln!(
        "agentd: session {session_id} {} after {} iterations{} (events: {})",
        state.agent_state.as_str(),
        state.iteration,
        state
            .last_error
            .as_ref()
            .map(|e| format!(": {}", mask.mask(e)))
            .unwrap_or_default(),
        outcome.dir.display()
    );
    if let Some(stats) = &state.stats {
        if stats.services.len() > 1 {
            for (id, service) in &stats.services {
                eprintln!(
                    "agentd: {id} ({}): {} calls, {} prompt + {} completion tokens, ${:.4}",
                    service.model,
                    service.calls,
                    service.prompt_tokens,
                    service.completion_tokens,
                    service.accumulated_cost
                );
            }
        }
        let total = &stats.total;
        eprintln!(
            "agentd: LLM total: {} calls, {} prompt + {} completion tokens, ${:.4}, {:.1} s",
            total.calls,
            total.prompt_tokens,
            total.completion_tokens,
            total.accumulated_cost,
            total.latency
        );
    }
    let tally = outcome.tally();
    if tally.failed > 0 {
        let denied = match tally.denied {
            0 => String::new(),
            n if n == tally.failed => ", all for lack of permission".to_string(),
            n => format!(", {n} for lack of permission"),
        };
        eprintln!(
            "agentd: warning: {} of {} actions failed{denied}",
            tally.failed, tally.answered
        );
    }
    let all_failed = tally.all_failed();
    if all_failed && outcome.finished() {
        eprintln!(
            "agentd: the agent says it finished, but every action it ran failed: the run is not counted as finished"
        );
    }
    all_failed
}

/// Compares a replay with its recording and says on stderr how it went: whether they differ.
fn replay_differs(recorded: &[Event], outcome: &Outcome) -> bool {
    let replayed: Vec<Event> = outcome.stream.all().iter().map(|e| (**e).clone()).collect();
    let differences = trajectory::compare(recorded, &replayed);
    if differences.is_empty() {
        eprintln!("agentd: replay matches the recording");
        return false;
    }
    eprintln!(
        "agentd: replay differs from the recording in {} step(s):",
        differences.len()
    );
    for d in &differences {
        eprintln!(
            "  step {} ({}):\n    recorded: {}\n    replayed: {}",
            d.step, d.action, d.recorded, d.replayed
        );
    }
    true
}

/// The workspace settings of the flags and the file: repository, secrets, task inputs,
/// instructions, disabled microagents. `Err` says what is wrong.
fn workspace_spec(args: &RunArgs, file: &FileConfig) -> Result<WorkspaceSpec, String> {
    let env = |name: &str| std::env::var(name).ok();
    let repository = match (&args.repo, &args.repo_dir) {
        (spec, Some(dir)) => {
            let dir = dir.trim_end_matches('/');
            if dir.is_empty() || dir.starts_with('/') || dir.split('/').any(|p| p == "..") {
                return Err(format!(
                    "--repo-dir {dir:?}: give a path inside the working directory"
                ));
            }
            let name = spec
                .clone()
                .unwrap_or_else(|| dir.rsplit('/').next().unwrap_or(dir).to_string());
            Some(Repository {
                name,
                origin: RepoOrigin::Dir(dir.to_string()),
            })
        }
        (Some(spec), None) => Some(
            Repository::clone_of(
                spec,
                None,
                args.branch.clone(),
                args.git_token_env.as_deref(),
                env,
            )
            .map_err(|e| e.to_string())?,
        ),
        (None, None) => None,
    };
    let mut secrets = Vec::new();
    for (name, setting) in &file.secrets {
        secrets.push(Secret::from_setting(name, setting, env).map_err(|e| e.to_string())?);
    }
    for flag in &args.secrets {
        let (name, description) = flag.split_once('=').unwrap_or((flag.as_str(), ""));
        let value = env(name).ok_or_else(|| {
            format!("--secret {name}: the environment variable {name} is not set")
        })?;
        secrets.retain(|s: &Secret| s.name != name);
        secrets.push(Secret::new(name, value, description).map_err(|e| e.to_string())?);
    }
    let mut inputs = std::collections::BTreeMap::new();
    for flag in &args.inputs {
        let Some((name, value)) = flag.split_once('=') else {
            return Err(format!("--input {flag:?}: give NAME=VALUE"));
        };
        inputs.insert(name.to_string(), value.to_string());
    }
    Ok(WorkspaceSpec {
        repository,
        secrets,
        inputs,
        conversation_instructions: args.conversation_instructions.clone().unwrap_or_default(),
        disabled_microagents: file.microagents.disabled.clone(),
    })
}

/// A command line that cannot work: said on stderr, exit status 2 (as clap does).
fn usage(message: &str) -> anyhow::Result<u8> {
    eprintln!("agentd run: {message}");
    Ok(USAGE)
}

fn print_event(event: &Event, json: bool) {
    let mut out = std::io::stdout().lock();
    let line = if json {
        serde_json::to_string(event).unwrap_or_default()
    } else {
        render_event(event)
    };
    // A closed stdout (a pager quit) must not stop the run.
    let _ = writeln!(out, "{line}");
}
