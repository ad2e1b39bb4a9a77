//! The persistent bash session on a PTY (`run` actions).
//!
//! `session` owns the shell and implements the reference's `run` semantics; `pty` starts and
//! kills shells; `framing` finds the private prompt markers; `render` turns terminal bytes into
//! text; `output` keeps each command's output window and full-output file; `split` counts the
//! top-level statements of a command.

mod framing;
mod output;
mod pty;
mod render;
mod session;
mod split;

pub use pty::SpawnError;
pub use session::SessionError;
pub(crate) use session::{BashSession, ShellConfig, python_float};
