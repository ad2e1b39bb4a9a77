//! The status of the service's sandboxes: a runtime's pod status (`GET /runtime/{id}`) and a
//! session's (`GET /sessions/{sid}`), from whether sandboxd answers `/alive` and the backend's
//! state of the sandbox; a sandbox whose container died is forgotten and cleaned up.

use std::time::Duration;

use client::SandboxClient;
use protocol::runtime_api::{PodStatus, RuntimeStatusResponse, SessionResponse, SessionStatus};

use super::SandboxService;
use crate::serve::ServeError;
use crate::serve::auth::Caller;
use crate::serve::backend::SandboxState;
use crate::serve::table::Entry;

/// Deadline of a readiness probe of a sandboxd.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

impl SandboxService {
    /// `GET /runtime/{id}`: `pending` until sandboxd answers `/alive`.
    pub(crate) async fn runtime_status(
        &self,
        owner: &Caller,
        runtime_id: &str,
    ) -> Result<RuntimeStatusResponse, ServeError> {
        let entry = self.entry(owner, runtime_id).await?;
        let pod_status = self.pod_status(&entry).await;
        Ok(RuntimeStatusResponse {
            runtime_id: runtime_id.to_string(),
            pod_status,
            restart_count: 0,
            restart_reasons: Vec::new(),
        })
    }

    async fn pod_status(&self, entry: &Entry) -> PodStatus {
        if entry.paused {
            return PodStatus::Paused;
        }
        // sandboxd answers: ready (a configured warm sandbox answers as soon as `/start` did).
        if answers_alive(&self.probe, &entry.container.local_url).await {
            if !entry.ready {
                self.table.set_ready(&entry.claim.runtime_id);
            }
            return PodStatus::Ready;
        }
        if entry.ready {
            return if self.gone(entry).await {
                PodStatus::Failed
            } else {
                PodStatus::Ready
            };
        }
        match self.backend.state(&entry.container.id).await {
            Ok(state) => unanswered_pod_status(state),
            Err(e) => {
                tracing::warn!(runtime_id = %entry.claim.runtime_id, error = %e, "cannot inspect a sandbox");
                PodStatus::Pending
            }
        }
    }

    /// Whether the sandbox's container is no more, or no longer running (nor paused). A
    /// failed inspection says nothing: not gone.
    async fn gone(&self, entry: &Entry) -> bool {
        match self.backend.state(&entry.container.id).await {
            Ok(state) => is_gone(state),
            Err(e) => {
                tracing::warn!(runtime_id = %entry.claim.runtime_id, error = %e, "cannot inspect a sandbox");
                false
            }
        }
    }

    /// Forgets and cleans up a sandbox whose container died; says whether it had.
    pub(super) async fn reap_if_gone(&self, entry: &Entry) -> bool {
        if entry.paused || !self.gone(entry).await {
            return false;
        }
        let runtime_id = &entry.claim.runtime_id;
        tracing::warn!(%runtime_id, session = %entry.claim.session_id, "the sandbox died; forgetting it");
        self.table.remove(runtime_id);
        if let Err(e) = self.remove(entry).await {
            tracing::warn!(%runtime_id, error = %e, "cannot clean up a dead sandbox");
        }
        true
    }

    /// `GET /sessions/{sid}`: `stopped` for a sandbox whose container died (it is forgotten,
    /// so that the caller starts a new one).
    pub(crate) async fn session(
        &self,
        owner: &Caller,
        session_id: &str,
    ) -> Result<SessionResponse, ServeError> {
        if self.table.of_session(owner, session_id).is_none() {
            self.adopt_claimed().await;
        }
        let entry = self
            .table
            .of_session(owner, session_id)
            .ok_or_else(|| ServeError::NotFound(format!("no session {session_id}")))?;
        let status = if entry.paused {
            SessionStatus::Paused
        } else if self.reap_if_gone(&entry).await {
            SessionStatus::Stopped
        } else {
            SessionStatus::Running
        };
        Ok(SessionResponse {
            status,
            access: entry.access(),
        })
    }
}

/// Whether sandboxd at `local_url` answers `/alive` within [`PROBE_TIMEOUT`].
async fn answers_alive(http: &reqwest::Client, local_url: &str) -> bool {
    let Ok(client) = SandboxClient::with_http_client(local_url, None, http.clone()) else {
        return false;
    };
    tokio::time::timeout(PROBE_TIMEOUT, client.alive())
        .await
        .is_ok_and(|r| r.is_ok())
}

/// The pod status of a sandbox whose sandboxd did not answer `/alive`, by its container's
/// state: still coming up while the container runs, failed otherwise.
fn unanswered_pod_status(state: SandboxState) -> PodStatus {
    match state {
        SandboxState::Running | SandboxState::Starting => PodStatus::Pending,
        SandboxState::Paused | SandboxState::Down => PodStatus::Failed,
    }
}

/// Whether a sandbox in `state` no longer holds a sandbox: down (a swarm task being placed
/// is not gone).
fn is_gone(state: SandboxState) -> bool {
    state == SandboxState::Down
}

#[cfg(test)]
mod tests;
