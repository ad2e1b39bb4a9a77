//! [`RuntimeApiClient`]: the runtime API (the control plane of docs/protocol.md §9 that OpenHands'
//! `RemoteRuntime` speaks, served by `agentd serve`), one method per endpoint.

use std::fmt;
use std::time::Duration;

use protocol::runtime_api::{
    API_KEY_HEADER, ImageExistsResponse, PodStatus, RegistryPrefixResponse, RuntimeIdRequest,
    RuntimeList, RuntimeStateResponse, RuntimeStatusResponse, SessionResponse, StartRequest,
    StartResponse,
};
use reqwest::header::HeaderValue;
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;

use crate::ClientError;

/// Deadline of each request (the reference's is 180 s; `/start` may build an image).
pub const RUNTIME_API_TIMEOUT: Duration = Duration::from_secs(180);
/// How often [`RuntimeApiClient::wait_until_ready`] asks.
const READY_POLL: Duration = Duration::from_millis(100);

/// A client of one runtime API service, sending its key as `X-API-Key`.
#[derive(Clone)]
pub struct RuntimeApiClient {
    base: Url,
    key: HeaderValue,
    http: reqwest::Client,
}

impl fmt::Debug for RuntimeApiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeApiClient")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

impl RuntimeApiClient {
    /// A client for the service at `base_url` (`http://host:port`, optionally with a path
    /// prefix) with the service key `api_key`.
    pub fn new(base_url: &str, api_key: &str) -> Result<RuntimeApiClient, ClientError> {
        let base = crate::parse_base_url(base_url)?;
        let mut key = HeaderValue::from_str(api_key).map_err(|_| ClientError::InvalidApiKey)?;
        key.set_sensitive(true);
        let http = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(crate::CONNECT_TIMEOUT)
            .user_agent(concat!("runtime-api-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| ClientError::InvalidUrl {
                url: base_url.to_owned(),
                reason: format!("cannot set up the HTTP client: {err}"),
            })?;
        Ok(RuntimeApiClient { base, key, http })
    }

    /// The service's base URL.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    /// `POST /start`: a sandbox for `request.session_id` (the running one, if there is one).
    pub async fn start(&self, request: &StartRequest) -> Result<StartResponse, ClientError> {
        self.call(Method::POST, "start", Some(request), "/start")
            .await
    }

    /// `POST /stop`: stops and removes the sandbox.
    pub async fn stop(&self, runtime_id: &str) -> Result<RuntimeStateResponse, ClientError> {
        self.by_id("stop", "/stop", runtime_id).await
    }

    /// `POST /pause`: freezes the sandbox (its workspace and processes are kept).
    pub async fn pause(&self, runtime_id: &str) -> Result<RuntimeStateResponse, ClientError> {
        self.by_id("pause", "/pause", runtime_id).await
    }

    /// `POST /resume`: thaws a paused sandbox.
    pub async fn resume(&self, runtime_id: &str) -> Result<RuntimeStateResponse, ClientError> {
        self.by_id("resume", "/resume", runtime_id).await
    }

    /// `GET /sessions/{session_id}`; a session unknown to this key is `Http { status: 404 }`.
    pub async fn session(&self, session_id: &str) -> Result<SessionResponse, ClientError> {
        let path = format!("sessions/{}", encode_segment(session_id));
        self.call(Method::GET, &path, None::<&()>, "/sessions/{sid}")
            .await
    }

    /// `GET /runtime/{runtime_id}`: the sandbox's `pod_status`.
    pub async fn runtime(&self, runtime_id: &str) -> Result<RuntimeStatusResponse, ClientError> {
        let path = format!("runtime/{}", encode_segment(runtime_id));
        self.call(Method::GET, &path, None::<&()>, "/runtime/{id}")
            .await
    }

    /// `GET /runtimes`: this key's sandboxes and the warm pool's size.
    pub async fn list(&self) -> Result<RuntimeList, ClientError> {
        self.call(Method::GET, "runtimes", None::<&()>, "/runtimes")
            .await
    }

    /// `GET /registry_prefix`.
    pub async fn registry_prefix(&self) -> Result<String, ClientError> {
        let answer: RegistryPrefixResponse = self
            .call(
                Method::GET,
                "registry_prefix",
                None::<&()>,
                "/registry_prefix",
            )
            .await?;
        Ok(answer.registry_prefix)
    }

    /// `GET /image_exists?image=IMAGE`.
    pub async fn image_exists(&self, image: &str) -> Result<bool, ClientError> {
        let mut url = self.url("image_exists")?;
        url.query_pairs_mut().append_pair("image", image);
        let answer: ImageExistsResponse = self.send(self.http.get(url), "/image_exists").await?;
        Ok(answer.exists)
    }

    /// Polls `GET /runtime/{id}` until `ready` (→ `Ok`), `failed` (→ the status), or until
    /// `deadline` passes (→ the last status seen, `pending` or `paused`).
    pub async fn wait_until_ready(
        &self,
        runtime_id: &str,
        deadline: Duration,
    ) -> Result<Result<(), PodStatus>, ClientError> {
        let start = tokio::time::Instant::now();
        loop {
            let status = self.runtime(runtime_id).await?.pod_status;
            match status {
                PodStatus::Ready => return Ok(Ok(())),
                PodStatus::Failed => return Ok(Err(status)),
                PodStatus::Pending | PodStatus::Paused if start.elapsed() >= deadline => {
                    return Ok(Err(status));
                }
                PodStatus::Pending | PodStatus::Paused => tokio::time::sleep(READY_POLL).await,
            }
        }
    }

    async fn by_id(
        &self,
        path: &str,
        endpoint: &'static str,
        runtime_id: &str,
    ) -> Result<RuntimeStateResponse, ClientError> {
        let body = RuntimeIdRequest {
            runtime_id: runtime_id.to_owned(),
        };
        self.call(Method::POST, path, Some(&body), endpoint).await
    }

    fn url(&self, path: &str) -> Result<Url, ClientError> {
        self.base.join(path).map_err(|err| ClientError::InvalidUrl {
            url: self.base.to_string(),
            reason: err.to_string(),
        })
    }

    async fn call<B: serde::Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        endpoint: &'static str,
    ) -> Result<T, ClientError> {
        let mut builder = self.http.request(method, self.url(path)?);
        if let Some(body) = body {
            builder = builder.json(body);
        }
        self.send(builder, endpoint).await
    }

    async fn send<T: DeserializeOwned>(
        &self,
        builder: reqwest::RequestBuilder,
        endpoint: &'static str,
    ) -> Result<T, ClientError> {
        let request = builder
            .header(API_KEY_HEADER, self.key.clone())
            .timeout(RUNTIME_API_TIMEOUT)
            .build()
            .map_err(|err| ClientError::Request {
                url: self.base.to_string(),
                reason: crate::error::root_cause(&err),
                source: err,
            })?;
        let url = request.url().to_string();
        let transport =
            |err| ClientError::from_transport(err, &url, endpoint, Some(RUNTIME_API_TIMEOUT));
        let response = self.http.execute(request).await.map_err(transport)?;
        let status = response.status();
        let body = response.bytes().await.map_err(transport)?;
        if !status.is_success() {
            return Err(ClientError::from_http(status.as_u16(), &body));
        }
        serde_json::from_slice(&body).map_err(|err| ClientError::Decode {
            endpoint,
            reason: err.to_string(),
        })
    }
}

/// Percent-encodes one path segment (session ids are the caller's strings).
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
