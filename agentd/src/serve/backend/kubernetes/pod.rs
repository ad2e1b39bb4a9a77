//! One sandbox as a pod, both ways: the pod a sandbox is made as ([`sandbox_pod`]: the Docker
//! sandbox's container expressed as a pod), and what a pod found in the namespace is to the
//! service ([`found`], [`state`], [`progress`]). Pure: no API calls.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, HostAlias,
    LocalObjectReference, Pod, PodSecurityContext, PodSpec, Probe, ResourceRequirements,
    SeccompProfile, SecurityContext, TCPSocketAction, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::runtime::docker::SandboxConfig;
use crate::serve::backend::{Found, SandboxState, ServedSandbox};
use crate::serve::store::Claim;

/// Label: the service a sandbox pod belongs to (its `--name`).
pub(super) const SERVE_NAME: &str = "sandboxd.dev/serve-name";
/// Label: the sandbox's runtime id (also the pod's and its network policy's name).
pub(super) const RUNTIME_ID: &str = "sandboxd.dev/runtime-id";
/// Annotation: the profile the sandbox was made with ([`crate::serve::backend::Profile::label`]).
pub(super) const PROFILE: &str = "sandboxd.dev/profile";
/// Annotation: the sandbox image, the pool a sandbox found after a restart goes back to.
pub(super) const IMAGE: &str = "sandboxd.dev/image";
/// Annotation: the claim (JSON), written at the pod's resource version.
pub(super) const CLAIM: &str = "sandboxd.dev/claim";
/// The name of sandboxd's container port (the readiness probe's and the policy's port).
pub(super) const PORT_NAME: &str = "sandboxd";
/// The one container of a sandbox pod.
pub(super) const CONTAINER: &str = "sandbox";
/// The environment variable that holds a waiting sandboxd's configuration key.
const CONFIGURE_KEY: &str = "SANDBOXD_CONFIGURE_KEY";
/// Seconds a removed sandbox has to end after SIGTERM.
const GRACE_SECONDS: i64 = 10;

/// The labels every object of sandbox `runtime_id` of service `service` carries.
pub(super) fn labels(service: &str, runtime_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (SERVE_NAME.to_string(), service.to_string()),
        (RUNTIME_ID.to_string(), runtime_id.to_string()),
        (
            "app.kubernetes.io/managed-by".to_string(),
            "agentd".to_string(),
        ),
        (
            "app.kubernetes.io/component".to_string(),
            "sandbox".to_string(),
        ),
    ])
}

/// Everything one sandbox pod is made of.
#[derive(Debug)]
pub(super) struct PodPlan<'a> {
    /// The service's name.
    pub(super) service: &'a str,
    pub(super) runtime_id: &'a str,
    /// The sandbox: image, user, sudo, limits, read-only root, tmpfs, disk, pinned hosts.
    pub(super) sandbox: &'a SandboxConfig,
    /// The key its sandboxd takes its configuration with.
    pub(super) configure_key: &'a str,
    /// The port sandboxd listens on.
    pub(super) port: u16,
    /// The profile label.
    pub(super) profile: &'a str,
    pub(super) runtime_class: Option<&'a str>,
    pub(super) image_pull_secrets: &'a [String],
}

/// The pod of a sandbox: the Docker sandbox's container (same command, environment, user,
/// capabilities, no-new-privileges, read-only root, tmpfs, limits) as one container with
/// RuntimeDefault seccomp, requests equal to its limits (the scheduler places it by what it
/// may use), its disk limit as ephemeral storage, a shared process namespace (the pause
/// process reaps orphans, as docker-init does), no service account token, no service links,
/// no restart, and ready once sandboxd listens.
pub(super) fn sandbox_pod(plan: &PodPlan<'_>) -> Pod {
    let sandbox = plan.sandbox;
    let body = sandbox.task_body(plan.configure_key);
    let host = body.host_config.clone().unwrap_or_default();
    let env = body
        .env
        .iter()
        .flatten()
        .filter_map(|kv| kv.split_once('='))
        .map(|(name, value)| EnvVar {
            name: name.to_string(),
            value: Some(value.to_string()),
            ..EnvVar::default()
        })
        .collect();
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    let mut tmpfs: Vec<(&String, &String)> = host.tmpfs.iter().flatten().collect();
    tmpfs.sort();
    for (i, (target, options)) in tmpfs.into_iter().enumerate() {
        let name = format!("tmpfs-{i}");
        let size = options
            .split(',')
            .find_map(|o| o.strip_prefix("size="))
            .map(|s| Quantity(s.to_string()));
        volumes.push(Volume {
            name: name.clone(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".to_string()),
                size_limit: size,
            }),
            ..Volume::default()
        });
        mounts.push(VolumeMount {
            name,
            mount_path: target.clone(),
            ..VolumeMount::default()
        });
    }
    let mut limits = BTreeMap::new();
    if let Some(cpus) = sandbox.limits.cpus {
        limits.insert("cpu".to_string(), millicores(cpus));
    }
    if let Some(memory) = sandbox.limits.memory_bytes {
        limits.insert("memory".to_string(), Quantity(memory.to_string()));
    }
    if let Some(disk) = sandbox.disk_bytes {
        limits.insert("ephemeral-storage".to_string(), Quantity(disk.to_string()));
    }
    let (run_as_user, run_as_group) = body
        .user
        .as_deref()
        .and_then(|u| u.split_once(':'))
        .and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)))
        .unwrap_or((0, 0));
    let container = Container {
        name: CONTAINER.to_string(),
        image: Some(sandbox.image.clone()),
        // Images are the operator's to publish: a tag present on the node is used as it is.
        image_pull_policy: Some("IfNotPresent".to_string()),
        command: Some(sandbox.sandboxd_command(plan.port, false)),
        env: Some(env),
        working_dir: body.working_dir.clone(),
        ports: Some(vec![ContainerPort {
            name: Some(PORT_NAME.to_string()),
            container_port: i32::from(plan.port),
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        // Waiting for its configuration, sandboxd answers 503 to HTTP: listening is ready.
        readiness_probe: Some(Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::String(PORT_NAME.to_string()),
                ..TCPSocketAction::default()
            }),
            period_seconds: Some(1),
            failure_threshold: Some(1),
            ..Probe::default()
        }),
        resources: Some(ResourceRequirements {
            requests: Some(limits.clone()),
            limits: Some(limits),
            ..ResourceRequirements::default()
        }),
        // As the Docker sandbox: root, so that sandboxd keeps out of the user's reach, with
        // every capability dropped but those it needs to start the user's processes as the
        // user (whose processes get none).
        security_context: Some(SecurityContext {
            run_as_user: Some(run_as_user),
            run_as_group: Some(run_as_group),
            run_as_non_root: Some(false),
            privileged: Some(false),
            allow_privilege_escalation: Some(sandbox.sudo),
            read_only_root_filesystem: host.readonly_rootfs,
            capabilities: Some(Capabilities {
                add: host.cap_add.clone(),
                drop: host.cap_drop.clone(),
            }),
            ..SecurityContext::default()
        }),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    let host_aliases = host.extra_hosts.as_ref().map(|hosts| {
        hosts
            .iter()
            .filter_map(|h| h.split_once(':'))
            .map(|(name, addr)| HostAlias {
                ip: addr.to_string(),
                hostnames: Some(vec![name.to_string()]),
            })
            .collect()
    });
    Pod {
        metadata: ObjectMeta {
            name: Some(plan.runtime_id.to_string()),
            labels: Some(labels(plan.service, plan.runtime_id)),
            annotations: Some(BTreeMap::from([
                (PROFILE.to_string(), plan.profile.to_string()),
                (IMAGE.to_string(), sandbox.image.clone()),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            restart_policy: Some("Never".to_string()),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            share_process_namespace: Some(true),
            termination_grace_period_seconds: Some(GRACE_SECONDS),
            runtime_class_name: plan.runtime_class.map(str::to_string),
            host_aliases,
            image_pull_secrets: (!plan.image_pull_secrets.is_empty()).then(|| {
                plan.image_pull_secrets
                    .iter()
                    .map(|name| LocalObjectReference { name: name.clone() })
                    .collect()
            }),
            security_context: Some(PodSecurityContext {
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".to_string(),
                    ..SeccompProfile::default()
                }),
                ..PodSecurityContext::default()
            }),
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// CPUs as a quantity of millicores (`1.5` → `1500m`).
fn millicores(cpus: f64) -> Quantity {
    Quantity(format!("{}m", (cpus * 1000.0).round() as i64))
}

/// How far a pod being made has come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Progress {
    /// Running, ready (sandboxd listens), at this address.
    Ready(String),
    /// Not yet: why (the scheduler's or the kubelet's last word).
    Waiting(String),
    /// It never will: why.
    Failed(String),
}

/// Container waiting reasons after which a pod never starts.
const HOPELESS: &[&str] = &[
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
];

/// How far `pod` has come towards serving.
pub(super) fn progress(pod: &Pod) -> Progress {
    if pod.metadata.deletion_timestamp.is_some() {
        return Progress::Failed("it is being deleted".to_string());
    }
    let Some(status) = &pod.status else {
        return Progress::Waiting("no status yet".to_string());
    };
    let container = status
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == CONTAINER);
    let waiting = container
        .and_then(|c| c.state.as_ref()?.waiting.as_ref())
        .map(|w| {
            (
                w.reason.clone().unwrap_or_default(),
                w.message.clone().unwrap_or_default(),
            )
        });
    let terminated = container
        .and_then(|c| c.state.as_ref()?.terminated.as_ref())
        .map(|t| {
            format!(
                "its container ended ({}, exit code {}): {}",
                t.reason.clone().unwrap_or_default(),
                t.exit_code,
                t.message.clone().unwrap_or_default()
            )
        });
    match status.phase.as_deref() {
        Some("Failed" | "Succeeded") => {
            let why = terminated
                .or_else(|| status.message.clone())
                .unwrap_or_else(|| "it ended".to_string());
            return Progress::Failed(why);
        }
        Some("Running") => {
            if let Some(why) = terminated {
                return Progress::Failed(why);
            }
            let ready = condition(pod, "Ready").is_some_and(|(status, _)| status == "True");
            match status.pod_ip.as_deref().filter(|ip| !ip.is_empty()) {
                Some(ip) if ready => return Progress::Ready(ip.to_string()),
                _ => return Progress::Waiting("running, sandboxd not listening yet".to_string()),
            }
        }
        _ => {}
    }
    if let Some((reason, message)) = waiting {
        if HOPELESS.contains(&reason.as_str()) {
            return Progress::Failed(format!("{reason}: {message}"));
        }
        return Progress::Waiting(format!("{reason}: {message}"));
    }
    if let Some((_, message)) = condition(pod, "PodScheduled").filter(|(s, _)| s == "False") {
        return Progress::Waiting(format!("not scheduled: {message}"));
    }
    Progress::Waiting(
        status
            .phase
            .clone()
            .unwrap_or_else(|| "no phase yet".to_string()),
    )
}

/// A condition's status and message.
fn condition(pod: &Pod, kind: &str) -> Option<(String, String)> {
    pod.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()))
}

/// A pod's state as a sandbox's (`None`: no pod).
pub(super) fn state(pod: Option<&Pod>) -> SandboxState {
    let Some(pod) = pod else {
        return SandboxState::Down;
    };
    if pod.metadata.deletion_timestamp.is_some() {
        return SandboxState::Down;
    }
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Running") => SandboxState::Running,
        Some("Pending") | None => SandboxState::Starting,
        _ => SandboxState::Down,
    }
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The port sandboxd listens on in `pod` (its container's port named [`PORT_NAME`]).
fn sandboxd_port(pod: &Pod) -> Option<u16> {
    pod.spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == CONTAINER)?
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(PORT_NAME))
        .and_then(|p| u16::try_from(p.container_port).ok())
}

/// The claim on a pod; `Err` when its annotation cannot be read (such a pod is no one's to
/// hand out or remove).
pub(super) fn claim(pod: &Pod) -> Result<Option<Claim>, serde_json::Error> {
    annotation(pod, CLAIM).map(serde_json::from_str).transpose()
}

/// What a pod of the service is: its claim read, its sandboxd reached at its pod IP.
pub(super) fn found(pod: &Pod) -> Result<Found, serde_json::Error> {
    let id = pod.metadata.name.clone().unwrap_or_default();
    let address = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .filter(|ip| !ip.is_empty());
    let container = address
        .zip(sandboxd_port(pod))
        .map(|(ip, port)| ServedSandbox {
            id: id.clone(),
            local_url: url(&ip, port),
            port,
            app_ports: BTreeMap::new(),
            image: annotation(pod, IMAGE).unwrap_or_default().to_string(),
        });
    let configure_key = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == CONTAINER))
        .and_then(|c| c.env.as_ref())
        .into_iter()
        .flatten()
        .find(|e| e.name == CONFIGURE_KEY)
        .and_then(|e| e.value.clone());
    Ok(Found {
        runtime_id: label(pod, RUNTIME_ID).unwrap_or_default().to_string(),
        id,
        state: state(Some(pod)),
        container,
        configure_key,
        profile: annotation(pod, PROFILE).map(str::to_string),
        claim: claim(pod)?,
    })
}

/// sandboxd's URL at a pod address (an IPv6 one in brackets).
pub(super) fn url(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("http://[{ip}]:{port}")
    } else {
        format!("http://{ip}:{port}")
    }
}

#[cfg(test)]
mod tests;
