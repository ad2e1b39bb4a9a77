//! Warm pools: per sandbox image, pre-started sandboxes (sandboxd waiting for its
//! configuration) that `/start` hands out, and the task that keeps each pool at its size, one
//! sandbox at a time, woken by every `/start`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use client::SandboxClient;
use protocol::api::ConfigureRequest;
use sandbox_common::random_hex;
use tokio::sync::{Notify, watch};

use super::{ServeConfig, ServeError, lock};
use crate::runtime::docker::{DockerHost, Egress, SandboxConfig, SandboxUser, labels};

/// Wait after a failed warm-sandbox creation before the next attempt.
const POOL_RETRY: Duration = Duration::from_secs(5);

/// One of the service's sandbox containers, as the service reaches it (waiting in a pool or
/// claimed).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SandboxContainer {
    /// The container's id.
    pub(super) id: String,
    /// sandboxd's URL from this host (published port on loopback).
    pub(super) local_url: String,
    /// The port published for sandboxd.
    pub(super) port: u16,
    /// Its app ports: container port → published host port.
    pub(super) app_ports: BTreeMap<u16, u16>,
    /// The sandbox image it runs.
    pub(super) image: String,
}

/// A pre-started sandbox waiting in a pool.
#[derive(Debug, Clone)]
pub(super) struct Warm {
    pub(super) runtime_id: String,
    pub(super) container: SandboxContainer,
    /// The key its `POST /configure` wants.
    pub(super) configure_key: String,
}

/// What a sandbox is made with beyond its image: the user it runs as, whether it may sudo, and
/// where it may connect (the egress policy is part of its network, made with the container).
/// Warm sandboxes are made with the service's default ([`Profile::pooled`]); a caller whose
/// profile differs gets a new container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Profile {
    pub(super) user: SandboxUser,
    pub(super) sudo: bool,
    pub(super) egress: Egress,
}

impl Profile {
    /// The profile of the service's warm sandboxes.
    pub(super) fn pooled(config: &ServeConfig) -> Profile {
        Profile {
            user: SandboxUser::default(),
            sudo: config.sandbox.sudo,
            egress: config.sandbox.egress.clone(),
        }
    }

    /// The [`labels::SERVE_PROFILE`] of a sandbox made with this profile by `config`'s service:
    /// a restarted service adopts only warm sandboxes with its own.
    pub(super) fn label(&self, config: &ServeConfig) -> String {
        format!(
            "user={};sudo={};app-ports={};egress={}",
            self.user, self.sudo, config.sandbox.app_ports, self.egress
        )
    }
}

/// The ready sandboxes per sandbox image tag, and how many to keep of each.
#[derive(Debug)]
pub(super) struct WarmPools {
    /// Sandbox image tag → how many to keep ready.
    targets: BTreeMap<String, usize>,
    /// Sandbox image tag → its ready sandboxes, oldest first.
    ready: Mutex<HashMap<String, VecDeque<Warm>>>,
    /// Wakes the filler.
    refill: Notify,
}

impl WarmPools {
    /// Empty pools that are to hold `targets` (sandbox image tag → size).
    pub(super) fn new(targets: BTreeMap<String, usize>) -> WarmPools {
        WarmPools {
            targets,
            ready: Mutex::default(),
            refill: Notify::new(),
        }
    }

    /// The oldest ready sandbox of `tag`.
    pub(super) fn take(&self, tag: &str) -> Option<Warm> {
        lock(&self.ready).get_mut(tag)?.pop_front()
    }

    /// Tells the filler to look at the pools again (a sandbox was taken or wanted).
    pub(super) fn wake_filler(&self) {
        self.refill.notify_one();
    }

    /// Empties every pool (the service stops cleanly: nobody will claim them).
    pub(super) fn drain(&self) -> Vec<Warm> {
        lock(&self.ready)
            .drain()
            .flat_map(|(_, pool)| pool)
            .collect()
    }

    /// Takes a ready sandbox found after a restart into the pool of `tag` if that pool is
    /// short of one; says whether it did (the caller removes it otherwise).
    pub(super) fn adopt(&self, tag: String, warm: Warm) -> bool {
        let wanted = self.target(&tag);
        let mut ready = lock(&self.ready);
        let pool = ready.entry(tag).or_default();
        if pool.len() >= wanted {
            return false;
        }
        pool.push_back(warm);
        true
    }

    /// How many sandboxes are ready, per tag.
    pub(super) fn sizes(&self) -> BTreeMap<String, usize> {
        lock(&self.ready)
            .iter()
            .map(|(tag, pool)| (tag.clone(), pool.len()))
            .collect()
    }

    fn target(&self, tag: &str) -> usize {
        self.targets.get(tag).copied().unwrap_or(0)
    }

    /// Whether the pool of `tag` is below its size.
    fn is_short(&self, tag: &str) -> bool {
        lock(&self.ready).get(tag).map_or(0, VecDeque::len) < self.target(tag)
    }

    fn push(&self, tag: &str, warm: Warm) {
        lock(&self.ready)
            .entry(tag.to_string())
            .or_default()
            .push_back(warm);
    }

    /// Keeps every pool at its size until `stop` turns true: one sandbox at a time, woken by
    /// [`Self::wake_filler`]; after a failed creation, again after [`POOL_RETRY`].
    pub(super) async fn fill(
        &self,
        docker: &DockerHost,
        config: &ServeConfig,
        mut stop: watch::Receiver<bool>,
    ) {
        loop {
            let mut failed = false;
            for tag in self.targets.keys() {
                while self.is_short(tag) && !*stop.borrow() {
                    match create_warm(docker, config, tag, Profile::pooled(config)).await {
                        Ok(warm) => self.push(tag, warm),
                        Err(e) => {
                            tracing::warn!(%tag, error = %e, "cannot create a warm sandbox");
                            failed = true;
                            break;
                        }
                    }
                }
            }
            let retry = async {
                if failed {
                    tokio::time::sleep(POOL_RETRY).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                () = self.refill.notified() => {}
                () = retry => {}
                _ = stop.changed() => return,
            }
        }
    }
}

/// Creates one pre-started sandbox of `tag` with the service's base limits and `profile`.
pub(super) async fn create_warm(
    docker: &DockerHost,
    config: &ServeConfig,
    tag: &str,
    profile: Profile,
) -> Result<Warm, ServeError> {
    let runtime_id = format!(
        "rt-{}",
        random_hex(8).map_err(|e| ServeError::Internal(e.to_string()))?
    );
    let sandbox_config = SandboxConfig {
        image: tag.to_string(),
        plugins: Vec::new(),
        limits: config.limits.clone(),
        publish_address: config.publish_address.clone(),
        await_configuration: true,
        user: Some(profile.user),
        sudo: profile.sudo,
        egress: profile.egress.clone(),
        name: Some(runtime_id.clone()),
        labels: BTreeMap::from([
            (labels::SERVE_NAME.to_string(), config.name.clone()),
            (labels::SERVE_RUNTIME_ID.to_string(), runtime_id.clone()),
            (labels::SERVE_PROFILE.to_string(), profile.label(config)),
        ]),
        ..config.sandbox.clone()
    };
    let sandbox = docker.up(&sandbox_config, None).await?;
    let port = port_of(&sandbox.url).ok_or_else(|| {
        ServeError::Internal(format!("sandbox {} has no published port", sandbox.name))
    })?;
    Ok(Warm {
        runtime_id,
        container: SandboxContainer {
            id: sandbox.id,
            local_url: sandbox.url,
            port,
            app_ports: sandbox.app_ports,
            image: tag.to_string(),
        },
        configure_key: sandbox.session_api_key,
    })
}

/// Sends a waiting sandboxd its configuration, through `http`; returns once sandboxd took it
/// (it is then ready, or restarting with it).
pub(super) async fn send_configuration(
    http: &reqwest::Client,
    local_url: &str,
    configure_key: &str,
    configure: &ConfigureRequest,
) -> Result<(), client::ClientError> {
    SandboxClient::with_http_client(local_url, Some(configure_key.to_string()), http.clone())?
        .configure(configure)
        .await
}

/// The port of `http://host:PORT`.
pub(super) fn port_of(url: &str) -> Option<u16> {
    url.rsplit(':').next()?.trim_end_matches('/').parse().ok()
}

#[cfg(test)]
mod tests;
