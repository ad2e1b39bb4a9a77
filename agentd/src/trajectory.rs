//! Trajectories: a session as a JSON array of its events, in OpenHands' trajectory shape (each
//! element is the event's JSON, as in the stream). A recorded trajectory can be replayed: its
//! agent actions are executed again in a fresh sandbox and the new observations compared with
//! the recorded ones.

use std::path::Path;
use std::sync::Arc;

use protocol::{Action, Event, EventSource, Observation, ObservationKind};

use crate::secrets::SecretMask;

/// Errors reading or writing a trajectory file.
#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    /// The file could not be read or written.
    #[error("trajectory {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a JSON array of events.
    #[error("trajectory {path} is not a JSON array of events: {source}")]
    Format {
        /// The file.
        path: String,
        /// The decoding error.
        source: serde_json::Error,
    },
}

/// Writes `events` to `path` as a JSON array (atomically: a temporary file renamed into place),
/// `mask`'s secret values masked.
pub fn save(path: &Path, events: &[Arc<Event>], mask: &SecretMask) -> Result<(), TrajectoryError> {
    let io = |source| TrajectoryError::Io {
        path: path.display().to_string(),
        source,
    };
    let format = |source| TrajectoryError::Format {
        path: path.display().to_string(),
        source,
    };
    let value = to_json(events, mask).map_err(format)?;
    let json = serde_json::to_vec_pretty(&value).map_err(format)?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// `events` as a trajectory's JSON array, `mask`'s secret values masked.
pub(crate) fn to_json(
    events: &[Arc<Event>],
    mask: &SecretMask,
) -> Result<serde_json::Value, serde_json::Error> {
    let list: Vec<&Event> = events.iter().map(|e| &**e).collect();
    let mut value = serde_json::to_value(&list)?;
    mask.mask_json(&mut value);
    Ok(value)
}

/// Reads a trajectory.
pub fn load(path: &Path) -> Result<Vec<Event>, TrajectoryError> {
    let text = std::fs::read(path).map_err(|source| TrajectoryError::Io {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_slice(&text).map_err(|source| TrajectoryError::Format {
        path: path.display().to_string(),
        source,
    })
}

/// The agent's actions, in order: what a replay re-executes.
pub(crate) fn agent_actions(events: &[Event]) -> Vec<Action> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Action(a) if a.source == Some(EventSource::Agent) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

/// The first user message (the task), if any.
pub fn task(events: &[Event]) -> Option<String> {
    events.iter().find_map(|e| match e {
        Event::Action(a) if a.source == Some(EventSource::User) => match &a.kind {
            protocol::ActionKind::Message(m) => Some(m.content.clone()),
            _ => None,
        },
        _ => None,
    })
}

/// One place where a replay saw something else than the recording.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Difference {
    /// Position of the action among the agent's actions (0-based).
    pub step: usize,
    /// The action's type and its main argument (command, code, path).
    pub action: String,
    /// What the recording observed (type, exit code, content).
    pub recorded: String,
    /// What the replay observed.
    pub replayed: String,
}

/// Compares the observations of each agent action in `recorded` with those in `replayed`,
/// matched by order of the agent's actions. Ids, times, pids, host names and the kernel's
/// interpreter path are not compared: only the observation type, the exit code and the content.
pub fn compare(recorded: &[Event], replayed: &[Event]) -> Vec<Difference> {
    let recorded = observed(recorded);
    let replayed = observed(replayed);
    let mut differences = Vec::new();
    for (step, (action, expected)) in recorded.iter().enumerate() {
        let actual = replayed.get(step).and_then(|(_, o)| *o);
        let (expected, actual) = (expected.map(summary), actual.map(summary));
        if expected != actual {
            differences.push(Difference {
                step,
                action: describe(action),
                recorded: expected.unwrap_or_else(|| "(no observation)".to_string()),
                replayed: actual.unwrap_or_else(|| "(no observation)".to_string()),
            });
        }
    }
    differences
}

/// Each agent action with the observation that answered it.
fn observed(events: &[Event]) -> Vec<(&Action, Option<&Observation>)> {
    let answers: std::collections::HashMap<i64, &Observation> = events
        .iter()
        .filter_map(|e| match e {
            Event::Observation(o) => Some((o.cause?, o)),
            Event::Action(_) => None,
        })
        .collect();
    events
        .iter()
        .filter_map(|e| match e {
            Event::Action(a) if a.source == Some(EventSource::Agent) => {
                Some((a, a.id.and_then(|id| answers.get(&id).copied())))
            }
            _ => None,
        })
        .collect()
}

/// The line sandboxd appends to IPython output that names the kernel's interpreter: a fact of
/// the sandbox (a host's `/usr/bin/python3`, an image's venv), like its host name.
const INTERPRETER_LINE: &str = "[Jupyter Python interpreter: ";

fn summary(obs: &Observation) -> String {
    let exit = match &obs.kind {
        ObservationKind::Run(extras) => format!(" (exit {})", extras.metadata.exit_code),
        _ => String::new(),
    };
    let content = match &obs.kind {
        ObservationKind::RunIpython(_) => obs
            .content
            .lines()
            .filter(|line| !line.starts_with(INTERPRETER_LINE))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => obs.content.clone(),
    };
    format!("{}{exit}: {}", obs.kind.type_name(), content.trim_end())
}

fn describe(action: &Action) -> String {
    use protocol::ActionKind as K;
    let detail = match &action.kind {
        K::Run(a) => a.command.clone(),
        K::RunIpython(a) => a.code.clone(),
        K::Read(a) => a.path.clone(),
        K::Write(a) => a.path.clone(),
        K::Edit(a) => format!("{} {}", a.command, a.path),
        _ => String::new(),
    };
    format!("{} {}", action.kind.action_type().as_str(), detail)
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests;
