//! The CodeAct agent (OpenHands V0's `CodeActAgent`): it acts by calling tools — bash, IPython,
//! the file editor, `think`, `finish`, and the run's MCP tools — and sees the sandbox's
//! observations as their results.
//!
//! A step: the history from `state.start_id` as a [`View`] (condensations applied); the
//! condenser may answer with a condensation instead, which becomes the step's action; else the
//! view becomes chat messages ([`ConversationMemory`]), the LLM answers, and its tool calls
//! become actions ([`actions::response_to_actions`]). Several calls in one answer are played
//! one per step, in order.
//!
//! The same loop is `ReadOnlyAgent` and `LocAgent` with other tools and prompts
//! ([`ToolProfile`]); a `LocAgent` cell gets the definition of its functions in front when
//! the kernel may lack them (`agent::loc::KernelFunctions`).

pub(crate) mod actions;
pub(crate) mod tools;

use std::collections::{HashSet, VecDeque};

use protocol::action::{EmptyArgs, SystemMessageArgs};
use protocol::{Action, ActionKind};

use super::loc::KernelFunctions;
use super::{Agent, AgentError, FatalKind, Step, StepFuture};
use crate::events::EventStream;
use crate::llm::{Llm, LlmError, Tool};
use crate::memory::{
    Condensed, Condenser, CondenserConfig, CondenserError, ConversationMemory, View,
};
use crate::state::State;
use tools::{ToolProfile, ToolSet};

/// The system prompt, unless the settings give another.
pub(crate) const SYSTEM_PROMPT: &str = include_str!("system_prompt.md");
/// `ReadOnlyAgent`'s system prompt.
pub(crate) const READ_ONLY_PROMPT: &str = include_str!("read_only_prompt.md");

/// How the CodeAct agent works.
#[derive(Debug, Clone, Default)]
pub struct CodeActConfig {
    /// Which tools the model gets.
    pub tools: ToolSet,
    /// A system prompt instead of [`SYSTEM_PROMPT`].
    pub system_prompt: Option<String>,
    /// How the history is kept within the model's reach.
    pub condenser: CondenserConfig,
    /// The model a condenser that calls one uses (`llm`): the run registry's `condenser`
    /// service. `None`: the agent's own model (whose metrics it then shares).
    pub condenser_llm: Option<Llm>,
    /// Which agent this is: the CodeAct agent, `ReadOnlyAgent` or `LocAgent` (their own
    /// tools and prompts).
    pub profile: ToolProfile,
}

/// The CodeAct agent; see the module documentation.
#[derive(Debug)]
pub struct CodeActAgent {
    llm: Llm,
    tools: Vec<Tool>,
    /// The names of the MCP tools among `tools`.
    mcp_tools: HashSet<String>,
    system_prompt: String,
    memory: ConversationMemory,
    condenser: Box<dyn Condenser>,
    /// Whether the condenser can act on a condensation request (any but the no-op one).
    condenses: bool,
    /// Actions of the last answer not yet handed out (one per step).
    pending: VecDeque<Action>,
    /// Whether the history was checked for calls of a recorded answer that were never played
    /// (a run killed between the calls of one answer, then resumed).
    checked_history: bool,
    /// See [`CodeActConfig::profile`].
    profile: ToolProfile,
    /// `LocAgent`: its functions in the kernel.
    kernel_functions: Option<KernelFunctions>,
}

impl CodeActAgent {
    /// An agent that thinks with `llm`.
    pub fn new(llm: Llm, config: CodeActConfig) -> Result<CodeActAgent, CondenserError> {
        let system_prompt = config.system_prompt.unwrap_or_else(|| {
            match config.profile {
                ToolProfile::CodeAct => SYSTEM_PROMPT,
                ToolProfile::ReadOnly => READ_ONLY_PROMPT,
                ToolProfile::Loc => super::loc::SYSTEM_PROMPT,
            }
            .to_string()
        });
        let mut memory = ConversationMemory::default();
        memory.vision = llm.vision();
        memory.system_prompt = Some(system_prompt.clone());
        let condenses = config.condenser != CondenserConfig::NoOp;
        let condenser_llm = config.condenser_llm.unwrap_or_else(|| llm.clone());
        Ok(CodeActAgent {
            condenser: config.condenser.build(Some(condenser_llm))?,
            tools: tools::tools_of(config.profile, config.tools),
            mcp_tools: HashSet::new(),
            llm,
            system_prompt,
            memory,
            condenses,
            pending: VecDeque::new(),
            checked_history: false,
            profile: config.profile,
            kernel_functions: (config.profile == ToolProfile::Loc).then(KernelFunctions::default),
        })
    }

    /// The next action: [`Self::choose_action`]'s, a `LocAgent` cell prepared for the kernel.
    async fn next_action(
        &mut self,
        state: &State,
        history: &EventStream,
    ) -> Result<Step, AgentError> {
        let events = history.range(state.start_id, None);
        let mut step = self.choose_action(&events).await?;
        if let Some(functions) = &mut self.kernel_functions {
            functions.prepare(&mut step.action, &events);
        }
        Ok(step)
    }

    /// A queued call of the last answer, a condensation, or the model's next answer.
    async fn choose_action(
        &mut self,
        events: &[std::sync::Arc<protocol::Event>],
    ) -> Result<Step, AgentError> {
        if !std::mem::replace(&mut self.checked_history, true) {
            self.pending
                .extend(unplayed_calls(events, &self.mcp_tools, self.profile));
        }
        if let Some(action) = self.pending.pop_front() {
            return Ok(action.into());
        }
        let view = View::from_events(events);
        let view = match self
            .condenser
            .condense(view)
            .await
            .map_err(condenser_error)?
        {
            Condensed::Condensation(action) => return Ok((*action).into()),
            Condensed::View(view) => view,
        };
        let messages = self.memory.process_events(&view);
        let completion = match self.llm.completion(messages, &self.tools).await {
            Ok(completion) => completion,
            // The prompt no longer fits: ask the condenser to forget (as the reference does),
            // when there is one that can.
            Err(e) if e.is_context_window_exceeded() && self.condenses => {
                tracing::warn!("the prompt exceeds the model's context window; condensing");
                return Ok(Action::from(ActionKind::CondensationRequest(EmptyArgs {})).into());
            }
            Err(e) => return Err(llm_error(e)),
        };
        let response =
            serde_json::to_value(&completion.response).map_err(|e| AgentError::Fatal {
                kind: FatalKind::LlmResponse,
                message: format!("cannot record the model's response: {e}"),
            })?;
        let actions = actions::response_to_actions(
            &completion.message,
            &response,
            Some(completion.metrics.to_json()),
            &self.mcp_tools,
            self.profile,
        )?;
        self.pending.extend(actions);
        let action = self
            .pending
            .pop_front()
            .ok_or_else(|| AgentError::Malformed("The response held no action.".to_string()))?;
        Ok(Step {
            action,
            accumulated_cost: Some(completion.metrics.accumulated_cost),
        })
    }
}

impl Agent for CodeActAgent {
    fn name(&self) -> &str {
        match self.profile {
            ToolProfile::CodeAct => "CodeActAgent",
            ToolProfile::ReadOnly => "ReadOnlyAgent",
            ToolProfile::Loc => "LocAgent",
        }
    }

    fn step<'a>(&'a mut self, state: &'a State, history: &'a EventStream) -> StepFuture<'a> {
        Box::pin(self.next_action(state, history))
    }

    /// The answer's remaining calls are dropped: a stopped or failed run does not play them.
    fn reset(&mut self) {
        self.pending.clear();
    }

    /// After its own tools; a tool named like one of its own, or like an MCP tool offered
    /// already, is left out (and logged): a call of that name could reach only one of them.
    fn offer_mcp_tools(&mut self, tools: Vec<Tool>) {
        // The reference's ReadOnlyAgent ignores MCP tools (they may write); its LocAgent lists
        // them without being able to call them, which this one does not.
        if self.profile != ToolProfile::CodeAct {
            return;
        }
        for tool in tools {
            let name = &tool.function.name;
            if self.tools.iter().any(|t| t.function.name == *name) {
                tracing::warn!(tool = %name, "an MCP tool is named like one the agent has; left out");
                continue;
            }
            self.mcp_tools.insert(name.clone());
            self.tools.push(tool);
        }
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

/// The calls of the newest recorded answer that have no action in `events` yet, as actions.
/// A run stopped between the calls of one answer would otherwise never show the model that
/// answer again: its assistant message waits for a result of every call.
fn unplayed_calls(
    events: &[std::sync::Arc<protocol::Event>],
    mcp_tools: &HashSet<String>,
    profile: ToolProfile,
) -> Vec<Action> {
    use protocol::{Event, EventSource};
    let newest = events.iter().rev().find_map(|e| match &**e {
        Event::Action(a) if a.source == Some(EventSource::Agent) => a.tool_call_metadata.as_ref(),
        _ => None,
    });
    let Some(metadata) = newest else {
        return Vec::new();
    };
    if metadata.total_calls_in_response <= 1 {
        return Vec::new();
    }
    let Some(response) = crate::memory::decode_response(metadata) else {
        return Vec::new();
    };
    let Some(choice) = response.choices.first() else {
        return Vec::new();
    };
    let recorded: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| match &**e {
            Event::Action(a) if a.source == Some(EventSource::Agent) => a
                .tool_call_metadata
                .as_ref()
                .map(|m| m.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let Ok(actions) = actions::response_to_actions(
        &choice.message,
        &metadata.model_response,
        None,
        mcp_tools,
        profile,
    ) else {
        return Vec::new();
    };
    let unplayed: Vec<Action> = actions
        .into_iter()
        .filter(|a| {
            a.tool_call_metadata
                .as_ref()
                .is_some_and(|m| !recorded.contains(m.tool_call_id.as_str()))
        })
        .collect();
    if !unplayed.is_empty() {
        tracing::info!(
            calls = unplayed.len(),
            "playing the calls of the last answer that the run had not played"
        );
    }
    unplayed
}

/// LLM failures: a malformed tool call is the model's to fix; anything else ends the run.
pub(crate) fn llm_error(error: LlmError) -> AgentError {
    match error {
        LlmError::ToolCallFormat(text) => AgentError::Malformed(text),
        LlmError::Failed { kind, message } => AgentError::Fatal {
            kind: FatalKind::Llm(kind),
            message,
        },
    }
}

fn condenser_error(error: CondenserError) -> AgentError {
    match error {
        CondenserError::Llm(e) => llm_error(e),
        other => AgentError::Fatal {
            kind: FatalKind::Condenser,
            message: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
