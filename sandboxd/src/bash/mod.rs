//! The persistent bash shell on a PTY (`run` actions).
//!
//! `actor` owns a session (the `BashShell` actor) and implements the reference's `run`
//! semantics; `observe` makes its observations; `shell` is one framed bash process; `pty` starts
//! and kills shells; `script` is the bash code that frames a shell and `framing` finds its
//! markers; `reader` tells from `/proc` whether bash is idle at its prompt and `completion`
//! decides from that and the markers when a command has ended; `render` turns terminal bytes
//! into text; `output` keeps each command's output window and full-output file; `split`
//! counts the top-level statements of a command.

mod actor;
mod completion;
mod framing;
mod observe;
mod output;
mod pty;
mod reader;
mod render;
mod script;
mod shell;
mod split;
mod spool;

pub(crate) use actor::BashShell;
pub(crate) use observe::python_float;
pub use pty::SpawnError;
pub(crate) use pty::{exit_code, kill_session};
pub(crate) use shell::ShellConfig;
pub use shell::ShellError;
pub(crate) use spool::SpoolBudget;
