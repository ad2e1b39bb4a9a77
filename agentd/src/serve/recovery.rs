//! Recovery after a restart: the containers labelled with the service's name are matched with
//! the claims on disk. A claimed sandbox that runs or is paused goes back into the table (and
//! gets the configuration a killed service had not sent yet); an unclaimed running one joins
//! its image's pool if that is short of one; every other container is removed, and so is every
//! claim without a usable container.

use std::collections::HashMap;

use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};
use protocol::api::ConfigureRequest;

use super::pool::{Profile, SandboxContainer, Warm, WarmPools, port_of, send_configuration};
use super::store::{Claim, ClaimStore};
use super::table::Entry;
use super::{ServeConfig, ServeError};
use crate::runtime::docker::{DockerHost, app_ports_of, label, labels, state_of, url_of};

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
    container: SandboxContainer,
    paused: bool,
    /// The key to send a pending configuration with; `None` when its sandboxd cannot take
    /// one (it is paused, or its container has no key).
    configure_key: Option<String>,
}

/// Decides the fate of an inspected container and its claim.
fn fate(inspect: &ContainerInspectResponse, claim: Option<Claim>) -> Fate {
    let state = state_of(inspect);
    let local_url = url_of(inspect);
    let port = local_url.as_deref().and_then(port_of);
    let (Some(local_url), Some(port)) = (local_url, port) else {
        return Fate::Remove { claim };
    };
    let running = state == Some(ContainerStateStatusEnum::RUNNING);
    let paused = state == Some(ContainerStateStatusEnum::PAUSED);
    let container = SandboxContainer {
        id: inspect.id.clone().unwrap_or_default(),
        local_url,
        port,
        app_ports: app_ports_of(inspect),
        image: inspect
            .config
            .as_ref()
            .and_then(|c| c.image.clone())
            .unwrap_or_default(),
    };
    match claim {
        Some(claim) if running || paused => Fate::Reclaim(Reclaimed {
            claim,
            container,
            paused,
            configure_key: configure_key(inspect).filter(|_| running),
        }),
        Some(claim) => Fate::Remove { claim: Some(claim) },
        None => match configure_key(inspect).filter(|_| running) {
            Some(configure_key) => Fate::Pool {
                tag: container.image.clone(),
                warm: Warm {
                    runtime_id: label(inspect, labels::SERVE_RUNTIME_ID)
                        .unwrap_or_default()
                        .to_string(),
                    container,
                    configure_key,
                },
            },
            None => Fate::Remove { claim: None },
        },
    }
}

/// The key a waiting sandboxd takes its configuration with (in its container's environment).
fn configure_key(inspect: &ContainerInspectResponse) -> Option<String> {
    inspect
        .config
        .as_ref()?
        .env
        .as_ref()?
        .iter()
        .find_map(|kv| {
            kv.strip_prefix("SANDBOXD_CONFIGURE_KEY=")
                .map(str::to_string)
        })
}

/// Rebuilds the pools and returns the table's entries from the containers labelled with this
/// service's name and the claims in `store`; removes what cannot be recovered.
pub(super) async fn recover(
    docker: &DockerHost,
    store: &ClaimStore,
    config: &ServeConfig,
    pools: &WarmPools,
) -> Result<Vec<Entry>, ServeError> {
    let mut claims: HashMap<String, Claim> = store
        .load_all()?
        .into_iter()
        .map(|c| (c.runtime_id.clone(), c))
        .collect();
    let containers = docker
        .inspect_labelled(labels::SERVE_NAME, &config.name)
        .await?;
    let mut entries = Vec::new();
    let mut warm = 0;
    let pooled = Profile::pooled(config).label(config);
    for inspect in containers {
        let runtime_id = label(&inspect, labels::SERVE_RUNTIME_ID).unwrap_or_default();
        let kept = match fate(&inspect, claims.remove(runtime_id)) {
            Fate::Reclaim(found) => {
                entries.push(reclaim(store, config, found).await?);
                true
            }
            Fate::Pool { tag, warm: found } => {
                // One made under another policy (sudo, app ports) is not handed out.
                let same_policy = label(&inspect, labels::SERVE_PROFILE) == Some(pooled.as_str());
                let adopted = same_policy && pools.adopt(tag, found);
                warm += usize::from(adopted);
                adopted
            }
            Fate::Remove { claim } => {
                if let Some(claim) = claim {
                    let _ = store.remove(&claim.runtime_id);
                }
                false
            }
        };
        if !kept {
            remove_left_behind(docker, &inspect, runtime_id).await;
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
    store: &ClaimStore,
    config: &ServeConfig,
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
        store.save(&claim)?;
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

/// Removes a container recovery has no use for (best effort).
async fn remove_left_behind(
    docker: &DockerHost,
    inspect: &ContainerInspectResponse,
    runtime_id: &str,
) {
    let status = state_of(inspect)
        .as_ref()
        .map_or("", AsRef::as_ref)
        .to_string();
    tracing::info!(%runtime_id, %status, "removing a sandbox left behind");
    let id = inspect.id.as_deref().unwrap_or_default();
    if let Err(e) = docker.down(id).await {
        tracing::warn!(%runtime_id, error = %e, "cannot remove a sandbox left behind");
    }
}

#[cfg(test)]
mod tests;
