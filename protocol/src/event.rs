//! Pieces shared by actions and observations: who caused an event and the LLM tool call behind it.

use serde::{Deserialize, Serialize};

/// Who produced an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventSource {
    /// The agent (an LLM, or a scripted stand-in).
    Agent,
    /// The human, or the program acting for them.
    User,
    /// The sandbox or the host runtime.
    Environment,
}

/// The LLM tool call an action came from; observations carry the action's copy back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallMetadata {
    /// Name of the tool the model called (`execute_bash`, `str_replace_editor`, ...).
    pub function_name: String,
    /// The model's id for this call; the tool result must quote it.
    pub tool_call_id: String,
    /// The whole model response (a litellm `ModelResponse` dump), kept opaque.
    #[serde(default)]
    pub model_response: serde_json::Value,
    /// How many tool calls the model made in that response.
    #[serde(default)]
    pub total_calls_in_response: u32,
}

/// Any event of a stream: an action or an observation. On the wire an event is one or the other
/// object, told apart by its `action` or `observation` key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Event {
    /// An action (has an `action` key).
    Action(crate::Action),
    /// An observation (has an `observation` key).
    Observation(crate::Observation),
}

impl Event {
    /// The stream id, once stored.
    pub fn id(&self) -> Option<i64> {
        match self {
            Event::Action(a) => a.id,
            Event::Observation(o) => o.id,
        }
    }

    /// Who produced it.
    pub fn source(&self) -> Option<EventSource> {
        match self {
            Event::Action(a) => a.source,
            Event::Observation(o) => o.source,
        }
    }

    /// When it was stored (ISO-8601), once stored.
    pub fn timestamp(&self) -> Option<&str> {
        match self {
            Event::Action(a) => a.timestamp.as_deref(),
            Event::Observation(o) => o.timestamp.as_deref(),
        }
    }

    /// The id of the event that caused it.
    pub fn cause(&self) -> Option<i64> {
        match self {
            Event::Action(a) => a.cause,
            Event::Observation(o) => o.cause,
        }
    }

    /// The wire type: the `action` or `observation` value.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::Action(a) => a.kind.action_type().as_str(),
            Event::Observation(o) => o.kind.type_name(),
        }
    }
}

impl From<crate::Action> for Event {
    fn from(action: crate::Action) -> Self {
        Event::Action(action)
    }
}

impl From<crate::Observation> for Event {
    fn from(observation: crate::Observation) -> Self {
        Event::Observation(observation)
    }
}

/// The agent controller's states, by their wire names (`agent_state_changed` extras,
/// `change_agent_state` args).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// Starting up.
    Loading,
    /// Stepping.
    Running,
    /// Waiting for a user message.
    AwaitingUserInput,
    /// Paused from outside; resumes on request.
    Paused,
    /// Stopped from outside; final.
    Stopped,
    /// The agent finished its task.
    Finished,
    /// The agent refused the task.
    Rejected,
    /// A limit, a stuck loop or a failure stopped the run.
    Error,
    /// The LLM provider is rate-limiting; retries follow.
    RateLimited,
    /// An action waits for the user's confirmation.
    AwaitingUserConfirmation,
    /// The user confirmed the pending action.
    UserConfirmed,
    /// The user rejected the pending action.
    UserRejected,
}

impl AgentState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Loading => "loading",
            AgentState::Running => "running",
            AgentState::AwaitingUserInput => "awaiting_user_input",
            AgentState::Paused => "paused",
            AgentState::Stopped => "stopped",
            AgentState::Finished => "finished",
            AgentState::Rejected => "rejected",
            AgentState::Error => "error",
            AgentState::RateLimited => "rate_limited",
            AgentState::AwaitingUserConfirmation => "awaiting_user_confirmation",
            AgentState::UserConfirmed => "user_confirmed",
            AgentState::UserRejected => "user_rejected",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<AgentState> {
        serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
    }
}
