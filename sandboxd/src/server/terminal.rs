//! Terminals over HTTP: `POST /terminals`, `GET /terminals`, `DELETE /terminals/{id}`, and
//! `GET /terminals/{id}/ws`, the WebSocket a client watches and types through
//! (docs/protocol.md §14): binary messages are the terminal's bytes both ways (the
//! scroll-back first, then live output); text messages are JSON, `TerminalInput` from the
//! client (input, resize, signal) and `TerminalEvent` from sandboxd (skipped bytes, errors,
//! the exit, which is the last message). Closing the socket detaches: the terminal keeps
//! running, and any number of clients may watch it at once.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use protocol::api::{CreateTerminalRequest, TerminalEvent, TerminalInfo, TerminalInput};

use super::{AppState, detail, invalid_request};
use crate::feed::Read;
use crate::processes::parse_signal;
use crate::terminals::{Terminal, TerminalError};

/// `POST /terminals`: starts a terminal (201 with its description).
pub(super) async fn create(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let request: CreateTerminalRequest = if body.is_empty() {
        CreateTerminalRequest::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(e) => return invalid_request(format!("bad terminal request: {e}")),
        }
    };
    let executor = state.executor.clone();
    match tokio::task::spawn_blocking(move || executor.create_terminal(request)).await {
        Ok(Ok(info)) => (StatusCode::CREATED, axum::Json(info)).into_response(),
        Ok(Err(e)) => refusal(&e),
        Err(e) => {
            tracing::error!(error = %e, "starting a terminal failed");
            detail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "starting the terminal failed",
            )
        }
    }
}

/// `GET /terminals`.
pub(super) async fn list(State(state): State<Arc<AppState>>) -> axum::Json<Vec<TerminalInfo>> {
    axum::Json(state.executor.terminals().list())
}

/// `DELETE /terminals/{id}`: kills what runs on it.
pub(super) async fn close(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    match state.executor.terminals().close(&id) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => refusal(&e),
    }
}

/// `GET /terminals/{id}/ws`: the WebSocket of a terminal.
pub(super) async fn socket(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    upgrade: WebSocketUpgrade,
) -> Response {
    match state.executor.terminals().get(&id) {
        Ok(terminal) => upgrade.on_upgrade(move |socket| serve(socket, terminal)),
        Err(e) => refusal(&e),
    }
}

fn refusal(e: &TerminalError) -> Response {
    let status = match e {
        TerminalError::Invalid(_) => StatusCode::BAD_REQUEST,
        TerminalError::Conflict(_) => StatusCode::CONFLICT,
        TerminalError::Unknown(_) => StatusCode::NOT_FOUND,
        TerminalError::Start(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    detail(status, e.to_string())
}

fn event(event: &TerminalEvent) -> Message {
    Message::Text(serde_json::to_string(event).unwrap_or_default().into())
}

/// Serves one client until it leaves or the program ended and all its output was sent.
async fn serve(socket: WebSocket, terminal: Arc<Terminal>) {
    let (mut sink, mut stream) = socket.split();
    let mut output = terminal.watch();
    loop {
        tokio::select! {
            read = output.next() => match read {
                Read::Data { skipped, data } => {
                    if skipped > 0
                        && sink.send(event(&TerminalEvent::Skipped { bytes: skipped })).await.is_err()
                    {
                        return;
                    }
                    if sink.send(Message::Binary(data.into())).await.is_err() {
                        return;
                    }
                }
                Read::Closed => {
                    let code = terminal.exit_code().await;
                    let _ = sink.send(event(&TerminalEvent::Exit { code })).await;
                    let _ = sink.close().await;
                    return;
                }
            },
            message = stream.next() => {
                let answer = match message {
                    Some(Ok(Message::Binary(bytes))) => write(&terminal, bytes.to_vec()).await,
                    Some(Ok(Message::Text(text))) => control(&terminal, text.as_str()).await,
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => Ok(()),
                    // Closed or broken: the client detached.
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                };
                if let Err(detail) = answer
                    && sink.send(event(&TerminalEvent::Error { detail })).await.is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Types `bytes` on a blocking thread (a program that does not read can fill the terminal).
async fn write(terminal: &Arc<Terminal>, bytes: Vec<u8>) -> Result<(), String> {
    let terminal = terminal.clone();
    match tokio::task::spawn_blocking(move || terminal.write(&bytes)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("cannot write to the terminal: {e}")),
        Err(e) => Err(format!("cannot write to the terminal: {e}")),
    }
}

async fn control(terminal: &Arc<Terminal>, text: &str) -> Result<(), String> {
    let input: TerminalInput =
        serde_json::from_str(text).map_err(|e| format!("bad terminal message: {e}"))?;
    match input {
        TerminalInput::Input { data } => write(terminal, data.into_bytes()).await,
        TerminalInput::Resize { cols, rows } => {
            terminal.resize(cols, rows).map_err(|e| e.to_string())
        }
        TerminalInput::Signal { signal } => {
            let signal = parse_signal(&signal).map_err(|e| e.to_string())?;
            terminal.signal(signal);
            Ok(())
        }
    }
}
