//! The event stream: the one ordered, append-only record of a session (OpenHands V0's
//! EventStream). Every action and observation is numbered, time-stamped, written to disk and
//! only then delivered to the subscribers (controller, runtime, memory, the CLI's printer), each
//! through its own channel, so a slow or failed subscriber never holds up the others.
//!
//! Secret values are masked (`<secret_hidden>`, see [`crate::secrets`]) in each event before it
//! is stored or delivered: no subscriber, and no file, ever holds them in clear.
//!
//! An action gets one answer: [`EventStream::answer`] adds an observation only if none has
//! answered its `cause` yet, checked and added under one lock, so that two parts racing to
//! answer the same action (the runtime's result and the controller's "not executed" of a run
//! that stops) leave exactly one.
//!
//! On disk a session is `DIR/events.jsonl`: one event's JSON per line, appended as the stream
//! grows ([`store`]). Reading it back after a crash keeps every complete line; a torn last line
//! (the process died mid-write) is detected, cut off and logged, never fatal.

mod store;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::{Action, Event, EventSource, Observation};
use tokio::sync::mpsc;

use store::EventLog;
pub use store::EventLogError;

use crate::secrets::SecretMask;

/// `observation` made the answer to `action`: its `cause` is the action's id and its
/// `tool_call_metadata` the action's. The one place an observation is stamped: the runtime's
/// answers ([`crate::runtime::Runtime::execute`]) and those the controller makes itself.
pub(crate) fn answer_to(mut observation: Observation, action: &Action) -> Observation {
    observation.cause = action.id;
    observation.tool_call_metadata = action.tool_call_metadata.clone();
    observation
}

/// The action an event answers: an observation's `cause`.
fn answers(event: &Event) -> Option<i64> {
    match event {
        Event::Observation(o) => o.cause,
        Event::Action(_) => None,
    }
}

/// Selects events from a stream (all conditions must hold).
#[derive(Debug, Clone, Default)]
pub(crate) struct EventFilter {
    /// Lowest id, inclusive.
    pub(crate) start_id: Option<i64>,
    /// Highest id, inclusive.
    pub(crate) end_id: Option<i64>,
    /// Wire types (`run`, `message`, `agent_state_changed`...); empty means any.
    pub(crate) types: Vec<String>,
    /// Who produced them.
    pub(crate) source: Option<EventSource>,
    /// Newest first.
    pub(crate) reverse: bool,
    /// At most this many.
    pub(crate) limit: Option<usize>,
}

impl EventFilter {
    fn matches(&self, event: &Event) -> bool {
        (self.types.is_empty() || self.types.iter().any(|t| t == event.type_name()))
            && self.source.is_none_or(|s| event.source() == Some(s))
    }
}

/// A session's event stream; clones share it.
#[derive(Debug, Clone)]
pub struct EventStream {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    /// Every event, in id order; `events[i]` has id `i`.
    events: Vec<Arc<Event>>,
    store: Option<EventLog>,
    subscribers: Vec<mpsc::UnboundedSender<Arc<Event>>>,
    mask: SecretMask,
    /// The `cause` of every observation: the actions that have their answer.
    answered: HashSet<i64>,
}

impl EventStream {
    /// A stream kept in memory only (tests, benchmarks).
    #[cfg(test)]
    pub(crate) fn in_memory() -> EventStream {
        EventStream::from_parts(Vec::new(), None)
    }

    /// Opens the persisted stream in `dir` (created if missing), reading back what it holds.
    pub fn open(dir: &Path) -> Result<EventStream, EventLogError> {
        EventStream::open_masked(dir, SecretMask::default())
    }

    /// [`EventStream::open`], masking `mask`'s secrets in every event added.
    pub fn open_masked(dir: &Path, mask: SecretMask) -> Result<EventStream, EventLogError> {
        let (store, events) = EventLog::open(dir)?;
        let stream = EventStream::from_parts(events, Some(store));
        stream.lock().mask = mask;
        Ok(stream)
    }

    fn from_parts(events: Vec<Event>, store: Option<EventLog>) -> EventStream {
        let answered = events.iter().filter_map(answers).collect();
        EventStream {
            inner: Arc::new(Mutex::new(Inner {
                events: events.into_iter().map(Arc::new).collect(),
                store,
                subscribers: Vec::new(),
                mask: SecretMask::default(),
                answered,
            })),
        }
    }

    /// The secrets masked in this stream's events.
    pub(crate) fn mask(&self) -> SecretMask {
        self.lock().mask.clone()
    }

    /// Appends `event` from `source`: masks its secrets, assigns the next id and the time,
    /// writes it to disk, then delivers it to every subscriber. Returns the stored event.
    pub fn add(
        &self,
        event: impl Into<Event>,
        source: EventSource,
    ) -> Result<Arc<Event>, EventLogError> {
        Self::add_locked(&mut self.lock(), event.into(), source)
    }

    /// Adds `observation`, the answer to the action its `cause` names, unless that action has
    /// an answer already: then nothing is added and `None` is returned. One answer per action,
    /// whoever answers first.
    pub(crate) fn answer(
        &self,
        observation: protocol::Observation,
        source: EventSource,
    ) -> Result<Option<Arc<Event>>, EventLogError> {
        let mut inner = self.lock();
        if observation
            .cause
            .is_some_and(|cause| inner.answered.contains(&cause))
        {
            return Ok(None);
        }
        Self::add_locked(&mut inner, observation.into(), source).map(Some)
    }

    fn add_locked(
        inner: &mut Inner,
        event: Event,
        source: EventSource,
    ) -> Result<Arc<Event>, EventLogError> {
        let mut event = inner.mask.mask_event(event)?;
        let id = inner.events.len() as i64;
        let timestamp = now();
        match &mut event {
            Event::Action(a) => {
                a.id = Some(id);
                a.timestamp = Some(timestamp);
                a.source = Some(source);
            }
            Event::Observation(o) => {
                o.id = Some(id);
                o.timestamp = Some(timestamp);
                o.source = Some(source);
            }
        }
        if let Some(store) = &mut inner.store {
            store.append(&event)?;
        }
        inner.answered.extend(answers(&event));
        let event = Arc::new(event);
        inner.events.push(event.clone());
        // A subscriber that went away is dropped; the others are not affected.
        inner
            .subscribers
            .retain(|tx| tx.send(event.clone()).is_ok());
        Ok(event)
    }

    /// Every event added from now on, in id order.
    pub(crate) fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<Event>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().subscribers.push(tx);
        rx
    }

    /// How many events the stream holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// The newest event's id.
    pub(crate) fn latest_id(&self) -> Option<i64> {
        self.lock().events.len().checked_sub(1).map(|n| n as i64)
    }

    /// The event with this id.
    pub(crate) fn get(&self, id: i64) -> Option<Arc<Event>> {
        let index = usize::try_from(id).ok()?;
        self.lock().events.get(index).cloned()
    }

    /// The `n` newest events, oldest first.
    #[cfg(test)]
    pub(crate) fn last(&self, n: usize) -> Vec<Arc<Event>> {
        let inner = self.lock();
        let start = inner.events.len().saturating_sub(n);
        inner.events[start..].to_vec()
    }

    /// Events `start..=end` (to the newest without `end`).
    pub(crate) fn range(&self, start: i64, end: Option<i64>) -> Vec<Arc<Event>> {
        self.search(&EventFilter {
            start_id: Some(start),
            end_id: end,
            ..EventFilter::default()
        })
    }

    /// The events `filter` selects.
    pub(crate) fn search(&self, filter: &EventFilter) -> Vec<Arc<Event>> {
        let inner = self.lock();
        let len = inner.events.len() as i64;
        let start = filter.start_id.unwrap_or(0).clamp(0, len) as usize;
        let end = filter.end_id.map_or(len, |e| (e + 1).clamp(0, len)) as usize;
        let slice = if start < end {
            &inner.events[start..end]
        } else {
            &[]
        };
        let limit = filter.limit.unwrap_or(usize::MAX);
        let pick = |e: &&Arc<Event>| filter.matches(e);
        if filter.reverse {
            slice
                .iter()
                .rev()
                .filter(pick)
                .take(limit)
                .cloned()
                .collect()
        } else {
            slice.iter().filter(pick).take(limit).cloned().collect()
        }
    }

    /// Every event, oldest first.
    pub fn all(&self) -> Vec<Arc<Event>> {
        self.lock().events.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` half-updated (each update is one
        // push), so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The time in OpenHands' format (`datetime.isoformat()`, UTC, microseconds).
fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6f")
        .to_string()
}

#[cfg(test)]
mod tests;
