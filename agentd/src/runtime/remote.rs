//! The remote runtime: a sandboxd that someone else started, given by its URL and session API
//! key (nothing to start or stop), or one a runtime API service (`agentd serve`) starts for a
//! session id: a running sandbox of that session is reused, a paused one resumed; on close it
//! is stopped unless kept. Either way the start checks that it answers and accepts the key.

use client::{ClientError, RuntimeApiClient, SandboxClient};
use protocol::runtime_api::{RuntimeAccess, SessionStatus, StartRequest};

use super::sandboxd::WORKSPACE;
use super::{RemoteApiConfig, RuntimeConfig, RuntimeError};

/// A sandbox the runtime API service gave us.
#[derive(Debug)]
pub(super) struct ApiSandbox {
    api: RuntimeApiClient,
    runtime_id: String,
    keep: bool,
}

impl ApiSandbox {
    /// Stops the sandbox, unless it is to be kept.
    pub(crate) async fn close(self) -> Result<(), RuntimeError> {
        if self.keep {
            tracing::info!(runtime_id = %self.runtime_id, "leaving the sandbox running");
            return Ok(());
        }
        match self.api.stop(&self.runtime_id).await {
            Ok(_) | Err(ClientError::Http { status: 404, .. }) => Ok(()),
            Err(source) => Err(RuntimeError::RuntimeApi {
                url: self.api.base_url().to_string(),
                source,
            }),
        }
    }
}

/// Gets the session's sandbox from the service: the running one, the paused one resumed, or a
/// new one; waits (up to the startup timeout) until the service reports it ready. Returns it
/// with sandboxd's URL and key.
pub(super) async fn start_via_api(
    config: &RuntimeConfig,
    remote: &RemoteApiConfig,
) -> Result<(ApiSandbox, String, Option<String>), RuntimeError> {
    let api_error = |source| RuntimeError::RuntimeApi {
        url: remote.url.clone(),
        source,
    };
    let api = RuntimeApiClient::new(&remote.url, &remote.api_key).map_err(api_error)?;
    let RuntimeAccess {
        runtime_id,
        url,
        session_api_key: key,
        ..
    } = match api.session(&remote.session_id).await {
        Ok(found) if found.status != SessionStatus::Stopped => {
            if found.status == SessionStatus::Paused {
                api.resume(&found.access.runtime_id)
                    .await
                    .map_err(api_error)?;
            }
            tracing::info!(runtime_id = %found.access.runtime_id, "reusing the session's sandbox");
            found.access
        }
        Ok(_) | Err(ClientError::Http { status: 404, .. }) => {
            let mut command = vec![
                "sandboxd".to_string(),
                "8000".to_string(),
                "--working-dir".to_string(),
                WORKSPACE.to_string(),
            ];
            if !remote.plugins.is_empty() {
                command.push("--plugins".to_string());
                command.extend(remote.plugins.iter().cloned());
            }
            let started = api
                .start(&StartRequest {
                    image: remote.image.clone(),
                    command,
                    working_dir: None,
                    environment: remote.environment.clone(),
                    session_id: remote.session_id.clone(),
                    resource_factor: 1.0,
                    runtime_class: None,
                })
                .await
                .map_err(api_error)?;
            tracing::info!(runtime_id = %started.access.runtime_id, "started a sandbox");
            started.access
        }
        Err(e) => return Err(api_error(e)),
    };
    let sandbox = ApiSandbox {
        api,
        runtime_id,
        keep: remote.keep,
    };
    let ready = sandbox
        .api
        .wait_until_ready(&sandbox.runtime_id, config.startup_timeout)
        .await;
    let failure = match ready {
        Ok(Ok(())) => return Ok((sandbox, url, key)),
        Ok(Err(status)) => RuntimeError::RuntimeNotReady {
            runtime_id: sandbox.runtime_id.clone(),
            status: format!("{status:?}").to_lowercase(),
        },
        Err(e) => api_error(e),
    };
    if let Err(e) = sandbox.close().await {
        tracing::warn!(error = %e, "cannot stop a sandbox that did not become ready");
    }
    Err(failure)
}

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
