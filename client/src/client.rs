//! [`SandboxClient`]: one typed async method per sandboxd endpoint (§2 and docs/protocol.md §8).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use protocol::action::{CmdRunArgs, FileEditArgs, FileReadArgs, FileWriteArgs};
use protocol::api::{
    ConfigureRequest, KillAllResponse, ListFilesRequest, McpStdioServer, ServerInfo,
    UpdateMcpServerResponse, UploadResponse,
};
use protocol::{Action, ActionKind, Observation};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ClientError;

/// Header carrying the session API key.
pub const API_KEY_HEADER: &str = "X-Session-API-Key";

/// HTTP deadline of `GET /alive` (the stock client's).
pub const ALIVE_TIMEOUT: Duration = Duration::from_secs(5);
/// HTTP deadline of `GET /server_info` (the protocol names none).
pub const SERVER_INFO_TIMEOUT: Duration = Duration::from_secs(10);
/// HTTP deadline of `POST /list_files` (the stock client's).
pub const LIST_FILES_TIMEOUT: Duration = Duration::from_secs(10);
/// HTTP deadline of `POST /update_mcp_server` (the stock client's: it waits for the servers to
/// start).
pub const UPDATE_MCP_SERVER_TIMEOUT: Duration = Duration::from_secs(60);
/// HTTP deadline of `GET /download_files` (the stock client's).
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(30);
/// HTTP deadline of `POST /upload_file` (the stock client's).
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// Added to an action's `timeout` to get the HTTP deadline of `POST /execute_action`.
pub const EXECUTE_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);
/// Time allowed to open a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The `timeout` the stock client gives actions that have none (`sandbox.timeout`), in seconds.
pub const DEFAULT_ACTION_TIMEOUT: f64 = 120.0;

/// First and longest pause between `/alive` polls in [`SandboxClient::wait_until_alive`].
const ALIVE_POLL_FIRST: Duration = Duration::from_millis(10);
const ALIVE_POLL_MAX: Duration = Duration::from_millis(20);

/// The base URL of requests sent over a Unix socket: only its `Host` header reaches the server.
const UNIX_BASE_URL: &str = "http://sandboxd/";

/// Where a sandboxd listens: parsed from what [`SandboxClient::new`] accepts, and displayed the
/// same way (`http://host:port/prefix/` or `unix:/abs/path.sock`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// Over TCP, at this base URL (normalised to end in `/`).
    Http(Url),
    /// On the Unix domain socket at this absolute path.
    Unix(PathBuf),
}

impl Target {
    /// Parses a sandbox address.
    ///
    /// * `http(s)://host:port[/prefix]` (a missing scheme means `http://`): see [`parse_base_url`].
    /// * `unix:/abs/path.sock` or `unix:///abs/path.sock`: a Unix domain socket, as printed by
    ///   `sandboxd --unix-socket`. `unix:relative/path.sock` is resolved against the current
    ///   directory. The path is taken literally (no percent-decoding; `?` and `#` are part of
    ///   it), and `unix://host/...` is refused. Anything starting with `unix:` is a socket
    ///   address, never a host named `unix`.
    pub fn parse(input: &str) -> Result<Target, ClientError> {
        let trimmed = input.trim();
        match split_unix(trimmed) {
            Some(rest) => parse_unix(input, rest).map(Target::Unix),
            None => parse_http(input).map(Target::Http),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Http(url) => f.write_str(url.as_str()),
            Target::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

impl std::str::FromStr for Target {
    type Err = ClientError;

    fn from_str(input: &str) -> Result<Target, ClientError> {
        Target::parse(input)
    }
}

/// A typed async client for one sandboxd.
///
/// Cheap to clone (the connection pool is shared). Every request carries
/// `X-Session-API-Key` when a key is configured. Calls never retry on their own; see
/// [`ClientError::is_retryable`].
///
/// ```no_run
/// # async fn demo() -> Result<(), client::ClientError> {
/// use std::time::Duration;
/// let sandbox = client::SandboxClient::new("http://127.0.0.1:8000", Some("sekret".into()))?;
/// sandbox.wait_until_alive(Duration::from_secs(30)).await?;
/// let obs = sandbox.run("echo hello", None).await?;
/// use client::ObservationExt;
/// assert_eq!(obs.exit_code(), Some(0));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SandboxClient {
    target: Target,
    /// The URL endpoints are joined to: the base URL, or `http://sandboxd/` for a Unix socket.
    base: Url,
    api_key: Option<HeaderValue>,
    http: reqwest::Client,
}

impl fmt::Debug for SandboxClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxClient")
            .field("target", &self.target.to_string())
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl SandboxClient {
    /// A client for the sandboxd at `base_url`, sending `session_api_key` when given.
    ///
    /// `base_url` is `http://host:port` (optionally with a path prefix; a missing scheme means
    /// `http://`) or, for a sandboxd started with `--unix-socket`, `unix:/abs/path.sock` (also
    /// `unix:///abs/path.sock`, or a relative `unix:path` resolved against the current
    /// directory); see [`Target::parse`]. Request paths are the same either way.
    ///
    /// The HTTP client pools connections, connects within [`CONNECT_TIMEOUT`] and ignores proxy
    /// settings from the environment (a sandbox is reached directly); use
    /// [`SandboxClient::with_http_client`] for anything else.
    pub fn new(base_url: &str, session_api_key: Option<String>) -> Result<Self, ClientError> {
        let target = Target::parse(base_url)?;
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("sandbox-client/", env!("CARGO_PKG_VERSION")));
        if let Target::Unix(path) = &target {
            #[cfg(unix)]
            {
                builder = builder.unix_socket(path.clone());
            }
            #[cfg(not(unix))]
            return Err(ClientError::InvalidUrl {
                url: base_url.to_owned(),
                reason: format!(
                    "Unix sockets are not supported on this platform ({})",
                    path.display()
                ),
            });
        }
        let http = builder.build().map_err(|err| ClientError::InvalidUrl {
            url: base_url.to_owned(),
            reason: format!("cannot set up the HTTP client: {err}"),
        })?;
        Self::from_parts(target, session_api_key, http)
    }

    /// Like [`SandboxClient::new`], with a caller-built `reqwest::Client` (proxies, TLS, custom
    /// timeouts). Per-request deadlines are still set by this client.
    ///
    /// For a `unix:` address, `http` must have been built with
    /// `reqwest::ClientBuilder::unix_socket` for that same path: requests go to
    /// `http://sandboxd/...`, which only the socket setting routes to the sandbox.
    pub fn with_http_client(
        base_url: &str,
        session_api_key: Option<String>,
        http: reqwest::Client,
    ) -> Result<Self, ClientError> {
        Self::from_parts(Target::parse(base_url)?, session_api_key, http)
    }

    fn from_parts(
        target: Target,
        session_api_key: Option<String>,
        http: reqwest::Client,
    ) -> Result<Self, ClientError> {
        let api_key = session_api_key
            .map(|key| {
                let mut value =
                    HeaderValue::from_str(&key).map_err(|_| ClientError::InvalidApiKey)?;
                value.set_sensitive(true);
                Ok::<_, ClientError>(value)
            })
            .transpose()?;
        let base = match &target {
            Target::Http(url) => url.clone(),
            Target::Unix(_) => {
                Url::parse(UNIX_BASE_URL).map_err(|err| ClientError::InvalidUrl {
                    url: target.to_string(),
                    reason: err.to_string(),
                })?
            }
        };
        Ok(SandboxClient {
            base,
            target,
            api_key,
            http,
        })
    }

    /// The base URL requests are made against, normalised to end in `/`. For a Unix socket this
    /// is `http://sandboxd/`, which says nothing about where the sandbox is: use
    /// [`SandboxClient::target`] to show or log the address.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    /// Where the sandbox is: the base URL, or the Unix socket (displays as `unix:/path`).
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// `GET /alive` within [`ALIVE_TIMEOUT`]: `Ok` on any 2xx, which means the server can
    /// execute actions.
    pub async fn alive(&self) -> Result<(), ClientError> {
        self.alive_within(ALIVE_TIMEOUT).await
    }

    async fn alive_within(&self, timeout: Duration) -> Result<(), ClientError> {
        let request = self.alive_request(timeout)?;
        self.send(request, "/alive").await.map(drop)
    }

    fn alive_request(&self, timeout: Duration) -> Result<reqwest::Request, ClientError> {
        self.build(self.request(Method::GET, "alive")?.timeout(timeout))
    }

    /// `GET /server_info`: uptime, idle time and resource use.
    pub async fn server_info(&self) -> Result<ServerInfo, ClientError> {
        self.call(Method::GET, "/server_info", SERVER_INFO_TIMEOUT)
            .await
    }

    /// `POST /processes/kill_all`: kills every process the agent started except the shells and
    /// the IPython kernel (background jobs, servers, a fork bomb); returns how many.
    pub async fn kill_all_processes(&self) -> Result<usize, ClientError> {
        self.call::<KillAllResponse>(Method::POST, "/processes/kill_all", SERVER_INFO_TIMEOUT)
            .await
            .map(|r| r.killed)
    }

    /// `POST /configure` to a sandboxd started with `--await-configuration` (this client's key
    /// being its configuration key): it answers, then re-executes itself with `request`'s
    /// arguments and environment, and is reachable again (at the same address) once it listens.
    pub async fn configure(&self, request: &ConfigureRequest) -> Result<(), ClientError> {
        let builder = self
            .request(Method::POST, "configure")?
            .json(request)
            .timeout(SERVER_INFO_TIMEOUT);
        self.fetch_ok(builder, "/configure").await
    }

    /// Polls `GET /alive` until it succeeds or `deadline` has passed.
    ///
    /// Refused connections, timeouts and non-2xx answers count as "not ready yet" and are retried
    /// after 10 ms, then every 20 ms; each attempt is bounded by the time left. Other errors (an
    /// invalid request) are returned at once. On expiry the error is
    /// [`ClientError::NotReady`] holding the last failure.
    pub async fn wait_until_alive(&self, deadline: Duration) -> Result<(), ClientError> {
        let start = tokio::time::Instant::now();
        let mut pause = ALIVE_POLL_FIRST;
        loop {
            let left = deadline.saturating_sub(start.elapsed());
            let attempt = left.clamp(Duration::from_millis(1), ALIVE_TIMEOUT);
            let err = match self.alive_within(attempt).await {
                Ok(()) => return Ok(()),
                Err(
                    err @ (ClientError::Connection { .. }
                    | ClientError::Timeout { .. }
                    | ClientError::Http { .. }),
                ) => err,
                Err(err) => return Err(err),
            };
            let waited = start.elapsed();
            if waited >= deadline {
                return Err(ClientError::NotReady {
                    waited,
                    last: Box::new(err),
                });
            }
            tokio::time::sleep(pause.min(deadline - waited)).await;
            pause = (pause * 2).min(ALIVE_POLL_MAX);
        }
    }

    /// `POST /execute_action` with `{"action": action}`: runs one action and returns its
    /// observation.
    ///
    /// The HTTP deadline is `action.timeout` + 5 s, or none when `action.timeout` is `None`
    /// (sandboxd then applies no hard limit either). Failures inside the action (a missing file,
    /// a bad editor command) come back as an `error` observation, not as an `Err`; the server's
    /// refusals (unknown or non-runnable action type, wrong key) are [`ClientError::Http`].
    pub async fn execute(&self, action: &Action) -> Result<Observation, ClientError> {
        let request = self.execute_request(action)?;
        let body = self.send(request, "/execute_action").await?;
        decode(body, "/execute_action")
    }

    fn execute_request(&self, action: &Action) -> Result<reqwest::Request, ClientError> {
        #[derive(Serialize)]
        struct Body<'a> {
            action: &'a Action,
        }
        let mut builder = self
            .request(Method::POST, "execute_action")?
            .json(&Body { action });
        if let Some(timeout) = execute_http_timeout(action.timeout) {
            builder = builder.timeout(timeout);
        }
        self.build(builder)
    }

    /// Like [`SandboxClient::execute`], for raw JSON: sends `{"action": action}` unchecked and
    /// returns the server's JSON answer as is. The HTTP deadline comes from a numeric
    /// `action["timeout"]`. Useful to send what the typed API cannot express (unknown action
    /// types, extra keys) or to see extras the `protocol` types drop.
    pub async fn execute_json(
        &self,
        action: &serde_json::Value,
    ) -> Result<serde_json::Value, ClientError> {
        let body = self.execute_raw(action).await?;
        decode(body, "/execute_action")
    }

    /// Like [`SandboxClient::execute_json`], returning the answer's body text exactly as the
    /// server sent it (key order included), for printing or byte-level comparisons.
    pub async fn execute_raw(&self, action: &serde_json::Value) -> Result<String, ClientError> {
        let request = self.execute_json_request(action)?;
        let body: Vec<u8> = self.send(request, "/execute_action").await?.into();
        String::from_utf8(body).map_err(|err| ClientError::Decode {
            endpoint: "/execute_action",
            reason: err.to_string(),
        })
    }

    fn execute_json_request(
        &self,
        action: &serde_json::Value,
    ) -> Result<reqwest::Request, ClientError> {
        let mut builder = self
            .request(Method::POST, "execute_action")?
            .json(&serde_json::json!({ "action": action }));
        let timeout = action.get("timeout").and_then(serde_json::Value::as_f64);
        if let Some(timeout) = execute_http_timeout(timeout) {
            builder = builder.timeout(timeout);
        }
        self.build(builder)
    }

    /// Runs `command` in the sandbox's persistent bash session; see [`run_action`] for how
    /// `timeout` is sent.
    pub async fn run(
        &self,
        command: &str,
        timeout: Option<f64>,
    ) -> Result<Observation, ClientError> {
        self.execute(&run_action(command, timeout)).await
    }

    /// Reads a whole file (`read` action, default implementation).
    pub async fn read(&self, path: &str) -> Result<Observation, ClientError> {
        self.execute(&with_default_timeout(ActionKind::Read(FileReadArgs::new(
            path,
        ))))
        .await
    }

    /// Replaces a whole file's content (`write` action), creating it and its directories.
    pub async fn write(&self, path: &str, content: &str) -> Result<Observation, ClientError> {
        self.execute(&with_default_timeout(ActionKind::Write(
            FileWriteArgs::new(path, content),
        )))
        .await
    }

    /// One command of the `oh_aci` file editor (`edit` action); build `args` with
    /// [`FileEditArgs::new`] and set the fields the command needs.
    pub async fn edit(&self, args: FileEditArgs) -> Result<Observation, ClientError> {
        self.execute(&with_default_timeout(ActionKind::Edit(args)))
            .await
    }

    /// `POST /update_mcp_server`: makes `servers` the stdio MCP servers the sandbox runs (it
    /// starts new and changed ones, stops those no longer listed) and serves them at
    /// `/mcp/proxy` and `/mcp/sse`. The answer's `router_error_log` says which did not start.
    /// Deadline: [`UPDATE_MCP_SERVER_TIMEOUT`].
    pub async fn update_mcp_servers(
        &self,
        servers: &[McpStdioServer],
    ) -> Result<UpdateMcpServerResponse, ClientError> {
        self.post("/update_mcp_server", servers, UPDATE_MCP_SERVER_TIMEOUT)
            .await
    }

    /// The HTTP client requests go through (it reaches a Unix socket sandbox too), for a
    /// protocol this client does not speak: MCP at [`SandboxClient::base_url`]`/mcp/...`,
    /// with the session key as `X-Session-API-Key`.
    pub fn http_client(&self) -> &reqwest::Client {
        &self.http
    }

    /// Where an MCP client reaches the sandbox's MCP proxy (`/mcp/proxy`: the stdio servers'
    /// tools over streamable HTTP) through [`SandboxClient::http_client`], and the headers its
    /// requests need (the session key, marked sensitive).
    pub fn mcp_proxy(&self) -> Result<(Url, reqwest::header::HeaderMap), ClientError> {
        let url = self
            .base
            .join("mcp/proxy")
            .map_err(|err| ClientError::InvalidUrl {
                url: self.base.to_string(),
                reason: err.to_string(),
            })?;
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert(HeaderName::from_static("x-session-api-key"), key.clone());
        }
        Ok((url, headers))
    }

    /// `POST /list_files`: names in a directory of the sandbox, directories first with a
    /// trailing `/`. `None` lists the initial working directory; a relative path is joined to
    /// it. A missing path yields an empty list, not an error.
    pub async fn list_files(&self, path: Option<&str>) -> Result<Vec<String>, ClientError> {
        let request = self.list_files_request(path)?;
        let body = self.send(request, "/list_files").await?;
        decode(body, "/list_files")
    }

    fn list_files_request(&self, path: Option<&str>) -> Result<reqwest::Request, ClientError> {
        let body = ListFilesRequest {
            path: path.map(str::to_owned),
        };
        self.build(
            self.request(Method::POST, "list_files")?
                .json(&body)
                .timeout(LIST_FILES_TIMEOUT),
        )
    }

    /// `POST /upload_file`: copies a local file or directory into the sandbox directory
    /// `destination` (absolute; created if missing).
    ///
    /// With `recursive`, `local` (normally a directory) is zipped in memory with names relative
    /// to its parent, so the sandbox gets `destination/<name of local>/...`. Without it, `local`
    /// must be a file and becomes `destination/<file name>`; note that the server extracts any
    /// upload whose name ends in `.zip`.
    pub async fn upload_file(
        &self,
        local: &Path,
        destination: &str,
        recursive: bool,
    ) -> Result<UploadResponse, ClientError> {
        let io_err = |source| ClientError::Io {
            path: local.to_path_buf(),
            source,
        };
        let (filename, data) = if recursive {
            let source = local.to_path_buf();
            let data = tokio::task::spawn_blocking(move || crate::archive::zip_for_upload(&source))
                .await
                .map_err(|err| io_err(std::io::Error::other(err)))??;
            (upload_zip_name(), data)
        } else {
            let meta = tokio::fs::metadata(local).await.map_err(io_err)?;
            if meta.is_dir() {
                return Err(io_err(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "is a directory; upload it with recursive = true",
                )));
            }
            let name = local
                .file_name()
                .and_then(|name| name.to_str())
                .ok_or_else(|| {
                    io_err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "file name is missing or not UTF-8",
                    ))
                })?
                .to_owned();
            let data = tokio::fs::read(local).await.map_err(io_err)?;
            (name, data)
        };
        self.upload_bytes(&filename, data, destination, recursive)
            .await
    }

    /// `POST /upload_file` with the given bytes as the multipart field `file` named
    /// `filename`: the building block of [`SandboxClient::upload_file`], also handy for sending
    /// hand-made (or hostile) zips in tests.
    pub async fn upload_bytes(
        &self,
        filename: &str,
        data: Vec<u8>,
        destination: &str,
        recursive: bool,
    ) -> Result<UploadResponse, ClientError> {
        let request = self.upload_request(filename, data, destination, recursive)?;
        let body = self.send(request, "/upload_file").await?;
        decode(body, "/upload_file")
    }

    fn upload_request(
        &self,
        filename: &str,
        data: Vec<u8>,
        destination: &str,
        recursive: bool,
    ) -> Result<reqwest::Request, ClientError> {
        let mut url = self.endpoint("upload_file")?;
        url.query_pairs_mut()
            .append_pair("destination", destination)
            .append_pair("recursive", if recursive { "true" } else { "false" });
        let mime = if filename.ends_with(".zip") {
            "application/zip"
        } else {
            "application/octet-stream"
        };
        let part = reqwest::multipart::Part::bytes(data)
            .file_name(filename.to_owned())
            .mime_str(mime)
            .map_err(|err| self.request_error(&url, err))?;
        let form = reqwest::multipart::Form::new().part("file", part);
        self.build(
            self.request_to(Method::POST, url)
                .multipart(form)
                .timeout(UPLOAD_TIMEOUT),
        )
    }

    /// `GET /download_files`: a zip of every regular file under the absolute sandbox `path`,
    /// named relative to it (empty for a plain file), within [`DOWNLOAD_TIMEOUT`].
    pub async fn download_files(&self, path: &str) -> Result<Vec<u8>, ClientError> {
        let request = self.download_request(path)?;
        let body = self.send(request, "/download_files").await?;
        Ok(body.into())
    }

    fn download_request(&self, path: &str) -> Result<reqwest::Request, ClientError> {
        let mut url = self.endpoint("download_files")?;
        url.query_pairs_mut().append_pair("path", path);
        self.build(self.request_to(Method::GET, url).timeout(DOWNLOAD_TIMEOUT))
    }

    // ---- plumbing ----------------------------------------------------------------------------

    /// The URL of `endpoint` (no leading `/`) under the base URL.
    fn endpoint(&self, endpoint: &str) -> Result<Url, ClientError> {
        self.base
            .join(endpoint)
            .map_err(|err| ClientError::InvalidUrl {
                url: self.target.to_string(),
                reason: err.to_string(),
            })
    }

    fn request(
        &self,
        method: Method,
        endpoint: &str,
    ) -> Result<reqwest::RequestBuilder, ClientError> {
        Ok(self.request_to(method, self.endpoint(endpoint)?))
    }

    fn request_to(&self, method: Method, url: Url) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, url);
        match &self.api_key {
            Some(key) => builder.header(HeaderName::from_static("x-session-api-key"), key.clone()),
            None => builder,
        }
    }

    fn build(&self, builder: reqwest::RequestBuilder) -> Result<reqwest::Request, ClientError> {
        builder.build().map_err(|err| {
            let url = err.url().map_or_else(|| self.base.clone(), Url::clone);
            self.request_error(&url, err)
        })
    }

    /// How errors name a request's `url`: the URL itself, or for a Unix socket the URL and the
    /// socket (`http://sandboxd/alive via unix:/run/sandbox.sock`).
    fn describe(&self, url: &Url) -> String {
        match &self.target {
            Target::Http(_) => url.to_string(),
            Target::Unix(_) => format!("{url} via {}", self.target),
        }
    }

    fn request_error(&self, url: &Url, err: reqwest::Error) -> ClientError {
        ClientError::Request {
            url: self.describe(url),
            reason: crate::error::root_cause(&err),
            source: err,
        }
    }

    /// `method endpoint` without a body, within `timeout`: the JSON answer decoded as `T`.
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        endpoint: &'static str,
        timeout: Duration,
    ) -> Result<T, ClientError> {
        let builder = self
            .request(method, endpoint.trim_start_matches('/'))?
            .timeout(timeout);
        self.fetch(builder, endpoint).await
    }

    /// `POST endpoint` with `body` as JSON, within `timeout`: the JSON answer decoded as `T`.
    async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        body: &B,
        timeout: Duration,
    ) -> Result<T, ClientError> {
        let builder = self
            .request(Method::POST, endpoint.trim_start_matches('/'))?
            .json(body)
            .timeout(timeout);
        self.fetch(builder, endpoint).await
    }

    /// Builds and sends `builder`; the JSON body of a 2xx answer decoded as `T`, else the
    /// decoded error.
    async fn fetch<T: DeserializeOwned>(
        &self,
        builder: reqwest::RequestBuilder,
        endpoint: &'static str,
    ) -> Result<T, ClientError> {
        let request = self.build(builder)?;
        decode(self.send(request, endpoint).await?, endpoint)
    }

    /// Builds and sends `builder`; `Ok` on a 2xx answer (its body unread), else the decoded
    /// error.
    async fn fetch_ok(
        &self,
        builder: reqwest::RequestBuilder,
        endpoint: &'static str,
    ) -> Result<(), ClientError> {
        let request = self.build(builder)?;
        self.send(request, endpoint).await.map(drop)
    }

    /// Sends `request`; returns the body of a 2xx answer, else the decoded error.
    async fn send(
        &self,
        request: reqwest::Request,
        endpoint: &'static str,
    ) -> Result<impl AsRef<[u8]> + Into<Vec<u8>>, ClientError> {
        Ok(self.send_full(request, endpoint).await?.1)
    }

    /// Like [`SandboxClient::send`], with the answer's headers.
    async fn send_full(
        &self,
        request: reqwest::Request,
        endpoint: &'static str,
    ) -> Result<(reqwest::header::HeaderMap, bytes::Bytes), ClientError> {
        let response = self.open(request, endpoint).await?;
        let headers = response.headers().clone();
        let url = self.describe(response.url());
        let body = response
            .bytes()
            .await
            .map_err(|err| ClientError::from_transport(err, &url, endpoint, None))?;
        Ok((headers, body))
    }

    /// Sends `request`; returns a 2xx answer whose body is still to be read, else the decoded
    /// error.
    async fn open(
        &self,
        request: reqwest::Request,
        endpoint: &'static str,
    ) -> Result<reqwest::Response, ClientError> {
        let url = self.describe(request.url());
        let timeout = request.timeout().copied();
        let transport = |err| ClientError::from_transport(err, &url, endpoint, timeout);
        let response = self.http.execute(request).await.map_err(transport)?;
        let status = response.status();
        if status.is_success() {
            Ok(response)
        } else {
            let body = response.bytes().await.map_err(transport)?;
            Err(ClientError::from_http(status.as_u16(), &body))
        }
    }
}

fn decode<T: DeserializeOwned>(
    body: impl AsRef<[u8]>,
    endpoint: &'static str,
) -> Result<T, ClientError> {
    serde_json::from_slice(body.as_ref()).map_err(|err| ClientError::Decode {
        endpoint,
        reason: err.to_string(),
    })
}

/// Parses and normalises an HTTP base URL: adds `http://` when no scheme is given, accepts
/// `http` and `https` (rustls; the system's roots, `SSL_CERT_FILE` too), requires a host, forbids a query or fragment, and makes the path end in `/` so that
/// endpoints join under any path prefix.
///
/// A `unix:` socket address has no such URL and is refused (after checking it, so a bad one
/// gets the precise reason); [`Target::parse`] accepts both kinds.
pub fn parse_base_url(input: &str) -> Result<Url, ClientError> {
    match Target::parse(input)? {
        Target::Http(url) => Ok(url),
        Target::Unix(_) => Err(ClientError::InvalidUrl {
            url: input.to_owned(),
            reason: "a unix: socket address is not an HTTP base URL (use Target::parse)".to_owned(),
        }),
    }
}

/// The part of `input` after a case-insensitive `unix:` prefix, if it has one.
fn split_unix(input: &str) -> Option<&str> {
    let prefix = input.get(..5)?;
    prefix.eq_ignore_ascii_case("unix:").then(|| &input[5..])
}

/// The socket path of a `unix:` address (`rest` is what follows `unix:`), made absolute.
fn parse_unix(input: &str, rest: &str) -> Result<PathBuf, ClientError> {
    let invalid = |reason: String| ClientError::InvalidUrl {
        url: input.to_owned(),
        reason,
    };
    let path = match rest.strip_prefix("//") {
        Some("") => "",
        Some(after) if after.starts_with('/') => after,
        Some(_) => {
            return Err(invalid(
                "a unix: address has no host; write unix:/abs/path.sock or \
                 unix:///abs/path.sock"
                    .to_owned(),
            ));
        }
        None => rest,
    };
    if path.is_empty() {
        return Err(invalid(
            "the Unix socket path is empty; write unix:/abs/path.sock".to_owned(),
        ));
    }
    std::path::absolute(path)
        .map_err(|err| invalid(format!("cannot make the socket path absolute: {err}")))
}

/// [`parse_base_url`] proper, for addresses that are not `unix:`.
fn parse_http(input: &str) -> Result<Url, ClientError> {
    let invalid = |reason: &str| ClientError::InvalidUrl {
        url: input.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(invalid("it is empty"));
    }
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_owned()
    } else {
        format!("http://{trimmed}")
    };
    let mut url = Url::parse(&with_scheme).map_err(|err| invalid(&err.to_string()))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(invalid(&format!(
                "unsupported scheme {other:?}; use http, https, or unix: for a Unix socket"
            )));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("it has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("it must not have a query or fragment"));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// The HTTP deadline for an action with the given `timeout`: `timeout` + 5 s; none when the
/// action has no timeout (or a negative, non-finite or absurd one).
pub fn execute_http_timeout(action_timeout: Option<f64>) -> Option<Duration> {
    let timeout = action_timeout?;
    if !timeout.is_finite() || timeout < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(timeout)
        .ok()?
        .checked_add(EXECUTE_TIMEOUT_MARGIN)
}

/// The `run` action [`SandboxClient::run`] sends, mirroring OpenHands' client: with
/// `Some(t)`, `timeout: t` and `blocking: true` (only the hard timeout applies, like
/// `set_hard_timeout`); with `None`, `timeout: 120` and `blocking: false` (the server's
/// no-output timeout also applies). Build an [`Action`] yourself for other combinations.
pub fn run_action(command: &str, timeout: Option<f64>) -> Action {
    let mut args = CmdRunArgs::new(command);
    args.blocking = timeout.is_some();
    let mut action = Action::from(ActionKind::Run(args));
    action.timeout = Some(timeout.unwrap_or(DEFAULT_ACTION_TIMEOUT));
    action
}

/// An action with the stock client's default timeout.
fn with_default_timeout(kind: ActionKind) -> Action {
    let mut action = Action::from(kind);
    action.timeout = Some(DEFAULT_ACTION_TIMEOUT);
    action
}

/// A file name for a recursive upload's zip that will not clash with a file in the destination
/// (servers modelled on the reference store the zip there before extracting it).
fn upload_zip_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("sbx-upload-{}-{nanos:09}.zip", std::process::id())
}

mod live;
mod terminal;

pub use live::{EventStream, ExecuteOptions, Executed, SHELL_TIMEOUT};
pub use terminal::{TerminalOutput, TerminalSocket};

#[cfg(test)]
mod tests;
