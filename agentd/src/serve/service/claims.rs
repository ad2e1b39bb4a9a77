//! The service's claims: a sandbox handed to a caller is claimed (its runtime id, session,
//! owner, key and, until sandboxd took it, its configuration) in the state directory or, where
//! the backend keeps claims for replicas sharing one cluster, on the sandbox itself; a replica
//! adopts the sandboxes other replicas claimed, and claims a warm one for its removal.

use protocol::api::ConfigureRequest;
use protocol::runtime_api::StartRequest;
use sandbox_common::random_hex;

use super::SandboxService;
use crate::runtime::docker::Limits;
use crate::serve::ServeError;
use crate::serve::auth::Caller;
use crate::serve::backend::{SandboxState, Warm};
use crate::serve::command;
use crate::serve::pool::send_configuration;
use crate::serve::store::Claim;
use crate::serve::table::Entry;

impl SandboxService {
    /// Writes `claim` of sandbox `id`: on the sandbox when the backend keeps claims (with
    /// `first`, only if no replica claimed it yet: `Ok(false)` then), else in the state
    /// directory.
    async fn save_claim(&self, id: &str, claim: &Claim, first: bool) -> Result<bool, ServeError> {
        if self.backend.keeps_claims() {
            return self.backend.put_claim(id, claim, first).await;
        }
        self.store.save(claim)?;
        Ok(true)
    }

    /// Forgets the claim of `runtime_id` kept in the state directory (a backend's claims go
    /// with their sandbox).
    pub(super) fn forget_claim(&self, runtime_id: &str) {
        if !self.backend.keeps_claims() {
            let _ = self.store.remove(runtime_id);
        }
    }

    /// Gives `warm` to the caller: the claim, its limits (`resize`, when they differ from
    /// those it was made with), then its configuration. `None`: another replica claimed it
    /// first.
    pub(super) async fn claim(
        &self,
        owner: &Caller,
        request: &StartRequest,
        args: Vec<String>,
        warm: Warm,
        resize: Option<&Limits>,
    ) -> Result<Option<Entry>, ServeError> {
        let session_api_key = random_hex(32).map_err(|e| ServeError::Internal(e.to_string()))?;
        let claim = Claim {
            runtime_id: warm.runtime_id.clone(),
            session_id: request.session_id.clone(),
            owner: owner.as_str().to_string(),
            image: request.image.clone(),
            session_api_key: session_api_key.clone(),
            created_at: chrono::Utc::now().to_rfc3339(),
            pending_configuration: Some(ConfigureRequest {
                args,
                env: command::environment(&request.environment, &session_api_key),
            }),
        };
        if !self.save_claim(&warm.container.id, &claim, true).await? {
            return Ok(None);
        }
        if let Some(limits) = resize {
            self.backend
                .update_limits(&warm.container.id, limits)
                .await?;
        }
        let mut claim = claim;
        if let Some(configure) = claim.pending_configuration.take() {
            send_configuration(
                &self.probe,
                &warm.container.local_url,
                &warm.configure_key,
                &configure,
            )
            .await
            .map_err(|e| match e {
                client::ClientError::Http {
                    status: 400,
                    detail,
                    ..
                } => ServeError::BadRequest(detail),
                other => ServeError::Client(other),
            })?;
        }
        // sandboxd has its configuration: the caller's environment leaves the claim.
        self.save_claim(&warm.container.id, &claim, false).await?;
        Ok(Some(Entry::new(claim, warm.container, false, &self.config)))
    }

    /// Where the backend keeps claims, takes into the table the claimed sandboxes other
    /// replicas of the service started (the cluster is the state; each replica's table is a
    /// view of it).
    pub(super) async fn adopt_claimed(&self) {
        if !self.backend.keeps_claims() {
            return;
        }
        let found = match self.backend.find(&self.config.name).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "cannot look for other replicas' sandboxes");
                return;
            }
        };
        for sandbox in found {
            let (Some(claim), Some(container)) = (sandbox.claim, sandbox.container) else {
                continue;
            };
            let Some(paused) = adoptable(sandbox.state) else {
                continue;
            };
            if self.table.get(&claim.runtime_id).is_none() {
                self.table
                    .insert(Entry::new(claim, container, paused, &self.config));
            }
        }
    }

    /// Claims `warm` for its removal (no session, no owner) where the backend keeps claims:
    /// whether this replica got it first (another replica may have handed it out).
    pub(super) async fn claim_for_removal(&self, warm: &Warm) -> bool {
        match self
            .backend
            .put_claim(&warm.container.id, &removal_claim(&warm.runtime_id), true)
            .await
        {
            Ok(taken) => taken,
            Err(e) => {
                tracing::warn!(runtime_id = %warm.runtime_id, error = %e, "cannot claim a warm sandbox for removal");
                false
            }
        }
    }
}

/// Whether a claimed sandbox another replica started is taken into the table, by its state:
/// `Some(paused)` for one running or paused, `None` for one being placed or gone.
fn adoptable(state: SandboxState) -> Option<bool> {
    match state {
        SandboxState::Running => Some(false),
        SandboxState::Paused => Some(true),
        SandboxState::Starting | SandboxState::Down => None,
    }
}

/// The claim that takes a warm sandbox for its removal: no session, no owner.
fn removal_claim(runtime_id: &str) -> Claim {
    Claim {
        runtime_id: runtime_id.to_string(),
        session_id: String::new(),
        owner: String::new(),
        image: String::new(),
        session_api_key: String::new(),
        created_at: chrono::Utc::now().to_rfc3339(),
        pending_configuration: None,
    }
}

#[cfg(test)]
mod tests;
