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
