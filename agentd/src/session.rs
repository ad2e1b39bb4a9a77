//! One headless run: a session directory (event log + state), a sandbox runtime, an agent and
//! the controller, wired through the event stream. This is what `agentd run` does.
//!
//! Subscribers of the stream: the controller (steps the agent), the runtime task (executes the
//! agent's runnable actions and adds their observations), the memory task (answers `recall`
//! actions, see [`crate::recall`]), and the caller's `on_event` (live progress). Before the
//! agent starts, the workspace is made ready in the sandbox ([`crate::workspace`]): secrets,
//! repository, setup script, pre-commit hook, microagents. A run ends when the controller
//! reaches a final state; the sandbox is then closed. A run resumed after it had failed starts
//! with the reference's "Let's get back on track" user message.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::action::{ActionKind, ConfirmationState, MessageArgs};
use protocol::{Action, AgentState, Event, EventSource, ObservationKind};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::controller::{
    BACK_ON_TRACK, Controller, ControllerConfig, ControllerError, ControllerHandle,
};
use crate::events::{EventLogError, EventStream};
use crate::mcp::McpSettings;
use crate::recall::{Memory, Recalled, WorkspaceContext};
use crate::runtime::{Runtime, RuntimeConfig, RuntimeError};
use crate::secrets::SecretMask;
use crate::security::SecurityConfig;
use crate::state::{STATE_FILE, State};
use crate::workspace::{self, WorkspaceError, WorkspaceSpec};

/// Errors that keep a run from starting or finishing (a run that ends in the `error` state is
/// not one: see [`Outcome`]).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The session's event log could not be opened or written.
    #[error(transparent)]
    EventLog(#[from] EventLogError),
    /// The sandbox could not be started or closed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The controller failed (state file, event log).
    #[error(transparent)]
    Controller(#[from] ControllerError),
    /// `--resume` of a session that does not exist.
    #[error("no session {0} to resume (looked in {1})")]
    NoSuchSession(String, PathBuf),
    /// A new run without a task.
    #[error("a new run needs a task")]
    NoTask,
    /// The workspace could not be made ready (a clone, a secret's export).
    #[error("the workspace could not be made ready: {0}")]
    Workspace(#[from] WorkspaceError),
    /// A built-in microagent does not parse (a bug of this build).
    #[error(transparent)]
    Microagent(#[from] crate::recall::microagent::MicroagentError),
}

/// What to run.
#[allow(
    missing_debug_implementations,
    reason = "holds the agent, a trait object"
)]
pub struct RunSpec {
    /// The session id.
    pub session_id: String,
    /// Where sessions live; this run's are in `sessions_dir/session_id`.
    pub sessions_dir: PathBuf,
    /// The task (ignored when resuming).
    pub task: Option<String>,
    /// Continue the session instead of starting it.
    pub resume: bool,
    /// The agent.
    pub agent: Box<dyn Agent>,
    /// Where the sandbox comes from.
    pub runtime: RuntimeConfig,
    /// Limits.
    pub max_iterations: u32,
    /// Budget limit in USD.
    pub max_budget: Option<f64>,
    /// Stop the run cleanly (state `stopped`, sandbox closed) on SIGINT or SIGTERM.
    pub stop_on_signals: bool,
    /// The MCP servers whose tools the agent gets.
    pub mcp: McpSettings,
    /// The repository, secrets and microagent settings of the workspace.
    pub workspace: WorkspaceSpec,
    /// Risk analysis and confirmation mode.
    pub security: SecurityConfig,
    /// Someone answers the agent (the terminal of an interactive run): a message that waits
    /// for a reply waits for the user's, instead of the reference's automatic one.
    pub interactive: bool,
    /// The run's models (their stats are kept in the state).
    pub llms: Option<crate::llm::LlmRegistry>,
    /// The agents the agent may delegate to, by name (`None`: delegation is refused).
    pub delegates: Option<crate::controller::AgentFactory>,
    /// The user's actions (messages, `change_agent_state` such as `user_confirmed`), added to
    /// the stream (source user) as they come, once the run has started.
    pub user_actions: Option<mpsc::UnboundedReceiver<Action>>,
}

impl RunSpec {
    /// A new headless run of `task` by `agent` in a sandbox from `runtime`, limited to
    /// `max_iterations`, with nothing else: no budget, no MCP servers, the default workspace and
    /// security settings, no delegation, no user after the task, signals left to the caller.
    pub fn new(
        session_id: impl Into<String>,
        sessions_dir: impl Into<PathBuf>,
        task: impl Into<String>,
        agent: Box<dyn Agent>,
        runtime: RuntimeConfig,
        max_iterations: u32,
    ) -> RunSpec {
        RunSpec {
            session_id: session_id.into(),
            sessions_dir: sessions_dir.into(),
            task: Some(task.into()),
            resume: false,
            agent,
            runtime,
            max_iterations,
            max_budget: None,
            stop_on_signals: false,
            mcp: McpSettings::default(),
            workspace: WorkspaceSpec::default(),
            security: SecurityConfig::default(),
            interactive: false,
            llms: None,
            delegates: None,
            user_actions: None,
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The final state.
    pub state: State,
    /// The session's events.
    pub stream: EventStream,
    /// The session directory.
    pub dir: PathBuf,
}

impl Outcome {
    /// Whether the agent finished its task.
    pub fn finished(&self) -> bool {
        self.state.agent_state == AgentState::Finished
    }

    /// How the agent's actions in the sandbox went.
    pub fn tally(&self) -> ActionTally {
        ActionTally::of(self.stream.all().iter().map(|e| &**e))
    }
}

/// How many of a run's sandbox actions failed, and how many of those for lack of permission:
/// a run whose every action failed did not do its task, however it ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ActionTally {
    /// Observations of the agent's runnable actions.
    pub answered: usize,
    /// Of those: `error` observations, `read`/`edit` errors, commands that exited non-zero.
    pub failed: usize,
    /// Of the failures: those that say permission was denied (a read-only file system
    /// included: the place may not be written either way).
    pub denied: usize,
}

impl ActionTally {
    /// Counts the observations of `events` that answer an action.
    pub(crate) fn of<'a>(events: impl IntoIterator<Item = &'a Event>) -> ActionTally {
        let mut tally = ActionTally::default();
        for event in events {
            let Event::Observation(observation) = event else {
                continue;
            };
            if observation.cause.is_none() {
                continue;
            }
            let failed = match &observation.kind {
                ObservationKind::Error(_) => true,
                ObservationKind::Read(_) | ObservationKind::Edit(_) => {
                    observation.content.starts_with("ERROR:")
                }
                ObservationKind::Run(extras) => extras.metadata.exit_code != 0,
                ObservationKind::RunIpython(_) | ObservationKind::Write(_) => false,
                ObservationKind::Mcp(_) => crate::mcp::read_content(&observation.content).failed,
                _ => continue,
            };
            tally.answered += 1;
            if failed {
                tally.failed += 1;
                if [
                    "Permission denied",
                    "Operation not permitted",
                    "Read-only file system",
                ]
                .iter()
                .any(|text| observation.content.contains(text))
                {
                    tally.denied += 1;
                }
            }
        }
        tally
    }

    /// Whether there were actions and all of them failed.
    pub fn all_failed(&self) -> bool {
        self.answered > 0 && self.failed == self.answered
    }
}

/// The directory of a session.
pub fn session_dir(sessions_dir: &Path, session_id: &str) -> PathBuf {
    sessions_dir.join(session_id)
}

/// Runs `spec` to a final state. `on_event` sees every event added during the run, in order.
pub async fn run(
    spec: RunSpec,
    on_event: impl FnMut(&Event) + Send + 'static,
) -> Result<Outcome, SessionError> {
    let dir = check(&spec)?;
    let mask = SecretMask::new(&spec.workspace.all_secrets());
    let stream = EventStream::open_masked(&dir, mask)?;
    drive(spec, stream, Mode::Headless, on_event).await
}

/// How a run is driven.
#[derive(Debug)]
pub(crate) enum Mode {
    /// Nobody answers the agent (`agentd run`): the reference's automatic reply, and the run
    /// ends in a final state.
    Headless,
    /// A person answers through the stream (the conversation server): a run waits for their
    /// replies, and ends in a final state or when `detach` fires (the sandbox is released;
    /// the saved state lets a later run go on).
    Attached {
        /// Ends the run where it is, when cancelled.
        detach: CancellationToken,
    },
}

/// Runs `spec` on `stream`, already open on the session's directory (a conversation server
/// keeps it open between runs, to add the user's messages and serve the events).
pub(crate) async fn run_attached(
    spec: RunSpec,
    stream: EventStream,
    detach: CancellationToken,
    on_event: impl FnMut(&Event) + Send + 'static,
) -> Result<Outcome, SessionError> {
    check(&spec)?;
    drive(spec, stream, Mode::Attached { detach }, on_event).await
}

/// The session directory of `spec`, once it is known to be runnable.
fn check(spec: &RunSpec) -> Result<PathBuf, SessionError> {
    let dir = session_dir(&spec.sessions_dir, &spec.session_id);
    if spec.resume && !dir.join(STATE_FILE).is_file() {
        return Err(SessionError::NoSuchSession(
            spec.session_id.clone(),
            spec.sessions_dir.clone(),
        ));
    }
    if !spec.resume && spec.task.is_none() {
        return Err(SessionError::NoTask);
    }
    Ok(dir)
}

async fn drive(
    spec: RunSpec,
    stream: EventStream,
    mode: Mode,
    mut on_event: impl FnMut(&Event) + Send + 'static,
) -> Result<Outcome, SessionError> {
    let dir = session_dir(&spec.sessions_dir, &spec.session_id);
    let mut printed = stream.subscribe();
    let (printer_stop, mut stop) = oneshot::channel::<()>();
    let printer = tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                event = printed.recv() => match event {
                    Some(event) => on_event(&event),
                    None => break,
                },
                _ = &mut stop => {
                    while let Ok(event) = printed.try_recv() {
                        on_event(&event);
                    }
                    break;
                }
            }
        }
    });

    let mut runtime = Runtime::start(&spec.runtime).await?;
    let (memory, working_dir) = match prepare_memory(&runtime, &stream, &spec.workspace).await {
        Ok(prepared) => prepared,
        Err(e) => {
            if let Err(close) = runtime.close().await {
                tracing::warn!(error = %close, "could not close the sandbox");
            }
            let _ = printer_stop.send(());
            let _ = printer.await;
            return Err(e);
        }
    };
    // After the workspace is ready: a stdio server may use what it set up.
    let mut agent = spec.agent;
    if !spec.mcp.is_empty() {
        for failure in runtime.connect_mcp(&spec.mcp).await {
            tracing::warn!("MCP server {} left out: {}", failure.server, failure.reason);
        }
        agent.offer_mcp_tools(runtime.mcp_tools());
    }
    let mut security = spec.security;
    security.workspace = Some(working_dir);
    let config = ControllerConfig {
        session_id: spec.session_id.clone(),
        max_iterations: spec.max_iterations,
        max_budget_per_task: spec.max_budget,
        session_dir: Some(dir.clone()),
        headless: !spec.interactive && matches!(mode, Mode::Headless),
        recall: true,
        security,
        delegates: spec.delegates,
        llms: spec.llms,
    };
    let system = (!spec.resume).then(|| agent.system_message()).flatten();
    let controller = if spec.resume {
        Controller::resume(&dir, stream.clone(), agent, config)?
    } else {
        Controller::new(stream.clone(), agent, config)
    };
    let pending = controller.pending_action();
    let recalls = tokio::spawn(answer_recalls(
        memory,
        stream.clone(),
        stream.subscribe(),
        controller.pending_recall(),
        controller.handle(),
    ));
    let signals = spec
        .stop_on_signals
        .then(|| tokio::spawn(stop_on_signal(controller.handle())));
    let (runtime_stop, runtime_stopped) = oneshot::channel();
    let executor = tokio::spawn(execute_actions(
        runtime,
        stream.clone(),
        stream.subscribe(),
        pending,
        controller.handle(),
        runtime_stopped,
    ));
    if !spec.resume {
        if let Some(system) = system {
            stream.add(system, EventSource::Agent)?;
        }
        let task = spec.task.unwrap_or_default();
        stream.add(
            Action::from(ActionKind::Message(MessageArgs {
                content: task,
                ..MessageArgs::default()
            })),
            EventSource::User,
        )?;
    } else if controller.resumed_after_error() {
        stream.add(
            Action::from(ActionKind::Message(MessageArgs {
                content: BACK_ON_TRACK.to_string(),
                ..MessageArgs::default()
            })),
            EventSource::User,
        )?;
    }
    let user = spec
        .user_actions
        .map(|actions| tokio::spawn(add_user_actions(actions, stream.clone())));
    let result = match mode {
        Mode::Headless => controller.run().await,
        Mode::Attached { detach } => tokio::select! {
            result = controller.run() => result,
            // The controller saves its state after every step and state change: what it was
            // doing when dropped here is what a resumed run goes on with.
            () = detach.cancelled() => {
                State::load(&dir.join(STATE_FILE)).map_err(ControllerError::from)
            }
        },
    };
    recalls.abort();
    if let Some(user) = user {
        user.abort();
    }
    if let Some(signals) = signals {
        signals.abort();
    }

    let _ = runtime_stop.send(());
    let closed = match executor.await {
        Ok(runtime) => runtime.close().await,
        Err(e) => {
            tracing::error!(error = %e, "the runtime task failed");
            Ok(())
        }
    };
    let _ = printer_stop.send(());
    let _ = printer.await;
    let state = result?;
    closed?;
    Ok(Outcome { state, stream, dir })
}

/// Adds each of the user's actions to the stream (source user).
async fn add_user_actions(mut actions: mpsc::UnboundedReceiver<Action>, stream: EventStream) {
    while let Some(action) = actions.recv().await {
        if let Err(e) = stream.add(crate::agent::fresh(action), EventSource::User) {
            tracing::error!(error = %e, "cannot record the user's action");
        }
    }
}

/// Stops the run on the first SIGINT (Ctrl-C) or SIGTERM.
async fn stop_on_signal(controller: ControllerHandle) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::warn!("cannot listen for signals; Ctrl-C will not stop the run cleanly");
        return;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    tracing::warn!("stopping the run on a signal");
    controller.stop();
}

/// The runtime's subscriber: executes the agent's runnable actions one at a time, in order, and
/// adds each observation. A sandbox that dies fails the run through the controller's handle.
async fn execute_actions(
    runtime: Runtime,
    stream: EventStream,
    mut events: mpsc::UnboundedReceiver<Arc<Event>>,
    pending: Option<Arc<Event>>,
    controller: ControllerHandle,
    mut stop: oneshot::Receiver<()>,
) -> Runtime {
    // A resumed session may end with an action that never got its observation.
    if let Some(event) = pending {
        execute_one(&runtime, &stream, &event, &controller).await;
    }
    let mut death_reported = false;
    loop {
        tokio::select! {
            _ = &mut stop => break,
            // After a death, actions are still answered (with errors, at once), so nothing
            // waits for an observation forever.
            death = runtime.died(), if !death_reported => {
                death_reported = true;
                controller.fail(format!("the sandbox died: {}", death.summary));
            }
            event = events.recv() => match event {
                // A run that ends meanwhile (stopped, failed) has answered the action itself:
                // abandon it rather than answer twice.
                Some(event) => tokio::select! {
                    _ = &mut stop => break,
                    () = execute_one(&runtime, &stream, &event, &controller) => {}
                },
                None => break,
            },
        }
    }
    runtime
}

async fn execute_one(
    runtime: &Runtime,
    stream: &EventStream,
    event: &Event,
    controller: &ControllerHandle,
) {
    let Event::Action(action) = event else { return };
    if action.source != Some(EventSource::Agent)
        || !action.kind.is_runnable()
        || action.confirmation_state() == ConfirmationState::AwaitingConfirmation
    {
        return;
    }
    let observation = runtime.execute(action).await;
    // A dead sandbox fails the run instead: the controller answers the action with OpenHands'
    // "not executed due to a runtime error" observation (one answer per action), and the
    // reason goes to the state and the state-change event.
    if let Some(death) = runtime.death() {
        controller.fail(format!("the sandbox died: {}", death.summary));
        return;
    }
    match stream.answer(observation, EventSource::Environment) {
        Ok(Some(_)) => {}
        // The run ended meanwhile and the controller answered the action as not executed.
        Ok(None) => tracing::warn!(
            action = ?action.id,
            "the action's observation came after the run had answered it as not executed; not recorded"
        ),
        Err(e) => controller.fail(format!("cannot record an observation: {e}")),
    }
}

/// Makes the workspace ready and the run's memory of it: the built-in and workspace
/// microagents (each file that cannot be used is reported and skipped) and the workspace
/// context. Also returns the sandbox's working directory.
async fn prepare_memory(
    runtime: &Runtime,
    stream: &EventStream,
    spec: &WorkspaceSpec,
) -> Result<(Memory, String), SessionError> {
    let prepared = workspace::prepare(runtime, stream, spec).await?;
    for problem in &prepared.loaded.problems {
        tracing::warn!("{problem}; skipped");
    }
    let (repo_name, repo_directory, repo_branch) = prepared.repository.unwrap_or_default();
    let context = WorkspaceContext {
        repo_name,
        repo_directory,
        repo_branch,
        runtime_hosts: runtime.web_hosts(),
        additional_agent_instructions: String::new(),
        date: chrono::Utc::now().format("%Y-%m-%d").to_string(),
        secrets: spec
            .all_secrets()
            .into_iter()
            .map(|s| (s.name, s.description))
            .collect(),
        conversation_instructions: spec.conversation_instructions.clone(),
        working_dir: prepared.working_dir.clone(),
    };
    let mut memory = Memory::new(context, spec.inputs.clone(), true)?;
    for agent in prepared.loaded.microagents {
        memory.add(agent);
    }
    memory.disable(&spec.disabled_microagents);
    tracing::info!(microagents = ?memory.names(), "microagents loaded");
    Ok((memory, prepared.working_dir))
}

/// The memory's subscriber: answers each `recall` action (first the one a resumed run still
/// waits for), or fails the run when a recall cannot be answered.
async fn answer_recalls(
    memory: Memory,
    stream: EventStream,
    mut events: mpsc::UnboundedReceiver<Arc<Event>>,
    pending: Option<Arc<Event>>,
    controller: ControllerHandle,
) {
    if let Some(event) = pending {
        answer_recall(&memory, &stream, &event, &controller);
    }
    while let Some(event) = events.recv().await {
        answer_recall(&memory, &stream, &event, &controller);
    }
}

fn answer_recall(
    memory: &Memory,
    stream: &EventStream,
    event: &Event,
    controller: &ControllerHandle,
) {
    let Event::Action(action) = event else { return };
    match memory.recall(action) {
        Recalled::Answer(observation) => {
            if let Err(e) = stream.answer(observation, EventSource::Environment) {
                controller.fail(format!("cannot record the recall's answer: {e}"));
            }
        }
        Recalled::Fail(reason) => controller.fail(reason),
        Recalled::Ignored => {}
    }
}
