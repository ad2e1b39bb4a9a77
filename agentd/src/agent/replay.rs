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
mod tests {
    use super::*;
    use protocol::action::MessageArgs;

    const RECORDED: &str = r#"[
        {"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "user", "action": "message",
         "args": {"content": "list files"}},
        {"id": 1, "timestamp": "2025-01-01T00:00:01", "source": "agent", "action": "run",
         "cause": 0, "llm_metrics": {"accumulated_cost": 0.5},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "call_1",
                                "model_response": {}, "total_calls_in_response": 1},
         "args": {"command": "ls", "thought": "look first"}},
        {"id": 2, "source": "environment", "cause": 1, "observation": "run", "content": "a",
         "extras": {"command": "ls", "metadata": {"exit_code": 0, "pid": 7, "username": null,
                    "hostname": null, "working_dir": null, "py_interpreter_path": null,
                    "prefix": "", "suffix": ""}, "hidden": false}},
        {"id": 3, "source": "agent", "action": "null", "args": {}},
        {"id": 4, "source": "agent", "action": "finish", "args": {"final_thought": "done"}}
    ]"#;

    #[tokio::test]
    async fn replays_agent_actions_stripped_of_their_envelope_then_finishes() {
        let events: Vec<Event> = serde_json::from_str(RECORDED).unwrap();
        let mut agent = ReplayAgent::from_events(&events);
        assert_eq!(agent.remaining(), 2);
        let state = State::new("s", 10, None);
        let history = EventStream::in_memory();

        let run = agent.step(&state, &history).await.unwrap().action;
        assert_eq!(
            (run.id, run.timestamp.as_deref(), run.source, run.cause),
            (None, None, None, None)
        );
        assert_eq!(run.llm_metrics, None);
        assert_eq!(run.tool_call_metadata.unwrap().tool_call_id, "call_1");
        let ActionKind::Run(args) = run.kind else {
            panic!()
        };
        assert_eq!(
            (args.command.as_str(), args.thought.as_str()),
            ("ls", "look first")
        );

        let finish = agent.step(&state, &history).await.unwrap().action;
        let ActionKind::Finish(args) = finish.kind else {
            panic!()
        };
        assert_eq!(args.final_thought, "done");
        let after = agent.step(&state, &history).await.unwrap().action;
        assert!(matches!(after.kind, ActionKind::Finish(_)));
        assert_eq!(agent.remaining(), 0);
    }

    #[tokio::test]
    async fn the_recorded_system_message_is_recorded_again_not_replayed_as_a_step() {
        use protocol::action::{CmdRunArgs, SystemMessageArgs};
        let system = Action::from(ActionKind::System(SystemMessageArgs {
            content: "You are an agent.".into(),
            ..SystemMessageArgs::default()
        }));
        let run = Action::from(ActionKind::Run(CmdRunArgs::new("ls")));
        let mut agent = ReplayAgent::new([system.clone(), run]);
        assert_eq!(agent.system_message(), Some(system.clone()));
        assert_eq!(agent.remaining(), 1);

        // On resume, the recorded system message in the history is not a replayed step.
        let history = EventStream::in_memory();
        history.add(system, EventSource::Agent).unwrap();
        let state = State::new("s", 10, None);
        let first = agent.step(&state, &history).await.unwrap().action;
        assert!(matches!(first.kind, ActionKind::Run(_)), "{first:?}");
    }

    #[tokio::test]
    async fn a_resumed_replay_continues_after_the_actions_already_in_the_history() {
        let events: Vec<Event> = serde_json::from_str(RECORDED).unwrap();
        let history = EventStream::in_memory();
        let task = Action::from(ActionKind::Message(MessageArgs {
            content: "list files".into(),
            ..MessageArgs::default()
        }));
        history.add(task, EventSource::User).unwrap();
        let Event::Action(first) = &events[1] else {
            panic!()
        };
        history
            .add(fresh(first.clone()), EventSource::Agent)
            .unwrap();

        let mut agent = ReplayAgent::from_events(&events);
        let state = State::new("s", 10, None);
        let next = agent.step(&state, &history).await.unwrap().action;
        assert!(matches!(next.kind, ActionKind::Finish(ref f) if f.final_thought == "done"));
    }
}
