//! The Chrome DevTools Protocol over Chromium's debugging pipe (`--remote-debugging-pipe`):
//! JSON messages, each ended by a NUL byte, commands written to the browser's fd 3 and answers
//! and events read from its fd 4. Commands carry an id and get exactly one answer; events go to
//! every subscriber. When the pipe closes every waiting command fails with [`CdpError::Closed`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;

/// The largest message read from the browser (a full-page DOM snapshot can be large).
const MAX_MESSAGE: usize = 256 << 20;

/// Why a command failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CdpError {
    /// The pipe to the browser closed (it exited or crashed).
    #[error("the browser closed its DevTools connection")]
    Closed,
    /// The browser answered with an error.
    #[error("{method}: {message}")]
    Protocol {
        /// The command.
        method: String,
        /// The browser's message.
        message: String,
    },
}

/// An event from the browser: its method, parameters and the session it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) method: String,
    pub(crate) params: Value,
    pub(crate) session: Option<String>,
}

type Pending = Arc<Mutex<Option<HashMap<u64, oneshot::Sender<Result<Value, CdpError>>>>>>;

/// One DevTools connection. Dropping it stops its reader.
#[derive(Debug)]
pub(crate) struct Cdp {
    writer: tokio::sync::Mutex<tokio::process::ChildStdin>,
    pending: Pending,
    events: broadcast::Sender<Event>,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
}

impl Drop for Cdp {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Cdp {
    /// Speaks CDP over the browser's pipe ends (`to_browser` is its fd 3, `from_browser` its
    /// fd 4).
    pub(crate) fn new(
        to_browser: tokio::process::ChildStdin,
        from_browser: tokio::process::ChildStdout,
    ) -> Cdp {
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let (events, _) = broadcast::channel(4096);
        let reader = tokio::spawn(read_loop(from_browser, pending.clone(), events.clone()));
        Cdp {
            writer: tokio::sync::Mutex::new(to_browser),
            pending,
            events,
            next_id: AtomicU64::new(1),
            reader,
        }
    }

    /// Events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Whether the pipe is still open.
    pub(crate) fn is_open(&self) -> bool {
        lock(&self.pending).is_some()
    }

    /// Sends `method` (to `session`, or to the browser) and waits for its answer.
    pub(crate) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::from(session);
        }
        let (tx, rx) = oneshot::channel();
        match lock(&self.pending).as_mut() {
            Some(pending) => pending.insert(id, tx),
            None => return Err(CdpError::Closed),
        };
        let mut bytes = serde_json::to_vec(&message).map_err(|_| CdpError::Closed)?;
        bytes.push(0);
        {
            let mut writer = self.writer.lock().await;
            if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                return Err(CdpError::Closed);
            }
        }
        match rx.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(CdpError::Protocol { message, .. })) => Err(CdpError::Protocol {
                method: method.to_owned(),
                message,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(CdpError::Closed),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn read_loop(
    from_browser: tokio::process::ChildStdout,
    pending: Pending,
    events: broadcast::Sender<Event>,
) {
    let mut reader = BufReader::with_capacity(1 << 16, from_browser);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(MAX_MESSAGE as u64)
            .read_until(0, &mut buf)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buf.last() != Some(&0) {
            tracing::warn!("the browser sent an unterminated or oversized message");
            break;
        }
        buf.pop();
        let Ok(message) = serde_json::from_slice::<Value>(&buf) else {
            tracing::warn!("the browser sent a message that is not JSON");
            continue;
        };
        dispatch(message, &pending, &events);
    }
    // Every waiting command learns that no answer will come.
    lock(&pending).take();
}

fn dispatch(mut message: Value, pending: &Pending, events: &broadcast::Sender<Event>) {
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        let waiter = lock(pending).as_mut().and_then(|p| p.remove(&id));
        if let Some(waiter) = waiter {
            let answer = match message.get_mut("error") {
                Some(error) => Err(CdpError::Protocol {
                    method: String::new(),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error")
                        .to_owned(),
                }),
                None => Ok(message
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or_default()),
            };
            let _ = waiter.send(answer);
        }
        return;
    }
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let _ = events.send(Event {
            method: method.to_owned(),
            params: message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or_default(),
            session: message
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned),
        });
    }
}

/// The text at `key` of a DevTools object, empty when there is none.
pub(super) fn text_at(object: &Value, key: &str) -> String {
    object
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The items of the array at `key` of a DevTools object, none when there is no array.
pub(super) fn items<'a>(object: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    object
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}
