//! The `kubernetes` backend: one pod per sandbox in one namespace, through the Kubernetes API
//! (kube-rs). A pod is the Docker sandbox's container ([`pod::sandbox_pod`]) with a
//! NetworkPolicy of its own ([`policy::sandbox_policy`]); warm pools are ready pods; the
//! state is the cluster's: labels name the service and the runtime id, annotations the
//! profile, the image and the claim, which is written at the pod's resource version, so that
//! replicas sharing the namespace never hand out one pod twice. The service reaches each
//! sandboxd at its pod IP (it runs in the cluster) and hands out front-door URLs.
//!
//! What Kubernetes cannot do is refused, never faked: pausing (a pod cannot be frozen: 409),
//! changing a running pod's limits (a `resource_factor` other than 1 gets a pod made with
//! them), domain rules in an egress policy, host directories, host ports, app ports, a user
//! other than the image's (uid 1000) or root, and images (the operator publishes sandbox images
//! where the nodes pull from; `/build` and `/image_exists` are refused).

mod pod;
mod policy;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use sandbox_common::random_hex;
use tokio::time::Instant;

use super::{Backend, Found, SandboxState, ServedSandbox, Spec, Warm, answers_http};
use crate::runtime::docker::config::SANDBOXD_PORT;
use crate::runtime::docker::{Limits, Network, SandboxConfig};
use crate::serve::store::Claim;
use crate::serve::{ServeConfig, ServeError};

/// Deadline of one API call (a watch has the readiness deadline instead).
const API_TIMEOUT: Duration = Duration::from_secs(30);
/// Deadline of one reachability probe of a ready pod's sandboxd.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Probes of a ready pod's sandboxd before it counts as unreachable (its network policy may
/// take a moment to be programmed).
const PROBES: u32 = 3;
/// Claim writes refused for a newer version before giving up (each is one more replica's).
const CLAIM_ATTEMPTS: u32 = 16;

/// How the service reaches the Kubernetes API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeConnection {
    /// The API server's URL. Alone (no kubeconfig, not in the cluster), requests carry no
    /// credentials: `kubectl proxy`'s `http://127.0.0.1:8001`. With either, it replaces
    /// their server.
    pub api_server: Option<String>,
    /// A kubeconfig file; default `KUBECONFIG`, else `~/.kube/config`, else the service
    /// account of the pod the service runs in.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; default its current one.
    pub context: Option<String>,
    /// The service account of the pod the service runs in, whatever kubeconfig there is.
    pub in_cluster: bool,
}

/// The kubernetes backend's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesSettings {
    /// How to reach the API.
    pub connection: KubeConnection,
    /// The namespace of the sandbox pods; default the connection's (the service account's,
    /// or the kubeconfig context's).
    pub namespace: Option<String>,
    /// The runtime classes a `/start` may ask for (`runtimeClassName`); any other is a 403.
    pub runtime_classes: Vec<String>,
    /// The labels of the service's own pods: sandboxes accept connections from those only.
    pub service_labels: BTreeMap<String, String>,
    /// The port sandboxd listens on in each pod.
    pub sandboxd_port: u16,
    /// Secrets the nodes pull sandbox images with (`imagePullSecrets`).
    pub image_pull_secrets: Vec<String>,
}

impl Default for KubernetesSettings {
    fn default() -> KubernetesSettings {
        KubernetesSettings {
            connection: KubeConnection::default(),
            namespace: None,
            runtime_classes: Vec::new(),
            service_labels: BTreeMap::from([(
                "app.kubernetes.io/name".to_string(),
                "agentd-serve".to_string(),
            )]),
            sandboxd_port: SANDBOXD_PORT,
            image_pull_secrets: Vec::new(),
        }
    }
}

/// Why the Kubernetes API could not do something.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The client cannot be configured (kubeconfig, in-cluster files, URL). Retrying cannot
    /// help.
    #[error("kubernetes configuration: {0}")]
    Config(String),
    /// The API server answered an error, or could not be reached. Retrying helps for
    /// connection failures and conflicts, not for refusals (403: the service account lacks
    /// a verb of deploy/kubernetes/rbac.yaml).
    #[error("kubernetes API, {what}: {source}")]
    Api {
        /// The call.
        what: String,
        /// kube-rs's error (the API's status, with its message).
        source: kube::Error,
    },
    /// A call did not answer in time. Retrying may help.
    #[error("kubernetes API, {what}: no answer within {after:?}")]
    Timeout {
        /// The call.
        what: String,
        /// Its deadline.
        after: Duration,
    },
    /// A sandbox pod did not come up. Retrying may help if the reason is passing
    /// (scheduling, an image pull).
    #[error("sandbox pod {pod} did not come up: {reason}")]
    NotReady {
        /// The pod.
        pod: String,
        /// Why, in the scheduler's or kubelet's words.
        reason: String,
    },
}

/// The HTTP status of an API error (`None`: not an answer of the API).
fn status_of(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Runs one API call `what` within [`API_TIMEOUT`].
async fn call<T>(
    what: impl Into<String>,
    request: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, KubeError> {
    let what = what.into();
    match tokio::time::timeout(API_TIMEOUT, request).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(KubeError::Api { what, source }),
        Err(_) => Err(KubeError::Timeout {
            what,
            after: API_TIMEOUT,
        }),
    }
}

/// Whether `e` is the API's answer `code`.
fn is_status(e: &KubeError, code: u16) -> bool {
    matches!(e, KubeError::Api { source, .. } if status_of(source) == Some(code))
}

/// The client `connection` describes.
async fn client(connection: &KubeConnection) -> Result<kube::Client, KubeError> {
    let bad = |e: &dyn std::fmt::Display| KubeError::Config(e.to_string());
    let options = kube::config::KubeConfigOptions {
        context: connection.context.clone(),
        ..kube::config::KubeConfigOptions::default()
    };
    let url = connection
        .api_server
        .as_deref()
        .map(|url| {
            url.parse::<hyper::Uri>()
                .map_err(|e| KubeError::Config(format!("API server URL {url:?}: {e}")))
        })
        .transpose()?;
    let mut config = if connection.in_cluster {
        kube::Config::incluster().map_err(|e| bad(&e))?
    } else if let Some(path) = &connection.kubeconfig {
        let file = kube::config::Kubeconfig::read_from(path)
            .map_err(|e| KubeError::Config(format!("{}: {e}", path.display())))?;
        kube::Config::from_custom_kubeconfig(file, &options)
            .await
            .map_err(|e| bad(&e))?
    } else if let (Some(url), None) = (&url, &connection.context) {
        kube::Config::new(url.clone())
    } else {
        kube::Config::infer().await.map_err(|e| bad(&e))?
    };
    if let Some(url) = url {
        config.cluster_url = url;
    }
    kube::Client::try_from(config).map_err(|e| bad(&e))
}

/// Whether `text` is a label value (at most 63 characters: alphanumerics, `-`, `_`, `.`,
/// beginning and ending with an alphanumeric).
fn is_label_value(text: &str) -> bool {
    text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && text
            .chars()
            .next()
            .is_none_or(|c| c.is_ascii_alphanumeric())
        && text
            .chars()
            .last()
            .is_none_or(|c| c.is_ascii_alphanumeric())
}

/// Whether `text` is a DNS subdomain name (a runtime class's, a secret's).
fn is_dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// Why a sandbox pod of `config`'s service cannot be what `config` and `settings` ask for;
/// `Ok` when it can.
fn unsupported(config: &ServeConfig, settings: &KubernetesSettings) -> Result<(), String> {
    let sandbox = &config.sandbox;
    if !is_label_value(&config.name) || config.name.is_empty() {
        return Err(format!(
            "service name {:?}: on kubernetes it is a label value (at most 63 letters, digits, '-', '_', '.', beginning and ending with a letter or digit)",
            config.name
        ));
    }
    if sandbox.network != Network::Bridge {
        return Err("the kubernetes backend reaches sandboxd over the pod network: sandboxes without network are the docker backend's; for no egress, use egress = \"none\"".to_string());
    }
    if !sandbox.host_ports.is_empty() {
        return Err(
            "host ports are the docker backend's (its host firewall); a pod has no host to reach"
                .to_string(),
        );
    }
    if sandbox.workspace.is_some() {
        return Err("a kubernetes sandbox mounts no host directory".to_string());
    }
    if sandbox.app_ports != 0 {
        return Err("app ports are published on the docker and swarm backends' hosts; a pod has none reachable from outside the cluster: run with --app-ports 0".to_string());
    }
    let egresses = std::iter::once(&sandbox.egress)
        .chain(config.egress_keys.values())
        .chain(config.egress_images.values());
    for egress in egresses {
        policy::expressible(egress)?;
    }
    for class in &settings.runtime_classes {
        if !is_dns_subdomain(class) {
            return Err(format!(
                "runtime class {class:?} is not a runtime class name (a DNS subdomain)"
            ));
        }
    }
    for secret in &settings.image_pull_secrets {
        if !is_dns_subdomain(secret) {
            return Err(format!(
                "image pull secret {secret:?} is not a secret name (a DNS subdomain)"
            ));
        }
    }
    if settings.sandboxd_port == 0 {
        return Err("the sandboxd port of sandbox pods cannot be 0".to_string());
    }
    if settings.service_labels.is_empty() {
        return Err("the service's pod labels are empty: every pod could reach the sandboxes (--k8s-service-labels)".to_string());
    }
    for (key, value) in &settings.service_labels {
        if key.is_empty() || !is_label_value(value) {
            return Err(format!("service label {key}={value} is not a label"));
        }
    }
    Ok(())
}

/// Sandboxes as pods of one namespace.
pub(in crate::serve) struct KubernetesBackend {
    pods: Api<Pod>,
    policies: Api<NetworkPolicy>,
    namespace: String,
    settings: KubernetesSettings,
    /// For the reachability probe of a ready pod.
    http: reqwest::Client,
}

impl std::fmt::Debug for KubernetesBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesBackend")
            .field("namespace", &self.namespace)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl KubernetesBackend {
    /// Connects to the API `settings` name, checks that `config` asks nothing a pod cannot
    /// be, and that the service account may list the namespace's pods.
    pub(in crate::serve) async fn connect(
        config: &ServeConfig,
        settings: &KubernetesSettings,
    ) -> Result<KubernetesBackend, ServeError> {
        unsupported(config, settings).map_err(ServeError::Config)?;
        let client = client(&settings.connection).await?;
        let namespace = settings
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let policies: Api<NetworkPolicy> = Api::namespaced(client, &namespace);
        let selector = format!("{}={}", pod::SERVE_NAME, config.name);
        call(
            format!("listing the pods of namespace {namespace}"),
            pods.list(&ListParams::default().labels(&selector).limit(1)),
        )
        .await?;
        if config.limits.pids.is_some() {
            tracing::warn!(
                "a pod's process limit is the node's (the kubelet's podPidsLimit); the service's pids limit is not applied per sandbox"
            );
        }
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(PROBE_TIMEOUT)
            .build()
            .map_err(|e| ServeError::Internal(format!("cannot make an HTTP client: {e}")))?;
        tracing::info!(%namespace, "sandboxes are pods of this namespace");
        Ok(KubernetesBackend {
            pods,
            policies,
            namespace,
            settings: settings.clone(),
            http,
        })
    }

    /// Waits, watching it from `version`, until pod `name` is running and ready (sandboxd
    /// listens) or it cannot be, within `timeout`; its address.
    async fn wait_ready(
        &self,
        name: &str,
        mut version: String,
        timeout: Duration,
    ) -> Result<String, KubeError> {
        let deadline = Instant::now() + timeout;
        let not_ready = |reason: String| KubeError::NotReady {
            pod: name.to_string(),
            reason,
        };
        let mut last = "not scheduled yet".to_string();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(not_ready(format!("not ready within {timeout:?}: {last}")));
            }
            let params = WatchParams::default()
                .fields(&format!("metadata.name={name}"))
                .timeout(u32::try_from(left.as_secs()).unwrap_or(u32::MAX).max(1));
            let watch = tokio::time::timeout_at(deadline, self.pods.watch(&params, &version));
            let stream = match watch.await {
                Ok(Ok(stream)) => stream,
                Ok(Err(source)) => {
                    return Err(KubeError::Api {
                        what: format!("watching pod {name}"),
                        source,
                    });
                }
                Err(_) => continue,
            };
            let mut stream = stream.boxed();
            loop {
                let event = match tokio::time::timeout_at(deadline, stream.try_next()).await {
                    Err(_) | Ok(Ok(None)) => break,
                    Ok(Ok(Some(event))) => event,
                    Ok(Err(source)) => {
                        return Err(KubeError::Api {
                            what: format!("watching pod {name}"),
                            source,
                        });
                    }
                };
                match event {
                    WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                        if let Some(v) = &pod.metadata.resource_version {
                            version.clone_from(v);
                        }
                        match pod::progress(&pod) {
                            pod::Progress::Ready(ip) => return Ok(ip),
                            pod::Progress::Failed(why) => return Err(not_ready(why)),
                            pod::Progress::Waiting(why) => last = why,
                        }
                    }
                    WatchEvent::Deleted(_) => {
                        return Err(not_ready("it was deleted".to_string()));
                    }
                    WatchEvent::Bookmark(bookmark) => {
                        version = bookmark.metadata.resource_version;
                    }
                    WatchEvent::Error(status) if status.code == 410 => {
                        // The version is too old to watch from: the pod as it is now, then
                        // on from there.
                        let pod = call(format!("reading pod {name}"), self.pods.get(name)).await?;
                        match pod::progress(&pod) {
                            pod::Progress::Ready(ip) => return Ok(ip),
                            pod::Progress::Failed(why) => return Err(not_ready(why)),
                            pod::Progress::Waiting(why) => last = why,
                        }
                        version = pod.metadata.resource_version.unwrap_or_default();
                        break;
                    }
                    WatchEvent::Error(status) => {
                        return Err(KubeError::Api {
                            what: format!("watching pod {name}"),
                            source: kube::Error::Api(status),
                        });
                    }
                }
            }
        }
    }

    /// Whether sandboxd at `url` answers HTTP (any status: waiting for its configuration, it
    /// answers 503), within a few probes.
    async fn reachable(&self, url: &str) -> bool {
        for attempt in 0..PROBES {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            if answers_http(&self.http, url).await {
                return true;
            }
        }
        false
    }

    /// Makes the pod of `spec` and its network policy and waits until it is ready; its
    /// address. The caller removes what is left on failure.
    async fn make(
        &self,
        config: &ServeConfig,
        spec: &Spec<'_>,
        sandbox: &SandboxConfig,
        key: &str,
    ) -> Result<String, ServeError> {
        let name = spec.runtime_id;
        let profile = spec.profile.label(config);
        let plan = pod::PodPlan {
            service: &config.name,
            runtime_id: name,
            sandbox,
            configure_key: key,
            port: self.settings.sandboxd_port,
            profile: &profile,
            runtime_class: spec.profile.runtime_class.as_deref(),
            image_pull_secrets: &self.settings.image_pull_secrets,
        };
        let created = call(
            format!("creating pod {name}"),
            self.pods
                .create(&PostParams::default(), &pod::sandbox_pod(&plan)),
        )
        .await?;
        let owner = OwnerReference {
            api_version: "v1".to_string(),
            kind: "Pod".to_string(),
            name: name.to_string(),
            uid: created.metadata.uid.clone().unwrap_or_default(),
            ..OwnerReference::default()
        };
        let policy = policy::sandbox_policy(&policy::PolicyPlan {
            service: &config.name,
            runtime_id: name,
            service_labels: &self.settings.service_labels,
            port: self.settings.sandboxd_port,
            egress: &spec.profile.egress,
            owner: Some(owner),
        });
        call(
            format!("creating network policy {name}"),
            self.policies.create(&PostParams::default(), &policy),
        )
        .await?;
        let version = created.metadata.resource_version.unwrap_or_default();
        let ip = self
            .wait_ready(name, version, config.sandbox.ready_timeout)
            .await?;
        let url = pod::url(&ip, self.settings.sandboxd_port);
        if !self.reachable(&url).await {
            return Err(KubeError::NotReady {
                pod: name.to_string(),
                reason: format!(
                    "ready, but the service cannot reach its sandboxd at {url} (does a network policy keep the service's pods, labelled {:?}, out?)",
                    self.settings.service_labels
                ),
            }
            .into());
        }
        Ok(url)
    }
}

#[async_trait::async_trait]
impl Backend for KubernetesBackend {
    fn kind(&self) -> &'static str {
        "kubernetes"
    }

    fn engine(&self) -> Option<&bollard::Docker> {
        None
    }

    fn sandboxd_port(&self) -> u16 {
        self.settings.sandboxd_port
    }

    fn check_runtime_class(&self, class: &str) -> Result<(), ServeError> {
        if self.settings.runtime_classes.iter().any(|c| c == class) {
            return Ok(());
        }
        let allowed = if self.settings.runtime_classes.is_empty() {
            "none".to_string()
        } else {
            self.settings.runtime_classes.join(", ")
        };
        Err(ServeError::Forbidden(format!(
            "runtime_class {class:?} is not one this service allows (--k8s-runtime-classes: {allowed})"
        )))
    }

    fn resizes(&self) -> bool {
        false
    }

    async fn create(&self, config: &ServeConfig, spec: Spec<'_>) -> Result<Warm, ServeError> {
        let chosen = spec.user(config)?;
        if chosen.needs_renumbering() {
            return Err(ServeError::BadRequest(format!(
                "the kubernetes backend runs sandboxes as the image's user (uid 1000) or root, not uid {}: that needs an image made for it",
                chosen.uid
            )));
        }
        let key = random_hex(32).map_err(|e| ServeError::Internal(e.to_string()))?;
        let sandbox = spec.sandbox(config, spec.tag.to_string(), chosen);
        match self.make(config, &spec, &sandbox, &key).await {
            Ok(local_url) => Ok(Warm {
                runtime_id: spec.runtime_id.to_string(),
                container: ServedSandbox {
                    id: spec.runtime_id.to_string(),
                    local_url,
                    port: self.settings.sandboxd_port,
                    app_ports: BTreeMap::new(),
                    image: spec.tag.to_string(),
                },
                configure_key: key,
            }),
            Err(e) => {
                if let Err(down) = self.remove(spec.runtime_id).await {
                    tracing::warn!(pod = spec.runtime_id, error = %down, "cannot remove a sandbox pod that did not come up");
                }
                Err(e)
            }
        }
    }

    async fn remove(&self, id: &str) -> Result<(), ServeError> {
        // The policy goes with its pod (its owner) too; deleted here, it goes at once.
        for result in [
            call(
                format!("deleting pod {id}"),
                self.pods.delete(id, &DeleteParams::default()),
            )
            .await
            .map(|_| ()),
            call(
                format!("deleting network policy {id}"),
                self.policies.delete(id, &DeleteParams::default()),
            )
            .await
            .map(|_| ()),
        ] {
            match result {
                Err(e) if !is_status(&e, 404) => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    async fn pause(&self, _id: &str) -> Result<(), ServeError> {
        Err(ServeError::Unsupported(
            "the kubernetes backend cannot pause a sandbox: Kubernetes cannot freeze a pod (it runs or it is gone). Keep it running, or stop it (its files go with it)".to_string(),
        ))
    }

    async fn unpause(&self, _id: &str) -> Result<(), ServeError> {
        Err(ServeError::Unsupported(
            "the kubernetes backend pauses no sandbox, so it resumes none".to_string(),
        ))
    }

    async fn update_limits(&self, id: &str, _limits: &Limits) -> Result<(), ServeError> {
        Err(ServeError::Unsupported(format!(
            "the limits of sandbox pod {id} cannot change: a resource_factor gets a pod made with its limits"
        )))
    }

    async fn state(&self, id: &str) -> Result<SandboxState, ServeError> {
        let pod = call(format!("reading pod {id}"), self.pods.get_opt(id)).await?;
        Ok(pod::state(pod.as_ref()))
    }

    async fn find(&self, name: &str) -> Result<Vec<Found>, ServeError> {
        let selector = format!("{}={name}", pod::SERVE_NAME);
        let pods = call(
            format!("listing the pods of service {name}"),
            self.pods.list(&ListParams::default().labels(&selector)),
        )
        .await?;
        let mut found = Vec::new();
        for pod in &pods.items {
            match pod::found(pod) {
                Ok(sandbox) => found.push(sandbox),
                // Whoever wrote it, it is not this replica's to hand out or remove.
                Err(e) => {
                    tracing::warn!(pod = ?pod.metadata.name, error = %e, "a sandbox pod with an unreadable claim: left alone");
                }
            }
        }
        Ok(found)
    }

    fn keeps_claims(&self) -> bool {
        true
    }

    async fn put_claim(&self, id: &str, claim: &Claim, first: bool) -> Result<bool, ServeError> {
        let text = serde_json::to_string(claim).map_err(|e| ServeError::Internal(e.to_string()))?;
        // The API takes a patch naming a resource version only at that version: of two
        // replicas claiming one pod, the second's is refused (409) and it reads the claim.
        for _ in 0..CLAIM_ATTEMPTS {
            let Some(current) = call(format!("reading pod {id}"), self.pods.get_opt(id)).await?
            else {
                return Ok(false);
            };
            if current.metadata.deletion_timestamp.is_some() {
                return Ok(false);
            }
            let claimed = pod::claim(&current).map_or(true, |c| c.is_some());
            if first && claimed {
                return Ok(false);
            }
            let patch = serde_json::json!({
                "metadata": {
                    "resourceVersion": current.metadata.resource_version,
                    "annotations": { pod::CLAIM: text },
                }
            });
            let written = call(
                format!("claiming pod {id}"),
                self.pods
                    .patch(id, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await;
            match written {
                Ok(_) => return Ok(true),
                Err(e) if is_status(&e, 404) => return Ok(false),
                Err(e) if is_status(&e, 409) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ServeError::Conflict(format!(
            "pod {id} changed under {CLAIM_ATTEMPTS} claims in a row; try again"
        )))
    }
}

#[cfg(test)]
mod tests;
