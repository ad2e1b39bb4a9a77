//! Incoming Jupyter messages as sandboxd routes them: message type, parent `msg_id` and the raw
//! JSON content, checked against the connection's HMAC key and decoded by one reader task per
//! socket. Content stays untyped so that a reply some kernel shapes differently (ipykernel's
//! `interrupt_reply` without `status`, unusual MIME bundles) never loses a message.

use jupyter_zmq_client::{Connection, RawMessage};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use zeromq::SocketRecv;

/// Messages buffered per socket before its reader waits for the kernel owner.
pub(crate) const QUEUE: usize = 1024;

/// One message from the kernel.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// `header.msg_type`.
    pub(crate) msg_type: String,
    /// `parent_header.msg_id`: the request this message belongs to.
    parent_id: Option<String>,
    /// `content`, as sent.
    pub(crate) content: Value,
}

impl Incoming {
    /// Whether this message belongs to the request with id `msg_id`.
    pub(crate) fn is_child_of(&self, msg_id: &str) -> bool {
        self.parent_id.as_deref() == Some(msg_id)
    }

    /// Whether this is the `status: idle` that ends a request's IOPub output.
    pub(crate) fn is_idle(&self) -> bool {
        self.msg_type == "status"
            && self.content.get("execution_state").and_then(Value::as_str) == Some("idle")
    }

    fn decode(raw: &RawMessage) -> Option<Incoming> {
        let header: Value = serde_json::from_slice(raw.jparts.first()?).ok()?;
        let parent: Value = serde_json::from_slice(raw.jparts.get(1)?).ok()?;
        let content: Value = serde_json::from_slice(raw.jparts.get(3)?).ok()?;
        Some(Incoming {
            msg_type: header.get("msg_type")?.as_str()?.to_owned(),
            parent_id: parent
                .get("msg_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            content,
        })
    }
}

/// Reads `conn` until it fails or `tx` is closed, forwarding every well-signed message.
/// The returned task owns the socket: abort it to close the socket.
pub(crate) fn spawn_reader<S>(
    mut conn: Connection<S>,
    channel: &'static str,
    tx: mpsc::Sender<Incoming>,
) -> JoinHandle<()>
where
    S: SocketRecv + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let frames = match conn.socket.recv().await {
                Ok(frames) => frames,
                Err(e) => {
                    tracing::debug!(channel, error = %e, "kernel socket closed");
                    return;
                }
            };
            let raw = match RawMessage::from_multipart(frames, &conn.mac) {
                Ok(raw) => raw,
                Err(e) => {
                    tracing::warn!(channel, error = %e, "dropping a malformed kernel message");
                    continue;
                }
            };
            let Some(msg) = Incoming::decode(&raw) else {
                tracing::warn!(channel, "dropping a kernel message without a usable header");
                continue;
            };
            if tx.send(msg).await.is_err() {
                return;
            }
        }
    })
}
