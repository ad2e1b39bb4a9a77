//! Agents: what decides the next action (OpenHands V0's `Agent`). The controller calls
//! [`Agent::step`] whenever the agent may act and puts the returned action on the event stream;
//! the agent reads the history from the stream itself (from `state.start_id`).
//!
//! `step` returns a boxed future so that an agent which talks to an LLM can await it, while the
//! trait stays object-safe: the controller holds a `Box<dyn Agent>` (`Agent: Send`, so every
//! boxed agent can move to another task). Agents that need no awaiting return
//! `Box::pin(std::future::ready(...))`.

mod browsing;
pub(crate) mod codeact;
mod loc;
mod replay;
mod scripted;

use std::future::Future;
use std::pin::Pin;

use protocol::Action;

use crate::events::EventStream;
use crate::llm::ErrorKind;
use crate::state::State;

pub use browsing::BrowsingAgent;
pub use replay::ReplayAgent;
pub use scripted::ScriptedAgent;

/// The agents a `delegate` action may name: the agent factory of a run makes them.
pub(crate) const DELEGATE_AGENTS: &[&str] =
    &["ReadOnlyAgent", "LocAgent", "BrowsingAgent", "DummyAgent"];

/// What [`Agent::step`] returns: a future of the next action, borrowing the agent, the state
/// and the history for the duration of the step.
pub(crate) type StepFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Step, AgentError>> + Send + 'a>>;

/// What a step hands the controller: the next action and, when the step called an LLM, what
/// the agent's LLM calls have cost so far, for the budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The next action. Its `llm_metrics`, if any, is the record of the call for the event
    /// log; nobody reads figures back out of it.
    pub(crate) action: Action,
    /// The LLM client's running total in USD after this step's call; `None` when the step
    /// made no call (a queued call of an earlier answer, a condensation, a replay). The budget
    /// of a run without an LLM registry counts it; a run with one counts the registry's total.
    pub(crate) accumulated_cost: Option<f64>,
}

impl From<Action> for Step {
    fn from(action: Action) -> Step {
        Step {
            action,
            accumulated_cost: None,
        }
    }
}

/// Decides actions.
pub trait Agent: Send {
    /// A name for logs and the system message (`CodeActAgent`, `ReplayAgent`).
    fn name(&self) -> &str;

    /// The next action (and its cost), given the run's state and its history. Dropping the
    /// future cancels the step (the controller does this when the run is stopped meanwhile).
    fn step<'a>(&'a mut self, state: &'a State, history: &'a EventStream) -> StepFuture<'a>;

    /// Forgets whatever is in flight (the controller calls it when the run stops or fails).
    fn reset(&mut self);

    /// The `system` action (system prompt and tools) a new run records first, before the
    /// user's task; `None` for agents without one.
    fn system_message(&self) -> Option<Action> {
        None
    }

    /// The tools of the run's MCP servers, offered once before the first step (and before
    /// [`Agent::system_message`]). An agent that calls tools offers them to its model next to
    /// its own, and turns a call of one into a `call_tool_mcp` action; the others ignore them.
    fn offer_mcp_tools(&mut self, tools: Vec<crate::llm::Tool>) {
        let _ = tools;
    }
}

/// Why a step produced no action.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model's answer was not a usable action (malformed or unknown tool call, no action
    /// at all). Retrying can help: the controller shows the text to the agent as an `error`
    /// observation and steps again (the step still counts as an iteration).
    #[error("{0}")]
    Malformed(String),
    /// Anything else (the LLM is unreachable, out of credit, the context cannot fit). Ends the
    /// run in the error state with `"{kind}: {message}"` as its `last_error` (the kind by its
    /// [`FatalKind::name`]); retrying the same step is not expected to help.
    #[error("{}: {message}", .kind.name())]
    Fatal {
        /// What failed.
        kind: FatalKind,
        /// What went wrong.
        message: String,
    },
}

/// What made a step fail for good: its error type as OpenHands names it in `last_error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatalKind {
    /// The LLM call failed (`APIConnectionError`, `RateLimitError`, ...).
    Llm(ErrorKind),
    /// The model's response could not be recorded (`LLMResponseError`).
    LlmResponse,
    /// The condenser failed otherwise than in its LLM call (`CondenserError`).
    Condenser,
}

impl FatalKind {
    /// The error type name, as OpenHands reports it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FatalKind::Llm(kind) => kind.name(),
            FatalKind::LlmResponse => "LLMResponseError",
            FatalKind::Condenser => "CondenserError",
        }
    }
}

/// An action as an agent hands it over: the stream's envelope (id, time, source, cause) cleared,
/// so that a recorded action can be added again.
pub(crate) fn fresh(mut action: Action) -> Action {
    action.id = None;
    action.timestamp = None;
    action.source = None;
    action.cause = None;
    action
}
