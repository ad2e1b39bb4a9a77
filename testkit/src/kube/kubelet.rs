//! The fake's kubelet: each pod created runs as a real sandboxd on this machine, the pod's
//! container command translated to this host (the sandboxd binary under test, listening on
//! 127.0.0.1 at a free port, in a temporary directory instead of `/workspace`), behind a
//! proxy at the pod's own address: 127.A.B.N (all of 127.0.0.0/8 is this machine's loopback)
//! at the pod's sandboxd port, the same port for every pod as in a cluster. The proxy does
//! what a pod's network namespace and file system do for a real pod: it turns the
//! configuration the service sends (`0.0.0.0`, the pod's port, `/workspace`) into this host's
//! terms, and the image's user (`openhands`) this host's. The pod becomes `Running` and
//! ready once sandboxd listens; deleting it kills sandboxd.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{Kind, Shared};
use crate::Daemon;

/// A pod being run.
#[derive(Debug)]
struct Running {
    _daemon: Daemon,
    proxy: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.proxy.abort();
    }
}

#[derive(Debug)]
pub(super) struct Kubelet {
    sandboxd: PathBuf,
    /// The first three octets of every pod address.
    prefix: [u8; 3],
    /// The sandboxd port of every pod.
    port: u16,
    /// The first pod address's listener, bound to choose the port.
    reserved: Mutex<Option<std::net::TcpListener>>,
    /// The last octet of the next pod address.
    next: Mutex<u8>,
    pods: Mutex<HashMap<String, Running>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Kubelet {
    pub(super) fn new(sandboxd: PathBuf) -> Kubelet {
        // A /24 of its own in 127/8 for each fake (tests and test binaries run at once).
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let seed = std::process::id().wrapping_mul(2_654_435_761) ^ nanos;
        let prefix = [127, 64 + (seed % 128) as u8, ((seed >> 8) % 250 + 1) as u8];
        let first = Ipv4Addr::new(prefix[0], prefix[1], prefix[2], 1);
        let reserved = std::net::TcpListener::bind((first, 0))
            .unwrap_or_else(|e| panic!("the fake kubelet cannot listen on {first}: {e}"));
        let port = reserved
            .local_addr()
            .unwrap_or_else(|e| panic!("no address: {e}"))
            .port();
        Kubelet {
            sandboxd,
            prefix,
            port,
            reserved: Mutex::new(Some(reserved)),
            next: Mutex::new(1),
            pods: Mutex::default(),
        }
    }

    pub(super) fn port(&self) -> u16 {
        self.port
    }

    /// The listener of the next pod address at the sandboxd port.
    fn listener(&self) -> Result<(Ipv4Addr, std::net::TcpListener), String> {
        let octet = {
            let mut next = lock(&self.next);
            let octet = *next;
            *next = next
                .checked_add(1)
                .ok_or("the fake kubelet ran out of addresses")?;
            octet
        };
        let address = Ipv4Addr::new(self.prefix[0], self.prefix[1], self.prefix[2], octet);
        let listener = match lock(&self.reserved).take() {
            Some(listener) => listener,
            None => std::net::TcpListener::bind((address, self.port))
                .map_err(|e| format!("cannot listen on {address}:{}: {e}", self.port))?,
        };
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        Ok((address, listener))
    }

    /// Runs `pod` of namespace `ns` (in the background), its status changing as it comes up.
    pub(super) fn run(&self, shared: Arc<Shared>, ns: String, pod: Value) {
        tokio::spawn(async move {
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            set_status(
                &shared,
                &ns,
                &pod,
                json!({
                    "phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "True"}],
                    "containerStatuses": [{
                        "name": "sandbox", "ready": false, "restartCount": 0, "image": pod["spec"]["containers"][0]["image"], "imageID": "",
                        "state": {"waiting": {"reason": "ContainerCreating"}},
                    }],
                }),
            );
            match shared.kubelet.start(&pod).await {
                Ok((address, running)) => {
                    let status = json!({
                        "phase": "Running",
                        "podIP": address.to_string(),
                        "podIPs": [{"ip": address.to_string()}],
                        "hostIP": "127.0.0.1",
                        "conditions": [
                            {"type": "PodScheduled", "status": "True"},
                            {"type": "Initialized", "status": "True"},
                            {"type": "ContainersReady", "status": "True"},
                            {"type": "Ready", "status": "True"},
                        ],
                        "containerStatuses": [{
                            "name": "sandbox", "ready": true, "started": true, "restartCount": 0,
                            "image": pod["spec"]["containers"][0]["image"], "imageID": "",
                            "state": {"running": {"startedAt": "2026-01-01T00:00:01Z"}},
                        }],
                    });
                    // Kept only while its pod is there (a pod deleted meanwhile is not run).
                    if set_status(&shared, &ns, &pod, status) {
                        lock(&shared.kubelet.pods).insert(name, running);
                    }
                }
                Err(why) => {
                    set_status(
                        &shared,
                        &ns,
                        &pod,
                        json!({"phase": "Failed", "message": why}),
                    );
                }
            }
        });
    }

    /// Starts the pod's sandboxd and its proxy; the pod's address.
    async fn start(&self, pod: &Value) -> Result<(Ipv4Addr, Running), String> {
        let container = &pod["spec"]["containers"][0];
        let port = container["ports"]
            .as_array()
            .and_then(|ports| ports.iter().find(|p| p["name"] == "sandboxd"))
            .and_then(|p| p["containerPort"].as_u64());
        if port != Some(u64::from(self.port)) {
            return Err(format!(
                "the fake kubelet serves sandboxd at port {} only, not {port:?}",
                self.port
            ));
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path().to_path_buf();
        // The sandbox user (uid 1000 when sandboxd runs as root) works in it.
        std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .map_err(|e| e.to_string())?;
        let mut command = Command::new(&self.sandboxd);
        let args: Vec<String> = container["command"]
            .as_array()
            .into_iter()
            .flatten()
            .skip(1)
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        command
            .args(host_args(&args, 0, &root))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stderr(Stdio::null());
        for var in container["env"].as_array().into_iter().flatten() {
            if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
                command.env(name, value);
            }
        }
        let daemon = tokio::task::spawn_blocking(move || {
            Daemon::spawn(&mut command, "sandboxd awaiting configuration on ")
        })
        .await
        .map_err(|e| e.to_string())??;
        let target = daemon.url().to_string();
        let (address, listener) = self.listener()?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
        let proxy = Arc::new(Proxy {
            target,
            root,
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .map_err(|e| e.to_string())?,
        });
        let app = axum::Router::new().fallback(forward).with_state(proxy);
        let proxy = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((
            address,
            Running {
                _daemon: daemon,
                proxy,
                _dir: dir,
            },
        ))
    }

    /// Kills pod `name`'s sandboxd.
    pub(super) fn stop(&self, name: &str) {
        lock(&self.pods).remove(name);
    }

    pub(super) fn stop_all(&self) {
        lock(&self.pods).clear();
    }
}

/// Sets `pod`'s status, if the pod is still there; says whether it was.
fn set_status(shared: &Shared, ns: &str, pod: &Value, status: Value) -> bool {
    let mut cluster = shared.lock();
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let key = (Kind::Pod, ns.to_string(), name);
    let Some(mut current) = cluster.objects.get(&key).cloned() else {
        return false;
    };
    if current["metadata"]["uid"] != pod["metadata"]["uid"] {
        return false;
    }
    current["status"] = status;
    shared.change(&mut cluster, Kind::Pod, ns, "MODIFIED", current);
    true
}

/// A pod's sandboxd arguments on this host: listening on 127.0.0.1 at `port`, working and
/// writing under `root`, its shell as this host's user (also when the arguments name none),
/// processes counted as its tree (the host's uid 1000 is not the sandbox's).
fn host_args(args: &[String], port: u16, root: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut port_done = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        match arg {
            "--host" => out.extend(["--host".to_string(), "127.0.0.1".to_string()]),
            "--working-dir" => {
                out.extend(["--working-dir".to_string(), root.display().to_string()]);
            }
            "--output-dir" => out.extend([
                "--output-dir".to_string(),
                root.join("outputs").display().to_string(),
            ]),
            // The image's users are not this host's: sandboxd runs the shell as this host's
            // user (whose uid is not the sandbox's either).
            "--username" => out.extend(["--username".to_string(), host_user()]),
            "--agent-processes" | "--user-id" => {}
            _ if !port_done && arg.parse::<u16>().is_ok() => {
                port_done = true;
                out.push(port.to_string());
                i += 1;
                continue;
            }
            _ => {
                out.push(arg.to_string());
                i += 1;
                continue;
            }
        }
        // The flag's value is replaced (or dropped with it).
        i += 2;
    }
    // Without one, sandboxd runs the shell as the image's user (`openhands`), which this host
    // may not have: this host's user then too.
    if !args.iter().any(|a| a == "--username") {
        out.extend(["--username".to_string(), host_user()]);
    }
    out
}

/// The name of the user this process runs as.
fn host_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| "root".to_string())
}

/// The proxy in front of one pod's sandboxd.
#[derive(Debug)]
struct Proxy {
    /// sandboxd's URL on 127.0.0.1.
    target: String,
    /// The pod's directory.
    root: PathBuf,
    http: reqwest::Client,
}

async fn forward(
    State(proxy): State<Arc<Proxy>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut body = body;
    if method == Method::POST && uri.path() == "/configure" {
        // The configuration names the pod's port, address and directories: this host's here.
        if let Ok(mut configure) = serde_json::from_slice::<Value>(&body) {
            let port = proxy
                .target
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let args: Vec<String> = configure["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect();
            configure["args"] = json!(host_args(&args, port, &proxy.root));
            body = Bytes::from(configure.to_string());
        }
    }
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = proxy
        .http
        .request(method, format!("{}{path}", proxy.target))
        .body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(answer) => {
            let status = answer.status();
            let mut out = HeaderMap::new();
            for (name, value) in answer.headers() {
                if name != "transfer-encoding" && name != "content-length" && name != "connection" {
                    out.insert(name.clone(), value.clone());
                }
            }
            let bytes = answer.bytes().await.unwrap_or_default();
            (status, out, bytes).into_response()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}
