//! What the user types into `agentd run` (an interactive run, or one in confirmation mode):
//! read from stdin on a thread of its own and handed to the session as user actions.
//!
//! - On a terminal (plain output): a line is a message to the agent; a line that ends with `\`
//!   goes on on the next line (multi-line input); `/exit` stops the run. While an action waits
//!   for confirmation, `y`/`yes` confirms it and `n`/`no` rejects it.
//! - With `--json` (a program at the other end): each line is an action's JSON, added as the
//!   user's — a `message`, or `change_agent_state` to `user_confirmed`, `user_rejected`,
//!   `paused`, `running` or `stopped`. A line that is not an action is reported and skipped.

use std::io::BufRead;
use std::sync::{Arc, Mutex, PoisonError};

use protocol::action::{ChangeAgentStateArgs, MessageArgs};
use protocol::{Action, ActionKind, AgentState};
use tokio::sync::mpsc;

/// What the user's lines are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// Text typed on a terminal.
    Terminal,
    /// JSON actions, one a line.
    Json,
}

/// The agent's state as the printer last saw it, which decides what a typed line means.
#[derive(Debug, Clone)]
pub struct SeenState(Arc<Mutex<AgentState>>);

impl SeenState {
    pub fn new() -> SeenState {
        SeenState(Arc::new(Mutex::new(AgentState::Loading)))
    }

    pub fn set(&self, state: AgentState) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    fn get(&self) -> AgentState {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A message from the user.
pub fn message(content: String) -> Action {
    Action::from(ActionKind::Message(MessageArgs {
        content,
        ..MessageArgs::default()
    }))
}

fn change_state(state: AgentState) -> Action {
    Action::from(ActionKind::ChangeAgentState(ChangeAgentStateArgs {
        agent_state: state.as_str().to_string(),
        thought: String::new(),
    }))
}

/// Reads one message from `lines` (lines ending with `\` continue it); `None` at the end of
/// input or on `/exit`.
pub fn read_message(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> Option<String> {
    let mut text = String::new();
    for line in lines {
        let line = line.ok()?;
        let line = line.trim_end_matches(['\r', '\n']);
        if text.is_empty() && line.trim() == "/exit" {
            return None;
        }
        match line.strip_suffix('\\') {
            Some(start) => {
                text.push_str(start);
                text.push('\n');
            }
            None => {
                text.push_str(line);
                if !text.trim().is_empty() {
                    return Some(text);
                }
                text.clear();
            }
        }
    }
    (!text.trim().is_empty()).then_some(text)
}

/// The first message of an interactive run without `--task`: typed (terminal) or the first
/// `message` action (JSON). `None` if the input ends first.
pub fn read_task(mode: InputMode) -> Option<String> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    match mode {
        InputMode::Terminal => {
            eprintln!(
                "agentd: what should the agent do? (end a line with \\ to go on, /exit to quit)"
            );
            read_message(&mut lines)
        }
        InputMode::Json => {
            lines.map_while(Result::ok).find_map(|line| {
                match serde_json::from_str::<Action>(&line) {
                    Ok(Action {
                        kind: ActionKind::Message(m),
                        ..
                    }) => Some(m.content),
                    _ => {
                        eprintln!(
                            "agentd: the first line must be a message action; skipped: {line}"
                        );
                        None
                    }
                }
            })
        }
    }
}

/// Starts the thread that reads stdin and sends the user's actions to `actions`. In an
/// `interactive` run on a terminal, the end of the input (Ctrl-D) leaves the run as `/exit`
/// does.
pub fn spawn(
    mode: InputMode,
    seen: SeenState,
    interactive: bool,
) -> mpsc::UnboundedReceiver<Action> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("stdin".to_string())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut lines = stdin.lock().lines();
            match mode {
                InputMode::Json => json_lines(&mut lines, &tx),
                InputMode::Terminal => {
                    let input_ended = terminal_lines(&mut lines, &tx, &seen);
                    if input_ended && interactive {
                        let _ = tx.send(change_state(AgentState::Stopped));
                    }
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("agentd: cannot read stdin: {e}");
    }
    rx
}

fn json_lines(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    tx: &mpsc::UnboundedSender<Action>,
) {
    for line in lines.map_while(Result::ok) {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Action>(&line) {
            Ok(action) => {
                if tx.send(action).is_err() {
                    return;
                }
            }
            Err(e) => eprintln!("agentd: a line of stdin is not an action ({e}); skipped"),
        }
    }
}

/// Returns whether the input ended (not `/exit`, nor a run that went away).
fn terminal_lines(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    tx: &mpsc::UnboundedSender<Action>,
    seen: &SeenState,
) -> bool {
    // What a line means is decided when it is read: the state may have changed while the
    // thread waited for it.
    let mut text = String::new();
    for line in lines.map_while(Result::ok) {
        let line = line.trim_end_matches(['\r', '\n']);
        let action = if text.is_empty() && line.trim() == "/exit" {
            change_state(AgentState::Stopped)
        } else if text.is_empty() && seen.get() == AgentState::AwaitingUserConfirmation {
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => change_state(AgentState::UserConfirmed),
                "n" | "no" => change_state(AgentState::UserRejected),
                _ => {
                    eprintln!("agentd: answer y (run it) or n (reject it)");
                    continue;
                }
            }
        } else if let Some(start) = line.strip_suffix('\\') {
            text.push_str(start);
            text.push('\n');
            continue;
        } else {
            text.push_str(line);
            if text.trim().is_empty() {
                text.clear();
                continue;
            }
            message(std::mem::take(&mut text))
        };
        let stop = matches!(&action.kind, ActionKind::ChangeAgentState(c) if AgentState::parse(&c.agent_state) == Some(AgentState::Stopped));
        if tx.send(action).is_err() || stop {
            return false;
        }
    }
    true
}

/// What the printer says on stderr after a state change, for the user at a terminal.
pub fn prompt(state: AgentState, interactive: bool) -> Option<&'static str> {
    match state {
        AgentState::AwaitingUserConfirmation => Some("agentd: run the action above? [y/n]"),
        AgentState::AwaitingUserInput if interactive => {
            Some("agentd: your reply (end a line with \\ to go on, /exit to stop):")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
