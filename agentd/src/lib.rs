//! agentd, the host side of the sandbox runtime: it creates sandboxes and drives agents in them.
//!
//! - [`events`]: the session's append-only, persisted event stream;
//! - [`controller`] and [`agent`]: the state machine that steps an agent, with its limits and
//!   stuck detection; the replay and scripted agents; [`state`]: the record of a run that
//!   both read (`state.json`);
//! - [`memory`]: the agent's view of its history, condensers, and the history as chat messages;
//! - [`runtime`]: sandboxes to execute actions in (local process, Docker container, remote);
//! - [`session`]: one headless run wiring them together; [`trajectory`]: recordings and replay;
//! - [`serve`]: the runtime API service (`agentd serve`) that gives other agent hosts
//!   sandboxes;
//! - [`config`], [`display`]: the settings file and live progress of the CLI.

pub mod agent;
pub mod config;
pub mod controller;
pub mod display;
pub mod events;
pub mod llm;
pub mod memory;
pub mod runtime;
pub mod serve;
pub mod session;
pub mod state;
pub mod trajectory;
