//! NDJSON streams (docs/protocol.md §14): `POST /execute_action/stream` sends an action's
//! output as it is produced, then its observation; `GET /shells/{id}/attach` sends the output
//! of the command running in a shell, from the oldest line kept, until it ends.
//!
//! NDJSON rather than SSE: the request is a POST with a JSON body, which the browser's
//! `EventSource` cannot send, so SSE's one advantage (a built-in browser client) does not
//! apply, while every HTTP client (`fetch`, `reqwest`, `curl -N | jq`) reads one JSON value per
//! line without a second framing (`data:` prefixes, multi-line events, comments) to get wrong.
//! SSE's resumption (`Last-Event-ID`) is not needed either: a broken stream is resumed by
//! attaching (which replays what is kept) or by repeating the request with its
//! `Idempotency-Key` (which gives the final observation without running the action again).

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use protocol::api::{ErrorResponse, NDJSON_CONTENT_TYPE, StreamEvent};
use tokio::sync::{mpsc, oneshot};

use super::{ActionRequest, AppState, answer_action, detail, once};
use crate::feed::{FeedReader, Read};

/// `POST /execute_action/stream`: the body, headers and answer of `/execute_action`, the
/// answer as the last line of a stream of the action's output.
pub(super) async fn execute_stream(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = match ActionRequest::decode("/execute_action/stream", &headers, &body) {
        Ok(request) => request,
        Err(refusal) => return *refusal,
    };
    let (tap, tapped) = oneshot::channel();
    let run = {
        let state = state.clone();
        let (action, conditions) = (request.action, request.conditions);
        async move { answer_action(&state, action, conditions, Some(tap)).await }
    };
    let (key, fingerprint) = (request.key, request.fingerprint);
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let answer = once(&state, key, fingerprint, run);
        let mut answer = std::pin::pin!(answer);
        let mut tapped = Some(tapped);
        let mut reader: Option<FeedReader> = None;
        loop {
            tokio::select! {
                biased;
                done = &mut answer => {
                    // The output the action made before it answered, then the answer.
                    if let Some(reader) = &mut reader {
                        while let Some(Read::Data { skipped, data }) = reader.try_next() {
                            if tx.send(output_line(skipped, &data)).await.is_err() {
                                return;
                            }
                        }
                    }
                    let last = match done {
                        Ok(answer) if answer.status == StatusCode::OK.as_u16() => {
                            observation_line(&answer.body)
                        }
                        Ok(answer) => {
                            let detail = serde_json::from_slice::<ErrorResponse>(&answer.body)
                                .map(|e| e.detail)
                                .unwrap_or_default();
                            line(&StreamEvent::Error { status: answer.status, detail })
                        }
                        Err((status, detail)) => line(&StreamEvent::Error {
                            status: status.as_u16(),
                            detail,
                        }),
                    };
                    let _ = tx.send(last).await;
                    return;
                }
                got = take_tap(&mut tapped) => reader = got,
                read = next_read(&mut reader) => match read {
                    Read::Data { skipped, data } => {
                        if tx.send(output_line(skipped, &data)).await.is_err() {
                            return;
                        }
                    }
                    Read::Closed => reader = None,
                },
            }
        }
    });
    ndjson(rx)
}

/// `GET /shells/{id}/attach`: the output of the command running in shell `id`, from the
/// oldest line kept, then `end` when it ends. 409 when no command runs there.
pub(super) async fn attach(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let mut reader = match state.executor.attach(&id) {
        Ok(Some(reader)) => reader,
        Ok(None) => {
            return detail(
                StatusCode::CONFLICT,
                format!("no command is running in shell {id:?}"),
            );
        }
        Err(e) => return detail(StatusCode::NOT_FOUND, e.to_string()),
    };
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let next = match reader.next().await {
                Read::Data { skipped, data } => output_line(skipped, &data),
                Read::Closed => {
                    let _ = tx.send(line(&StreamEvent::End)).await;
                    return;
                }
            };
            if tx.send(next).await.is_err() {
                return;
            }
        }
    });
    ndjson(rx)
}

/// A stream response of the lines sent to `rx`.
fn ndjson(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|line| (Ok::<_, Infallible>(line), rx))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(NDJSON_CONTENT_TYPE),
    );
    // Proxies (nginx) must pass each line on at once.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Waits for the action's tap; never resolves once it was taken or dropped.
async fn take_tap(tapped: &mut Option<oneshot::Receiver<FeedReader>>) -> Option<FeedReader> {
    match tapped {
        Some(rx) => {
            let got = rx.await.ok();
            *tapped = None;
            match got {
                Some(reader) => Some(reader),
                None => std::future::pending().await,
            }
        }
        None => std::future::pending().await,
    }
}

/// The next read of `reader`; never resolves without one.
async fn next_read(reader: &mut Option<FeedReader>) -> Read {
    match reader {
        Some(reader) => reader.next().await,
        None => std::future::pending().await,
    }
}

fn output_line(skipped: u64, data: &[u8]) -> Bytes {
    line(&StreamEvent::Output {
        data: String::from_utf8_lossy(data).into_owned(),
        skipped,
    })
}

/// The `observation` line around the observation's JSON exactly as `/execute_action` sends it.
fn observation_line(observation: &[u8]) -> Bytes {
    let mut line = br#"{"type":"observation","observation":"#.to_vec();
    line.extend_from_slice(observation);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

fn line(event: &StreamEvent) -> Bytes {
    let mut line = serde_json::to_vec(event).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}
