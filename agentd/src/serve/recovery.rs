//! Recovery after a restart: the containers labelled with the service's name are matched with
//! the claims on disk. A claimed sandbox that runs or is paused goes back into the table (and
//! gets the configuration a killed service had not sent yet); an unclaimed running one joins
//! its image's pool if that is short of one; every other container is removed, and so is every
//! claim without a usable container.

use std::collections::HashMap;

use protocol::api::ConfigureRequest;

use super::backend::{Backend, Found, Profile, SandboxState, ServedSandbox, Warm};
use super::pool::{WarmPools, send_configuration};
use super::store::{Claim, ClaimStore};
use super::table::Entry;
use super::{ServeConfig, ServeError};

/// What becomes of one container found at start.
#[derive(Debug)]
enum Fate {
    /// Claimed, running or paused, reachable: back into the table.
    Reclaim(Reclaimed),
    /// Unclaimed and running, with its configuration key: a pool may take it.
    Pool {
        /// The sandbox image it runs.
        tag: String,
        warm: Warm,
    },
    /// Anything else: removed, with its claim if it has one.
    Remove { claim: Option<Claim> },
}

/// A claimed sandbox that is still there.
#[derive(Debug)]
struct Reclaimed {
    claim: Claim,
    container: ServedSandbox,
    paused: bool,
    /// The key to send a pending configuration with; `None` when its sandboxd cannot take
    /// one (it is paused, or its container has no key).
    configure_key: Option<String>,
}

/// Decides the fate of a sandbox found in the engine and its claim.
fn fate(found: &Found, claim: Option<Claim>) -> Fate {
    let Some(container) = found.container.clone() else {
        return Fate::Remove { claim };
    };
    let running = found.state == SandboxState::Running;
    let paused = found.state == SandboxState::Paused;
    let configure_key = found.configure_key.clone().filter(|_| running);
    match claim {
        Some(claim) if running || paused => Fate::Reclaim(Reclaimed {
            claim,
            container,
            paused,
            configure_key,
        }),
        Some(claim) => Fate::Remove { claim: Some(claim) },
        None => match configure_key {
            Some(configure_key) => Fate::Pool {
                tag: container.image.clone(),
                warm: Warm {
                    runtime_id: found.runtime_id.clone(),
                    container,
                    configure_key,
                },
            },
            None => Fate::Remove { claim: None },
        },
    }
}

/// Rebuilds the pools and returns the table's entries from the sandboxes labelled with this
/// service's name and their claims (in `store`, or on the sandboxes where the backend keeps
/// claims); removes what cannot be recovered.
///
/// Where claims live on the sandboxes, other replicas of the service may be running: a
/// sandbox being placed is left alone, and so is a warm one this replica's pools do not take
/// (another replica's pool may hold it).
pub(super) async fn recover(
    backend: &dyn Backend,
    store: &ClaimStore,
    config: &ServeConfig,
    pools: &WarmPools,
) -> Result<Vec<Entry>, ServeError> {
    let shared = backend.keeps_claims();
    let mut claims: HashMap<String, Claim> = if shared {
        HashMap::new()
    } else {
        store
            .load_all()?
            .into_iter()
            .map(|c| (c.runtime_id.clone(), c))
            .collect()
    };
    let sandboxes = backend.find(&config.name).await?;
    let mut entries = Vec::new();
    let mut warm = 0;
    let pooled = Profile::pooled(config).label(config);
    for found in sandboxes {
        if shared && found.state == SandboxState::Starting {
            continue;
        }
        let claim = if shared {
            found.claim.clone()
        } else {
            claims.remove(&found.runtime_id)
        };
        let kept = match fate(&found, claim) {
            Fate::Reclaim(reclaimed) => {
                entries.push(reclaim(backend, store, config, &found.id, reclaimed).await?);
                true
            }
            Fate::Pool { tag, warm: ready } => {
                // One made under another policy (sudo, app ports) is not handed out.
                let same_policy = found.profile.as_deref() == Some(pooled.as_str());
                let adopted = same_policy && pools.adopt(tag, ready);
                warm += usize::from(adopted);
                adopted || (shared && same_policy)
            }
            Fate::Remove { claim } => {
                if let Some(claim) = claim {
                    let _ = store.remove(&claim.runtime_id);
                }
                false
            }
        };
        if !kept {
            remove_left_behind(backend, &found).await;
        }
    }
    for runtime_id in claims.keys() {
        store.remove(runtime_id)?;
    }
    let recovered = entries.len();
    tracing::info!(recovered, warm, "recovered the previous run's sandboxes");
    Ok(entries)
}

/// The table's entry of a claimed sandbox found again, after sending the configuration a
/// killed service had not sent.
async fn reclaim(
    backend: &dyn Backend,
    store: &ClaimStore,
    config: &ServeConfig,
    id: &str,
    found: Reclaimed,
) -> Result<Entry, ServeError> {
    let Reclaimed {
        mut claim,
        container,
        paused,
        configure_key,
    } = found;
    if let Some(configure) = claim.pending_configuration.take() {
        let (runtime_id, local_url) = (&claim.runtime_id, &container.local_url);
        finish_configuration(runtime_id, local_url, configure_key.as_deref(), &configure).await;
        if backend.keeps_claims() {
            backend.put_claim(id, &claim, false).await?;
        } else {
            store.save(&claim)?;
        }
    }
    Ok(Entry::new(claim, container, paused, config))
}

/// Sends a sandboxd the configuration a service killed between the claim and the
/// configuration had not sent (a sandboxd that has it already refuses it, which changes
/// nothing).
async fn finish_configuration(
    runtime_id: &str,
    local_url: &str,
    configure_key: Option<&str>,
    configure: &ConfigureRequest,
) {
    let Some(key) = configure_key else {
        tracing::warn!(%runtime_id, "cannot finish the configuration of a sandbox");
        return;
    };
    let http = match reqwest::Client::builder().no_proxy().build() {
        Ok(http) => http,
        Err(e) => {
            tracing::warn!(%runtime_id, error = %e, "cannot make an HTTP client");
            return;
        }
    };
    match send_configuration(&http, local_url, key, configure).await {
        Ok(()) => tracing::info!(%runtime_id, "sent the configuration a killed service had not"),
        Err(e) => tracing::debug!(%runtime_id, error = %e, "the sandbox has its configuration"),
    }
}

/// Removes a sandbox recovery has no use for (best effort).
async fn remove_left_behind(backend: &dyn Backend, found: &Found) {
    let (runtime_id, state) = (&found.runtime_id, found.state);
    tracing::info!(%runtime_id, ?state, "removing a sandbox left behind");
    if let Err(e) = backend.remove(&found.id).await {
        tracing::warn!(%runtime_id, error = %e, "cannot remove a sandbox left behind");
    }
}

#[cfg(test)]
mod tests;
