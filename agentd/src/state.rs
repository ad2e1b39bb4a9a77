//! The record of a run (OpenHands V0's `State`): where the agent is, how far it got, what it
//! spent. The controller saves it as `state.json` in the session directory after every step and
//! every state change, so a killed agentd can resume where it stopped; the history itself is
//! the event stream, not part of this file.
//!
//! It lives below both the [`controller`](crate::controller), which owns and saves it, and the
//! [`agent`](crate::agent)s, which read it on every step: neither module depends on the other
//! for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use protocol::AgentState;
use serde::{Deserialize, Serialize};

use crate::llm::Stats;
use crate::secrets::SecretMask;

/// The file name of the state in a session directory.
pub const STATE_FILE: &str = "state.json";

/// Errors saving or loading a state file.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The file could not be read or written; retrying helps only once the cause (disk full,
    /// permissions, a missing directory) is fixed.
    #[error("state file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a state's JSON (damaged, or written by an incompatible version);
    /// retrying cannot help.
    #[error("state file {path} is not a saved state: {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The decoding error.
        source: serde_json::Error,
    },
}

/// A run's state. It is a persisted document (`state.json`), hence `Serialize`; the fields
/// added after the first version default when missing, so older files still load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The session this run belongs to.
    pub(crate) session_id: String,
    /// Where the controller is.
    pub agent_state: AgentState,
    /// Steps taken so far (each call of the agent counts, across resumes).
    pub iteration: u32,
    /// The iteration limit: the step that would exceed it ends the run in the error state.
    pub(crate) max_iterations: u32,
    /// Money spent and the limit.
    #[serde(default)]
    pub(crate) budget: Budget,
    /// Id of the first event of this run's history.
    #[serde(default)]
    pub(crate) start_id: i64,
    /// Id of the newest event the controller has seen.
    #[serde(default)]
    pub(crate) end_id: Option<i64>,
    /// Why the run is in the error state (OpenHands' `"{ErrorType}: {message}"` form for the
    /// controller's own errors).
    #[serde(default)]
    pub last_error: Option<String>,
    /// The newest `llm_metrics` an action carried (token counts, costs), kept opaque.
    #[serde(default)]
    pub(crate) metrics: serde_json::Value,
    /// The `outputs` of the agent's `finish` or `reject`.
    #[serde(default)]
    pub(crate) outputs: serde_json::Map<String, serde_json::Value>,
    /// Whatever agents or callers want to keep with the state.
    #[serde(default)]
    pub(crate) extra_data: BTreeMap<String, serde_json::Value>,
    /// How many times the run was resumed from its saved state.
    #[serde(default)]
    pub(crate) resume_count: u32,
    /// Runnable actions that are not low-risk wait for the user (the reference keeps it in
    /// the state too): a resumed run stays in confirmation mode.
    #[serde(default)]
    pub confirmation_mode: bool,
    /// 0 for the run's own agent, parent + 1 for a delegate.
    #[serde(default)]
    pub delegate_level: u32,
    /// For a delegate: the parent's iteration count when it started. `iteration` is the
    /// global count (parent and delegates, one limit); the delegate's own steps are
    /// `iteration - parent_iteration`.
    #[serde(default)]
    pub parent_iteration: u32,
    /// The conversation's LLM stats: each service's cost, tokens and latency and their sum
    /// (see `LlmRegistry::stats`); null without a registry.
    #[serde(default)]
    pub stats: Option<Stats>,
}

/// What the run's LLM calls cost, in USD.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Budget {
    /// Spent so far.
    pub(crate) spent: f64,
    /// The limit: a step when `spent` has reached it ends the run in the error state.
    pub(crate) max_per_task: Option<f64>,
    /// The newest `llm_metrics.accumulated_cost` seen. It is the LLM client's running total, so
    /// only its growth is added to `spent`; a total that went down means a new client (agentd
    /// was restarted) that counts from zero again.
    #[serde(default)]
    pub(crate) last_accumulated_cost: f64,
}

impl Budget {
    /// Takes in an action's `accumulated_cost`.
    pub(crate) fn record(&mut self, accumulated_cost: f64) {
        if !accumulated_cost.is_finite() || accumulated_cost < 0.0 {
            return;
        }
        if accumulated_cost >= self.last_accumulated_cost {
            self.spent += accumulated_cost - self.last_accumulated_cost;
        } else {
            self.spent += accumulated_cost;
        }
        self.last_accumulated_cost = accumulated_cost;
    }

    /// Whether the limit is reached (OpenHands: `current >= max`).
    pub(crate) fn exhausted(&self) -> bool {
        self.max_per_task.is_some_and(|max| self.spent >= max)
    }
}

impl State {
    /// The state of a new run: loading, nothing done, history from event 0.
    pub(crate) fn new(
        session_id: impl Into<String>,
        max_iterations: u32,
        max_budget_per_task: Option<f64>,
    ) -> State {
        State {
            session_id: session_id.into(),
            agent_state: AgentState::Loading,
            iteration: 0,
            max_iterations,
            budget: Budget {
                max_per_task: max_budget_per_task,
                ..Budget::default()
            },
            start_id: 0,
            end_id: None,
            last_error: None,
            metrics: serde_json::Value::Null,
            outputs: serde_json::Map::new(),
            extra_data: BTreeMap::new(),
            resume_count: 0,
            confirmation_mode: false,
            delegate_level: 0,
            parent_iteration: 0,
            stats: None,
        }
    }

    /// The steps taken since this agent started (a delegate's local count, its own steps and
    /// those of its delegates).
    pub fn local_iteration(&self) -> u32 {
        self.iteration.saturating_sub(self.parent_iteration)
    }

    /// Writes the state to `path` atomically: a temporary file next to it, renamed into place,
    /// so a reader (or a resume after a crash) sees the old state or the new one, never half.
    /// Not fsynced, like the event log: it survives the process, not a power cut.
    /// Secret values (`mask`) are masked in what is written.
    pub fn save(&self, path: &Path, mask: &SecretMask) -> Result<(), StateError> {
        let io = |source| StateError::Io {
            path: path.to_path_buf(),
            source,
        };
        let format = |source| StateError::Format {
            path: path.to_path_buf(),
            source,
        };
        let mut value = serde_json::to_value(self).map_err(format)?;
        mask.mask_json(&mut value);
        let json = serde_json::to_vec_pretty(&value).map_err(format)?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, json).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Reads a state saved by [`State::save`].
    pub fn load(path: &Path) -> Result<State, StateError> {
        let bytes = std::fs::read(path).map_err(|source| StateError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_slice(&bytes).map_err(|source| StateError::Format {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests;
