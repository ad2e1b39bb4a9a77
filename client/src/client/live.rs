//! sandboxd's extensions beyond OpenHands' API: exactly-once and conditional actions.

use protocol::api::{ETAG_HEADER, IDEMPOTENCY_KEY_HEADER, IF_MATCH_HEADER};
use protocol::{Action, Observation};
use reqwest::Method;

use super::{SandboxClient, decode, execute_http_timeout};
use crate::ClientError;

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
}

impl ExecuteOptions {
    /// Options with an idempotency key.
    pub fn idempotent(key: impl Into<String>) -> Self {
        ExecuteOptions {
            idempotency_key: Some(key.into()),
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
            .json(&serde_json::json!({ "action": action }));
        if let Some(timeout) = execute_http_timeout(action.timeout) {
            builder = builder.timeout(timeout);
        }
        if let Some(key) = &options.idempotency_key {
            builder = builder.header(IDEMPOTENCY_KEY_HEADER, key);
        }
        if let Some(hash) = &options.if_match {
            builder = builder.header(IF_MATCH_HEADER, format!("\"{hash}\""));
        }
        let request = self.build(builder)?;
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
