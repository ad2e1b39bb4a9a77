//! The older MCP transport, HTTP with Server-Sent Events, which `rmcp` no longer has: `GET`
//! the server's SSE URL; its first event, `endpoint`, names where to `POST` each JSON-RPC
//! message; the server's messages come as `message` events on the stream.

use std::time::Duration;

use reqwest::header::HeaderMap;
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// The largest event accepted from a server (a bigger one ends the stream).
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// Messages queued from the server before its stream waits.
const QUEUE: usize = 64;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    /// The request failed, or the server answered with an error status. A retry may help.
    #[error("{0}")]
    Http(String),
    /// The stream ended before it said where to post.
    #[error("the SSE stream ended without an endpoint event")]
    NoEndpoint,
}

/// The client's end of an SSE connection to an MCP server.
#[derive(Debug)]
pub(crate) struct SseTransport {
    http: reqwest::Client,
    headers: HeaderMap,
    endpoint: reqwest::Url,
    messages: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl SseTransport {
    /// Opens the stream at `url` (sending `headers` with every request) and waits, at most
    /// `within`, for the endpoint to post to.
    pub(crate) async fn connect(
        http: reqwest::Client,
        url: &str,
        headers: HeaderMap,
        within: Duration,
    ) -> Result<SseTransport, SseError> {
        let base = reqwest::Url::parse(url).map_err(|e| SseError::Http(format!("{url}: {e}")))?;
        let open = async {
            let response = http
                .get(base.clone())
                .headers(headers.clone())
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .send()
                .await
                .map_err(|e| SseError::Http(e.to_string()))?;
            let status = response.status();
            if !status.is_success() {
                let body = response.text().await.unwrap_or_default();
                return Err(SseError::Http(format!("{status}: {}", body.trim())));
            }
            let mut events = EventReader::new(response);
            loop {
                match events.next().await? {
                    Some(event) if event.name == "endpoint" => {
                        let endpoint = base.join(event.data.trim()).map_err(|e| {
                            SseError::Http(format!("bad endpoint {:?}: {e}", event.data))
                        })?;
                        return Ok((endpoint, events));
                    }
                    Some(_) => {}
                    None => return Err(SseError::NoEndpoint),
                }
            }
        };
        let (endpoint, events) = tokio::time::timeout(within, open)
            .await
            .map_err(|_| SseError::Http(sandbox_common::mcp_timeout_message(within)))??;
        let (sender, messages) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(forward(events, sender));
        Ok(SseTransport {
            http,
            headers,
            endpoint,
            messages,
            reader,
        })
    }
}

/// Sends the server's `message` events on; ends with the stream.
async fn forward(mut events: EventReader, sender: mpsc::Sender<ServerJsonRpcMessage>) {
    loop {
        match events.next().await {
            Ok(Some(event)) if event.name == "message" => {
                match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                    Ok(message) => {
                        if sender.send(message).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "an MCP server sent a message that is not JSON-RPC")
                    }
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(error = %e, "MCP SSE stream ended");
                return;
            }
        }
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| SseError::Http(e.to_string()))?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                let body = response.text().await.unwrap_or_default();
                Err(SseError::Http(format!("{status}: {}", body.trim())))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.messages.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.reader.abort();
        self.messages.close();
        Ok(())
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// `event:` (`message` when absent).
    pub(crate) name: String,
    /// The `data:` lines, joined with `\n`.
    pub(crate) data: String,
}

/// The events of a response body, read as they arrive.
struct EventReader {
    response: reqwest::Response,
    parser: EventParser,
}

impl EventReader {
    fn new(response: reqwest::Response) -> EventReader {
        EventReader {
            response,
            parser: EventParser::default(),
        }
    }

    /// The next event; `None` at the end of the stream.
    async fn next(&mut self) -> Result<Option<Event>, SseError> {
        loop {
            if let Some(event) = self.parser.next_event()? {
                return Ok(Some(event));
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.parser.push(&chunk)?,
                Ok(None) => return Ok(None),
                Err(e) => return Err(SseError::Http(e.to_string())),
            }
        }
    }
}

/// The SSE text format: lines `field: value`, an event ends at a blank line, `:` lines are
/// comments.
#[derive(Debug, Default)]
pub(crate) struct EventParser {
    buffer: Vec<u8>,
    name: Option<String>,
    data: Option<String>,
    /// `data:` lines of the event so far.
    data_lines: usize,
}

impl EventParser {
    /// Adds bytes of the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(SseError::Http(format!(
                "an event of more than {MAX_EVENT_BYTES} bytes"
            )));
        }
        Ok(())
    }

    /// The next complete event in what was pushed, if any.
    pub(crate) fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                self.data_lines = 0;
                if let Some(data) = self.data.take() {
                    let name = self.name.take().unwrap_or_else(|| "message".to_owned());
                    return Ok(Some(Event { name, data }));
                }
                self.name = None;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.name = Some(value.to_owned()),
                "data" => {
                    let data = self.data.get_or_insert_with(String::new);
                    if data.len() + value.len() > MAX_EVENT_BYTES {
                        return Err(SseError::Http(format!(
                            "an event of more than {MAX_EVENT_BYTES} bytes"
                        )));
                    }
                    if !data.is_empty() || self.data_lines > 0 {
                        data.push('\n');
                    }
                    data.push_str(value);
                    self.data_lines += 1;
                }
                _ => {}
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
