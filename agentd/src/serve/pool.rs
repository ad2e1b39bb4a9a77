//! Warm pools: per sandbox image, pre-started sandboxes (sandboxd waiting for its
//! configuration) that `/start` hands out, and the task that keeps each pool at its size, one
//! sandbox at a time, woken by every `/start`. The sandboxes themselves are the backend's.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use client::SandboxClient;
use protocol::api::ConfigureRequest;
use sandbox_common::random_hex;
use tokio::sync::{Notify, watch};

use super::backend::{Backend, Profile, Spec, Warm};
use super::{ServeConfig, ServeError, lock};
use crate::runtime::docker::Limits;

/// Wait after a failed warm-sandbox creation before the next attempt.
const POOL_RETRY: Duration = Duration::from_secs(5);

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
        backend: &dyn Backend,
        config: &ServeConfig,
        mut stop: watch::Receiver<bool>,
    ) {
        loop {
            let mut failed = false;
            for tag in self.targets.keys() {
                while self.is_short(tag) && !*stop.borrow() {
                    let profile = Profile::pooled(config);
                    match create_warm(backend, config, tag, &profile, &config.limits).await {
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

/// Creates one pre-started sandbox of `tag` with `profile` and `limits`.
pub(super) async fn create_warm(
    backend: &dyn Backend,
    config: &ServeConfig,
    tag: &str,
    profile: &Profile,
    limits: &Limits,
) -> Result<Warm, ServeError> {
    let runtime_id = format!(
        "rt-{}",
        random_hex(8).map_err(|e| ServeError::Internal(e.to_string()))?
    );
    let spec = Spec {
        runtime_id: &runtime_id,
        tag,
        profile,
        limits,
    };
    backend.create(config, spec).await
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

#[cfg(test)]
mod tests;
