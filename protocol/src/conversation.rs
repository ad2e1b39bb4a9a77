//! The conversation server's API (`agentd server`, docs/conversations.md): agents as a service.
//! A caller creates a conversation (a task for an agent in a sandbox of its own), follows its
//! events live, answers the agent, pauses, resumes, stops, confirms or rejects its actions.
//!
//! Every request carries one of the server's API keys, as `Authorization: Bearer KEY` or
//! `X-Session-API-Key: KEY` (or, where a browser cannot set headers, the query parameter
//! `key`); a conversation belongs to the key that created it, and other keys get 404 for it.
//! Errors are [`ErrorResponse`](crate::api::ErrorResponse) bodies (`{"detail": ...}`).

use serde::{Deserialize, Serialize};

use crate::Event;

/// The header the reference's web client sends its key in.
pub const SESSION_API_KEY_HEADER: &str = "X-Session-API-Key";

/// Body of `POST /api/conversations`. Unknown keys are refused (422), so that a misspelt
/// setting is not silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    /// The first user message.
    pub task: String,
    /// A title for lists (default: the task's first line, shortened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The agent (`CodeActAgent`, the default and the only one offered today).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Model settings over the server's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSettings>,
    /// Where the sandbox runs: `local`, `docker` or `remote` (a runtime API service the server
    /// is configured with); default: the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// A repository to clone into the workspace: `OWNER/NAME` on GitHub or a git URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The branch to check out after cloning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Hold risky actions for the user's confirmation (default: the server's setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_mode: Option<bool>,
    /// Iteration limit (at most the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// Budget limit in USD (at most the server's, when it has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_budget: Option<f64>,
    /// Instructions shown to the agent with the workspace context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_instructions: Option<String>,
}

/// Model settings a conversation may choose; the endpoint and its key are the server's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// The model, as the server's endpoint names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

/// Where a conversation is, for lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConversationStatus {
    /// Its sandbox is being made ready.
    Starting,
    /// It holds a sandbox and the agent runs or waits for the user.
    Running,
    /// It holds no sandbox (ended, released when idle, or not resumed yet); a message starts it
    /// again.
    Stopped,
    /// Its last run failed (see `last_error`).
    Error,
}

/// One conversation, as listed and got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationInfo {
    /// Its id (32 hex digits).
    pub conversation_id: String,
    /// Its title.
    pub title: String,
    /// Where it is.
    pub status: ConversationStatus,
    /// The controller's state (`running`, `awaiting_user_input`, `finished`...), from its last
    /// `agent_state_changed` event; `loading` before the first.
    pub agent_state: String,
    /// Why the last run failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Agent steps so far.
    pub iteration: u32,
    /// Its iteration limit.
    pub max_iterations: u32,
    /// What its model calls cost so far, in USD.
    pub accumulated_cost: f64,
    /// The id of its newest event (−1 before the first).
    pub latest_event_id: i64,
    /// The agent.
    pub agent: String,
    /// Where its sandbox runs (`local`, `docker`, `remote`).
    pub runtime: String,
    /// The repository, if one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Whether risky actions wait for confirmation.
    pub confirmation_mode: bool,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When its last event was added (RFC 3339).
    pub last_updated_at: String,
}

/// Answer of `GET /api/conversations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationList {
    /// The caller's conversations, newest first.
    pub results: Vec<ConversationInfo>,
}

/// Answer of `GET /api/conversations/{id}/events?after=ID&limit=N`: the events with ids above
/// `after`, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventPage {
    /// At most `limit` events.
    pub events: Vec<Event>,
    /// Whether more events follow: ask again with `after` = the last event's id.
    pub has_more: bool,
}

/// Body of `POST /api/conversations/{id}/message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    /// The text.
    pub message: String,
}

/// Answer of the requests that change a conversation (`message`, `pause`, `resume`, `stop`,
/// `confirm`, `reject`): what was done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// The conversation, after the request.
    pub conversation: ConversationInfo,
    /// What happened, for people (`"the message was added; the agent starts again"`).
    pub message: String,
}
