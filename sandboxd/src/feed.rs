//! [`Feed`]: an append-only byte stream in bounded memory that any number of readers follow
//! at their own pace: the live output of a command or a cell (streamed and attached to), and
//! the scroll-back of a terminal. Only the last `capacity` bytes are kept; a reader that fell
//! further behind learns how many bytes it missed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, watch};

/// Where an action's streamed output is handed to the request that asked for it: the actor
/// that runs it sends a reader of its output once it runs.
pub(crate) type Tap = oneshot::Sender<FeedReader>;

/// Bytes kept of a command's or cell's live output for readers that are behind.
pub(crate) const OUTPUT_CAPACITY: usize = 1024 * 1024;

/// The stream; share it as `Arc<Feed>`.
#[derive(Debug)]
pub(crate) struct Feed {
    state: Mutex<State>,
    /// The end offset and whether the stream is closed, for readers to wait on.
    changed: watch::Sender<(u64, bool)>,
}

#[derive(Debug)]
struct State {
    buf: VecDeque<u8>,
    /// Offset of `buf[0]` from the start of the stream.
    start: u64,
    capacity: usize,
}

/// What a reader gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// Bytes, after `skipped` bytes it fell too far behind to get.
    Data {
        /// Bytes lost before `data`.
        skipped: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// The stream is closed and everything was read.
    Closed,
}

impl Feed {
    /// A new, empty stream that keeps the last `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Arc<Feed> {
        Arc::new(Feed {
            state: Mutex::new(State {
                buf: VecDeque::new(),
                start: 0,
                capacity: capacity.max(1),
            }),
            changed: watch::channel((0, false)).0,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends `bytes` (dropping the oldest beyond the capacity) and wakes the readers.
    pub(crate) fn push(&self, bytes: &[u8]) {
        if bytes.is_empty() || self.is_closed() {
            return;
        }
        let end = {
            let mut state = self.lock();
            state.buf.extend(bytes);
            let excess = state.buf.len().saturating_sub(state.capacity);
            state.buf.drain(..excess);
            state.start += excess as u64;
            state.start + state.buf.len() as u64
        };
        self.changed.send_replace((end, false));
    }

    /// Ends the stream: readers get what is left, then [`Read::Closed`].
    pub(crate) fn close(&self) {
        self.changed.send_modify(|(_, closed)| *closed = true);
    }

    /// Whether [`Feed::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.changed.borrow().1
    }

    /// The offset of the stream's end (bytes pushed so far).
    pub(crate) fn end(&self) -> u64 {
        self.changed.borrow().0
    }

    /// A reader from offset `from` (0: the oldest byte kept; [`Feed::end`]: what comes next).
    pub(crate) fn reader(self: &Arc<Self>, from: u64) -> FeedReader {
        FeedReader {
            feed: self.clone(),
            next: from,
            changed: self.changed.subscribe(),
        }
    }

    /// What lies at and after `from`, if anything.
    fn read_from(&self, from: u64) -> Option<Read> {
        let state = self.lock();
        let end = state.start + state.buf.len() as u64;
        if from >= end {
            return None;
        }
        let skipped = state.start.saturating_sub(from);
        let offset = usize::try_from(from.max(state.start) - state.start).unwrap_or(usize::MAX);
        let data: Vec<u8> = state.buf.range(offset..).copied().collect();
        Some(Read::Data { skipped, data })
    }
}

/// One reader of a [`Feed`].
#[derive(Debug)]
pub(crate) struct FeedReader {
    feed: Arc<Feed>,
    next: u64,
    changed: watch::Receiver<(u64, bool)>,
}

impl FeedReader {
    /// What is there now: new bytes, [`Read::Closed`], or `None` (nothing yet).
    pub(crate) fn try_next(&mut self) -> Option<Read> {
        if let Some(read) = self.feed.read_from(self.next) {
            if let Read::Data { skipped, data } = &read {
                self.next += skipped + data.len() as u64;
            }
            return Some(read);
        }
        self.feed.is_closed().then_some(Read::Closed)
    }

    /// Waits for new bytes or the end.
    pub(crate) async fn next(&mut self) -> Read {
        loop {
            self.changed.borrow_and_update();
            if let Some(read) = self.try_next() {
                return read;
            }
            if self.changed.changed().await.is_err() {
                return self.try_next().unwrap_or(Read::Closed);
            }
        }
    }
}

#[cfg(test)]
mod tests;
