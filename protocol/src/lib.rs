//! Wire types of the sandbox API, in OpenHands V0's event JSON.
//!
//! This crate holds serde types and nothing else: no I/O, no async runtime, no behaviour (the
//! one exception is a pure predicate every side must agree on, [`ActionType::is_runnable`]).
//! Every shape here is what OpenHands' own Python client puts on (or reads from) the wire, so a
//! type's field order, names and defaults are protocol facts, not style choices.
//! `docs/protocol.md` is the reference for each of them.
#![deny(missing_docs)]

pub mod action;
pub mod api;
pub mod conversation;
pub mod egress;
pub mod event;
pub mod llm;
pub mod observation;
pub mod runtime_api;

pub use action::{Action, ActionKind, ActionType};
pub use event::{AgentState, Event, EventSource, ToolCallMetadata};
pub use observation::{CmdOutputMetadata, Observation, ObservationKind};
