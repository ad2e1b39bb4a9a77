//! The observations of a command (docs/protocol.md §4.4–4.6): what it printed since the last
//! observation, its metadata once it ended, and the reference's prefixes and suffixes.

use std::path::Path;
use std::sync::atomic::Ordering;

use protocol::Observation;
use protocol::ObservationKind;
use protocol::observation::CmdOutputMetadata;
use sandbox_common::{MAX_OBSERVATION_CHARS, truncate_middle};

use super::framing::PromptState;
use super::output::CommandOutput;
use super::shell::ShellConfig;
use crate::observations;

pub(super) const CONTINUE_PREFIX: &str = "[Below is the output of the previous command.]\n";
pub(super) const TIMEOUT_HELP: &str = "You may wait longer to see additional output by sending empty command '', send other commands to interact with the current process, send keys (\"C-c\", \"C-z\", \"C-d\") to interrupt/kill the previous command before sending your new command, or use the timeout parameter in execute_bash for future commands.";

/// The command the session is running, or finished running while nobody was looking.
#[derive(Debug)]
pub(super) struct Current {
    pub(super) output: CommandOutput,
    /// Observations already made of this command.
    observations: u32,
    /// The command ended, in this state.
    pub(super) done: Option<PromptState>,
    /// Said instead of the completion suffix: the command did not end normally.
    pub(super) end_note: Option<String>,
}

impl Current {
    pub(super) fn new(config: &ShellConfig) -> Self {
        let n = config.command_seq.fetch_add(1, Ordering::Relaxed);
        Current {
            output: CommandOutput::new(
                config.output_dir.join(format!("cmd-{n:06}.log")),
                config.spool_budget.clone(),
            ),
            observations: 0,
            done: None,
            end_note: None,
        }
    }

    /// Whether the command is still running.
    pub(super) fn is_running(&self) -> bool {
        self.done.is_none()
    }

    /// The command ended in `state`.
    pub(super) fn finish(&mut self, state: PromptState) {
        self.output.finish();
        self.done = Some(state);
    }
}

/// How an observation of a command ends.
#[derive(Debug, Clone, Copy)]
pub(super) enum CommandEnd {
    Completed,
    NoChange,
    /// The hard timeout, in seconds as the action gave it.
    HardTimeout(f64),
}

/// The observation of `cur` for `outcome`, with the output since its last observation.
/// `suffix` replaces the reference's suffix for `outcome`.
pub(super) fn observe(
    cur: &mut Current,
    config: &ShellConfig,
    command: &str,
    hidden: bool,
    outcome: CommandEnd,
    suffix: Option<String>,
) -> Observation {
    let (mut content, kept) = cur.output.take();
    let first = cur.observations == 0;
    cur.observations += 1;
    let spool = Some(cur.output.spool_path().to_string_lossy().into_owned());
    if !hidden {
        content = truncate_middle(content, MAX_OBSERVATION_CHARS).into_owned();
    }
    let overflow = kept.map(|n| {
        format!("[Previous command outputs are truncated. Showing the last {n} lines of the output below.]\n")
    });
    let mut metadata = CmdOutputMetadata::default();
    match outcome {
        CommandEnd::Completed => {
            if let Some(state) = &cur.done {
                metadata = metadata_of(state);
            }
            if cur.end_note.is_some() {
                metadata.exit_code = -1;
            }
            metadata.prefix = if first {
                overflow.unwrap_or_default()
            } else {
                String::new()
            };
            metadata.suffix = suffix.or_else(|| cur.end_note.clone()).unwrap_or_else(|| {
                format!(
                    "\n[The command completed with exit code {}.]",
                    metadata.exit_code
                )
            });
        }
        CommandEnd::NoChange | CommandEnd::HardTimeout(_) => {
            metadata.prefix = if first {
                overflow.unwrap_or_default()
            } else {
                CONTINUE_PREFIX.to_owned()
            };
            metadata.suffix = suffix.unwrap_or_else(|| match outcome {
                CommandEnd::NoChange => format!(
                    "\n[The command has no new output after {} seconds. {TIMEOUT_HELP}]",
                    config.no_change_timeout.as_secs()
                ),
                CommandEnd::HardTimeout(t) => format!(
                    "\n[The command timed out after {} seconds. {TIMEOUT_HELP}]",
                    python_float(t)
                ),
                CommandEnd::Completed => String::new(),
            });
        }
    }
    if let Some(why) = cur.output.spool_lost() {
        metadata.suffix.push_str(&format!(
            "\n[The full output file keeps only part of this command's output: {why}.]"
        ));
    }
    observations::run(command, content, metadata, hidden, spool)
}

/// Puts `note` in front of a `run` observation's prefix.
pub(super) fn prepend_note(obs: &mut Observation, note: &str) {
    if let ObservationKind::Run(extras) = &mut obs.kind {
        extras.metadata.prefix = format!("{note}\n{}", extras.metadata.prefix);
    }
}

fn metadata_of(state: &PromptState) -> CmdOutputMetadata {
    CmdOutputMetadata {
        exit_code: state.exit_code,
        pid: state.pid,
        username: Some(state.username.clone()),
        hostname: Some(state.hostname.clone()),
        working_dir: Some(state.working_dir.clone()),
        py_interpreter_path: Some(which_python(&state.path, Path::new(&state.working_dir))),
        prefix: String::new(),
        suffix: String::new(),
    }
}

/// A float as Python's `str()` prints it (`2.5`, `1.0`, `120.0`).
pub(crate) fn python_float(value: f64) -> String {
    format!("{value:?}")
}

/// `which python` without a fork: the first executable `python` on `path`.
fn which_python(path: &str, cwd: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    for dir in path.split(':') {
        let dir = if dir.is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(dir)
        };
        let candidate = dir.join("python");
        if let Ok(meta) = std::fs::metadata(&candidate)
            && meta.is_file()
            && meta.permissions().mode() & 0o111 != 0
        {
            return candidate.to_string_lossy().into_owned();
        }
    }
    String::new()
}
