//! The CodeAct agent (OpenHands V0's `CodeActAgent`): it acts by calling tools — bash, IPython,
//! the file editor, `think`, `finish` — and sees the sandbox's observations as their results.
//!
//! A step: the history from `state.start_id` as a [`View`] (condensations applied); the
//! condenser may answer with a condensation instead, which becomes the step's action; else the
//! view becomes chat messages ([`ConversationMemory`]), the LLM answers, and its tool calls
//! become actions ([`actions::response_to_actions`]). Several calls in one answer are played
//! one per step, in order.

pub mod actions;
pub mod tools;
