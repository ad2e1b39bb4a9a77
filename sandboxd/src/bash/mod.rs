//! The persistent bash shell on a PTY (`run` actions).
//!
//! `shell` owns the shell (the `BashShell` actor) and implements the reference's `run` semantics; `pty` starts and
//! kills shells; `framing` finds the private prompt markers; `render` turns terminal bytes into
//! text; `output` keeps each command's output window and full-output file; `split` counts the
//! top-level statements of a command.

mod framing;
mod output;
mod pty;
mod render;
mod shell;
mod split;

pub use pty::SpawnError;
pub use shell::ShellError;
pub(crate) use shell::{BashShell, ShellConfig, python_float};
