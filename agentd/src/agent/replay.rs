//! `ReplayAgent`: replays the agent actions of a recorded session (a trajectory), one per step,
//! with their thoughts and tool calls, so that the recording can be executed again and the new
//! observations compared with the old ones (`trajectory::compare`). No LLM is called, so the
//! recorded `llm_metrics` are dropped: a replay spends nothing.

use protocol::action::FinishArgs;
use protocol::{Action, ActionKind, Event, EventSource};

use super::{Agent, AgentError, Step, StepFuture, fresh};
use crate::events::EventStream;
use crate::state::State;

/// Replays recorded actions, then answers `finish`.
#[derive(Debug, Clone)]
pub struct ReplayAgent {
    actions: Vec<Action>,
    /// The recording's `system` action, recorded again first.
    system: Option<Action>,
    /// Index of the next action; found on the first step (see [`ReplayAgent::step`]).
    next: Option<usize>,
}

impl ReplayAgent {
    /// Replays `actions` (the stream envelope and `llm_metrics` are stripped; `null` actions,
    /// which a controller never records, are skipped). A `system` action is not a step: it is
    /// the run's [`Agent::system_message`].
    pub fn new(actions: impl IntoIterator<Item = Action>) -> ReplayAgent {
        let mut system = None;
        let actions = actions
            .into_iter()
            .filter(|a| !matches!(a.kind, ActionKind::Null(_)))
            .map(|a| {
                let mut a = fresh(a);
                a.llm_metrics = None;
                a
            })
            .filter_map(|a| match a.kind {
                ActionKind::System(_) => {
                    system.get_or_insert(a);
                    None
                }
                _ => Some(a),
            })
            .collect();
        ReplayAgent {
            actions,
            system,
            next: None,
        }
    }

    /// Replays the agent's actions of a recorded session.
    pub fn from_events(events: &[Event]) -> ReplayAgent {
        ReplayAgent::new(crate::trajectory::agent_actions(events))
    }

    /// How many recorded actions are left (all of them before the first step).
    #[cfg(test)]
    pub(crate) fn remaining(&self) -> usize {
        self.actions.len() - self.next.unwrap_or(0).min(self.actions.len())
    }
}

impl Agent for ReplayAgent {
    fn name(&self) -> &str {
        "ReplayAgent"
    }

    /// On its first step the agent counts the agent actions the run's history already holds
    /// (from `state.start_id`) and continues after them, so a resumed replay does not repeat
    /// what was replayed before the restart. That count reads the history once; later steps
    /// do not look at it.
    fn step<'a>(&'a mut self, state: &'a State, history: &'a EventStream) -> StepFuture<'a> {
        let index = *self.next.get_or_insert_with(|| {
            history
                .range(state.start_id, None)
                .iter()
                .filter(|e| {
                    matches!(&***e, Event::Action(a) if a.source == Some(EventSource::Agent)
                        && !matches!(a.kind, ActionKind::System(_)))
                })
                .count()
        });
        let action = match self.actions.get(index) {
            Some(action) => {
                self.next = Some(index + 1);
                action.clone()
            }
            None => Action::from(ActionKind::Finish(FinishArgs {
                final_thought: "The replay has no more actions.".to_string(),
                ..FinishArgs::default()
            })),
        };
        Box::pin(std::future::ready(Ok::<_, AgentError>(Step::from(action))))
    }

    /// Nothing is in flight between steps; the replay keeps its place.
    fn reset(&mut self) {}

    fn system_message(&self) -> Option<Action> {
        self.system.clone()
    }
}

#[cfg(test)]
mod tests;
