//! [`ClientError`]: everything that can go wrong talking to sandboxd, and whether a retry helps.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::StatusCode;
use serde::Deserialize;

/// Longest server error text kept when the body is not the usual `{"detail": ...}` JSON.
const MAX_RAW_DETAIL: usize = 2000;

/// A failed call to sandboxd. Each variant's doc says whether retrying can help;
/// [`ClientError::is_retryable`] sums that up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The base URL cannot be used (unparsable, no host, a query, a scheme other than `http` or
    /// `unix`, or a `unix:` address with an empty path). Retrying cannot help.
    #[error("invalid sandbox URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The session API key cannot be sent in an HTTP header (it holds control characters).
    /// Retrying cannot help.
    #[error("the session API key is not a valid HTTP header value")]
    InvalidApiKey,

    /// No connection could be made, or it broke before the answer was complete (server not
    /// started yet, restarting, or gone; for a Unix socket, also a socket file not there yet).
    /// Retrying can help; note that an `execute` whose connection broke may already have run.
    #[error("cannot reach the sandbox at {url}: {reason}")]
    Connection {
        /// The URL requested; for a Unix socket followed by ` via unix:PATH`.
        url: String,
        /// The innermost cause, e.g. `Connection refused (os error 111)`.
        reason: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// No answer within the request's deadline. Retrying can help, but an action that timed out
    /// may still be running in the sandbox (a later `run` with an empty command fetches its
    /// output).
    #[error("no answer from {endpoint} within {}", describe_timeout(*.after))]
    Timeout {
        /// The endpoint, e.g. `/execute_action`.
        endpoint: &'static str,
        /// The deadline that passed, when one was set.
        after: Option<Duration>,
    },

    /// The server answered with a non-2xx status; `detail` is its `detail` text, e.g.
    /// `Invalid API Key` (403) or `Internal server error: ...` (500). Retrying helps only for
    /// 429, 502, 503 and 504 (see [`ClientError::is_retryable`]).
    #[error("HTTP {status}: {detail}")]
    Http {
        /// The status code.
        status: u16,
        /// The server's `detail`, or the body text when it is not JSON.
        detail: String,
        /// Validation details (`errors`, sent with 422).
        errors: Option<String>,
    },

    /// A 2xx answer whose body is not what the endpoint returns (version mismatch, or not
    /// sandboxd at all). Retrying cannot help.
    #[error("cannot decode the answer of {endpoint}: {reason}")]
    Decode {
        /// The endpoint.
        endpoint: &'static str,
        /// What did not match.
        reason: String,
    },

    /// Reading or packing a local file failed (for uploads). Retrying helps only once the local
    /// problem is fixed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The local path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },

    /// The request could not be built or sent for a reason other than the connection (a body
    /// that cannot be encoded, an internal client error). Retrying cannot help.
    #[error("request to {url} failed: {reason}")]
    Request {
        /// The URL requested; for a Unix socket followed by ` via unix:PATH`.
        url: String,
        /// The innermost cause.
        reason: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// [`SandboxClient::wait_until_alive`](crate::SandboxClient::wait_until_alive) gave up;
    /// `last` is the last attempt's failure. Retrying with a longer deadline can help.
    #[error("sandbox not ready after {:.1}s: {last}", .waited.as_secs_f64())]
    NotReady {
        /// How long it waited.
        waited: Duration,
        /// Why the last attempt failed.
        #[source]
        last: Box<ClientError>,
    },
}

impl ClientError {
    /// Whether the same call may succeed if repeated: connection failures, timeouts, and HTTP
    /// 429/502/503/504. An `execute` that failed this way may already have run in the sandbox;
    /// only repeat actions that are safe to run twice.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Connection { .. }
            | ClientError::Timeout { .. }
            | ClientError::NotReady { .. } => true,
            ClientError::Http { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            ClientError::InvalidUrl { .. }
            | ClientError::InvalidApiKey
            | ClientError::Decode { .. }
            | ClientError::Io { .. }
            | ClientError::Request { .. } => false,
        }
    }

    /// The HTTP status, for [`ClientError::Http`].
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server's `detail` text, for [`ClientError::Http`].
    pub fn detail(&self) -> Option<&str> {
        match self {
            ClientError::Http { detail, .. } => Some(detail),
            _ => None,
        }
    }

    /// Classifies a transport error of a request to `url` (as errors show it) on `endpoint` with
    /// deadline `after`.
    pub(crate) fn from_transport(
        err: reqwest::Error,
        url: &str,
        endpoint: &'static str,
        after: Option<Duration>,
    ) -> ClientError {
        if err.is_timeout() {
            return ClientError::Timeout { endpoint, after };
        }
        let reason = root_cause(&err);
        let url = url.to_owned();
        if err.is_connect() || err.is_request() || err.is_body() {
            ClientError::Connection {
                url,
                reason,
                source: err,
            }
        } else {
            ClientError::Request {
                url,
                reason,
                source: err,
            }
        }
    }

    /// Decodes a non-2xx answer: `{"detail": ..., "errors"?: ...}` when the body is such JSON,
    /// else the body text (bounded), else the status's reason phrase.
    pub fn from_http(status: u16, body: &[u8]) -> ClientError {
        #[derive(Deserialize)]
        struct ErrorBody {
            detail: serde_json::Value,
            #[serde(default)]
            errors: Option<serde_json::Value>,
        }
        fn text(value: serde_json::Value) -> String {
            match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            }
        }
        if let Ok(body) = serde_json::from_slice::<ErrorBody>(body) {
            return ClientError::Http {
                status,
                detail: text(body.detail),
                errors: body.errors.filter(|e| !e.is_null()).map(text),
            };
        }
        let raw = String::from_utf8_lossy(body);
        let raw = raw.trim();
        let detail = if raw.is_empty() {
            StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("(no details)")
                .to_owned()
        } else if raw.chars().count() > MAX_RAW_DETAIL {
            let cut: String = raw.chars().take(MAX_RAW_DETAIL).collect();
            format!("{cut}...")
        } else {
            raw.to_owned()
        };
        ClientError::Http {
            status,
            detail,
            errors: None,
        }
    }
}

/// The innermost message of an error chain: `Connection refused (os error 111)` rather than
/// reqwest's `error sending request for url (...)`.
pub(crate) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

fn describe_timeout(after: Option<Duration>) -> String {
    match after {
        Some(after) => format!("{}s", after.as_secs_f64()),
        None => "the deadline".to_owned(),
    }
}

#[cfg(test)]
mod tests;
