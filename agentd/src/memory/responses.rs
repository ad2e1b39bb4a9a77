//! The model responses behind tool calls, decoded once. An agent action's
//! `tool_call_metadata.model_response` is kept opaque (JSON) on the wire and in the event log,
//! but the conversation needs it typed (the assistant message with all its calls, a `finish`'s
//! text) on every step; [`DecodedResponses`] decodes each action's response the first time it
//! is in a view and keeps it while the action stays in view, so a step does not re-parse the
//! history's responses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use protocol::llm::ChatResponse;
use protocol::{Action, Event, ToolCallMetadata};
use serde::Deserialize;

/// Decoded responses of the actions of the last view, by action.
///
/// An entry is keyed by the address of its action inside the stream's `Arc<Event>` and holds
/// a `Weak` of that event: the weak reference keeps the allocation, so while the entry exists
/// no other action can have that address, and a key that matches is the same, immutable
/// action. A clone starts empty.
#[derive(Default)]
pub(crate) struct DecodedResponses {
    entries: Mutex<HashMap<usize, Entry>>,
}

struct Entry {
    /// Keeps the address taken (see [`DecodedResponses`]).
    _event: Weak<Event>,
    /// `None`: the response does not decode, or has no choice.
    response: Option<Arc<ChatResponse>>,
}

impl DecodedResponses {
    /// Makes the cache hold the responses of exactly the tool-call actions of `events`:
    /// those already decoded are kept, new ones decoded, the rest dropped.
    pub(crate) fn retain_view(&self, events: &[Arc<Event>]) {
        let mut entries = self.lock();
        let mut old = std::mem::take(&mut *entries);
        for event in events {
            let Event::Action(action) = event.as_ref() else {
                continue;
            };
            let Some(meta) = &action.tool_call_metadata else {
                continue;
            };
            let key = key(action);
            let entry = old.remove(&key).unwrap_or_else(|| Entry {
                _event: Arc::downgrade(event),
                response: decode(meta).map(Arc::new),
            });
            entries.insert(key, entry);
        }
    }

    /// The response behind `action`'s tool call (`meta` is its `tool_call_metadata`): the
    /// kept one when `action` was in the view given to [`Self::retain_view`], else decoded
    /// now.
    pub(crate) fn get(
        &self,
        action: &Action,
        meta: &ToolCallMetadata,
    ) -> Option<Arc<ChatResponse>> {
        if let Some(entry) = self.lock().get(&key(action)) {
            return entry.response.clone();
        }
        decode(meta).map(Arc::new)
    }

    /// How many responses are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<usize, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Clone for DecodedResponses {
    fn clone(&self) -> DecodedResponses {
        DecodedResponses::default()
    }
}

impl std::fmt::Debug for DecodedResponses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodedResponses")
            .field("kept", &self.lock().len())
            .finish()
    }
}

fn key(action: &Action) -> usize {
    std::ptr::from_ref(action) as usize
}

/// `meta.model_response` as a chat response with at least one choice: the one decode of a
/// recorded response (also of the agent that plays a resumed run's unplayed calls).
pub(crate) fn decode(meta: &ToolCallMetadata) -> Option<ChatResponse> {
    match ChatResponse::deserialize(&meta.model_response) {
        Ok(response) if !response.choices.is_empty() => Some(response),
        Ok(_) => None,
        Err(error) => {
            tracing::warn!(%error, call = %meta.tool_call_id, "unreadable model response in tool call metadata");
            None
        }
    }
}
