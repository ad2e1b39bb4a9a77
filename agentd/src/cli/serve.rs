//! `agentd serve`: the runtime API service (docs/protocol.md §9) for other agent hosts, OpenHands'
//! `RemoteRuntime` included. Prints `agentd serve listening on http(s)://ADDR` on stdout once it
//! answers; stops on SIGTERM or Ctrl-C, removing its warm sandboxes and leaving the claimed
//! ones for the next start to recover.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use agentd::ServeConfig;
use anyhow::Context;
use clap::Args;

use super::{DiskSize, USAGE, parse_bytes, set, stop_signal};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free one; the bound address is printed).
    #[arg(long, env = "AGENTD_SERVE_LISTEN", default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
    /// An API key callers must send as X-API-Key (repeatable). AGENTD_API_KEYS takes several,
    /// comma-separated.
    #[arg(
        long = "api-key",
        env = "AGENTD_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    api_keys: Vec<String>,
    /// Settings file (TOML, section [serve]); flags and environment variables override it.
    #[arg(long, env = "AGENTD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// The service's name: its containers carry it, and a restart recovers only those.
    #[arg(long, env = "AGENTD_SERVE_NAME")]
    name: Option<String>,
    /// Image (base or sandbox image) for sandboxes whose image this host does not have.
    #[arg(long, env = "AGENTD_IMAGE")]
    image: Option<String>,
    /// Ready sandboxes kept of the default image (0: every /start creates one).
    #[arg(long, env = "AGENTD_SERVE_POOL_SIZE")]
    pool_size: Option<usize>,
    /// Seconds without an action after which a sandbox is stopped (0: never; default 1800).
    #[arg(long, env = "AGENTD_SERVE_IDLE_TIMEOUT")]
    idle_timeout: Option<f64>,
    /// Host name or address put in the URLs given to callers (default 127.0.0.1).
    #[arg(long, env = "AGENTD_SERVE_PUBLIC_HOST")]
    public_host: Option<String>,
    /// The engine sandboxes run on: docker (this host's engine), swarm (services of the swarm
    /// this engine manages) or kubernetes (pods of a namespace); swarm and kubernetes imply
    /// --front-door.
    #[arg(long, env = "AGENTD_SERVE_BACKEND", value_parser = ["docker", "swarm", "kubernetes"])]
    backend: Option<String>,
    /// The host ports swarm sandboxes are published at, LOW-HIGH (default 31000-31999).
    #[arg(long, env = "AGENTD_SERVE_SWARM_PORTS", value_name = "LOW-HIGH")]
    swarm_ports: Option<String>,
    /// Hand out front-door URLs (`PUBLIC_URL/sandboxes/RUNTIME_ID`): the service proxies each
    /// sandbox's HTTP API and WebSockets, so callers reach only the service.
    #[arg(long, env = "AGENTD_SERVE_FRONT_DOOR")]
    front_door: bool,
    /// The service's URL as callers reach it (default http(s)://PUBLIC_HOST:PORT).
    #[arg(long, env = "AGENTD_SERVE_PUBLIC_URL", value_name = "URL")]
    public_url: Option<String>,
    /// PEM certificate chain: serve the runtime API and the front door over TLS (needs
    /// --tls-key).
    #[arg(
        long,
        env = "AGENTD_SERVE_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(
        long,
        env = "AGENTD_SERVE_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    tls_key: Option<PathBuf>,
    /// Host address sandbox ports are published on (default 127.0.0.1; 0.0.0.0 for callers on
    /// other hosts).
    #[arg(long, env = "AGENTD_SERVE_PUBLISH_ADDRESS")]
    publish_address: Option<String>,
    /// Where the service keeps its claims (session → sandbox, keys; 0700).
    #[arg(long, env = "AGENTD_SERVE_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Memory limit of a sandbox at resource_factor 1 (e.g. 4g).
    #[arg(long, value_parser = parse_bytes)]
    memory: Option<i64>,
    /// CPU limit of a sandbox at resource_factor 1.
    #[arg(long)]
    cpus: Option<f64>,
    /// Process limit of a sandbox.
    #[arg(long)]
    pids: Option<i64>,
    /// The most a sandbox may write, e.g. 10g (the default), or `none` (also `[docker] disk`).
    #[arg(long, env = "AGENTD_DISK", value_name = "SIZE|none")]
    disk: Option<DiskSize>,
    /// HTTP connections served at once (more wait in the backlog); a tenth of them at most,
    /// and 16 at least, may be without a valid key.
    #[arg(long, env = "AGENTD_SERVE_MAX_CONNECTIONS", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: Option<u32>,
    /// The sandboxd binary put into base images.
    #[arg(long = "sandboxd", env = "AGENTD_SANDBOXD_BIN", value_name = "PATH")]
    sandboxd: Option<PathBuf>,
    /// Allow sandboxes as root (a start command with `--username root` or `--user-id 0`);
    /// refused with 403 otherwise.
    #[arg(long, env = "AGENTD_ALLOW_ROOT")]
    allow_root: bool,
    /// Let every caller's sandbox user use sudo (no-new-privileges off, the capabilities root
    /// needs to install packages); default off: sudo says the policy forbids it. `[serve]
    /// sudo_keys` allows it for some keys only.
    #[arg(long, env = "AGENTD_SUDO")]
    sudo: bool,
    /// App ports published per sandbox, reported as `work_hosts` and named in the sandbox as
    /// APP_PORT_1... (container ports 12000 and up; default 2, at most 16, 0 for none).
    #[arg(long, env = "AGENTD_SERVE_APP_PORTS", value_parser = clap::value_parser!(u16).range(0..=16))]
    app_ports: Option<u16>,
    /// Print the listening line as JSON (`{"listening": "http://ADDR"}`).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    k8s: KubeArgs,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let file = super::settings(args.config.as_deref())?;
    let section = file.serve;
    let mut config = ServeConfig {
        api_keys: if args.api_keys.is_empty() {
            section.api_keys
        } else {
            args.api_keys
        },
        images: section.images,
        pools: section.pools,
        ..ServeConfig::default()
    };
    config.api_keys.retain(|k| !k.trim().is_empty());
    set(&mut config.name, args.name.or(section.name));
    set(&mut config.default_image, args.image.or(section.image));
    set(&mut config.pool_size, args.pool_size.or(section.pool_size));
    let idle_timeout = args.idle_timeout.or(section.idle_timeout);
    set(
        &mut config.idle_timeout,
        idle_timeout.map(|secs| (secs > 0.0).then(|| Duration::from_secs_f64(secs))),
    );
    set(
        &mut config.public_host,
        args.public_host.or(section.public_host),
    );
    set(
        &mut config.publish_address,
        args.publish_address.or(section.publish_address),
    );
    set(&mut config.state_dir, args.state_dir.or(section.state_dir));
    let ports = args
        .swarm_ports
        .or(section.swarm_ports)
        .unwrap_or_else(|| "31000-31999".to_string());
    config.backend = match args.backend.or(section.backend).as_deref() {
        None | Some("docker") => agentd::BackendKind::Docker,
        Some("swarm") => match parse_port_range(&ports) {
            Some(ports) => agentd::BackendKind::Swarm { ports },
            None => {
                eprintln!(
                    "agentd serve: swarm ports {ports:?}: expected LOW-HIGH, e.g. 31000-31999"
                );
                return Ok(USAGE);
            }
        },
        Some("kubernetes") => match args.k8s.settings() {
            Ok(settings) => agentd::BackendKind::Kubernetes(settings),
            Err(e) => {
                eprintln!("agentd serve: {e}");
                return Ok(USAGE);
            }
        },
        Some(other) => {
            eprintln!("agentd serve: backend {other:?}: expected docker, swarm or kubernetes");
            return Ok(USAGE);
        }
    };
    // Sandboxes on other nodes are reached through the service only.
    let clustered = config.backend != agentd::BackendKind::Docker;
    config.front_door = clustered || args.front_door || section.front_door.unwrap_or(false);
    config.public_url = args.public_url.or(section.public_url);
    config.tls = match (
        args.tls_cert.or(section.tls_cert),
        args.tls_key.or(section.tls_key),
    ) {
        (Some(cert), Some(key)) => Some(agentd::TlsFiles { cert, key }),
        (None, None) => None,
        _ => {
            eprintln!("agentd serve: TLS needs both a certificate and a key (tls_cert, tls_key)");
            return Ok(USAGE);
        }
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    set(&mut config.registry_prefix, section.registry_prefix);
    let memory = match (args.memory, &section.memory) {
        (Some(m), _) => Some(m),
        (None, Some(m)) => Some(parse_bytes(m).map_err(anyhow::Error::msg)?),
        (None, None) => None,
    };
    let limits = &mut config.limits;
    set(
        &mut limits.memory_bytes,
        memory.map(|m| (m > 0).then_some(m)),
    );
    let cpus = args.cpus.or(section.cpus);
    set(&mut limits.cpus, cpus.map(|c| (c > 0.0).then_some(c)));
    let pids = args.pids.or(section.pids);
    set(&mut limits.pids, pids.map(|p| (p > 0).then_some(p)));
    if let Some(max) = args.max_connections.or(section.max_connections) {
        let max = max as usize;
        config.connections.max_connections = max;
        config.connections.max_unauthenticated = (max / 10).max(16).min(max);
    }
    config.sandboxd_binary = args.sandboxd.or(file.sandboxd);
    set(&mut config.sandbox.network, file.docker.network);
    set(&mut config.sandbox.read_only_root, file.docker.read_only);
    if let Some(DiskSize(bytes)) =
        DiskSize::from_flag_or_file(args.disk, file.docker.disk.as_deref())?
    {
        config.sandbox.disk_bytes = bytes;
    }
    if let Some(egress) = &file.docker.egress {
        config.sandbox.egress = egress
            .policy()
            .map_err(|e| anyhow::anyhow!("[docker] egress: {e}"))?;
    }
    set(
        &mut config.sandbox.egress_hosts,
        file.docker.egress_hosts.clone(),
    );
    set(
        &mut config.sandbox.host_ports,
        file.docker.host_ports.clone(),
    );
    for (key, egress) in &section.egress_keys {
        let policy = egress
            .policy()
            .map_err(|e| anyhow::anyhow!("[serve] egress_keys: {e}"))?;
        config.egress_keys.insert(key.clone(), policy);
    }
    for (image, egress) in &section.egress_images {
        let policy = egress
            .policy()
            .map_err(|e| anyhow::anyhow!("[serve] egress_images.{image:?}: {e}"))?;
        config.egress_images.insert(image.clone(), policy);
    }
    config.sandbox.allow_root = args.allow_root || section.allow_root.unwrap_or(false);
    config.sandbox.sudo = args.sudo || section.sudo.unwrap_or(false);
    config.sudo_keys = section.sudo_keys;
    set(
        &mut config.sandbox.app_ports,
        args.app_ports.or(section.app_ports),
    );
    if config.api_keys.is_empty() {
        eprintln!(
            "agentd serve: no API key: pass --api-key, set AGENTD_API_KEYS or [serve] api_keys"
        );
        return Ok(USAGE);
    }

    let listener = match super::listen("agentd serve", args.listen).await {
        Ok(listener) => listener,
        Err(status) => return Ok(status),
    };
    let shutdown = stop_signal()?;
    let json = args.json;
    agentd::serve(config, listener, shutdown, |addr| {
        super::print_listening("agentd serve", &format!("{scheme}://{addr}"), json);
    })
    .await
    .context("agentd serve")?;
    Ok(0)
}

/// `LOW-HIGH` (both ports, LOW at most HIGH).
fn parse_port_range(text: &str) -> Option<std::ops::RangeInclusive<u16>> {
    let (low, high) = text.split_once('-')?;
    let (low, high): (u16, u16) = (low.trim().parse().ok()?, high.trim().parse().ok()?);
    (low > 0 && low <= high).then_some(low..=high)
}

/// The kubernetes backend's flags (`--backend kubernetes`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Kubernetes backend")]
struct KubeArgs {
    /// The namespace of the sandbox pods (default: the service account's in the cluster, else
    /// the kubeconfig context's).
    #[arg(
        long = "k8s-namespace",
        env = "AGENTD_K8S_NAMESPACE",
        value_name = "NAMESPACE"
    )]
    namespace: Option<String>,
    /// The API server's URL. Alone, requests carry no credentials (`kubectl proxy`'s
    /// http://127.0.0.1:8001); with a kubeconfig or --k8s-in-cluster, it replaces their
    /// server.
    #[arg(
        long = "k8s-api-server",
        env = "AGENTD_K8S_API_SERVER",
        value_name = "URL"
    )]
    api_server: Option<String>,
    /// A kubeconfig file (default: KUBECONFIG, else ~/.kube/config, else the service account
    /// of the pod the service runs in).
    #[arg(
        long = "k8s-kubeconfig",
        env = "AGENTD_K8S_KUBECONFIG",
        value_name = "FILE"
    )]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current one).
    #[arg(long = "k8s-context", env = "AGENTD_K8S_CONTEXT", value_name = "NAME")]
    context: Option<String>,
    /// Use the service account of the pod the service runs in (its token and CA, the API at
    /// KUBERNETES_SERVICE_HOST), whatever kubeconfig there is.
    #[arg(long = "k8s-in-cluster", env = "AGENTD_K8S_IN_CLUSTER")]
    in_cluster: bool,
    /// Runtime classes a /start may ask for as runtime_class (runtimeClassName, e.g.
    /// gvisor,kata); any other is refused with 403. Default: none.
    #[arg(
        long = "k8s-runtime-classes",
        env = "AGENTD_K8S_RUNTIME_CLASSES",
        value_delimiter = ',',
        value_name = "CLASS,..."
    )]
    runtime_classes: Vec<String>,
    /// Labels of the service's own pods, KEY=VALUE,...: each sandbox's network policy admits
    /// connections from those pods only.
    #[arg(
        long = "k8s-service-labels",
        env = "AGENTD_K8S_SERVICE_LABELS",
        value_delimiter = ',',
        value_name = "KEY=VALUE,...",
        default_value = "app.kubernetes.io/name=agentd-serve"
    )]
    service_labels: Vec<String>,
    /// The port sandboxd listens on in each sandbox pod (change it if a sidecar your cluster
    /// injects takes 8000).
    #[arg(
        long = "k8s-sandboxd-port",
        env = "AGENTD_K8S_SANDBOXD_PORT",
        default_value_t = 8000,
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    sandboxd_port: u16,
    /// A secret the nodes pull sandbox images with (imagePullSecrets; repeatable).
    #[arg(
        long = "k8s-image-pull-secret",
        env = "AGENTD_K8S_IMAGE_PULL_SECRETS",
        value_delimiter = ',',
        value_name = "SECRET"
    )]
    image_pull_secrets: Vec<String>,
}

impl KubeArgs {
    /// The backend's settings; `Err` names a label that is not `KEY=VALUE`.
    fn settings(&self) -> Result<agentd::KubernetesSettings, String> {
        let service_labels = self
            .service_labels
            .iter()
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .ok_or_else(|| format!("--k8s-service-labels {pair:?}: expected KEY=VALUE"))
            })
            .collect::<Result<_, _>>()?;
        Ok(agentd::KubernetesSettings {
            connection: agentd::KubeConnection {
                api_server: self.api_server.clone(),
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
                in_cluster: self.in_cluster,
            },
            namespace: self.namespace.clone(),
            runtime_classes: self.runtime_classes.clone(),
            service_labels,
            sandboxd_port: self.sandboxd_port,
            image_pull_secrets: self.image_pull_secrets.clone(),
        })
    }
}
