//! The agent controller (OpenHands V0's `AgentController`), headless: it drives one agent
//! through a run on an event stream.
//!
//! The controller steps the agent whenever it is `running` and the agent's last runnable action
//! has its observation; it adds each action to the stream (source agent) and leaves running it
//! to the runtime, another subscriber of the stream, which answers with an observation whose
//! `cause` is the action's id. Actions that are not runnable (see
//! [`ActionKind::is_runnable`]) need no answer, except `think`, which the controller answers
//! itself with the reference's "Your thought has been logged." so that every tool call has its
//! result in the history.
//!
//! Every state change is an `agent_state_changed` observation (source environment) with a
//! reason. `finish` ends the run `finished`, `reject` `rejected`; a message that waits for an
//! answer moves to `awaiting_user_input`, where a headless run answers with the reference's
//! automatic reply and goes on. The iteration limit, the budget limit, a detected loop
//! ([`stuck`]) and a failure reported through the [`ControllerHandle`] end the run in `error`,
//! with `last_error` set, an `error` observation and the reason; `stop` ends it `stopped`. A
//! runnable action still unanswered at that point gets the reference's "not executed" error
//! observation, so that its tool call is answered too.
//!
//! With `recall` on (a session with a [`Memory`](crate::recall::Memory) on the stream), every
//! user message gets a `recall` action (source user): `workspace_context` for the run's first
//! user message, `knowledge` for later ones, as the reference does. The agent is not stepped
//! until the recall has its answer (any observation whose `cause` is its id).
//!
//! Confirmation mode ([`SecurityConfig`]): each runnable action of the agent gets its risk from
//! the security analyzer; one that must wait is recorded with `confirmation_state`
//! `awaiting_confirmation` after the state changed to `awaiting_user_confirmation`, and the
//! runtime leaves it alone. The user answers through the stream with `change_agent_state` to
//! `user_confirmed` or `user_rejected`: the action is recorded again (a new event) confirmed or
//! rejected, the state says which, and the runtime runs the confirmed one or answers the
//! rejected one with the reference's `user_rejected` observation, after which the agent waits
//! for the user (a headless run replies automatically). A run resumed while an action waited
//! waits again.
//!
//! Delegation: the agent's `delegate` action starts a delegate — the agent the
//! [`AgentFactory`] makes for its name — under a controller of its own on the same stream, with
//! its own state (delegate level + 1, its history from the next event, the task as a `TASK:`
//! user message) and the parent's counters: the iteration count and the budget are global, so
//! the delegate's steps and spending count against the run's limits and roll up into the
//! parent's state when it ends. Meanwhile the parent takes no step and leaves every event to
//! the delegate (a stop is passed on). When the delegate ends, the parent answers the
//! `delegate` action with a `delegate` observation carrying its outputs, as the reference does.
//!
//! After every step and state change the [`State`] is saved to `state.json` in the session
//! directory; [`Controller::resume`] continues a run from there.

mod delegate;
pub(crate) mod stuck;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::action::{ConfirmationState, DelegateArgs, MessageArgs};
use protocol::observation::{AgentStateChangedExtras, EmptyExtras, ErrorExtras};
use protocol::{Action, ActionKind, AgentState, Event, EventSource, Observation, ObservationKind};
use tokio::sync::mpsc;

use crate::agent::{Agent, AgentError, Step, StepFuture};
use crate::events::{EventFilter, EventLogError, EventStream, answer_to};
use crate::recall::{KNOWLEDGE, WORKSPACE_CONTEXT, recall_action};
use crate::security::SecurityConfig;
use crate::state::{STATE_FILE, State, StateError};

/// The reply a headless run gives when the agent waits for the user (OpenHands'
/// `auto_continue_response`, verbatim).
pub(crate) const AUTO_CONTINUE: &str = "Please continue on whatever approach you think is suitable.\n\
If you think you have solved the task, please finish the interaction.\n\
IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN RESPONSE.\n";

/// The answer to a `think` action.
pub(crate) const THOUGHT_LOGGED: &str = "Your thought has been logged.";

/// The answer to a runnable action left unanswered when the run was stopped.
pub(crate) const NOT_EXECUTED_STOPPED: &str =
    "Stop button pressed. The action has not been executed.";
/// Its `error_id`.
pub(crate) const NOT_EXECUTED_STOPPED_ID: &str = "AGENT_ERROR$ERROR_ACTION_NOT_EXECUTED_STOPPED";
/// The answer to a runnable action left unanswered when the run failed.
pub(crate) const NOT_EXECUTED_ERROR: &str = "The action has not been executed due to a runtime error. \
The runtime system may have crashed and restarted due to resource constraints. Any previously \
established system state, dependencies, or environment variables may have been lost.";
/// Its `error_id`.
pub(crate) const NOT_EXECUTED_ERROR_ID: &str = "AGENT_ERROR$ERROR_ACTION_NOT_EXECUTED_ERROR";

/// The user message a run resumed after an error starts with (OpenHands' `run_controller`,
/// verbatim): the agent should not carry on blindly.
pub(crate) const BACK_ON_TRACK: &str = "Let's get back on track. If you experienced errors before, do NOT resume your task. Ask me about it.";

/// OpenHands' default iteration limit.
pub const DEFAULT_MAX_ITERATIONS: u32 = 500;

/// Walks the history back from the newest event until `decide` decides on an action:
/// `decide(event, action, answered)` (`answered`: an observation after it has its id as
/// `cause`) returns `Some(result)` to stop with `result`, `None` to look further back.
fn walk_back<T>(
    stream: &EventStream,
    mut decide: impl FnMut(&Arc<Event>, &Action, bool) -> Option<Option<T>>,
) -> Option<T> {
    let mut answered = Vec::new();
    let mut id = stream.latest_id()?;
    while id >= 0 {
        let event = stream.get(id)?;
        match &*event {
            Event::Observation(o) => answered.extend(o.cause),
            Event::Action(a) => {
                if let Some(result) = decide(&event, a, answered.contains(&id)) {
                    return result;
                }
            }
        }
        id -= 1;
    }
    None
}

/// The agent's last runnable action if no observation answers it yet: after a restart, the
/// runtime must execute it (again) before the run can go on. Reads back from the newest event
/// to the agent's newest action.
pub(crate) fn pending_action(stream: &EventStream) -> Option<Arc<Event>> {
    walk_back(stream, |event, action, answered| {
        (action.source == Some(EventSource::Agent))
            .then(|| (action.kind.is_runnable() && !answered).then(|| event.clone()))
    })
}

/// What a resumed run's history ends with that recall still owes.
#[derive(Debug)]
enum Unanswered {
    /// A `recall` action without its answer.
    Recall(Arc<Event>),
    /// A user message without its `recall` action.
    Message(Arc<Event>),
}

/// Looks back from the newest event to the last user message or agent action: a user message
/// that got no `recall` action, or a `recall` action that got no answer.
fn unanswered_recall(stream: &EventStream) -> Option<Unanswered> {
    walk_back(stream, |event, action, answered| {
        let from_user = action.source == Some(EventSource::User);
        match &action.kind {
            _ if action.source == Some(EventSource::Agent) => Some(None),
            ActionKind::Recall(_) if from_user => {
                Some((!answered).then(|| Unanswered::Recall(event.clone())))
            }
            ActionKind::Message(_) if from_user => Some(Some(Unanswered::Message(event.clone()))),
            _ => None,
        }
    })
}

/// Whether `stream` ends with a user message that no run has seen (it has no `recall` action
/// yet): a conversation's reply that came after its run had ended, which a resumed run takes up.
pub(crate) fn has_unseen_user_message(stream: &EventStream) -> bool {
    matches!(unanswered_recall(stream), Some(Unanswered::Message(_)))
}
/// Makes the agent a `delegate` action names (`ReadOnlyAgent`...), `None` for an unknown name.
pub type AgentFactory = Arc<dyn Fn(&str) -> Option<Box<dyn Agent>> + Send + Sync>;

/// How a controller runs.
#[derive(Clone)]
pub(crate) struct ControllerConfig {
    /// The session's id (new runs only; a resumed run keeps its own).
    pub(crate) session_id: String,
    /// The iteration limit.
    pub(crate) max_iterations: u32,
    /// The budget limit in USD, if any.
    pub(crate) max_budget_per_task: Option<f64>,
    /// Where `state.json` is saved; `None` keeps the state in memory only.
    pub(crate) session_dir: Option<PathBuf>,
    /// Nobody answers the agent: a message that waits for a reply gets [`AUTO_CONTINUE`].
    pub(crate) headless: bool,
    /// Put a `recall` action on the stream for each user message and wait for its answer
    /// (only when something on the stream answers recalls).
    pub(crate) recall: bool,
    /// Risk analysis and confirmation mode.
    pub(crate) security: SecurityConfig,
    /// The agents `delegate` actions may start; `None`: delegation is refused.
    pub(crate) delegates: Option<AgentFactory>,
    /// The run's models, whose stats are saved with the state and whose summed cost the
    /// budget counts.
    pub(crate) llms: Option<crate::llm::LlmRegistry>,
}

impl std::fmt::Debug for ControllerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerConfig")
            .field("session_id", &self.session_id)
            .field("max_iterations", &self.max_iterations)
            .field("headless", &self.headless)
            .field("delegates", &self.delegates.is_some())
            .finish_non_exhaustive()
    }
}

impl ControllerConfig {
    /// A headless run with the default iteration limit, no budget limit, nothing saved.
    #[cfg(test)]
    pub(crate) fn new(session_id: impl Into<String>) -> ControllerConfig {
        ControllerConfig {
            session_id: session_id.into(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_budget_per_task: None,
            session_dir: None,
            headless: true,
            recall: false,
            security: SecurityConfig::default(),
            delegates: None,
            llms: None,
        }
    }
}

/// Errors that end a run without a final state.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// An event could not be written to the session's log, so the run cannot go on without
    /// losing events; retrying helps only once the disk problem is fixed.
    #[error(transparent)]
    EventLog(#[from] EventLogError),
    /// The state could not be saved or loaded; as above.
    #[error(transparent)]
    State(#[from] StateError),
}

/// What a [`ControllerHandle`] asks for.
#[derive(Debug)]
enum Command {
    Pause,
    Resume,
    Stop,
    Fail(String),
}

/// Controls a running controller from outside (the CLI's signal handler, the runtime). Requests
/// to a run that has ended are ignored.
#[derive(Debug, Clone)]
pub(crate) struct ControllerHandle {
    commands: mpsc::UnboundedSender<Command>,
}

impl ControllerHandle {
    /// No more steps until [`ControllerHandle::resume`]; an action in flight still gets its
    /// observation.
    #[cfg(test)]
    pub(crate) fn pause(&self) {
        let _ = self.commands.send(Command::Pause);
    }

    /// Continues a paused run.
    #[cfg(test)]
    pub(crate) fn resume(&self) {
        let _ = self.commands.send(Command::Resume);
    }

    /// Ends the run, `stopped` (final); a step in flight is cancelled.
    pub(crate) fn stop(&self) {
        let _ = self.commands.send(Command::Stop);
    }

    /// Ends the run in `error` with `reason` as `last_error`: the runtime reports that the
    /// sandbox is gone. A step in flight is cancelled.
    pub(crate) fn fail(&self, reason: impl Into<String>) {
        let _ = self.commands.send(Command::Fail(reason.into()));
    }
}

/// Drives one agent on one event stream; see the module documentation.
pub(crate) struct Controller {
    state: State,
    stream: EventStream,
    agent: Box<dyn Agent>,
    headless: bool,
    state_path: Option<PathBuf>,
    events: mpsc::UnboundedReceiver<Arc<Event>>,
    commands: mpsc::UnboundedReceiver<Command>,
    handle: ControllerHandle,
    /// The agent's runnable action waiting for its observation.
    pending: Option<Arc<Event>>,
    /// Ids of the events this controller added, not yet seen on its subscription.
    own: VecDeque<i64>,
    /// Pause and resume requests that came during a step, handled after it.
    deferred: Vec<Command>,
    /// The first `running` of this process is a resume, not a start.
    resumed: bool,
    /// See [`ControllerConfig::recall`].
    recall: bool,
    /// The `recall` action waiting for its answer.
    pending_recall: Option<Arc<Event>>,
    /// A resumed run's last user message that never got its `recall` action.
    unrecalled: Option<Arc<Event>>,
    /// The id of the run's first user message, once looked up.
    first_user_message: Option<i64>,
    /// The saved run had ended in an error (see [`Controller::resumed_after_error`]).
    resumed_after_error: bool,
    /// A resumed run that is not headless and was waiting for the user's reply goes on
    /// waiting instead of stepping the agent.
    wait_for_user: bool,
    /// Risk analysis and confirmation mode.
    security: SecurityConfig,
    /// See [`ControllerConfig::delegates`].
    delegates: Option<AgentFactory>,
    /// The `delegate` action recorded in this step, to start after it.
    delegation: Option<(Arc<Event>, DelegateArgs)>,
    /// How the controller was configured (for its delegates).
    config: ControllerConfig,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("agent", &self.agent.name())
            .field("state", &self.state)
            .field("pending", &self.pending.as_ref().and_then(|e| e.id()))
            .finish_non_exhaustive()
    }
}

/// How a step ended.
#[allow(
    clippy::large_enum_variant,
    reason = "one value per step, moved once; boxing would only add an allocation"
)]
enum StepOutcome {
    Done(Result<Step, AgentError>),
    Interrupted(Command),
}

/// What woke an idle controller.
enum Wake {
    Command(Command),
    Event(Arc<Event>),
    Closed,
}

impl Controller {
    /// A controller for a new run on `stream` (which should already hold the user's task).
    /// It subscribes to the stream now; nothing is emitted before [`Controller::run`].
    pub(crate) fn new(
        stream: EventStream,
        agent: Box<dyn Agent>,
        config: ControllerConfig,
    ) -> Controller {
        let mut state = State::new(
            config.session_id.clone(),
            config.max_iterations,
            config.max_budget_per_task,
        );
        let events = stream.subscribe();
        state.end_id = stream.latest_id();
        state.confirmation_mode = config.security.confirmation_mode;
        Controller::with_state(state, stream, events, agent, &config, false)
    }

    /// Continues the run saved in `session_dir/state.json` on `stream` (opened on the same
    /// directory): the history start and the iteration count carry on, the limits come from
    /// `config`, and nothing already in the stream is added again. If the agent's last
    /// runnable action has no observation yet, [`Controller::pending_action`] returns it: hand
    /// it to the runtime before or during [`Controller::run`], which waits for its observation.
    /// A run that ended `finished`, `rejected` or `stopped` stays so (`run` returns at once)
    /// unless a user message came after it; any other (killed while running, paused or
    /// waiting, or ended in `error`) goes on `running`, its `last_error` cleared, except that a
    /// run that is not headless and waited for the user's reply goes on waiting.
    pub(crate) fn resume(
        session_dir: &Path,
        stream: EventStream,
        agent: Box<dyn Agent>,
        mut config: ControllerConfig,
    ) -> Result<Controller, ControllerError> {
        let mut state = State::load(&session_dir.join(STATE_FILE))?;
        let resumed_after_error = state.last_error.is_some()
            && !matches!(
                state.agent_state,
                AgentState::Finished | AgentState::Rejected | AgentState::Stopped
            );
        // Subscribe before looking for the pending action: an observation added in between is
        // then delivered, not missed.
        let events = stream.subscribe();
        state.resume_count += 1;
        state.max_iterations = config.max_iterations;
        state.budget.max_per_task = config.max_budget_per_task;
        state.end_id = stream.latest_id();
        let saved = state.agent_state;
        config.session_dir = Some(session_dir.to_path_buf());
        // Confirmation mode, once on, stays on for the run.
        state.confirmation_mode |= config.security.confirmation_mode;
        config.security.confirmation_mode = state.confirmation_mode;
        let mut controller = Controller::with_state(state, stream, events, agent, &config, true);
        controller.resumed_after_error = resumed_after_error;
        controller.answer_interrupted_delegation()?;
        controller.pending = pending_action(&controller.stream);
        if controller.recall {
            match unanswered_recall(&controller.stream) {
                Some(Unanswered::Recall(event)) => controller.pending_recall = Some(event),
                Some(Unanswered::Message(event)) => controller.unrecalled = Some(event),
                None => {}
            }
        }
        // A user message the saved run never saw (a conversation's reply after the agent
        // finished, or while nothing ran) starts the agent again, as in the reference.
        let new_message = controller.unrecalled.is_some();
        let ended = matches!(
            saved,
            AgentState::Finished | AgentState::Rejected | AgentState::Stopped
        );
        if !ended || new_message {
            controller.state.agent_state = AgentState::Loading;
            controller.state.last_error = None;
        }
        controller.wait_for_user =
            !config.headless && saved == AgentState::AwaitingUserInput && !new_message;
        Ok(controller)
    }

    fn with_state(
        state: State,
        stream: EventStream,
        events: mpsc::UnboundedReceiver<Arc<Event>>,
        agent: Box<dyn Agent>,
        config: &ControllerConfig,
        resumed: bool,
    ) -> Controller {
        let (commands_tx, commands) = mpsc::unbounded_channel();
        Controller {
            state,
            stream,
            agent,
            headless: config.headless,
            state_path: config.session_dir.as_ref().map(|d| d.join(STATE_FILE)),
            events,
            commands,
            handle: ControllerHandle {
                commands: commands_tx,
            },
            pending: None,
            own: VecDeque::new(),
            deferred: Vec::new(),
            resumed,
            recall: config.recall,
            pending_recall: None,
            unrecalled: None,
            first_user_message: None,
            resumed_after_error: false,
            wait_for_user: false,
            security: config.security.clone(),
            delegates: config.delegates.clone(),
            delegation: None,
            config: config.clone(),
        }
    }

    /// A handle to pause, resume, stop or fail the run.
    pub(crate) fn handle(&self) -> ControllerHandle {
        self.handle.clone()
    }

    /// The runnable action the run waits for an observation of (after a resume: the one the
    /// runtime must execute again).
    pub(crate) fn pending_action(&self) -> Option<Arc<Event>> {
        self.pending.clone()
    }

    /// The `recall` action a resumed run waits for an answer to (made before the restart):
    /// hand it to the memory.
    pub(crate) fn pending_recall(&self) -> Option<Arc<Event>> {
        self.pending_recall.clone()
    }

    /// Whether the resumed run had ended in an error (`last_error` set): the caller adds the
    /// reference's [`BACK_ON_TRACK`] message.
    pub(crate) fn resumed_after_error(&self) -> bool {
        self.resumed_after_error
    }

    /// Runs until the run is `finished`, `rejected`, `stopped` or in `error`, and returns the
    /// final state (also saved).
    pub async fn run(mut self) -> Result<State, ControllerError> {
        if matches!(
            self.state.agent_state,
            AgentState::Finished | AgentState::Rejected | AgentState::Stopped
        ) {
            return Ok(self.state);
        }
        if self.awaits_confirmation() {
            self.set_state(
                AgentState::AwaitingUserConfirmation,
                "resumed: the action still waits for the user's confirmation",
            )?;
        } else if self.wait_for_user {
            self.set_state(
                AgentState::AwaitingUserInput,
                "resumed from the saved state; the agent waits for a reply",
            )?;
        } else {
            let reason = if self.resumed {
                "resumed from the saved state"
            } else {
                "started"
            };
            self.set_state(AgentState::Running, reason)?;
        }
        if let Some(message) = self.unrecalled.take() {
            self.recall_for(&message)?;
        }
        loop {
            self.drain()?;
            if self.is_over() {
                break;
            }
            if self.state.agent_state == AgentState::Running
                && self.pending.is_none()
                && self.pending_recall.is_none()
            {
                self.step().await?;
                // Let the runtime and the handle's users in between steps, even when the
                // agent never has to wait.
                tokio::task::yield_now().await;
                continue;
            }
            // Commands first: a failure reported before an observation must win over it.
            let wake = tokio::select! {
                biased;
                Some(command) = self.commands.recv() => Wake::Command(command),
                Some(event) = self.events.recv() => Wake::Event(event),
                else => Wake::Closed,
            };
            match wake {
                Wake::Command(command) => self.on_command(command)?,
                Wake::Event(event) => self.on_event(event)?,
                // Cannot happen (the controller holds a command sender, the stream the event
                // sender); were it to, waiting would be forever.
                Wake::Closed => break,
            }
        }
        self.save()?;
        Ok(self.state)
    }

    fn is_over(&self) -> bool {
        matches!(
            self.state.agent_state,
            AgentState::Finished | AgentState::Rejected | AgentState::Stopped | AgentState::Error
        )
    }

    /// Handles every command and event that is already there.
    fn drain(&mut self) -> Result<(), ControllerError> {
        loop {
            if let Ok(command) = self.commands.try_recv() {
                self.on_command(command)?;
            } else if let Ok(event) = self.events.try_recv() {
                self.on_event(event)?;
            } else {
                return Ok(());
            }
        }
    }

    async fn step(&mut self) -> Result<(), ControllerError> {
        if let Some(kind) = stuck::check(&self.stream, self.state.start_id) {
            return self.fail(format!(
                "AgentStuckInLoopError: Agent got stuck in a loop ({kind})"
            ));
        }
        if self.state.iteration >= self.state.max_iterations {
            return self.fail(format!(
                "RuntimeError: Agent reached maximum iteration. Current iteration: {}, max \
                 iteration: {}",
                self.state.iteration, self.state.max_iterations
            ));
        }
        if self.state.budget.exhausted() {
            return self.fail(format!(
                "RuntimeError: Agent reached maximum budget for conversation.Current budget: \
                 {:.2}, max budget: {:.2}",
                self.state.budget.spent,
                self.state.budget.max_per_task.unwrap_or_default()
            ));
        }
        self.state.iteration += 1;
        let outcome = {
            let step = self.agent.step(&self.state, &self.stream);
            wait_for_step(step, &mut self.commands, &mut self.deferred).await
        };
        let step_cost = match &outcome {
            StepOutcome::Done(Ok(step)) => step.accumulated_cost,
            _ => None,
        };
        self.count_spending(step_cost);
        match outcome {
            StepOutcome::Interrupted(command) => self.on_command(command)?,
            StepOutcome::Done(Ok(step)) => self.record_step(step)?,
            StepOutcome::Done(Err(AgentError::Malformed(text))) => {
                let mut error =
                    Observation::new(ObservationKind::Error(ErrorExtras::default()), text);
                error.message = error.content.clone();
                self.add(error, EventSource::Agent)?;
            }
            StepOutcome::Done(Err(error @ AgentError::Fatal { .. })) => {
                self.fail(error.to_string())?;
            }
        }
        if let Some((action, args)) = self.delegation.take() {
            self.delegate(action, args).await?;
        }
        for command in std::mem::take(&mut self.deferred) {
            self.on_command(command)?;
        }
        self.save()
    }

    /// Takes in what the run has spent after a step: the total of every model of the run's
    /// registry when it has one (the agent's calls, its condenser's, its router's models', its
    /// delegates'), else what the step reports of the agent's model (`step_cost`).
    fn count_spending(&mut self, step_cost: Option<f64>) {
        let spent = match &self.config.llms {
            Some(llms) => Some(llms.accumulated_cost()),
            None => step_cost,
        };
        if let Some(cost) = spent {
            self.state.budget.record(cost);
        }
    }

    /// Puts the agent's action on the stream and reacts to it.
    fn record_step(&mut self, step: Step) -> Result<(), ControllerError> {
        let mut action = step.action;
        // The reference never records a null action: the step just produced nothing.
        if matches!(action.kind, ActionKind::Null(_)) {
            return Ok(());
        }
        action.id = None;
        action.timestamp = None;
        action.source = None;
        if let Some(metrics) = &action.llm_metrics {
            self.state.metrics = metrics.clone();
        }
        if self.security.judge(&mut action) {
            action.set_confirmation_state(ConfirmationState::AwaitingConfirmation);
            self.set_state(
                AgentState::AwaitingUserConfirmation,
                "the action waits for the user's confirmation",
            )?;
        }
        let stored = self.add(action, EventSource::Agent)?;
        let Event::Action(action) = &*stored else {
            return Ok(());
        };
        match &action.kind {
            kind if kind.is_runnable() => self.pending = Some(stored.clone()),
            ActionKind::Think(_) => {
                let mut logged = Observation::new(
                    ObservationKind::Think(EmptyExtras {}),
                    THOUGHT_LOGGED.to_string(),
                );
                logged.message = THOUGHT_LOGGED.to_string();
                self.add(answer_to(logged, action), EventSource::Agent)?;
            }
            ActionKind::Delegate(args) => {
                self.delegation = Some((stored.clone(), args.clone()));
            }
            ActionKind::TaskTracking(args) => {
                let dir = self.state_path.as_deref().and_then(Path::parent);
                let answer = crate::tasks::track(args, dir);
                if args.command == "plan" && !matches!(answer.kind, ObservationKind::Error(_)) {
                    self.state.extra_data.insert(
                        "task_list".to_string(),
                        serde_json::Value::Array(args.task_list.clone()),
                    );
                }
                self.add(answer_to(answer, action), EventSource::Agent)?;
            }
            ActionKind::Finish(finish) => {
                self.state.outputs = finish.outputs.clone();
                // The answer a delegate gives back (the reference leaves CodeAct's message out).
                if !finish.final_thought.is_empty() && !self.state.outputs.contains_key("content") {
                    self.state.outputs.insert(
                        "content".to_string(),
                        serde_json::Value::String(finish.final_thought.clone()),
                    );
                }
                self.set_state(AgentState::Finished, "the agent finished the task")?;
            }
            ActionKind::Reject(reject) => {
                self.state.outputs = reject.outputs.clone();
                self.set_state(AgentState::Rejected, "the agent rejected the task")?;
            }
            ActionKind::Message(message) if message.wait_for_response => {
                self.await_user("the agent waits for a reply")?;
            }
            ActionKind::ChangeAgentState(change) => match AgentState::parse(&change.agent_state) {
                Some(AgentState::Paused) => self.on_command(Command::Pause)?,
                Some(AgentState::Stopped) => self.on_command(Command::Stop)?,
                Some(AgentState::AwaitingUserInput) if !self.headless => {
                    self.set_state(AgentState::AwaitingUserInput, "the agent asked for it")?;
                }
                _ => {}
            },
            _ => {}
        }
        Ok(())
    }

    /// The agent waits for the user: `awaiting_user_input`, and a headless run replies with
    /// [`AUTO_CONTINUE`] and goes on.
    fn await_user(&mut self, reason: &str) -> Result<(), ControllerError> {
        self.set_state(AgentState::AwaitingUserInput, reason)?;
        if self.headless {
            let reply = Action::from(ActionKind::Message(MessageArgs {
                content: AUTO_CONTINUE.to_string(),
                ..MessageArgs::default()
            }));
            let reply = self.add(reply, EventSource::User)?;
            self.recall_for(&reply)?;
            self.set_state(AgentState::Running, "headless: replied automatically")?;
        }
        Ok(())
    }

    /// Whether the pending action waits for the user's confirmation.
    fn awaits_confirmation(&self) -> bool {
        matches!(self.pending.as_deref(), Some(Event::Action(a))
            if a.confirmation_state() == ConfirmationState::AwaitingConfirmation)
    }

    /// The user's answer to the action waiting for confirmation: it is recorded again,
    /// confirmed or rejected, for the runtime to run or to answer as rejected. Ignored (and
    /// logged) when no action waits.
    fn on_confirmation(&mut self, confirmed: bool) -> Result<(), ControllerError> {
        if self.state.agent_state != AgentState::AwaitingUserConfirmation
            || !self.awaits_confirmation()
        {
            tracing::warn!(
                session = %self.state.session_id,
                confirmed,
                "a confirmation came while no action waits for one; ignored"
            );
            return Ok(());
        }
        let Some(Event::Action(waiting)) = self.pending.as_deref() else {
            return Ok(());
        };
        let mut again = crate::agent::fresh(waiting.clone());
        let (state, new, reason) = if confirmed {
            (
                ConfirmationState::Confirmed,
                AgentState::UserConfirmed,
                "the user confirmed the action",
            )
        } else {
            (
                ConfirmationState::Rejected,
                AgentState::UserRejected,
                "the user rejected the action",
            )
        };
        again.set_confirmation_state(state);
        let stored = self.add(again, EventSource::Agent)?;
        self.pending = Some(stored);
        self.set_state(new, reason)
    }

    fn on_command(&mut self, command: Command) -> Result<(), ControllerError> {
        if self.is_over() {
            return Ok(());
        }
        match command {
            Command::Pause => self.set_state(AgentState::Paused, "paused on request"),
            Command::Resume if self.state.agent_state == AgentState::Paused => {
                self.set_state(AgentState::Running, "resumed on request")
            }
            Command::Resume => Ok(()),
            Command::Stop => self.set_state(AgentState::Stopped, "stopped on request"),
            Command::Fail(reason) => self.fail(reason),
        }
    }

    /// An event from the stream: the runtime's observations, the user's messages and requests.
    fn on_event(&mut self, event: Arc<Event>) -> Result<(), ControllerError> {
        let Some(id) = event.id() else {
            return Ok(());
        };
        self.state.end_id = self.state.end_id.max(Some(id));
        while self.own.front().is_some_and(|&own| own < id) {
            self.own.pop_front();
        }
        if self.own.front() == Some(&id) {
            // Added by this controller, which has handled it already.
            self.own.pop_front();
            return Ok(());
        }
        match &*event {
            Event::Observation(o) => {
                if o.cause.is_some() && self.pending.as_ref().and_then(|p| p.id()) == o.cause {
                    self.pending = None;
                    if matches!(o.kind, ObservationKind::UserRejected(_)) {
                        self.await_user("the user rejected the action")?;
                    } else if self.state.agent_state == AgentState::UserConfirmed {
                        self.set_state(AgentState::Running, "the confirmed action ran")?;
                    }
                }
                if o.cause.is_some() && self.pending_recall.as_ref().and_then(|p| p.id()) == o.cause
                {
                    self.pending_recall = None;
                }
            }
            Event::Action(a) => match &a.kind {
                ActionKind::Message(_) if a.source == Some(EventSource::User) => {
                    self.recall_for(&event)?;
                    if self.state.agent_state == AgentState::AwaitingUserInput {
                        self.set_state(AgentState::Running, "the user replied")?;
                    }
                }
                // OpenHands' clients pause, resume and stop through the stream.
                ActionKind::ChangeAgentState(change) if a.source != Some(EventSource::Agent) => {
                    let command = match AgentState::parse(&change.agent_state) {
                        Some(AgentState::Paused) => Some(Command::Pause),
                        Some(AgentState::Running) => Some(Command::Resume),
                        Some(AgentState::Stopped) => Some(Command::Stop),
                        Some(AgentState::UserConfirmed) => return self.on_confirmation(true),
                        Some(AgentState::UserRejected) => return self.on_confirmation(false),
                        _ => None,
                    };
                    if let Some(command) = command {
                        self.on_command(command)?;
                    }
                }
                _ => {}
            },
        }
        Ok(())
    }

    /// Puts the `recall` action for the user message `message` on the stream (when recall is
    /// on) and waits for its answer: `workspace_context` for the run's first user message,
    /// `knowledge` for the others.
    fn recall_for(&mut self, message: &Arc<Event>) -> Result<(), ControllerError> {
        let Event::Action(action) = &**message else {
            return Ok(());
        };
        let (ActionKind::Message(args), Some(id)) = (&action.kind, action.id) else {
            return Ok(());
        };
        if !self.recall {
            return Ok(());
        }
        let first = *self.first_user_message.get_or_insert_with(|| {
            // Looked up once: the history's first user message from the run's start.
            let found = self.stream.search(&EventFilter {
                start_id: Some(self.state.start_id),
                types: vec!["message".to_string()],
                source: Some(EventSource::User),
                limit: Some(1),
                ..EventFilter::default()
            });
            found.first().and_then(|e| e.id()).unwrap_or(id)
        });
        let recall_type = if id == first {
            WORKSPACE_CONTEXT
        } else {
            KNOWLEDGE
        };
        let recall = self.add(recall_action(recall_type, &args.content), EventSource::User)?;
        self.pending_recall = Some(recall);
        Ok(())
    }

    /// Ends the run in `error`.
    fn fail(&mut self, reason: String) -> Result<(), ControllerError> {
        tracing::warn!(session = %self.state.session_id, %reason, "the run failed");
        self.state.last_error = Some(reason.clone());
        self.answer_pending(AgentState::Error)?;
        let mut error = Observation::new(
            ObservationKind::Error(ErrorExtras::default()),
            reason.clone(),
        );
        error.message = reason.clone();
        self.add(error, EventSource::Agent)?;
        self.set_state(AgentState::Error, &reason)
    }

    fn set_state(&mut self, new: AgentState, reason: &str) -> Result<(), ControllerError> {
        if new == self.state.agent_state {
            return Ok(());
        }
        tracing::info!(
            session = %self.state.session_id,
            agent = self.agent.name(),
            from = self.state.agent_state.as_str(),
            to = new.as_str(),
            reason,
            "agent state"
        );
        self.state.agent_state = new;
        if matches!(new, AgentState::Stopped | AgentState::Error) {
            // A recall needs no answer when the run ends (it is no tool call).
            self.pending_recall = None;
            self.answer_pending(new)?;
            self.agent.reset();
        }
        let changed = Observation::new(
            ObservationKind::AgentStateChanged(AgentStateChangedExtras {
                agent_state: new.as_str().to_string(),
                reason: reason.to_string(),
            }),
            String::new(),
        );
        // The state file first: whoever reacts to the change (a page asking for the
        // conversation's info) reads the state it announces, its iteration and cost included.
        self.save()?;
        self.add(changed, EventSource::Environment)?;
        self.save()
    }

    /// Answers the pending action, if the runtime has not: the run ends without it.
    fn answer_pending(&mut self, ending: AgentState) -> Result<(), ControllerError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let Event::Action(action) = &*pending else {
            return Ok(());
        };
        if action.id.is_none() {
            return Ok(());
        }
        let (content, error_id) = if ending == AgentState::Stopped {
            (NOT_EXECUTED_STOPPED, NOT_EXECUTED_STOPPED_ID)
        } else {
            (NOT_EXECUTED_ERROR, NOT_EXECUTED_ERROR_ID)
        };
        let mut error = Observation::new(
            ObservationKind::Error(ErrorExtras {
                error_id: error_id.to_string(),
            }),
            content.to_string(),
        );
        error.message = content.to_string();
        // Unless the runtime's observation got there first (it may be on the stream already,
        // not yet delivered).
        if let Some(stored) = self
            .stream
            .answer(answer_to(error, action), EventSource::Agent)?
        {
            self.own_event(&stored);
        }
        Ok(())
    }

    fn add(
        &mut self,
        event: impl Into<Event>,
        source: EventSource,
    ) -> Result<Arc<Event>, ControllerError> {
        let stored = self.stream.add(event, source)?;
        self.own_event(&stored);
        Ok(stored)
    }

    /// Notes an event the controller added, so that it is not handled again when delivered.
    fn own_event(&mut self, stored: &Arc<Event>) {
        if let Some(id) = stored.id() {
            self.own.push_back(id);
            self.state.end_id = self.state.end_id.max(Some(id));
        }
    }

    fn save(&mut self) -> Result<(), ControllerError> {
        if let Some(llms) = &self.config.llms {
            self.state.stats = Some(llms.stats());
        }
        if let Some(path) = &self.state_path {
            self.state.save(path, &self.stream.mask())?;
        }
        Ok(())
    }
}

/// Awaits the agent's step; a stop or a failure meanwhile cancels it, pause and resume wait
/// for its end.
async fn wait_for_step(
    mut step: StepFuture<'_>,
    commands: &mut mpsc::UnboundedReceiver<Command>,
    deferred: &mut Vec<Command>,
) -> StepOutcome {
    loop {
        tokio::select! {
            biased;
            result = &mut step => return StepOutcome::Done(result),
            Some(command) = commands.recv() => match command {
                Command::Stop | Command::Fail(_) => return StepOutcome::Interrupted(command),
                Command::Pause | Command::Resume => deferred.push(command),
            },
        }
    }
}
