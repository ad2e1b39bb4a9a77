//! Recall: what the agent knows before it acts (OpenHands V0's `Memory`, docs/protocol.md §12).
//!
//! The controller puts a `recall` action (source user) on the stream for every user message:
//! `workspace_context` for the run's first, `knowledge` after. [`Memory`] answers each with a
//! `recall` observation (source environment, `cause` = the action): for the first message the
//! workspace context (repository name, directory and branch, the repository instructions — every
//! repo microagent's content joined by a blank line —, the sandbox's working directory and web
//! hosts, today's date, the secrets' names and descriptions, conversation instructions) and the
//! knowledge microagents the message triggers; for later messages the triggered knowledge only,
//! or a `null` observation when nothing fires. `ConversationMemory` renders them.
//!
//! Microagents come from [`builtin`] (shipped in the binary), then from the workspace, read in
//! the sandbox through the runtime (`crate::workspace`); a later microagent of the same kind
//! and name replaces an earlier one. This module does no I/O. Triggers fire on whole words ([`trigger`]). A task microagent
//! (one with `inputs`) is shown with its inputs filled in when they were given (`--input`);
//! otherwise the agent is asked to ask the user for them, and a headless run, where nobody
//! can answer, fails saying which inputs are missing.

mod builtin;
pub(crate) mod microagent;
mod trigger;

use std::collections::BTreeMap;

use protocol::action::RecallArgs;
use protocol::observation::{EmptyExtras, RecallExtras};
use protocol::{Action, ActionKind, EventSource, Observation, ObservationKind};
use serde_json::{Value, json};

use microagent::{Kind, Microagent, MicroagentError, TASK_INPUTS_PROMPT};

/// `recall_type` of the first user message's recall.
pub(crate) const WORKSPACE_CONTEXT: &str = "workspace_context";
/// `recall_type` of every later message's recall.
pub(crate) const KNOWLEDGE: &str = "knowledge";

/// The `recall` action the controller adds for a user message with `query` as its text.
pub(crate) fn recall_action(recall_type: &str, query: &str) -> Action {
    let mut action = Action::from(ActionKind::Recall(RecallArgs {
        recall_type: recall_type.to_string(),
        query: query.to_string(),
        thought: String::new(),
    }));
    let head: String = query.chars().take(50).collect();
    action.message = Some(format!("Retrieving content for: {head}"));
    action
}

/// What the workspace-context observation says besides the microagents.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct WorkspaceContext {
    /// The repository (`owner/name`), when one was set up.
    pub(crate) repo_name: String,
    /// Its directory, relative to the working directory.
    pub(crate) repo_directory: String,
    /// The branch checked out.
    pub(crate) repo_branch: String,
    /// Web hosts that reach the sandbox's app ports: URL → port.
    pub(crate) runtime_hosts: BTreeMap<String, u16>,
    /// Extra instructions of the runtime.
    pub(crate) additional_agent_instructions: String,
    /// Today's date (UTC, `YYYY-MM-DD`) when the run started.
    pub(crate) date: String,
    /// The secrets' names and descriptions (never their values).
    pub(crate) secrets: BTreeMap<String, String>,
    /// Instructions for this run.
    pub(crate) conversation_instructions: String,
    /// The sandbox's working directory.
    pub(crate) working_dir: String,
}

/// What a recall produces.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per recall, moved once onto the stream; boxing would only add an allocation"
)]
pub(crate) enum Recalled {
    /// The answer to put on the stream (`cause` set).
    Answer(Observation),
    /// The run cannot go on: a task microagent needs inputs nobody can give (headless).
    Fail(String),
    /// Not a recall this memory answers (not a `recall` action, or from the environment).
    Ignored,
}

/// The microagents and workspace facts of a run; answers `recall` actions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memory {
    repo: Vec<Microagent>,
    knowledge: Vec<Microagent>,
    context: WorkspaceContext,
    /// Task microagents' inputs given up front.
    inputs: BTreeMap<String, String>,
    /// Nobody answers the agent: a task microagent with missing inputs fails the run.
    headless: bool,
}

impl Memory {
    /// A memory with the built-in microagents and `context`.
    pub(crate) fn new(
        context: WorkspaceContext,
        inputs: BTreeMap<String, String>,
        headless: bool,
    ) -> Result<Memory, MicroagentError> {
        let mut memory = Memory {
            context,
            inputs,
            headless,
            ..Memory::default()
        };
        for agent in builtin::microagents()? {
            memory.add(agent);
        }
        Ok(memory)
    }

    /// Adds `agent`, replacing the one of its kind with its name.
    pub(crate) fn add(&mut self, agent: Microagent) {
        let list = match agent.kind {
            Kind::Repo => &mut self.repo,
            Kind::Knowledge | Kind::Task => &mut self.knowledge,
        };
        match list.iter_mut().find(|a| a.name == agent.name) {
            Some(slot) => *slot = agent,
            None => list.push(agent),
        }
    }

    /// Forgets the microagents named in `names` (`[microagents] disabled`).
    pub(crate) fn disable(&mut self, names: &[String]) {
        self.repo.retain(|a| !names.contains(&a.name));
        self.knowledge.retain(|a| !names.contains(&a.name));
    }

    /// The names of the microagents it knows, repo ones first (for the run's log).
    pub(crate) fn names(&self) -> Vec<&str> {
        self.repo
            .iter()
            .chain(&self.knowledge)
            .map(|a| a.name.as_str())
            .collect()
    }

    /// The answer to `action` (see [`Recalled`]).
    pub(crate) fn recall(&self, action: &Action) -> Recalled {
        let ActionKind::Recall(args) = &action.kind else {
            return Recalled::Ignored;
        };
        let from = action.source;
        if !matches!(from, Some(EventSource::User | EventSource::Agent)) {
            return Recalled::Ignored;
        }
        let knowledge = match self.triggered(&args.query) {
            Ok(knowledge) => knowledge,
            Err(reason) => return Recalled::Fail(reason),
        };
        let mut observation =
            if args.recall_type == WORKSPACE_CONTEXT && from == Some(EventSource::User) {
                self.workspace_context(knowledge)
            } else if args.recall_type == KNOWLEDGE && !knowledge.is_empty() {
                let content = "Retrieved knowledge from microagents";
                Observation {
                    message: "Added microagent knowledge".to_string(),
                    ..Observation::new(
                        ObservationKind::Recall(RecallExtras {
                            recall_type: KNOWLEDGE.to_string(),
                            microagent_knowledge: knowledge,
                            ..RecallExtras::default()
                        }),
                        content,
                    )
                }
            } else {
                // Nothing fired (or a recall type nobody asks for): the reference's empty answer,
                // so that the controller does not wait for ever.
                Observation {
                    message: "No observation".to_string(),
                    ..Observation::new(ObservationKind::Null(EmptyExtras {}), "")
                }
            };
        observation.cause = action.id;
        Recalled::Answer(observation)
    }

    fn workspace_context(&self, knowledge: Vec<Value>) -> Observation {
        let context = &self.context;
        let repo_instructions = self
            .repo
            .iter()
            .map(|a| a.content.as_str())
            .filter(|c| !c.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        let text = "Added workspace context";
        Observation {
            message: text.to_string(),
            ..Observation::new(
                ObservationKind::Recall(RecallExtras {
                    recall_type: WORKSPACE_CONTEXT.to_string(),
                    repo_name: context.repo_name.clone(),
                    repo_directory: context.repo_directory.clone(),
                    repo_branch: context.repo_branch.clone(),
                    repo_instructions,
                    runtime_hosts: context
                        .runtime_hosts
                        .iter()
                        .map(|(host, port)| (host.clone(), json!(port)))
                        .collect(),
                    additional_agent_instructions: context.additional_agent_instructions.clone(),
                    date: context.date.clone(),
                    custom_secrets_descriptions: context
                        .secrets
                        .iter()
                        .map(|(name, description)| (name.clone(), json!(description)))
                        .collect(),
                    conversation_instructions: context.conversation_instructions.clone(),
                    working_dir: context.working_dir.clone(),
                    microagent_knowledge: knowledge,
                }),
                text,
            )
        }
    }

    /// The knowledge microagents `query` triggers, as `{"name", "trigger", "content"}`; `Err`
    /// when a task microagent fires whose inputs nobody can give.
    fn triggered(&self, query: &str) -> Result<Vec<Value>, String> {
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for agent in &self.knowledge {
            let Some(trigger) = trigger::first_match(&agent.triggers, query) else {
                continue;
            };
            tracing::info!(microagent = %agent.name, trigger, "microagent triggered");
            let content = match agent.kind {
                Kind::Task => self.task_content(agent)?,
                Kind::Knowledge | Kind::Repo => agent.content.clone(),
            };
            found.push(json!({"name": agent.name, "trigger": trigger, "content": content}));
        }
        Ok(found)
    }

    /// A task microagent's content: with its inputs filled in when all were given; as written
    /// (asking the agent to ask the user) otherwise, unless nobody can answer.
    fn task_content(&self, agent: &Microagent) -> Result<String, String> {
        let missing: Vec<String> = agent
            .inputs
            .iter()
            .filter(|i| !self.inputs.contains_key(&i.name))
            .map(|i| format!("{} ({})", i.name, i.description))
            .collect();
        if missing.is_empty() {
            let mut content = agent
                .content
                .strip_suffix(TASK_INPUTS_PROMPT)
                .unwrap_or(&agent.content)
                .to_string();
            for input in &agent.inputs {
                if let Some(value) = self.inputs.get(&input.name) {
                    content = content.replace(&format!("${{{}}}", input.name), value);
                }
            }
            return Ok(content);
        }
        if self.headless {
            return Err(format!(
                "the task microagent /{} needs inputs that were not given: {}; agentd runs \
                 headless and cannot ask for them: give each with --input NAME=VALUE",
                agent.name,
                missing.join(", ")
            ));
        }
        Ok(agent.content.clone())
    }
}

#[cfg(test)]
mod tests;
