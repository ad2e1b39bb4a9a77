//! Terminals (sandboxd's `/terminals`): creating, listing and closing them, and
//! [`TerminalSocket`], a client on a terminal's WebSocket.

use futures_util::{SinkExt, StreamExt};
use protocol::api::{
    CreateTerminalRequest, SignalSpec, TerminalEvent, TerminalInfo, TerminalInput,
};
use reqwest::Method;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::live::{SHELL_TIMEOUT, path_segment};
use super::{SandboxClient, Target, decode};
use crate::ClientError;

/// A byte stream to sandboxd: TCP or a Unix socket.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// What a terminal's WebSocket brings.
#[derive(Debug, Clone, PartialEq)]
pub enum TerminalOutput {
    /// Bytes the terminal printed (the scroll-back first, then live output).
    Data(Vec<u8>),
    /// A message of sandboxd's: skipped bytes, a refused message, the program's exit.
    Event(TerminalEvent),
}

/// A client on a terminal's WebSocket ([`SandboxClient::attach_terminal`]): it sees the
/// terminal's output and can type, resize and signal. Dropping or closing it detaches; the
/// terminal keeps running.
pub struct TerminalSocket {
    ws: WebSocketStream<Box<dyn Io>>,
}

impl std::fmt::Debug for TerminalSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalSocket").finish_non_exhaustive()
    }
}

fn ws_error(err: tokio_tungstenite::tungstenite::Error) -> ClientError {
    ClientError::Decode {
        endpoint: "/terminals/{id}/ws",
        reason: err.to_string(),
    }
}

impl TerminalSocket {
    /// The next output or event; `None` once the socket closed (after [`TerminalEvent::Exit`]).
    pub async fn next(&mut self) -> Result<Option<TerminalOutput>, ClientError> {
        loop {
            let Some(message) = self.ws.next().await else {
                return Ok(None);
            };
            match message.map_err(ws_error)? {
                Message::Binary(bytes) => return Ok(Some(TerminalOutput::Data(bytes.to_vec()))),
                Message::Text(text) => {
                    let event = decode(text.as_bytes(), "/terminals/{id}/ws")?;
                    return Ok(Some(TerminalOutput::Event(event)));
                }
                Message::Close(_) => return Ok(None),
                _ => {}
            }
        }
    }

    /// Types `bytes`.
    pub async fn input(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.ws
            .send(Message::Binary(bytes.to_vec().into()))
            .await
            .map_err(ws_error)
    }

    /// Sends a control message.
    pub async fn send(&mut self, input: &TerminalInput) -> Result<(), ClientError> {
        let text = serde_json::to_string(input).map_err(|e| ClientError::Decode {
            endpoint: "/terminals/{id}/ws",
            reason: e.to_string(),
        })?;
        self.ws
            .send(Message::Text(text.into()))
            .await
            .map_err(ws_error)
    }

    /// Resizes the terminal.
    pub async fn resize(&mut self, cols: u16, rows: u16) -> Result<(), ClientError> {
        self.send(&TerminalInput::Resize { cols, rows }).await
    }

    /// Sends `signal` to the terminal's foreground process group.
    pub async fn signal(&mut self, signal: SignalSpec) -> Result<(), ClientError> {
        self.send(&TerminalInput::Signal { signal }).await
    }

    /// Detaches (the terminal keeps running).
    pub async fn close(mut self) -> Result<(), ClientError> {
        self.ws.close(None).await.map_err(ws_error)
    }
}

impl SandboxClient {
    /// `POST /terminals`: starts a program (an interactive login bash by default) on a
    /// terminal of its own, to attach to with [`SandboxClient::attach_terminal`].
    pub async fn create_terminal(
        &self,
        request: &CreateTerminalRequest,
    ) -> Result<TerminalInfo, ClientError> {
        self.post("/terminals", request, SHELL_TIMEOUT).await
    }

    /// `GET /terminals`.
    pub async fn terminals(&self) -> Result<Vec<TerminalInfo>, ClientError> {
        self.call(Method::GET, "/terminals", SHELL_TIMEOUT).await
    }

    /// `DELETE /terminals/{id}`: kills what runs on it.
    pub async fn close_terminal(&self, id: &str) -> Result<(), ClientError> {
        let url = self.endpoint(&format!("terminals/{}", path_segment(id)))?;
        let builder = self.request_to(Method::DELETE, url).timeout(SHELL_TIMEOUT);
        self.fetch_ok(builder, "/terminals/{id}").await
    }

    /// Opens the WebSocket of terminal `id` (`GET /terminals/{id}/ws`).
    pub async fn attach_terminal(&self, id: &str) -> Result<TerminalSocket, ClientError> {
        const ENDPOINT: &str = "/terminals/{id}/ws";
        let mut url = self.endpoint(&format!("terminals/{}/ws", path_segment(id)))?;
        let connect_error = |reason: String| ClientError::Decode {
            endpoint: ENDPOINT,
            reason,
        };
        let io: Box<dyn Io> = match self.target() {
            Target::Unix(path) => {
                Box::new(tokio::net::UnixStream::connect(path).await.map_err(|e| {
                    connect_error(format!("cannot connect to {}: {e}", path.display()))
                })?)
            }
            _ => {
                let host = url.host_str().unwrap_or("127.0.0.1").to_owned();
                let port = url.port_or_known_default().unwrap_or(80);
                Box::new(
                    tokio::net::TcpStream::connect((host.as_str(), port))
                        .await
                        .map_err(|e| {
                            connect_error(format!("cannot connect to {host}:{port}: {e}"))
                        })?,
                )
            }
        };
        let _ = url.set_scheme("ws");
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| connect_error(e.to_string()))?;
        if let Some(key) = &self.api_key {
            request
                .headers_mut()
                .insert("x-session-api-key", key.clone());
        }
        match tokio_tungstenite::client_async(request, io).await {
            Ok((ws, _)) => Ok(TerminalSocket { ws }),
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                let body = response.body().clone().unwrap_or_default();
                Err(ClientError::from_http(response.status().as_u16(), &body))
            }
            Err(e) => Err(ws_error(e)),
        }
    }
}
