//! The view: the events an agent sees, built from its history by applying every `condensation`
//! action in it (OpenHands V0's `View.from_events`).
//!
//! A condensation forgets events (a list of ids, or an inclusive id range) and may carry a
//! summary of them; the summary of the newest condensation that has one is shown as a
//! `condense` observation at its `summary_offset`. Condensation actions and condensation
//! requests never show themselves, and neither do the controller's bookkeeping events (`null`
//! actions and observations, `change_agent_state`, `agent_state_changed`, actions still held for
//! the user's confirmation) and hidden commands
//! and their output (the workspace's `setup.sh`), which the reference leaves out of the
//! agent's history as well. What a delegate did between an agent's `delegate` action and its
//! answer is the delegate's history, not the agent's.

use std::collections::HashSet;
use std::sync::Arc;

#[cfg(test)]
use protocol::Action;
use protocol::action::{CondensationArgs, ConfirmationState};
use protocol::observation::EmptyExtras;
use protocol::{ActionKind, Event, EventSource, Observation, ObservationKind};

/// The events an agent reasons over, oldest first, plus what the history says beyond them.
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    events: Vec<Arc<Event>>,
    initial_user_message: Option<Arc<Event>>,
    unhandled_condensation_request: bool,
}

impl View {
    /// The view of `history` (the events from `state.start_id` on, in id order).
    pub(crate) fn from_events(history: &[Arc<Event>]) -> View {
        let mut forgotten: HashSet<i64> = HashSet::new();
        let mut summary: Option<(&str, usize, Option<i64>)> = None;
        let mut unhandled_condensation_request = false;
        for event in history {
            let Event::Action(action) = event.as_ref() else {
                continue;
            };
            match &action.kind {
                ActionKind::Condensation(args) => {
                    forgotten.extend(forgotten_ids(args));
                    if let (Some(text), Some(offset)) = (&args.summary, args.summary_offset) {
                        summary = Some((text, usize::try_from(offset).unwrap_or(0), action.id));
                    }
                    unhandled_condensation_request = false;
                }
                ActionKind::CondensationRequest(_) => unhandled_condensation_request = true,
                _ => {}
            }
        }

        let delegated = delegated_ids(history);
        let mut events: Vec<Arc<Event>> = history
            .iter()
            .filter(|e| {
                shown(e)
                    && e.id()
                        .is_none_or(|id| !forgotten.contains(&id) && !delegated.contains(&id))
            })
            .cloned()
            .collect();
        if let Some((text, offset, cause)) = summary {
            tracing::debug!(offset, "inserting the condensation summary");
            events.insert(
                offset.min(events.len()),
                Arc::new(summary_event(text, cause)),
            );
        }
        let initial_user_message = history.iter().find(|e| is_user_message(e)).cloned();
        View {
            events,
            initial_user_message,
            unhandled_condensation_request,
        }
    }

    /// A view of other `events` with this view's initial user message and pending request: what
    /// a condenser that transforms events returns.
    pub(crate) fn with_events(&self, events: Vec<Arc<Event>>) -> View {
        View {
            events,
            initial_user_message: self.initial_user_message.clone(),
            unhandled_condensation_request: self.unhandled_condensation_request,
        }
    }

    /// The events, oldest first.
    pub(crate) fn events(&self) -> &[Arc<Event>] {
        &self.events
    }

    /// How many events the view holds.
    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    /// The events, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Event> {
        self.events.iter().map(AsRef::as_ref)
    }

    /// The first user `message` of the history, even when a condensation forgot it: the
    /// conversation must open with it.
    #[cfg(test)]
    pub(crate) fn initial_user_message(&self) -> Option<&Action> {
        match self.initial_user_message.as_deref() {
            Some(Event::Action(action)) => Some(action),
            _ => None,
        }
    }

    /// [`Self::initial_user_message`] as an event.
    pub(crate) fn initial_user_event(&self) -> Option<&Event> {
        self.initial_user_message.as_deref()
    }

    /// Whether a `condensation_request` came after the newest `condensation`: the condenser
    /// should condense now, whatever the size.
    pub(crate) fn unhandled_condensation_request(&self) -> bool {
        self.unhandled_condensation_request
    }

    /// The summary the view shows (the content of its `condense` observation), if any.
    pub(crate) fn summary(&self) -> Option<&str> {
        self.iter().find_map(|e| match e {
            Event::Observation(o) if matches!(o.kind, ObservationKind::Condense(_)) => {
                Some(o.content.as_str())
            }
            _ => None,
        })
    }
}

/// The ids a condensation forgets: its list when it has one, else its inclusive range.
pub(crate) fn forgotten_ids(args: &CondensationArgs) -> Vec<i64> {
    match (
        &args.forgotten_event_ids,
        args.forgotten_events_start_id,
        args.forgotten_events_end_id,
    ) {
        (Some(ids), _, _) => ids.clone(),
        (None, Some(start), Some(end)) => (start..=end).collect(),
        _ => Vec::new(),
    }
}

/// Whether an event of the history can be part of a view.
fn shown(event: &Event) -> bool {
    match event {
        Event::Action(a) => {
            !matches!(
                &a.kind,
                ActionKind::Condensation(_)
                    | ActionKind::CondensationRequest(_)
                    | ActionKind::Null(_)
                    | ActionKind::ChangeAgentState(_)
            ) && !matches!(&a.kind, ActionKind::Run(run) if run.hidden)
                // An action held for the user's confirmation: the one the user confirmed or
                // rejected follows it as a new event (see `crate::security`).
                && a.confirmation_state() != ConfirmationState::AwaitingConfirmation
        }
        Event::Observation(o) => {
            !matches!(
                &o.kind,
                ObservationKind::Null(_) | ObservationKind::AgentStateChanged(_)
            ) && !matches!(&o.kind, ObservationKind::Run(run) if run.hidden)
        }
    }
}

/// The ids of the events a delegate added: those after an agent's `delegate` action up to the
/// observation that answers it (or to the end, while the delegate works). The agent that
/// delegated sees only its action and the answer, as in the reference.
fn delegated_ids(history: &[Arc<Event>]) -> HashSet<i64> {
    let mut ids = HashSet::new();
    let mut open: Option<i64> = None;
    for event in history {
        let Some(id) = event.id() else { continue };
        match (open, event.as_ref()) {
            (None, Event::Action(a))
                if matches!(a.kind, ActionKind::Delegate(_))
                    && a.source == Some(EventSource::Agent) =>
            {
                open = Some(id);
            }
            (Some(delegate), Event::Observation(o)) if o.cause == Some(delegate) => open = None,
            (Some(_), _) => {
                ids.insert(id);
            }
            (None, _) => {}
        }
    }
    ids
}

/// Whether an event is a `message` from the user.
pub(crate) fn is_user_message(event: &Event) -> bool {
    matches!(event, Event::Action(a)
        if matches!(a.kind, ActionKind::Message(_)) && a.source == Some(EventSource::User))
}

/// The `condense` observation standing in for a summary; `cause` is the condensation's id.
fn summary_event(text: &str, cause: Option<i64>) -> Event {
    let mut observation = Observation::new(ObservationKind::Condense(EmptyExtras {}), text);
    observation.source = Some(EventSource::Environment);
    observation.cause = cause;
    observation.message = "Summary of forgotten events".to_string();
    Event::Observation(observation)
}

#[cfg(test)]
mod tests;
