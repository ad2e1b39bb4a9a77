//! Exactly-once actions: a request that carries an idempotency key runs its action once within
//! the sandbox's lifetime; a request that repeats the key gets the first answer, waiting for it
//! while it is made, instead of running the action again.
//!
//! The action runs in a task of its own, so a client that gave up (a timeout, a broken
//! connection) does not cancel it: its retry finds the answer. A key is bound to the request
//! that first carried it (a SHA-256 of its endpoint and body); the same key with another request
//! is refused. The store keeps the last [`MAX_KEYS`] keys and at most [`MAX_BYTES`] of answers;
//! the oldest finished ones are forgotten first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

/// Keys remembered at most.
pub(crate) const MAX_KEYS: usize = 4096;
/// Bytes of answers remembered at most.
pub(crate) const MAX_BYTES: usize = 64 * 1024 * 1024;
/// The longest key.
const MAX_KEY_LEN: usize = 255;

/// A finished answer, as the HTTP layer sends it.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    /// HTTP status.
    pub(crate) status: u16,
    /// The `ETag` sent with it.
    pub(crate) etag: Option<String>,
    /// The JSON body.
    pub(crate) body: Bytes,
}

/// What a request's fingerprint is made of: which endpoint and the body.
pub(crate) fn fingerprint(endpoint: &str, parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(endpoint.as_bytes());
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// Checks a key as a client sent it.
pub(crate) fn check_key(key: &[u8]) -> Result<String, String> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
    match std::str::from_utf8(key) {
        Ok(key) if ok => Ok(key.to_owned()),
        _ => Err(format!(
            "Idempotency-Key must be 1 to {MAX_KEY_LEN} visible ASCII characters"
        )),
    }
}

/// What to do with a request that carries a key.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The key is new: run the action and [`Pending::finish`] with its answer.
    Run(Pending),
    /// The key was seen: this is (or will be) the answer.
    Replay(watch::Receiver<Option<Answer>>),
    /// The key was seen with another request.
    Mismatch,
}

/// The right and duty to answer a new key. Dropped without an answer, it forgets the key, so
/// that a retry runs the action.
#[derive(Debug)]
pub(crate) struct Pending {
    store: Arc<Idempotency>,
    key: String,
    answer: Option<watch::Sender<Option<Answer>>>,
}

impl Pending {
    /// Records the answer and wakes the requests waiting for it.
    pub(crate) fn finish(mut self, answer: Answer) {
        let size = answer.body.len();
        if let Some(tx) = self.answer.take() {
            tx.send_replace(Some(answer));
        }
        self.store.finished(&self.key, size);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.answer.is_some() {
            self.store.forget(&self.key);
        }
    }
}

/// The keys seen and their answers.
#[derive(Debug, Default)]
pub(crate) struct Idempotency {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_key: HashMap<String, Slot>,
    /// Keys in the order they came.
    order: VecDeque<String>,
    bytes: usize,
}

#[derive(Debug)]
struct Slot {
    fingerprint: [u8; 32],
    answer: watch::Receiver<Option<Answer>>,
    size: usize,
}

impl Idempotency {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Claims `key` for a request with `fingerprint`.
    pub(crate) fn claim(self: &Arc<Self>, key: String, fingerprint: [u8; 32]) -> Claim {
        let mut entries = self.lock();
        if let Some(slot) = entries.by_key.get(&key) {
            return if slot.fingerprint == fingerprint {
                Claim::Replay(slot.answer.clone())
            } else {
                Claim::Mismatch
            };
        }
        let (tx, rx) = watch::channel(None);
        entries.by_key.insert(
            key.clone(),
            Slot {
                fingerprint,
                answer: rx,
                size: 0,
            },
        );
        entries.order.push_back(key.clone());
        entries.evict();
        Claim::Run(Pending {
            store: self.clone(),
            key,
            answer: Some(tx),
        })
    }

    fn finished(&self, key: &str, size: usize) {
        let mut entries = self.lock();
        if let Some(slot) = entries.by_key.get_mut(key) {
            slot.size = size;
            entries.bytes += size;
        }
        entries.evict();
    }

    fn forget(&self, key: &str) {
        let mut entries = self.lock();
        if let Some(slot) = entries.by_key.remove(key) {
            entries.bytes -= slot.size;
        }
        entries.order.retain(|k| k != key);
    }
}

impl Entries {
    /// Forgets the oldest finished keys while over a limit (keys in flight are kept).
    fn evict(&mut self) {
        let mut index = 0;
        while (self.by_key.len() > MAX_KEYS || self.bytes > MAX_BYTES) && index < self.order.len() {
            let key = &self.order[index];
            let done = self
                .by_key
                .get(key)
                .is_none_or(|slot| slot.answer.borrow().is_some());
            if !done {
                index += 1;
                continue;
            }
            if let Some(key) = self.order.remove(index)
                && let Some(slot) = self.by_key.remove(&key)
            {
                self.bytes -= slot.size;
            }
        }
    }
}

/// Waits for the answer of a key being made; `None` when its request failed without one.
pub(crate) async fn wait(mut answer: watch::Receiver<Option<Answer>>) -> Option<Answer> {
    answer
        .wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|a| a.clone())
}

#[cfg(test)]
mod tests;
