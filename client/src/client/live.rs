//! sandboxd's extensions beyond OpenHands' API: exactly-once and conditional actions.

use std::time::Duration;

use protocol::api::{
    CreateShellRequest, ETAG_HEADER, IDEMPOTENCY_KEY_HEADER, IF_MATCH_HEADER, ProcessInfo,
    ShellInfo, SignalRequest, SignalResponse, SignalSpec, StreamEvent,
};
use protocol::{Action, Observation};
use reqwest::Method;

use super::{SandboxClient, decode, execute_http_timeout};
use crate::ClientError;

/// HTTP deadline of the shell endpoints (a new shell may read a login profile).
pub const SHELL_TIMEOUT: Duration = Duration::from_secs(70);

/// What a request asks beside its action (sandboxd extensions; OpenHands' server ignores
/// them).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ExecuteOptions {
    /// Run the action once for this key (1 to 255 visible ASCII characters): a request that
    /// repeats it, e.g. a retry after a lost connection, gets the first answer instead of
    /// running the action again. The same key with another request is refused (HTTP 422).
    pub idempotency_key: Option<String>,
    /// For `write` and `edit`: the content hash the caller last read
    /// ([`Executed::content_hash`]); when the file no longer has it, the action is refused
    /// with HTTP 412 and the file is left alone.
    pub if_match: Option<String>,
    /// The shell a `run` runs in (and relative paths resolve in): one made with
    /// [`SandboxClient::create_shell`]; `None` is the default shell.
    pub shell: Option<String>,
}

impl ExecuteOptions {
    /// Options with an idempotency key.
    pub fn idempotent(key: impl Into<String>) -> Self {
        ExecuteOptions {
            idempotency_key: Some(key.into()),
            ..ExecuteOptions::default()
        }
    }

    /// Options of an action in the named shell `id`.
    pub fn in_shell(id: impl Into<String>) -> Self {
        ExecuteOptions {
            shell: Some(id.into()),
            ..ExecuteOptions::default()
        }
    }

    /// Options of a conditional `write` or `edit`.
    pub fn if_match(content_hash: impl Into<String>) -> Self {
        ExecuteOptions {
            if_match: Some(content_hash.into()),
            ..ExecuteOptions::default()
        }
    }
}

/// An observation and what sandboxd says beside it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Executed {
    /// The observation, as [`SandboxClient::execute`] returns it.
    pub observation: Observation,
    /// For `read`, `write` and `edit` of a regular file: its content hash (`sha256:HEX`) as
    /// read or as left, for a later conditional action.
    pub content_hash: Option<String>,
}

impl SandboxClient {
    /// [`SandboxClient::execute`] with `options`. A conditional action that lost its race is
    /// `Err(ClientError::Http { status: 412, .. })`.
    pub async fn execute_with(
        &self,
        action: &Action,
        options: &ExecuteOptions,
    ) -> Result<Executed, ClientError> {
        let mut builder = self
            .request(Method::POST, "execute_action")?
            .json(&action_body(action, options));
        if let Some(timeout) = execute_http_timeout(action.timeout) {
            builder = builder.timeout(timeout);
        }
        let request = self.build(with_options(builder, options))?;
        let (headers, body) = self.send_full(request, "/execute_action").await?;
        let content_hash = headers
            .get(ETAG_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|tag| tag.trim_matches('"').to_owned());
        Ok(Executed {
            observation: decode(body, "/execute_action")?,
            content_hash,
        })
    }
}

/// A stream of [`StreamEvent`]s from sandboxd (NDJSON, one event per line):
/// [`SandboxClient::execute_stream`] and [`SandboxClient::attach`].
#[derive(Debug)]
pub struct EventStream {
    response: reqwest::Response,
    buf: Vec<u8>,
    endpoint: &'static str,
    url: String,
}

impl EventStream {
    /// The next event; `None` after the last one (the connection ended).
    pub async fn next(&mut self) -> Result<Option<StreamEvent>, ClientError> {
        loop {
            if let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return decode(&line[..end], self.endpoint).map(Some);
            }
            let chunk =
                self.response.chunk().await.map_err(|err| {
                    ClientError::from_transport(err, &self.url, self.endpoint, None)
                })?;
            match chunk {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None if self.buf.iter().all(u8::is_ascii_whitespace) => return Ok(None),
                None => {
                    let rest = std::mem::take(&mut self.buf);
                    return decode(&rest, self.endpoint).map(Some);
                }
            }
        }
    }
}

impl SandboxClient {
    /// `POST /execute_action/stream`: runs `action` like [`SandboxClient::execute_with`] and
    /// streams its output as it is produced ([`StreamEvent::Output`]), then its observation
    /// ([`StreamEvent::Observation`], the one `/execute_action` answers) or a refusal
    /// ([`StreamEvent::Error`]). Only `run` and `run_ipython` have output to stream.
    pub async fn execute_stream(
        &self,
        action: &Action,
        options: &ExecuteOptions,
    ) -> Result<EventStream, ClientError> {
        const ENDPOINT: &str = "/execute_action/stream";
        let mut builder = self
            .request(Method::POST, "execute_action/stream")?
            .json(&action_body(action, options));
        if let Some(timeout) = execute_http_timeout(action.timeout) {
            builder = builder.timeout(timeout);
        }
        builder = with_options(builder, options);
        self.stream(builder, ENDPOINT).await
    }

    /// [`SandboxClient::execute_stream`] to the end: calls `on_output` with each piece of
    /// output and returns the observation. A refusal is [`ClientError::Http`] with the
    /// status `/execute_action` would have answered.
    pub async fn execute_streamed(
        &self,
        action: &Action,
        options: &ExecuteOptions,
        mut on_output: impl FnMut(&str),
    ) -> Result<Observation, ClientError> {
        let mut events = self.execute_stream(action, options).await?;
        while let Some(event) = events.next().await? {
            match event {
                StreamEvent::Output { data, .. } => on_output(&data),
                StreamEvent::Observation { observation } => return Ok(*observation),
                StreamEvent::Error { status, detail } => {
                    return Err(ClientError::Http {
                        status,
                        detail,
                        errors: None,
                    });
                }
                StreamEvent::End => break,
            }
        }
        Err(ClientError::Decode {
            endpoint: "/execute_action/stream",
            reason: "the stream ended without an observation".to_owned(),
        })
    }

    /// `GET /shells/{shell}/attach`: the output of the command running in `shell` (`default`:
    /// the main one), from the oldest line kept, then [`StreamEvent::End`] when it ends.
    /// HTTP 409 when no command runs there, 404 when there is no such shell.
    pub async fn attach(&self, shell: &str) -> Result<EventStream, ClientError> {
        let url = self.endpoint(&format!("shells/{}/attach", path_segment(shell)))?;
        let builder = self.request_to(Method::GET, url);
        self.stream(builder, "/shells/{id}/attach").await
    }

    /// `POST /shells`: starts a named shell (its own bash, working directory, environment
    /// and history) for [`ExecuteOptions::shell`].
    pub async fn create_shell(
        &self,
        request: &CreateShellRequest,
    ) -> Result<ShellInfo, ClientError> {
        self.post("/shells", request, SHELL_TIMEOUT).await
    }

    /// `GET /shells`: every shell, the default one first.
    pub async fn shells(&self) -> Result<Vec<ShellInfo>, ClientError> {
        self.call(Method::GET, "/shells", SHELL_TIMEOUT).await
    }

    /// `DELETE /shells/{id}`: closes a named shell and kills what runs in it.
    pub async fn close_shell(&self, id: &str) -> Result<(), ClientError> {
        let url = self.endpoint(&format!("shells/{}", path_segment(id)))?;
        let builder = self.request_to(Method::DELETE, url).timeout(SHELL_TIMEOUT);
        self.fetch_ok(builder, "/shells/{id}").await
    }

    /// `GET /processes`: the sandbox's processes (its shells and kernel, marked `sandbox`,
    /// and everything the agent started).
    pub async fn processes(&self) -> Result<Vec<ProcessInfo>, ClientError> {
        self.call(Method::GET, "/processes", SHELL_TIMEOUT).await
    }

    /// `POST /processes/{pid}/signal`: sends `signal` to one of the sandbox's processes, and
    /// with `tree` to all its descendants (stopped first, so none forks away). Returns the
    /// pids that got it; HTTP 404 for a process that is not the sandbox's.
    pub async fn signal(
        &self,
        pid: u32,
        signal: SignalSpec,
        tree: bool,
    ) -> Result<Vec<u32>, ClientError> {
        const ENDPOINT: &str = "/processes/{pid}/signal";
        let url = self.endpoint(&format!("processes/{pid}/signal"))?;
        let body = SignalRequest { signal, tree };
        let builder = self
            .request_to(Method::POST, url)
            .json(&body)
            .timeout(SHELL_TIMEOUT);
        let answer: SignalResponse = self.fetch(builder, ENDPOINT).await?;
        Ok(answer.signaled)
    }

    async fn stream(
        &self,
        builder: reqwest::RequestBuilder,
        endpoint: &'static str,
    ) -> Result<EventStream, ClientError> {
        let request = self.build(builder)?;
        let url = self.describe(request.url());
        let response = self.open(request, endpoint).await?;
        Ok(EventStream {
            response,
            buf: Vec::new(),
            endpoint,
            url,
        })
    }
}

/// `text` as one URL path segment (`/`, `%`, `?`, `#` and the rest escaped).
pub(super) fn path_segment(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The body of `/execute_action`: the action, and the shell `options` name.
fn action_body(action: &Action, options: &ExecuteOptions) -> serde_json::Value {
    match &options.shell {
        Some(shell) => serde_json::json!({ "action": action, "shell": shell }),
        None => serde_json::json!({ "action": action }),
    }
}

/// `builder` with the headers of `options`.
fn with_options(
    mut builder: reqwest::RequestBuilder,
    options: &ExecuteOptions,
) -> reqwest::RequestBuilder {
    if let Some(key) = &options.idempotency_key {
        builder = builder.header(IDEMPOTENCY_KEY_HEADER, key);
    }
    if let Some(hash) = &options.if_match {
        builder = builder.header(IF_MATCH_HEADER, format!("\"{hash}\""));
    }
    builder
}
