//! Stuck detection (OpenHands V0's `StuckDetector`): is the agent going round in circles?
//!
//! Only the newest [`WINDOW`] events of the run's history are read, so a check costs the same
//! at event 10 and at event 10 000. The patterns, on that history without user messages,
//! `null` events and state changes (as the reference filters it):
//!
//! - the same action and the same observation, 4 times;
//! - the same action answered by an error, 3 times (or by the same IPython syntax error);
//! - a monologue: the same agent message 3 times with no observation in between;
//! - an alternation: (A1, O1, A2, O2) repeated 3 times;
//! - 3 empty agent messages in a row.
//!
//! Events are compared by meaning, not identity: ids, times, causes, metrics and tool-call
//! metadata are ignored, and two `run` observations are the same when their command, exit code
//! and output are (not their pid).

use std::sync::Arc;

use protocol::{Action, ActionKind, Event, EventSource, Observation, ObservationKind};

use crate::events::EventStream;

/// How many of the newest events a check reads. The alternation pattern needs 12 events and a
/// headless monologue 12 (each repeat brings a state change, an automatic reply and another
/// state change); the rest is room for events the check ignores.
pub(crate) const WINDOW: usize = 64;

/// The loops the detector knows, by the reference's `loop_type` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopKind {
    /// The same action with the same observation, 4 times.
    RepeatingActionObservation,
    /// The same action ending in an error, 3 times.
    RepeatingActionError,
    /// The same agent message 3 times, nothing observed in between.
    Monologue,
    /// Two action/observation pairs alternating, 3 times each.
    ActionObservationPattern,
    /// 3 empty agent messages in a row.
    EmptyResponse,
}

impl LoopKind {
    /// The reference's name for it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LoopKind::RepeatingActionObservation => "repeating_action_observation",
            LoopKind::RepeatingActionError => "repeating_action_error",
            LoopKind::Monologue => "monologue",
            LoopKind::ActionObservationPattern => "repeating_action_observation_pattern",
            LoopKind::EmptyResponse => "empty_response_loop",
        }
    }
}

impl std::fmt::Display for LoopKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Checks the newest [`WINDOW`] events of the history that starts at `start_id`.
pub(crate) fn check(stream: &EventStream, start_id: i64) -> Option<LoopKind> {
    let latest = stream.latest_id()?;
    let from = start_id.max(latest + 1 - WINDOW as i64);
    detect(&stream.range(from, None))
}

/// Checks a piece of history (oldest first).
pub(crate) fn detect(events: &[Arc<Event>]) -> Option<LoopKind> {
    let history: Vec<&Event> = events.iter().map(|e| &**e).filter(|e| counts(e)).collect();
    // It takes 3 events at least to see a loop.
    if history.len() < 3 {
        return None;
    }
    let (actions, observations) = newest(&history, 4);
    if repeating_action_observation(&actions, &observations) {
        return Some(LoopKind::RepeatingActionObservation);
    }
    if repeating_action_error(&actions, &observations) {
        return Some(LoopKind::RepeatingActionError);
    }
    if monologue(&history) {
        return Some(LoopKind::Monologue);
    }
    if history.len() >= 6 && action_observation_pattern(&history) {
        return Some(LoopKind::ActionObservationPattern);
    }
    if empty_responses(&history) {
        return Some(LoopKind::EmptyResponse);
    }
    None
}

/// Whether an event is part of the history the patterns look at.
fn counts(event: &Event) -> bool {
    match event {
        Event::Action(a) => match &a.kind {
            ActionKind::Message(_) => a.source != Some(EventSource::User),
            ActionKind::Null(_) | ActionKind::ChangeAgentState(_) => false,
            ActionKind::Run(run) => !run.hidden,
            _ => true,
        },
        Event::Observation(o) => match &o.kind {
            ObservationKind::Null(_) | ObservationKind::AgentStateChanged(_) => false,
            ObservationKind::Run(run) => !run.hidden,
            _ => true,
        },
    }
}

/// The newest `n` actions and the newest `n` observations, newest first.
fn newest<'a>(history: &[&'a Event], n: usize) -> (Vec<&'a Action>, Vec<&'a Observation>) {
    let mut actions = Vec::with_capacity(n);
    let mut observations = Vec::with_capacity(n);
    for event in history.iter().rev() {
        match event {
            Event::Action(a) if actions.len() < n => actions.push(a),
            Event::Observation(o) if observations.len() < n => observations.push(o),
            _ => {}
        }
        if actions.len() == n && observations.len() == n {
            break;
        }
    }
    (actions, observations)
}

fn repeating_action_observation(actions: &[&Action], observations: &[&Observation]) -> bool {
    actions.len() == 4
        && observations.len() == 4
        && actions.iter().all(|a| same_action(actions[0], a))
        && observations
            .iter()
            .all(|o| same_observation(observations[0], o))
}

fn repeating_action_error(actions: &[&Action], observations: &[&Observation]) -> bool {
    if actions.len() < 3 || observations.len() < 3 {
        return false;
    }
    if !actions[..3].iter().all(|a| same_action(actions[0], a)) {
        return false;
    }
    let last3 = &observations[..3];
    if last3
        .iter()
        .all(|o| matches!(o.kind, ObservationKind::Error(_)))
    {
        return true;
    }
    if !last3
        .iter()
        .all(|o| matches!(o.kind, ObservationKind::RunIpython(_)))
    {
        return false;
    }
    same_line_error(last3, UNTERMINATED_STRING)
        || INVALID_SYNTAX
            .iter()
            .any(|message| same_invalid_syntax(last3, message))
}

const UNTERMINATED_STRING: &str = "SyntaxError: unterminated string literal (detected at line";
const INVALID_SYNTAX: [&str; 2] = [
    "SyntaxError: invalid syntax. Perhaps you forgot a comma?",
    "SyntaxError: incomplete input",
];
const CWD_LINE: &str = "[Jupyter current working directory:";
const PYTHON_LINE: &str = "[Jupyter Python interpreter:";

/// The same error line, just above the two lines sandboxd appends to a cell's output, in all
/// three observations.
fn same_line_error(observations: &[&Observation], message: &str) -> bool {
    let mut error_lines = Vec::new();
    for obs in observations {
        let lines: Vec<&str> = obs.content.trim().split('\n').collect();
        let [.., error, cwd, python] = lines[..] else {
            return false;
        };
        if !(cwd.starts_with(CWD_LINE) && python.starts_with(PYTHON_LINE)) {
            return false;
        }
        if error.contains(message) {
            error_lines.push(error);
        }
    }
    error_lines.len() == 3 && error_lines.iter().all(|l| *l == error_lines[0])
}

/// The same syntax error of the same cell line (a real one has 6 lines at least), in all three.
fn same_invalid_syntax(observations: &[&Observation], message: &str) -> bool {
    let mut first_lines = Vec::new();
    let mut error_lines = Vec::new();
    for obs in observations {
        let lines: Vec<&str> = obs.content.trim().split('\n').collect();
        if lines.len() < 6 {
            return false;
        }
        let first = lines[0].trim();
        if !first.starts_with("Cell In[1], line") {
            return false;
        }
        first_lines.push(first);
        let [.., error, cwd, python] = lines[..] else {
            return false;
        };
        if python.starts_with(PYTHON_LINE) && cwd.starts_with(CWD_LINE) && error.contains(message) {
            error_lines.push(error);
        }
    }
    first_lines.iter().all(|l| *l == first_lines[0])
        && error_lines.len() == 3
        && error_lines.iter().all(|l| *l == error_lines[0])
}

fn monologue(history: &[&Event]) -> bool {
    let messages: Vec<(usize, &Action)> = history
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Action(a)
                if a.source == Some(EventSource::Agent)
                    && matches!(a.kind, ActionKind::Message(_)) =>
            {
                Some((i, a))
            }
            _ => None,
        })
        .collect();
    let [.., (start, first), (_, second), (end, third)] = messages[..] else {
        return false;
    };
    first.kind == second.kind
        && first.kind == third.kind
        && !history[start + 1..end]
            .iter()
            .any(|e| matches!(e, Event::Observation(_)))
}

fn action_observation_pattern(history: &[&Event]) -> bool {
    let (a, o) = newest(history, 6);
    if a.len() < 6 || o.len() < 6 {
        return false;
    }
    same_action(a[0], a[2])
        && same_action(a[0], a[4])
        && same_action(a[1], a[3])
        && same_action(a[1], a[5])
        && same_observation(o[0], o[2])
        && same_observation(o[0], o[4])
        && same_observation(o[1], o[3])
        && same_observation(o[1], o[5])
}

fn empty_responses(history: &[&Event]) -> bool {
    let mut empty = 0;
    for event in history.iter().rev() {
        match event {
            Event::Action(a) if a.source == Some(EventSource::Agent) => match &a.kind {
                ActionKind::Message(m) if m.content.trim().is_empty() => empty += 1,
                _ => break,
            },
            Event::Action(_) => {}
            Event::Observation(_) => break,
        }
    }
    empty >= 3
}

/// Actions are the same when their type and arguments are (thought included, as in the
/// reference); for IPython edits with `edit_file_by_replace(`, the first three code lines.
pub(crate) fn same_action(a: &Action, b: &Action) -> bool {
    if let (ActionKind::RunIpython(x), ActionKind::RunIpython(y)) = (&a.kind, &b.kind) {
        const EDIT: &str = "edit_file_by_replace(";
        if x.code.contains(EDIT) && y.code.contains(EDIT) {
            return x.code.split('\n').count() > 2
                && x.code.split('\n').take(3).eq(y.code.split('\n').take(3));
        }
    }
    a.kind == b.kind
}

/// Observations are the same when their type, extras and content are; for `run`, the command,
/// exit code and content (the pid, user, host and directory may differ).
pub(crate) fn same_observation(a: &Observation, b: &Observation) -> bool {
    match (&a.kind, &b.kind) {
        (ObservationKind::Run(x), ObservationKind::Run(y)) => {
            x.command == y.command
                && x.metadata.exit_code == y.metadata.exit_code
                && a.content == b.content
        }
        _ => a.kind == b.kind && a.content == b.content,
    }
}

#[cfg(test)]
mod tests;
