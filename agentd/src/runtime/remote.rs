//! The remote runtime: a sandboxd that someone else started, given by its URL and session API
//! key. Nothing to start or stop; the start checks that it answers and accepts the key.

use client::{ClientError, SandboxClient};

use super::{RuntimeConfig, RuntimeError};

/// The sandbox's URL and key from the configuration.
pub(super) fn target(config: &RuntimeConfig) -> Result<(String, Option<String>), RuntimeError> {
    let url = config
        .remote_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .ok_or_else(|| {
            RuntimeError::Config("the remote runtime needs the sandbox's URL".to_string())
        })?;
    Ok((url.to_string(), config.remote_api_key.clone()))
}

/// Makes one authenticated request (`/alive` is not), so a wrong key fails the start rather
/// than the first action.
pub(super) async fn check_key(client: &SandboxClient, url: &str) -> Result<(), RuntimeError> {
    match client.list_files(Some("/")).await {
        Ok(_) => Ok(()),
        Err(ClientError::Http {
            status: status @ (401 | 403),
            detail,
            ..
        }) => Err(RuntimeError::Unauthorized {
            url: url.to_string(),
            status,
            detail,
        }),
        Err(source) => Err(RuntimeError::Unreachable {
            url: url.to_string(),
            source,
        }),
    }
}
