//! Memory: what an LLM agent remembers of its history, and how it is put to the model.
//!
//! Each step, the agent builds a [`View`] from the history (the events from `state.start_id`
//! on): the events minus those forgotten by `condensation` actions, with the newest summary in
//! place. A [`Condenser`] (from [`CondenserConfig`]) then either passes a view on, possibly
//! transformed, or returns a `condensation` action, which the agent returns as its step's
//! action so that it is recorded; the next step's view applies it. [`ConversationMemory`] turns
//! the view into chat messages: system and first user message first, tool calls paired with
//! their results, observations rendered as OpenHands V0 shows them to the model.
//!
//! ```text
//! history ─► View::from_events ─► Condenser::condense ─┬─► View ─► ConversationMemory::process_events ─► Llm
//!                                                      └─► condensation action (the step's action)
//! ```
//!
//! Sizes are measured in events and in estimated tokens ([`tokens`]: about four characters per
//! token, no tokenizer).

pub(crate) mod condenser;
pub(crate) mod conversation;
mod render;
mod responses;
pub(crate) mod tokens;
pub(crate) mod view;

pub(crate) use condenser::{Condensed, Condenser};
pub use condenser::{CondenserConfig, CondenserError};
pub(crate) use conversation::ConversationMemory;
pub(crate) use responses::decode as decode_response;
pub(crate) use view::View;
