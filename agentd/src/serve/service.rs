//! [`SandboxService`]: the one owner of the service's sandboxes. It keeps the table of claimed
//! sandboxes (by runtime id, each with its session, owner and keys) and the warm pools (ready,
//! unclaimed sandboxes per image), behind short-lived `std` mutexes that are never held across
//! an `.await`; Docker and HTTP calls happen between lock scopes.
//!
//! Every sandbox is created pre-started (sandboxd `--await-configuration`); `/start` takes one
//! from the image's warm pool, or creates one when the pool is empty, and configures it with
//! the caller's arguments, environment and a fresh session key: one local HTTP call.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bollard::models::ContainerStateStatusEnum;
use client::SandboxClient;
use protocol::api::ConfigureRequest;
use protocol::runtime_api::{
    PodStatus, RuntimeList, RuntimeStateResponse, RuntimeStatusResponse, RuntimeSummary,
    SessionResponse, SessionStatus, StartRequest, StartResponse,
};
use sandbox_common::random_hex;
use tokio::sync::{Notify, watch};

use super::auth::{ApiKeys, Owner};
use super::store::{Claim, Store};
use super::{ServeConfig, ServeError, command};
use crate::runtime::docker::image;
use crate::runtime::docker::{
    DockerError, DockerRuntime, SandboxConfig, SandboxUser, UserError, label, labels, state_of,
    url_of,
};

/// Largest `resource_factor` accepted.
const MAX_RESOURCE_FACTOR: f64 = 16.0;
/// Wait after a failed warm-sandbox creation before the next attempt.
const POOL_RETRY: Duration = Duration::from_secs(5);
/// Deadline of a readiness probe of a sandboxd.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A claimed sandbox.
#[derive(Debug, Clone)]
struct Entry {
    claim: Claim,
    container_id: String,
    /// sandboxd's URL from this host (published port on loopback).
    local_url: String,
    /// sandboxd's URL for callers.
    url: String,
    paused: bool,
    /// sandboxd answered `/alive` (it stays so: a sandbox is never restarted).
    ready: bool,
}

/// A pre-started sandbox waiting in a pool.
#[derive(Debug, Clone)]
struct Warm {
    runtime_id: String,
    container_id: String,
    local_url: String,
    port: u16,
    configure_key: String,
}

#[derive(Debug, Default)]
struct Table {
    by_runtime: HashMap<String, Entry>,
    /// Sessions whose `/start` is under way.
    starting: HashSet<String>,
}

/// The sandboxes of one service.
#[derive(Debug)]
pub struct SandboxService {
    config: ServeConfig,
    docker: DockerRuntime,
    keys: ApiKeys,
    store: Store,
    table: Mutex<Table>,
    /// Sandbox image tag → its ready sandboxes.
    pools: Mutex<HashMap<String, VecDeque<Warm>>>,
    /// Sandbox image tag → how many to keep ready.
    targets: BTreeMap<String, usize>,
    /// Local image → sandbox image tag (made on first use).
    sandbox_images: tokio::sync::Mutex<HashMap<String, String>>,
    refill: Notify,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves consistent data (single inserts/removes).
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SandboxService {
    /// Connects to Docker, makes the pool images sandbox images, and recovers the sandboxes a
    /// previous run of this service left (by label, with their claims from the state directory).
    pub async fn open(config: ServeConfig) -> Result<SandboxService, ServeError> {
        let keys = ApiKeys::new(config.api_keys.iter().map(String::as_str));
        if keys.is_empty() {
            return Err(ServeError::Config(
                "no API key: pass --api-key, set AGENTD_API_KEYS or [serve] api_keys".to_string(),
            ));
        }
        let docker = DockerRuntime::connect()?;
        let store = Store::open(&config.state_dir)?;
        let mut service = SandboxService {
            docker,
            keys,
            store,
            table: Mutex::default(),
            pools: Mutex::default(),
            targets: BTreeMap::new(),
            sandbox_images: tokio::sync::Mutex::default(),
            refill: Notify::new(),
            config,
        };
        let mut targets = BTreeMap::new();
        let default = service.config.default_image.clone();
        let tag = service.sandbox_image(&default).await?;
        targets.insert(tag, service.config.pool_size);
        for (image, size) in service.config.pools.clone() {
            let tag = service.sandbox_image(&image).await?;
            *targets.entry(tag).or_default() += size;
        }
        service.targets = targets;
        service.recover().await?;
        Ok(service)
    }

    /// The configured keys.
    pub fn keys(&self) -> &ApiKeys {
        &self.keys
    }

    /// The prefix callers would push images under (`GET /registry_prefix`).
    pub fn registry_prefix(&self) -> &str {
        &self.config.registry_prefix
    }

    /// Whether `/start` runs `image`: always, since an image this host does not have runs as
    /// the default sandbox image (SPEC §9: callers cannot build images here).
    pub fn image_exists(&self, _image: &str) -> bool {
        true
    }

    /// The local image a caller's image runs as: its mapping, itself if the engine has it,
    /// else the default image.
    async fn local_image_for(&self, image: &str) -> Result<String, ServeError> {
        if let Some(mapped) = self.config.images.get(image) {
            return Ok(mapped.clone());
        }
        if image.is_empty() {
            return Ok(self.config.default_image.clone());
        }
        match image::is_sandbox_image(self.docker.docker(), image).await {
            Ok(_) => Ok(image.to_string()),
            Err(DockerError::ImageMissing { .. }) => Ok(self.config.default_image.clone()),
            Err(e) => Err(e.into()),
        }
    }

    /// The sandbox image for a local image (built once, with sandboxd added, if it is a base).
    async fn sandbox_image(&self, local: &str) -> Result<String, ServeError> {
        let mut cache = self.sandbox_images.lock().await;
        if let Some(tag) = cache.get(local) {
            return Ok(tag.clone());
        }
        let tag = image::sandbox_image_for(
            self.docker.docker(),
            local,
            self.config.sandboxd_binary.as_deref(),
            |line| tracing::info!(target: "agentd::build", "{line}"),
        )
        .await
        .map_err(|e| match e {
            DockerError::NoSandboxd { .. } => ServeError::Config(e.to_string()),
            other => other.into(),
        })?
        .tag;
        cache.insert(local.to_string(), tag.clone());
        Ok(tag)
    }

    /// Creates one pre-started sandbox of `tag` with the base limits, running as `user`.
    async fn create_warm(&self, tag: &str, user: SandboxUser) -> Result<Warm, ServeError> {
        let runtime_id = format!(
            "rt-{}",
            random_hex(8).map_err(|e| ServeError::Internal(e.to_string()))?
        );
        let config = SandboxConfig {
            image: tag.to_string(),
            plugins: Vec::new(),
            limits: self.config.limits.clone(),
            publish_address: self.config.publish_address.clone(),
            await_configuration: true,
            user: Some(user),
            name: Some(runtime_id.clone()),
            labels: BTreeMap::from([
                (labels::SERVE_NAME.to_string(), self.config.name.clone()),
                (labels::SERVE_RUNTIME_ID.to_string(), runtime_id.clone()),
            ]),
            ..self.config.sandbox.clone()
        };
        let sandbox = self.docker.up(&config, None).await?;
        let port = port_of(&sandbox.url).ok_or_else(|| {
            ServeError::Internal(format!("sandbox {} has no published port", sandbox.name))
        })?;
        Ok(Warm {
            runtime_id,
            container_id: sandbox.id,
            local_url: sandbox.url,
            port,
            configure_key: sandbox.session_api_key,
        })
    }

    fn take_warm(&self, tag: &str) -> Option<Warm> {
        lock(&self.pools).get_mut(tag)?.pop_front()
    }

    /// `POST /start`.
    pub async fn start(
        &self,
        owner: &Owner,
        request: StartRequest,
    ) -> Result<StartResponse, ServeError> {
        let args = command::sandboxd_args(&request.command).map_err(ServeError::BadRequest)?;
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
        if request.session_id.is_empty() {
            return Err(ServeError::BadRequest("session_id is empty".to_string()));
        }
        let sid = request.session_id.clone();
        // A session whose container died is started anew, not handed out again.
        let existing = lock(&self.table)
            .by_runtime
            .values()
            .find(|e| e.claim.session_id == sid && e.claim.owner == owner.as_str())
            .cloned();
        if let Some(entry) = existing {
            self.reap_if_gone(&entry).await;
        }
        {
            let mut table = lock(&self.table);
            if let Some(entry) = table
                .by_runtime
                .values()
                .find(|e| e.claim.session_id == sid)
            {
                if entry.claim.owner != owner.as_str() {
                    return Err(ServeError::Conflict(format!(
                        "session {sid} belongs to another API key"
                    )));
                }
                if entry.paused {
                    return Err(ServeError::Conflict(format!(
                        "session {sid} is paused: resume runtime {}",
                        entry.claim.runtime_id
                    )));
                }
                // Starting a running session again is answered with that session.
                return Ok(start_response(entry));
            }
            if !table.starting.insert(sid.clone()) {
                return Err(ServeError::Conflict(format!(
                    "session {sid} is being started"
                )));
            }
        }
        let _starting = Starting {
            table: &self.table,
            sid: sid.clone(),
        };
        let local = self.local_image_for(&request.image).await?;
        let tag = self.sandbox_image(&local).await?;
        // Warm sandboxes run as the image's sandbox user; another user gets a new container.
        let pooled = (user == SandboxUser::default())
            .then(|| self.take_warm(&tag))
            .flatten();
        let warm = match pooled {
            Some(warm) => warm,
            None => {
                tracing::info!(%tag, %user, "no warm sandbox: creating one");
                self.create_warm(&tag, user).await?
            }
        };
        self.refill.notify_one();
        match self.claim(owner, &request, args, warm.clone()).await {
            Ok(entry) => {
                let response = start_response(&entry);
                tracing::info!(runtime_id = %entry.claim.runtime_id, session = %sid, "started");
                lock(&self.table)
                    .by_runtime
                    .insert(entry.claim.runtime_id.clone(), entry);
                Ok(response)
            }
            Err(e) => {
                if let Err(down) = self.docker.down(&warm.container_id).await {
                    tracing::warn!(runtime_id = %warm.runtime_id, error = %down, "cannot remove a sandbox that failed to start");
                }
                let _ = self.store.remove(&warm.runtime_id);
                Err(e)
            }
        }
    }

    /// Gives `warm` to the caller: its limits, the claim on disk, then its configuration.
    async fn claim(
        &self,
        owner: &Owner,
        request: &StartRequest,
        args: Vec<String>,
        warm: Warm,
    ) -> Result<Entry, ServeError> {
        if request.resource_factor != 1.0 {
            let limits = self.config.limits.scaled(request.resource_factor);
            self.docker
                .update_limits(&warm.container_id, &limits)
                .await?;
        }
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
        self.store.save(&claim)?;
        let mut claim = claim;
        if let Some(configure) = claim.pending_configuration.take() {
            send_configuration(&warm.local_url, &warm.configure_key, &configure)
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
        // sandboxd has its configuration: the caller's environment leaves the disk.
        self.store.save(&claim)?;
        Ok(Entry {
            claim,
            container_id: warm.container_id,
            url: format!("http://{}:{}", self.config.public_host, warm.port),
            local_url: warm.local_url,
            paused: false,
            ready: false,
        })
    }

    /// The caller's entry for a runtime id (another key's sandboxes are not found).
    fn entry(&self, owner: &Owner, runtime_id: &str) -> Result<Entry, ServeError> {
        lock(&self.table)
            .by_runtime
            .get(runtime_id)
            .filter(|e| e.claim.owner == owner.as_str())
            .cloned()
            .ok_or_else(|| ServeError::NotFound(format!("no runtime {runtime_id}")))
    }

    /// `GET /runtime/{id}`: `pending` until sandboxd answers `/alive`.
    pub async fn runtime_status(
        &self,
        owner: &Owner,
        runtime_id: &str,
    ) -> Result<RuntimeStatusResponse, ServeError> {
        let entry = self.entry(owner, runtime_id)?;
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
        if entry.ready {
            return if self.gone(entry).await {
                PodStatus::Failed
            } else {
                PodStatus::Ready
            };
        }
        let alive = match SandboxClient::new(&entry.local_url, None) {
            Ok(client) => tokio::time::timeout(PROBE_TIMEOUT, client.alive())
                .await
                .is_ok_and(|r| r.is_ok()),
            Err(_) => false,
        };
        if alive {
            if let Some(e) = lock(&self.table)
                .by_runtime
                .get_mut(&entry.claim.runtime_id)
            {
                e.ready = true;
            }
            return PodStatus::Ready;
        }
        match self.docker.get_state(&entry.container_id).await {
            Ok(Some(ContainerStateStatusEnum::RUNNING)) => PodStatus::Pending,
            Ok(_) => PodStatus::Failed,
            Err(e) => {
                tracing::warn!(runtime_id = %entry.claim.runtime_id, error = %e, "cannot inspect a sandbox");
                PodStatus::Pending
            }
        }
    }

    /// Whether the sandbox's container is no more, or no longer running (nor paused). A
    /// failed inspection says nothing: not gone.
    async fn gone(&self, entry: &Entry) -> bool {
        match self.docker.get_state(&entry.container_id).await {
            Ok(Some(state)) => !matches!(
                state,
                ContainerStateStatusEnum::RUNNING | ContainerStateStatusEnum::PAUSED
            ),
            Ok(None) => true,
            Err(e) => {
                tracing::warn!(runtime_id = %entry.claim.runtime_id, error = %e, "cannot inspect a sandbox");
                false
            }
        }
    }

    /// Forgets and cleans up a sandbox whose container died; says whether it had.
    async fn reap_if_gone(&self, entry: &Entry) -> bool {
        if entry.paused || !self.gone(entry).await {
            return false;
        }
        let runtime_id = &entry.claim.runtime_id;
        tracing::warn!(%runtime_id, session = %entry.claim.session_id, "the sandbox died; forgetting it");
        lock(&self.table).by_runtime.remove(runtime_id);
        if let Err(e) = self.remove(entry).await {
            tracing::warn!(%runtime_id, error = %e, "cannot clean up a dead sandbox");
        }
        true
    }

    /// `GET /sessions/{sid}`: `stopped` for a sandbox whose container died (it is forgotten,
    /// so that the caller starts a new one).
    pub async fn session(
        &self,
        owner: &Owner,
        session_id: &str,
    ) -> Result<SessionResponse, ServeError> {
        let entry = lock(&self.table)
            .by_runtime
            .values()
            .find(|e| e.claim.session_id == session_id && e.claim.owner == owner.as_str())
            .cloned()
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
            runtime_id: entry.claim.runtime_id.clone(),
            url: entry.url.clone(),
            session_api_key: Some(entry.claim.session_api_key.clone()),
            work_hosts: BTreeMap::new(),
        })
    }

    /// `GET /runtimes`: the caller's sandboxes, and the pools' sizes.
    pub fn list(&self, owner: &Owner) -> RuntimeList {
        let mut runtimes: Vec<RuntimeSummary> = lock(&self.table)
            .by_runtime
            .values()
            .filter(|e| e.claim.owner == owner.as_str())
            .map(|e| RuntimeSummary {
                runtime_id: e.claim.runtime_id.clone(),
                session_id: e.claim.session_id.clone(),
                status: if e.paused {
                    SessionStatus::Paused
                } else {
                    SessionStatus::Running
                },
                pod_status: match (e.paused, e.ready) {
                    (true, _) => PodStatus::Paused,
                    (false, true) => PodStatus::Ready,
                    (false, false) => PodStatus::Pending,
                },
                image: e.claim.image.clone(),
                url: e.url.clone(),
                created_at: e.claim.created_at.clone(),
            })
            .collect();
        runtimes.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        let warm = lock(&self.pools)
            .iter()
            .map(|(tag, pool)| (tag.clone(), pool.len()))
            .collect();
        RuntimeList { runtimes, warm }
    }

    /// `POST /stop`: removes the sandbox and forgets its session.
    pub async fn stop(
        &self,
        owner: &Owner,
        runtime_id: &str,
    ) -> Result<RuntimeStateResponse, ServeError> {
        self.entry(owner, runtime_id)?;
        let Some(entry) = lock(&self.table).by_runtime.remove(runtime_id) else {
            return Err(ServeError::NotFound(format!("no runtime {runtime_id}")));
        };
        self.remove(&entry).await?;
        tracing::info!(%runtime_id, session = %entry.claim.session_id, "stopped");
        Ok(RuntimeStateResponse {
            runtime_id: runtime_id.to_string(),
            status: SessionStatus::Stopped,
        })
    }

    async fn remove(&self, entry: &Entry) -> Result<(), ServeError> {
        if entry.paused {
            // A paused container cannot be killed; thaw it first.
            let _ = self.docker.unpause(&entry.container_id).await;
        }
        match self.docker.down(&entry.container_id).await {
            Ok(()) | Err(DockerError::NoSuchSandbox(_)) => {}
            Err(e) => return Err(e.into()),
        }
        self.store.remove(&entry.claim.runtime_id)?;
        Ok(())
    }

    /// `POST /pause`: freezes the sandbox (`docker pause`); its data plane does not answer
    /// until `/resume`.
    pub async fn pause(
        &self,
        owner: &Owner,
        runtime_id: &str,
    ) -> Result<RuntimeStateResponse, ServeError> {
        let entry = self.entry(owner, runtime_id)?;
        if !entry.paused {
            self.docker.pause(&entry.container_id).await?;
            self.set_paused(runtime_id, true);
        }
        Ok(RuntimeStateResponse {
            runtime_id: runtime_id.to_string(),
            status: SessionStatus::Paused,
        })
    }

    /// `POST /resume`: thaws a paused sandbox; its processes and files are as they were.
    pub async fn resume(
        &self,
        owner: &Owner,
        runtime_id: &str,
    ) -> Result<RuntimeStateResponse, ServeError> {
        let entry = self.entry(owner, runtime_id)?;
        if entry.paused {
            self.docker.unpause(&entry.container_id).await?;
            self.set_paused(runtime_id, false);
        }
        Ok(RuntimeStateResponse {
            runtime_id: runtime_id.to_string(),
            status: SessionStatus::Running,
        })
    }

    fn set_paused(&self, runtime_id: &str, paused: bool) {
        if let Some(e) = lock(&self.table).by_runtime.get_mut(runtime_id) {
            e.paused = paused;
        }
    }

    /// Rebuilds the table and the pools from the containers labelled with this service's name
    /// and the claims on disk. Claimed containers that stopped, unclaimed ones that cannot
    /// serve a pool, and claims without a container are removed.
    async fn recover(&self) -> Result<(), ServeError> {
        let mut claims: HashMap<String, Claim> = self
            .store
            .load_all()?
            .into_iter()
            .map(|c| (c.runtime_id.clone(), c))
            .collect();
        let containers = self
            .docker
            .inspect_labelled(labels::SERVE_NAME, &self.config.name)
            .await?;
        let (mut recovered, mut warm) = (0, 0);
        for inspect in containers {
            let id = inspect.id.clone().unwrap_or_default();
            let runtime_id = label(&inspect, labels::SERVE_RUNTIME_ID)
                .unwrap_or_default()
                .to_string();
            let state = state_of(&inspect);
            let local_url = url_of(&inspect);
            let port = local_url.as_deref().and_then(port_of);
            let claim = claims.remove(&runtime_id);
            let usable = matches!(
                state,
                Some(ContainerStateStatusEnum::RUNNING | ContainerStateStatusEnum::PAUSED)
            );
            match (claim, local_url, port) {
                (Some(mut claim), Some(local_url), Some(port)) if usable => {
                    // Killed between the claim and the configuration: send it now (a sandboxd
                    // that has it already refuses it, which changes nothing).
                    if let Some(configure) = claim.pending_configuration.take() {
                        match configure_key(&inspect) {
                            Some(key) if state == Some(ContainerStateStatusEnum::RUNNING) => {
                                match send_configuration(&local_url, &key, &configure).await {
                                    Ok(()) => {
                                        tracing::info!(%runtime_id, "sent the configuration a killed service had not")
                                    }
                                    Err(e) => {
                                        tracing::debug!(%runtime_id, error = %e, "the sandbox has its configuration")
                                    }
                                }
                            }
                            _ => {
                                tracing::warn!(%runtime_id, "cannot finish the configuration of a sandbox")
                            }
                        }
                        self.store.save(&claim)?;
                    }
                    let entry = Entry {
                        container_id: id,
                        url: format!("http://{}:{port}", self.config.public_host),
                        local_url,
                        paused: state == Some(ContainerStateStatusEnum::PAUSED),
                        ready: false,
                        claim,
                    };
                    lock(&self.table).by_runtime.insert(runtime_id, entry);
                    recovered += 1;
                    continue;
                }
                (None, Some(local_url), Some(port))
                    if state == Some(ContainerStateStatusEnum::RUNNING) =>
                {
                    let tag = inspect
                        .config
                        .as_ref()
                        .and_then(|c| c.image.clone())
                        .unwrap_or_default();
                    let key = configure_key(&inspect);
                    let wanted = self.targets.get(&tag).copied().unwrap_or(0);
                    let mut pools = lock(&self.pools);
                    let pool = pools.entry(tag).or_default();
                    if let Some(configure_key) = key
                        && pool.len() < wanted
                    {
                        pool.push_back(Warm {
                            runtime_id,
                            container_id: id,
                            local_url,
                            port,
                            configure_key,
                        });
                        warm += 1;
                        continue;
                    }
                }
                (Some(claim), _, _) => {
                    let _ = self.store.remove(&claim.runtime_id);
                }
                _ => {}
            }
            let status = state.as_ref().map_or("", AsRef::as_ref);
            tracing::info!(%runtime_id, %status, "removing a sandbox left behind");
            if let Err(e) = self.docker.down(&id).await {
                tracing::warn!(%runtime_id, error = %e, "cannot remove a sandbox left behind");
            }
        }
        for runtime_id in claims.keys() {
            self.store.remove(runtime_id)?;
        }
        tracing::info!(recovered, warm, "recovered the previous run's sandboxes");
        Ok(())
    }

    /// Keeps every pool at its size until `stop` turns true: one sandbox at a time, woken by
    /// each `/start` that took one.
    pub async fn fill_pools(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        loop {
            let mut failed = false;
            for (tag, &target) in &self.targets {
                loop {
                    let have = lock(&self.pools).get(tag).map_or(0, VecDeque::len);
                    if have >= target || *stop.borrow() {
                        break;
                    }
                    match self.create_warm(tag, SandboxUser::default()).await {
                        Ok(warm) => lock(&self.pools)
                            .entry(tag.clone())
                            .or_default()
                            .push_back(warm),
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

    /// Stops sandboxes whose sandboxd reports more than the idle timeout without an action,
    /// until `stop` turns true. Paused sandboxes are left alone.
    pub async fn reap_idle(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let Some(timeout) = self.config.idle_timeout else {
            return;
        };
        let period = (timeout / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
        loop {
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                _ = stop.changed() => return,
            }
            let running: Vec<Entry> = lock(&self.table)
                .by_runtime
                .values()
                .filter(|e| !e.paused && e.ready)
                .cloned()
                .collect();
            for entry in running {
                let Ok(client) = SandboxClient::new(&entry.local_url, None) else {
                    continue;
                };
                let Ok(info) = client.server_info().await else {
                    continue;
                };
                if info.idle_time < timeout.as_secs_f64() {
                    continue;
                }
                let runtime_id = &entry.claim.runtime_id;
                if lock(&self.table).by_runtime.remove(runtime_id).is_none() {
                    continue;
                }
                tracing::info!(%runtime_id, idle = info.idle_time, "stopping an idle sandbox");
                if let Err(e) = self.remove(&entry).await {
                    tracing::warn!(%runtime_id, error = %e, "cannot stop an idle sandbox");
                }
            }
        }
    }
}

/// Removes a session from `starting` when its `/start` ends, however it ends.
struct Starting<'a> {
    table: &'a Mutex<Table>,
    sid: String,
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        lock(self.table).starting.remove(&self.sid);
    }
}

fn start_response(entry: &Entry) -> StartResponse {
    StartResponse {
        runtime_id: entry.claim.runtime_id.clone(),
        url: entry.url.clone(),
        session_api_key: Some(entry.claim.session_api_key.clone()),
        work_hosts: BTreeMap::new(),
    }
}

/// The port of `http://host:PORT`.
fn port_of(url: &str) -> Option<u16> {
    url.rsplit(':').next()?.trim_end_matches('/').parse().ok()
}

/// The key a waiting sandboxd takes its configuration with (in its container's environment).
fn configure_key(inspect: &bollard::models::ContainerInspectResponse) -> Option<String> {
    inspect
        .config
        .as_ref()
        .and_then(|c| c.env.as_ref())
        .and_then(|env| {
            env.iter().find_map(|kv| {
                kv.strip_prefix("SANDBOXD_CONFIGURE_KEY=")
                    .map(str::to_string)
            })
        })
}

/// Sends a waiting sandboxd its configuration.
async fn send_configuration(
    local_url: &str,
    configure_key: &str,
    configure: &ConfigureRequest,
) -> Result<(), client::ClientError> {
    SandboxClient::new(local_url, Some(configure_key.to_string()))?
        .configure(configure)
        .await
}
