//! Delegation: a `delegate` action runs the agent the [`AgentFactory`](super::AgentFactory)
//! makes for its name under a controller of its own, on the same stream, with its own state
//! and the parent's counters (see the parent module); the parent answers the action with a
//! `delegate` observation once the delegate ended, or with an `error` for an unknown agent or a
//! delegation a restart cut off.

use std::sync::Arc;

use protocol::action::{DelegateArgs, MessageArgs};
use protocol::observation::{DelegateExtras, ErrorExtras};
use protocol::{Action, ActionKind, AgentState, Event, EventSource, Observation, ObservationKind};

use super::{Command, Controller, ControllerError};
use crate::agent::DELEGATE_AGENTS;
use crate::events::{EventFilter, answer_to};
use crate::state::State;

/// The answer to a `delegate` action whose delegate was cut off by a restart.
pub(super) const DELEGATE_INTERRUPTED: &str = "The delegated agent was interrupted (agentd stopped \
before it finished); its steps so far are not shown. Delegate again if the sub-task is still needed.";

impl Controller {
    /// A run killed while a delegate worked: its `delegate` action gets an `error` answer (the
    /// delegate's state was not saved), so the agent that delegated sees what happened and
    /// goes on.
    pub(super) fn answer_interrupted_delegation(&mut self) -> Result<(), ControllerError> {
        let newest = self.stream.search(&EventFilter {
            start_id: Some(self.state.start_id),
            types: vec!["delegate".to_string()],
            source: Some(EventSource::Agent),
            reverse: true,
            limit: Some(1),
            ..EventFilter::default()
        });
        let Some(Event::Action(delegate)) = newest.first().map(|e| &**e) else {
            return Ok(());
        };
        let mut error = Observation::new(
            ObservationKind::Error(ErrorExtras::default()),
            DELEGATE_INTERRUPTED.to_string(),
        );
        error.message = DELEGATE_INTERRUPTED.to_string();
        // Only if it has no answer yet.
        if let Some(stored) = self
            .stream
            .answer(answer_to(error, delegate), EventSource::Agent)?
        {
            self.own_event(&stored);
        }
        Ok(())
    }

    /// Runs the delegate of the `delegate` action `action` to its end and answers the action.
    /// (Boxed: a delegate's controller may delegate in turn.)
    pub(super) fn delegate(
        &mut self,
        action: Arc<Event>,
        args: DelegateArgs,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), ControllerError>> + Send + '_>>
    {
        Box::pin(self.run_delegate(action, args))
    }

    async fn run_delegate(
        &mut self,
        action: Arc<Event>,
        args: DelegateArgs,
    ) -> Result<(), ControllerError> {
        let Event::Action(delegate_action) = &*action else {
            return Ok(());
        };
        let agent = self.delegates.as_ref().and_then(|make| make(&args.agent));
        let Some(agent) = agent else {
            let text = format!(
                "Unknown agent {:?}: the agents to delegate to are {}.",
                args.agent,
                DELEGATE_AGENTS.join(", ")
            );
            let mut error =
                Observation::new(ObservationKind::Error(ErrorExtras::default()), text.clone());
            error.message = text;
            self.add(answer_to(error, delegate_action), EventSource::Agent)?;
            return Ok(());
        };
        let name = agent.name().to_string();
        let mut config = self.config.clone();
        config.session_id = format!("{}-delegate", self.state.session_id);
        config.session_dir = None;
        config.max_iterations = self.state.max_iterations;
        config.max_budget_per_task = self.state.budget.max_per_task;
        let mut state = State::new(
            config.session_id.clone(),
            config.max_iterations,
            config.max_budget_per_task,
        );
        state.delegate_level = self.state.delegate_level + 1;
        state.iteration = self.state.iteration;
        state.parent_iteration = self.state.iteration;
        state.budget = self.state.budget.clone();
        state.confirmation_mode = self.state.confirmation_mode;
        state.start_id = self.stream.latest_id().map_or(0, |id| id + 1);
        let events = self.stream.subscribe();
        state.end_id = self.stream.latest_id();
        tracing::info!(
            session = %self.state.session_id,
            delegate = %name,
            level = state.delegate_level,
            "delegating"
        );
        let child =
            Controller::with_state(state, self.stream.clone(), events, agent, &config, false);
        let handle = child.handle();
        if let Some(task) = args.inputs.get("task") {
            let task = match task {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let message = Action::from(ActionKind::Message(MessageArgs {
                content: format!("TASK: {task}"),
                ..MessageArgs::default()
            }));
            self.stream.add(message, EventSource::User)?;
        }
        let mut run = Box::pin(child.run());
        let ended = loop {
            tokio::select! {
                biased;
                Some(command) = self.commands.recv() => match command {
                    Command::Stop => {
                        handle.stop();
                        self.deferred.push(Command::Stop);
                    }
                    Command::Fail(reason) => {
                        handle.fail(reason.clone());
                        self.deferred.push(Command::Fail(reason));
                    }
                    other => self.deferred.push(other),
                },
                ended = &mut run => break ended?,
            }
        };
        // Everything that happened meanwhile was the delegate's.
        while let Ok(event) = self.events.try_recv() {
            self.state.end_id = self.state.end_id.max(event.id());
        }
        self.own.clear();
        // The counters are global: the delegate's steps and spending are the run's.
        self.state.iteration = ended.iteration;
        self.state.budget = ended.budget.clone();
        if !ended.metrics.is_null() {
            self.state.metrics = ended.metrics.clone();
        }
        let content = match ended.agent_state {
            AgentState::Finished | AgentState::Rejected => {
                let outputs: Vec<String> = ended
                    .outputs
                    .iter()
                    .filter(|(key, _)| *key != "metrics")
                    .map(|(key, value)| match value {
                        serde_json::Value::String(text) => format!("{key}: {text}"),
                        other => format!("{key}: {other}"),
                    })
                    .collect();
                format!("{name} finishes task with {}", outputs.join(", "))
            }
            _ => format!("{name} encountered an error during execution."),
        };
        let content = format!("Delegated agent finished with result:\n\n{content}");
        let answer = Observation::new(
            ObservationKind::Delegate(DelegateExtras {
                outputs: ended.outputs.clone(),
            }),
            content,
        );
        self.add(answer_to(answer, delegate_action), EventSource::Agent)?;
        tracing::info!(
            session = %self.state.session_id,
            delegate = %name,
            state = ended.agent_state.as_str(),
            steps = ended.local_iteration(),
            "the delegate ended"
        );
        Ok(())
    }
}
