//! Subcommands of the agentd CLI that are more than a few lines.

pub mod run;
pub mod serve;
