//! `ScriptedAgent`: an agent that plays a fixed list of actions, or asks a closure for each
//! one. For tests and demos of the controller; no LLM involved.

use std::collections::VecDeque;

use protocol::action::{
    CmdRunArgs, FileReadArgs, FileWriteArgs, FinishArgs, MessageArgs, RejectArgs,
};
use protocol::{Action, ActionKind};

#[cfg(test)]
use super::AgentError;
use super::{Agent, Step, StepFuture, fresh};
use crate::events::EventStream;
use crate::state::State;

#[cfg(test)]
type StepFn = dyn FnMut(&State, &EventStream) -> Result<Step, AgentError> + Send;

/// Plays a script. A list that runs out answers `finish`.
pub struct ScriptedAgent {
    name: String,
    script: Script,
}

enum Script {
    List(VecDeque<Action>),
    #[cfg(test)]
    Fn(Box<StepFn>),
}

impl std::fmt::Debug for ScriptedAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let script = match &self.script {
            Script::List(actions) => format!("{} actions left", actions.len()),
            #[cfg(test)]
            Script::Fn(_) => "a closure".to_string(),
        };
        f.debug_struct("ScriptedAgent")
            .field("name", &self.name)
            .field("script", &script)
            .finish()
    }
}

impl ScriptedAgent {
    /// Plays `actions` in order, then `finish`.
    pub fn new<A: Into<Action>>(actions: impl IntoIterator<Item = A>) -> ScriptedAgent {
        ScriptedAgent {
            name: "ScriptedAgent".to_string(),
            script: Script::List(actions.into_iter().map(|a| fresh(a.into())).collect()),
        }
    }

    /// Asks `next` for every action (or [`Step`], to report a cost).
    #[cfg(test)]
    pub(crate) fn from_fn<S: Into<Step>>(
        mut next: impl FnMut(&State, &EventStream) -> S + Send + 'static,
    ) -> ScriptedAgent {
        ScriptedAgent::with_script(Box::new(move |state, history| {
            Ok(next(state, history).into())
        }))
    }

    /// Asks `next` for every action; it may fail like a real agent.
    #[cfg(test)]
    pub(crate) fn from_try_fn(
        mut next: impl FnMut(&State, &EventStream) -> Result<Action, AgentError> + Send + 'static,
    ) -> ScriptedAgent {
        ScriptedAgent::with_script(Box::new(move |state, history| {
            next(state, history).map(Step::from)
        }))
    }

    #[cfg(test)]
    fn with_script(next: Box<StepFn>) -> ScriptedAgent {
        ScriptedAgent {
            name: "ScriptedAgent".to_string(),
            script: Script::Fn(next),
        }
    }

    /// OpenHands' `DummyAgent`: no LLM, one fixed action per step — a message, `echo "foo"`,
    /// writing `hello.sh`, reading it, running it, then `reject` (which ends its run).
    pub fn dummy() -> ScriptedAgent {
        let message = Action::from(ActionKind::Message(MessageArgs {
            content: "Time to get started!".to_string(),
            ..MessageArgs::default()
        }));
        ScriptedAgent::new([
            message,
            Action::from(ActionKind::Run(CmdRunArgs::new("echo \"foo\""))),
            Action::from(ActionKind::Write(FileWriteArgs::new(
                "hello.sh",
                "echo \"Hello, World!\"",
            ))),
            Action::from(ActionKind::Read(FileReadArgs::new("hello.sh"))),
            Action::from(ActionKind::Run(CmdRunArgs::new("bash hello.sh"))),
            Action::from(ActionKind::Reject(RejectArgs::default())),
        ])
        .named("DummyAgent")
    }

    /// Renames the agent.
    pub(crate) fn named(mut self, name: impl Into<String>) -> ScriptedAgent {
        self.name = name.into();
        self
    }
}

impl Agent for ScriptedAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn step<'a>(&'a mut self, _state: &'a State, _history: &'a EventStream) -> StepFuture<'a> {
        let next = match &mut self.script {
            Script::List(actions) => Ok(Step::from(actions.pop_front().unwrap_or_else(|| {
                Action::from(ActionKind::Finish(FinishArgs {
                    final_thought: "The script has no more actions.".to_string(),
                    ..FinishArgs::default()
                }))
            }))),
            #[cfg(test)]
            Script::Fn(next) => next(_state, _history).map(|step| Step {
                action: fresh(step.action),
                ..step
            }),
        };
        Box::pin(std::future::ready(next))
    }

    /// Nothing is in flight between steps; the script keeps its place.
    fn reset(&mut self) {}
}

#[cfg(test)]
mod tests;
