//! A conversation's events, live: over Server-Sent Events (`events/live`) and WebSocket
//! (`events/socket`), each starting after a cursor (`after=ID`, or SSE's `Last-Event-ID` on a
//! reconnection), so a client that reconnects with the last id it got misses nothing and gets
//! nothing twice.
//!
//! How that holds: the stream is subscribed to first, then the stored events after the cursor
//! are read and sent, then the subscription's events with an id above the last one sent. An
//! event added between the subscription and the read is in both and sent once; none can fall
//! between the two. (The reference replays before it joins the room, which loses events.)
//!
//! Each event is the event JSON of docs/protocol.md: an SSE `message` whose `id` is the event
//! id, or one WebSocket text message. A WebSocket client may send `{"message": "..."}` to talk
//! to the agent, as `POST .../message` does; other messages are answered with an error object
//! (`{"error": "..."}`) and otherwise ignored.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use protocol::Event;
use protocol::conversation::SendMessage;
use serde::Deserialize;

use super::manager::{Conversation, ConversationError, Conversations};
use super::routes::{App, CallerFingerprint, before_first};
use crate::events::EventStream;

#[derive(Deserialize)]
pub(super) struct Cursor {
    #[serde(default = "before_first")]
    after: i64,
}

/// The events of `stream` with ids above `after`: those stored, then those added later, each
/// once, in id order.
fn follow(stream: &EventStream, after: i64) -> impl Stream<Item = Arc<Event>> + Send + 'static {
    let live = stream.subscribe();
    let stored = stream.range(after.saturating_add(1), None);
    let last = stored
        .last()
        .and_then(|e| e.id())
        .unwrap_or(after)
        .max(after);
    let live = futures_util::stream::unfold((live, last), |(mut live, last)| async move {
        loop {
            let event = live.recv().await?;
            match event.id() {
                Some(id) if id > last => return Some((event, (live, id))),
                _ => continue,
            }
        }
    });
    futures_util::stream::iter(stored).chain(live)
}

fn find(
    app: &App,
    owner: &str,
    id: &str,
    cursor: Result<Query<Cursor>, axum::extract::rejection::QueryRejection>,
) -> Result<(Arc<Conversation>, i64), ConversationError> {
    let Query(cursor) = cursor.map_err(|e| ConversationError::BadRequest(e.body_text()))?;
    let conversation = app.manager.get(owner, id)?;
    Ok((conversation, cursor.after))
}

/// `GET .../events/live`: Server-Sent Events.
pub(super) async fn sse(
    State(app): State<App>,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    cursor: Result<Query<Cursor>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let (conversation, mut after) = match find(&app, &owner, &id, cursor) {
        Ok(found) => found,
        Err(e) => return e.into_response(),
    };
    // A browser's EventSource reconnects on its own, sending the last id it got.
    if let Some(last) = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        after = after.max(last);
    }
    let events = follow(&conversation.stream, after).map(|event| {
        let sse = SseEvent::default()
            .id(event.id().unwrap_or_default().to_string())
            .json_data(&*event)
            .unwrap_or_else(|_| SseEvent::default().comment("unencodable event"));
        Ok::<_, Infallible>(sse)
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `GET .../events/socket`: a WebSocket.
pub(super) async fn socket(
    State(app): State<App>,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
    cursor: Result<Query<Cursor>, axum::extract::rejection::QueryRejection>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let (conversation, after) = match find(&app, &owner, &id, cursor) {
        Ok(found) => found,
        Err(e) => return e.into_response(),
    };
    let manager = app.manager.clone();
    upgrade
        .max_message_size(1024 * 1024)
        .on_upgrade(move |socket| talk(socket, manager, conversation, after))
}

async fn talk(
    socket: WebSocket,
    manager: Arc<Conversations>,
    conversation: Arc<Conversation>,
    after: i64,
) {
    let (mut sink, mut incoming) = socket.split();
    let mut events = Box::pin(follow(&conversation.stream, after));
    loop {
        tokio::select! {
            event = events.next() => {
                let Some(event) = event else { break };
                let Ok(text) = serde_json::to_string(&*event) else { continue };
                if futures_util::SinkExt::send(&mut sink, Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            message = incoming.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    let answer = match serde_json::from_str::<SendMessage>(&text) {
                        Ok(request) => manager
                            .message(&conversation, &request.message)
                            .err()
                            .map(|e| e.to_string()),
                        Err(e) => Some(format!("expected {{\"message\": \"...\"}}: {e}")),
                    };
                    if let Some(error) = answer {
                        let error = serde_json::json!({ "error": error }).to_string();
                        if futures_util::SinkExt::send(&mut sink, Message::Text(error.into())).await.is_err() {
                            break;
                        }
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
        }
    }
}
