//! The CodeAct agent (OpenHands V0's `CodeActAgent`): it acts by calling tools — bash, IPython,
//! the file editor, `think`, `finish` — and sees the sandbox's observations as their results.
//!
//! A step: the history from `state.start_id` as a [`View`] (condensations applied); the
//! condenser may answer with a condensation instead, which becomes the step's action; else the
//! view becomes chat messages ([`ConversationMemory`]), the LLM answers, and its tool calls
//! become actions ([`actions::response_to_actions`]). Several calls in one answer are played
//! one per step, in order.

pub mod actions;
pub mod tools;

use std::collections::VecDeque;

use protocol::action::{EmptyArgs, SystemMessageArgs};
use protocol::{Action, ActionKind};

use super::{Agent, AgentError, StepFuture};
use crate::controller::State;
use crate::events::EventStream;
use crate::llm::{Llm, LlmError, Tool};
use crate::memory::{
    Condensed, Condenser, CondenserConfig, CondenserError, ConversationMemory, View,
};
use tools::ToolSet;

/// The system prompt, unless the settings give another.
pub const SYSTEM_PROMPT: &str = include_str!("system_prompt.md");

/// The error type name under which a prompt too long for the model is reported.
const CONTEXT_WINDOW_EXCEEDED: &str = "ContextWindowExceededError";

/// How the CodeAct agent works.
#[derive(Debug, Clone, Default)]
pub struct CodeActConfig {
    /// Which tools the model gets.
    pub tools: ToolSet,
    /// A system prompt instead of [`SYSTEM_PROMPT`].
    pub system_prompt: Option<String>,
    /// How the history is kept within the model's reach.
    pub condenser: CondenserConfig,
}

/// The CodeAct agent; see the module documentation.
#[derive(Debug)]
pub struct CodeActAgent {
    llm: Llm,
    tools: Vec<Tool>,
    system_prompt: String,
    memory: ConversationMemory,
    condenser: Box<dyn Condenser>,
    /// Whether the condenser can act on a condensation request (any but the no-op one).
    condenses: bool,
    /// Actions of the last answer not yet handed out (one per step).
    pending: VecDeque<Action>,
}

impl CodeActAgent {
    /// An agent that thinks with `llm`.
    pub fn new(llm: Llm, config: CodeActConfig) -> Result<CodeActAgent, CondenserError> {
        let system_prompt = config
            .system_prompt
            .unwrap_or_else(|| SYSTEM_PROMPT.to_string());
        let memory = ConversationMemory {
            vision: llm.vision(),
            system_prompt: Some(system_prompt.clone()),
            ..ConversationMemory::default()
        };
        let condenses = config.condenser != CondenserConfig::NoOp;
        Ok(CodeActAgent {
            condenser: config.condenser.build(Some(llm.clone()))?,
            tools: tools::tools(config.tools),
            llm,
            system_prompt,
            memory,
            condenses,
            pending: VecDeque::new(),
        })
    }

    /// The tools the model gets.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    async fn next_action(
        &mut self,
        state: &State,
        history: &EventStream,
    ) -> Result<Action, AgentError> {
        if let Some(action) = self.pending.pop_front() {
            return Ok(action);
        }
        let view = View::from_events(&history.range(state.start_id, None));
        let view = match self
            .condenser
            .condense(view)
            .await
            .map_err(condenser_error)?
        {
            Condensed::Condensation(action) => return Ok(*action),
            Condensed::View(view) => view,
        };
        let messages = self.memory.process_events(&view);
        let completion = match self.llm.completion(messages, &self.tools).await {
            Ok(completion) => completion,
            // The prompt no longer fits: ask the condenser to forget (as the reference does),
            // when there is one that can.
            Err(LlmError::Failed { kind, .. })
                if kind == CONTEXT_WINDOW_EXCEEDED && self.condenses =>
            {
                tracing::warn!("the prompt exceeds the model's context window; condensing");
                return Ok(Action::from(ActionKind::CondensationRequest(EmptyArgs {})));
            }
            Err(e) => return Err(llm_error(e)),
        };
        let response =
            serde_json::to_value(&completion.response).map_err(|e| AgentError::Fatal {
                kind: "LLMResponseError".to_string(),
                message: format!("cannot record the model's response: {e}"),
            })?;
        let actions =
            actions::response_to_actions(&completion.message, &response, Some(completion.metrics))?;
        self.pending.extend(actions);
        self.pending
            .pop_front()
            .ok_or_else(|| AgentError::Malformed("The response held no action.".to_string()))
    }
}

impl Agent for CodeActAgent {
    fn name(&self) -> &str {
        "CodeActAgent"
    }

    fn step<'a>(&'a mut self, state: &'a State, history: &'a EventStream) -> StepFuture<'a> {
        Box::pin(self.next_action(state, history))
    }

    /// The answer's remaining calls are dropped: a stopped or failed run does not play them.
    fn reset(&mut self) {
        self.pending.clear();
    }

    fn system_message(&self) -> Option<Action> {
        let tools = self
            .tools
            .iter()
            .filter_map(|tool| serde_json::to_value(tool).ok())
            .collect();
        Some(Action::from(ActionKind::System(SystemMessageArgs {
            content: self.system_prompt.clone(),
            tools: Some(tools),
            openhands_version: Some(env!("CARGO_PKG_VERSION").to_string()),
            agent_class: Some(self.name().to_string()),
        })))
    }
}

/// LLM failures: a malformed tool call is the model's to fix; anything else ends the run.
fn llm_error(error: LlmError) -> AgentError {
    match error {
        LlmError::ToolCallFormat(text) => AgentError::Malformed(text),
        LlmError::Failed { kind, message } => AgentError::Fatal { kind, message },
    }
}

fn condenser_error(error: CondenserError) -> AgentError {
    match error {
        CondenserError::Llm(e) => llm_error(e),
        other => AgentError::Fatal {
            kind: "CondenserError".to_string(),
            message: other.to_string(),
        },
    }
}
