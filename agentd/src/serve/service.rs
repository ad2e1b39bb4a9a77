//! [`SandboxService`]: the one owner of the service's sandboxes, and the runtime API's
//! operations on them: `/start`, `/stop`, `/pause`, `/resume`, and the status of runtimes and
//! sessions. It holds the claimed sandboxes (`table.rs`), the warm pools (`pool.rs`) and the
//! sandbox images (`images.rs`); it recovers a previous run's sandboxes when it opens
//! (`recovery.rs`) and runs the pool filler and the idle reaper (`reaper.rs`). Its locks are
//! `std` mutexes never held across an `.await`; Docker and HTTP calls happen between lock
//! scopes.
//!
//! Every sandbox is created pre-started (sandboxd `--await-configuration`); `/start` takes one
//! from the image's warm pool, or creates one when the pool is empty, and configures it with
//! the caller's arguments, environment and a fresh session key: one local HTTP call.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use protocol::runtime_api::{
    BuildResponse, BuildStatusResponse, ImageExistsResponse, RuntimeList, RuntimeStateResponse,
    SessionStatus, StartRequest, StartResponse,
};
use tokio::sync::watch;

use super::auth::{self, ApiKeys, Caller};
use super::backend::{Backend, Profile};
use super::builds::{self, BuildRequest, Builds};
use super::capacity::HostCapacity;
use super::images::SandboxImages;
use super::pool::{self, WarmPools};
use super::store::ClaimStore;
use super::table::{Begin, Entry, Table};
use super::{ServeConfig, ServeError, command, reaper, recovery};
use crate::runtime::docker::{Egress, UserError, image};

/// Largest `resource_factor` accepted.
const MAX_RESOURCE_FACTOR: f64 = 16.0;

/// The sandboxes of one service.
#[derive(Debug)]
pub(crate) struct SandboxService {
    config: ServeConfig,
    /// The engine the sandboxes run on.
    backend: Box<dyn Backend>,
    keys: ApiKeys,
    store: ClaimStore,
    table: Table,
    pools: WarmPools,
    images: SandboxImages,
    /// Callers whose sandboxes may use sudo although the service's policy is off.
    sudoers: HashSet<Caller>,
    /// Callers whose sandboxes have an egress policy of their own.
    key_egress: HashMap<Caller, Egress>,
    builds: Builds,
    /// One HTTP client for every readiness probe and configuration (a client per call costs
    /// milliseconds).
    probe: reqwest::Client,
    /// The front door's client of the sandboxes.
    front: reqwest::Client,

    /// What the host can give one sandbox (checked against each `resource_factor`).
    capacity: HostCapacity,
}

/// Refuses a setting (`name`) that lists a key which is not one of `api_keys`, showing only
/// the key's first four characters.
fn only_api_keys<'a>(
    name: &str,
    keys: impl IntoIterator<Item = &'a String>,
    api_keys: &[String],
) -> Result<(), ServeError> {
    match keys.into_iter().find(|k| !api_keys.contains(k)) {
        Some(stranger) => {
            let shown: String = stranger.chars().take(4).collect();
            Err(ServeError::Config(format!(
                "{name} holds a key ({shown}...) that is not one of api_keys"
            )))
        }
        None => Ok(()),
    }
}

impl SandboxService {
    /// Connects to Docker, makes the pool images sandbox images, and recovers the sandboxes a
    /// previous run of this service left (by label, with their claims from the state directory).
    pub(crate) async fn open(config: ServeConfig) -> Result<SandboxService, ServeError> {
        let keys = ApiKeys::new(config.api_keys.iter().map(String::as_str));
        if keys.is_empty() {
            return Err(ServeError::Config(
                "no API key: pass --api-key, set AGENTD_API_KEYS or [serve] api_keys".to_string(),
            ));
        }
        only_api_keys("sudo_keys", &config.sudo_keys, &config.api_keys)?;
        let sudoers = config
            .sudo_keys
            .iter()
            .map(|k| auth::caller_of(k))
            .collect();
        only_api_keys("egress_keys", config.egress_keys.keys(), &config.api_keys)?;
        let key_egress = config
            .egress_keys
            .iter()
            .map(|(k, egress)| (auth::caller_of(k), egress.clone()))
            .collect();
        let backend = super::backend::connect(&config).await?;
        tracing::info!(backend = backend.kind(), "sandboxes run on this backend");
        let engine = backend.engine();
        let capacity = HostCapacity::of(engine).await?;
        let store = ClaimStore::open(&config.state_dir)?;
        let images = SandboxImages::new(&config);
        let mut targets = BTreeMap::new();
        let tag = images.sandbox_image(engine, &config.default_image).await?;
        targets.insert(tag, config.pool_size);
        for (image, size) in &config.pools {
            let tag = images.sandbox_image(engine, image).await?;
            *targets.entry(tag).or_default() += size;
        }
        let pools = WarmPools::new(targets);
        let table = Table::default();
        for entry in recovery::recover(&*backend, &store, &config, &pools).await? {
            table.insert(entry);
        }
        Ok(SandboxService {
            config,
            backend,
            keys,
            store,
            table,
            pools,
            images,
            sudoers,
            key_egress,
            builds: Builds::default(),
            probe: reqwest::Client::builder()
                .no_proxy()
                .build()
                .map_err(|e| ServeError::Internal(format!("cannot make an HTTP client: {e}")))?,
            front: super::front_door::client()
                .map_err(|e| ServeError::Internal(format!("cannot make an HTTP client: {e}")))?,
            capacity,
        })
    }

    /// Sandbox `runtime_id`, for the front door (whoever owns it; also one another replica
    /// started).
    pub(super) async fn front(&self, runtime_id: &str) -> Option<Entry> {
        if self.table.get(runtime_id).is_none() {
            self.adopt_claimed().await;
        }
        self.table.get(runtime_id)
    }

    /// The front door's HTTP client.
    pub(super) fn front_client(&self) -> &reqwest::Client {
        &self.front
    }

    /// The largest `POST /build` body.
    pub(crate) fn max_build_bytes(&self) -> usize {
        self.config.max_build_bytes
    }

    /// The configured keys.
    pub(crate) fn keys(&self) -> &ApiKeys {
        &self.keys
    }

    /// The prefix callers would push images under (`GET /registry_prefix`).
    pub(crate) fn registry_prefix(&self) -> &str {
        &self.config.registry_prefix
    }

    /// `GET /image_exists`: whether the service has `image` (itself, or the local image the
    /// operator mapped it to), so that `/start` runs it as itself; what the caller's client
    /// logs about it.
    pub(crate) async fn image_exists(
        &self,
        image: &str,
    ) -> Result<ImageExistsResponse, ServeError> {
        let info = self.images.local_info(self.backend.engine(), image).await?;
        Ok(ImageExistsResponse {
            exists: info.is_some(),
            image: info,
        })
    }

    /// `POST /build`: makes the sandbox image of the context's base image and tags it as
    /// `target_image` and `tags` (see [`super::builds`]). The build is done when this returns.
    pub(crate) async fn build(
        &self,
        owner: &Caller,
        request: BuildRequest,
    ) -> Result<BuildResponse, ServeError> {
        let Some(docker) = self.backend.engine() else {
            return Err(ServeError::Unsupported(format!(
                "the {} backend builds no images: build the sandbox image on a Docker host (agentd image build), publish it where the nodes pull from (a registry, or ctr import on each node), map the caller's image to it ([serve] images) and set SANDBOX_RUNTIME_CONTAINER_IMAGE, so that the client builds nothing",
                self.backend.kind()
            )));
        };
        let result = self.run_build(docker, &request).await;
        let build_id = self.builds.record(owner, &request.target_image, result)?;
        Ok(BuildResponse { build_id })
    }

    async fn run_build(
        &self,
        docker: &bollard::Docker,
        request: &BuildRequest,
    ) -> Result<(), String> {
        let base = builds::base_image(&request.context)?;
        let local = match self.images.local_info(Some(docker), &base).await {
            Ok(Some(_)) => self.images.configured_or_itself(&base),
            Ok(None) => {
                return Err(format!(
                    "the base image {base} is not on this host, and this service pulls from no registry: load it into the host's Docker engine (docker load, agentd image import) or map it to a local image ([serve] images)"
                ));
            }
            Err(e) => return Err(e.to_string()),
        };
        let tag = self
            .images
            .sandbox_image(Some(docker), &local)
            .await
            .map_err(|e| e.to_string())?;
        for name in std::iter::once(&request.target_image).chain(&request.tags) {
            image::tag(docker, &tag, name)
                .await
                .map_err(|e| e.to_string())?;
        }
        tracing::info!(%base, %tag, target = %request.target_image, "built a runtime image: the sandbox image of its base");
        Ok(())
    }

    /// `GET /build_status`.
    pub(crate) fn build_status(
        &self,
        owner: &Caller,
        build_id: &str,
    ) -> Result<BuildStatusResponse, ServeError> {
        self.builds
            .status(owner, build_id)
            .ok_or_else(|| ServeError::NotFound(format!("no build {build_id}")))
    }

    /// The egress policy of `owner`'s sandboxes of caller image `image`: the key's, else the
    /// image's, else the service's.
    fn egress_of(&self, owner: &Caller, image: &str) -> &Egress {
        self.key_egress
            .get(owner)
            .or_else(|| self.config.egress_images.get(image))
            .unwrap_or(&self.config.sandbox.egress)
    }

    /// Whether `owner`'s sandboxes may use sudo.
    fn may_sudo(&self, owner: &Caller) -> bool {
        self.config.sandbox.sudo || self.sudoers.contains(owner)
    }

    /// `POST /start`.
    pub(crate) async fn start(
        &self,
        owner: &Caller,
        request: StartRequest,
    ) -> Result<StartResponse, ServeError> {
        let args = command::sandboxd_args(&request.command, self.backend.sandboxd_port())
            .map_err(ServeError::BadRequest)?;
        let user = command::requested_user(&args).map_err(ServeError::BadRequest)?;
        if user.is_root() && !self.config.sandbox.allow_root {
            return Err(ServeError::Forbidden(UserError::RootRequested.to_string()));
        }
        let factor = request.resource_factor;
        if !(factor.is_finite() && factor > 0.0 && factor <= MAX_RESOURCE_FACTOR) {
            return Err(ServeError::BadRequest(format!(
                "resource_factor must be above 0 and at most {MAX_RESOURCE_FACTOR}"
            )));
        }
        self.capacity.check(&self.config.limits, factor)?;
        if let Some(class) = &request.runtime_class {
            self.backend.check_runtime_class(class)?;
        }
        if request.session_id.is_empty() {
            return Err(ServeError::BadRequest("session_id is empty".to_string()));
        }
        let sid = request.session_id.clone();
        if self.table.of_session(owner, &sid).is_none() {
            // Another replica may run it.
            self.adopt_claimed().await;
        }
        // A session whose container died is started anew, not handed out again.
        if let Some(entry) = self.table.of_session(owner, &sid) {
            self.reap_if_gone(&entry).await;
        }
        let _starting = match self.table.begin_start(owner, &sid)? {
            Begin::Running(response) => return Ok(response),
            Begin::New(starting) => starting,
        };
        let tag = self
            .images
            .for_caller(self.backend.engine(), &request.image)
            .await?;
        // Warm sandboxes have the service's profile (the image's sandbox user, the service's
        // sudo policy); another profile gets a new container.
        let profile = Profile {
            user,
            sudo: self.may_sudo(owner),
            egress: self.egress_of(owner, &request.image).clone(),
            runtime_class: request.runtime_class.clone(),
        };
        // Another factor scales a warm sandbox's limits once claimed, or, on a backend that
        // cannot change them, is the limits of a sandbox made for this start.
        let scaled = (factor != 1.0).then(|| self.config.limits.scaled(factor));
        let (made_with, resize) = match scaled {
            Some(limits) if !self.backend.resizes() => (Some(limits), None),
            other => (None, other),
        };
        let pooled_profile = profile == Profile::pooled(&self.config) && made_with.is_none();
        let limits = made_with.as_ref().unwrap_or(&self.config.limits);
        loop {
            let pooled = pooled_profile.then(|| self.pools.take(&tag)).flatten();
            let warm = match pooled {
                Some(warm) => warm,
                None => {
                    tracing::info!(%tag, %user, sudo = profile.sudo, runtime_class = ?profile.runtime_class, "no warm sandbox: creating one");
                    pool::create_warm(&*self.backend, &self.config, &tag, &profile, limits).await?
                }
            };
            self.pools.wake_filler();
            match self
                .claim(owner, &request, args.clone(), warm.clone(), resize.as_ref())
                .await
            {
                Ok(Some(entry)) => {
                    let response = entry.start_response();
                    tracing::info!(runtime_id = %entry.claim.runtime_id, session = %sid, "started");
                    self.table.insert(entry);
                    return Ok(response);
                }
                Ok(None) => {
                    // Another replica of the service claimed it first: it is theirs.
                    tracing::info!(runtime_id = %warm.runtime_id, "a warm sandbox another replica took; taking the next");
                }
                Err(e) => {
                    if let Err(down) = self.backend.remove(&warm.container.id).await {
                        tracing::warn!(runtime_id = %warm.runtime_id, error = %down, "cannot remove a sandbox that failed to start");
                    }
                    self.forget_claim(&warm.runtime_id);
                    return Err(e);
                }
            }
        }
    }

    /// The caller's entry for a runtime id (another key's sandboxes are not found), also one
    /// another replica started.
    async fn entry(&self, owner: &Caller, runtime_id: &str) -> Result<Entry, ServeError> {
        if self.table.owned(owner, runtime_id).is_none() {
            self.adopt_claimed().await;
        }
        self.table
            .owned(owner, runtime_id)
            .ok_or_else(|| ServeError::NotFound(format!("no runtime {runtime_id}")))
    }

    /// `GET /runtimes`: the caller's sandboxes, and the pools' sizes.
    pub(crate) fn list(&self, owner: &Caller) -> RuntimeList {
        RuntimeList {
            runtimes: self.table.summaries(owner),
            warm: self.pools.sizes(),
        }
    }

    /// `POST /stop`: removes the sandbox and forgets its session.
    pub(crate) async fn stop(
        &self,
        owner: &Caller,
        runtime_id: &str,
    ) -> Result<RuntimeStateResponse, ServeError> {
        self.entry(owner, runtime_id).await?;
        let Some(entry) = self.table.remove(runtime_id) else {
            return Err(ServeError::NotFound(format!("no runtime {runtime_id}")));
        };
        self.remove(&entry).await?;
        tracing::info!(%runtime_id, session = %entry.claim.session_id, "stopped");
        Ok(RuntimeStateResponse {
            runtime_id: runtime_id.to_string(),
            status: SessionStatus::Stopped,
        })
    }

    /// Removes a sandbox's container and its claim.
    async fn remove(&self, entry: &Entry) -> Result<(), ServeError> {
        if entry.paused {
            // A paused container cannot be killed; thaw it first.
            let _ = self.backend.unpause(&entry.container.id).await;
        }
        self.backend.remove(&entry.container.id).await?;
        if !self.backend.keeps_claims() {
            self.store.remove(&entry.claim.runtime_id)?;
        }
        Ok(())
    }

    /// `POST /pause`: freezes the sandbox (`docker pause`); its data plane does not answer
    /// until `/resume`.
    pub(crate) async fn pause(
        &self,
        owner: &Caller,
        runtime_id: &str,
    ) -> Result<RuntimeStateResponse, ServeError> {
        let entry = self.entry(owner, runtime_id).await?;
        if !entry.paused {
            self.backend.pause(&entry.container.id).await?;
            self.table.set_paused(runtime_id, true);
        }
        Ok(RuntimeStateResponse {
            runtime_id: runtime_id.to_string(),
            status: SessionStatus::Paused,
        })
    }

    /// `POST /resume`: thaws a paused sandbox; its processes and files are as they were.
    pub(crate) async fn resume(
        &self,
        owner: &Caller,
        runtime_id: &str,
    ) -> Result<RuntimeStateResponse, ServeError> {
        let entry = self.entry(owner, runtime_id).await?;
        if entry.paused {
            self.backend.unpause(&entry.container.id).await?;
            self.table.set_paused(runtime_id, false);
        }
        Ok(RuntimeStateResponse {
            runtime_id: runtime_id.to_string(),
            status: SessionStatus::Running,
        })
    }

    /// Removes the warm sandboxes (on a clean stop: a restart makes new ones). Claimed
    /// sandboxes stay, for the next start to recover.
    pub(crate) async fn drain_pools(&self) {
        let mut drained = self.pools.drain();
        if self.backend.keeps_claims() {
            // Another replica may have handed one out: remove only those this replica can
            // claim first (for removal: no session, no owner).
            let mut ours = Vec::new();
            for warm in drained {
                if self.claim_for_removal(&warm).await {
                    ours.push(warm);
                }
            }
            drained = ours;
        }
        let removals = drained
            .iter()
            .map(|warm| self.backend.remove(&warm.container.id));
        for (warm, result) in drained
            .iter()
            .zip(futures_util::future::join_all(removals).await)
        {
            if let Err(e) = result {
                tracing::warn!(runtime_id = %warm.runtime_id, error = %e, "cannot remove a warm sandbox");
            }
        }
        tracing::info!(removed = drained.len(), "removed the warm sandboxes");
    }

    /// Keeps every warm pool at its size until `stop` turns true: one sandbox at a time, woken
    /// by each `/start` that took one.
    pub(crate) async fn fill_pools(self: Arc<Self>, stop: watch::Receiver<bool>) {
        self.pools.fill(&*self.backend, &self.config, stop).await;
    }

    /// Stops sandboxes whose sandboxd reports more than the idle timeout without an action,
    /// until `stop` turns true. Paused sandboxes are left alone.
    pub(crate) async fn reap_idle(self: Arc<Self>, stop: watch::Receiver<bool>) {
        let Some(timeout) = self.config.idle_timeout else {
            return;
        };
        let service = &*self;
        reaper::run(&self.table, timeout, stop, |entry| async move {
            service.remove(&entry).await
        })
        .await;
    }
}

mod claims;
mod status;

#[cfg(test)]
mod tests;
