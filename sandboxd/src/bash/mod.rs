//! The persistent bash session on a PTY (`run` actions).
//!
//! `session` owns the shell and implements the reference's `run` semantics; `pty` starts and
//! kills shells; `framing` finds the private prompt markers; `render` turns terminal bytes into
//! text; `output` keeps each command's output window and full-output file; `split` counts the
//! top-level statements of a command.

pub mod framing;
pub mod output;
pub mod pty;
pub mod render;
pub mod session;
pub mod split;

pub use session::{BashSession, SessionError, ShellConfig};
