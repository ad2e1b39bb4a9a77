//! Shared set-up: a running `agentd serve` with its own name and state directory; its
//! containers are removed when it is dropped, even when a test fails.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use client::protocol::runtime_api::{SessionStatus, StartRequest, StartResponse};
use client::{RuntimeApiClient, SandboxClient};
use testkit::Daemon;

pub const KEY_A: &str = "key-of-host-a";
pub const KEY_B: &str = "key-of-host-b";

#[path = "../support/binaries.rs"]
mod binaries;

pub use binaries::{agentd, base_image, sandboxd_binary};

/// How to start a service; by default no warm pool, no idle timeout and no extra arguments.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub pool_size: usize,
    pub idle_timeout: f64,
    /// CPUs of a sandbox (default 1).
    pub cpus: Option<&'static str>,
    pub extra: Vec<String>,
}

impl Options {
    /// The defaults with a warm pool of `size`.
    pub fn pooled(size: usize) -> Options {
        Options {
            pool_size: size,
            ..Options::default()
        }
    }
}

/// A running service.
pub struct Service {
    daemon: Option<Daemon>,
    pub url: String,
    pub name: String,
    pub options: Options,
    pub state: tempfile::TempDir,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Service {
    pub fn start(options: Options) -> Service {
        let name = format!(
            "test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let state = tempfile::tempdir().unwrap();
        let mut service = Service {
            daemon: None,
            url: String::new(),
            name,
            options,
            state,
        };
        service.spawn();
        service
    }

    /// Another replica of this service: the same name (so the same sandboxes), its own
    /// process and state directory.
    pub fn replica(&self) -> Service {
        let mut replica = Service {
            daemon: None,
            url: String::new(),
            name: self.name.clone(),
            options: self.options.clone(),
            state: tempfile::tempdir().unwrap(),
        };
        replica.spawn();
        replica
    }

    /// Starts (again) the service process with this name and state directory.
    pub fn spawn(&mut self) {
        let mut command = agentd();
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(["--api-key", KEY_A, "--api-key", KEY_B])
            .args(["--name", &self.name, "--image", &base_image()])
            .arg("--state-dir")
            .arg(self.state.path())
            .args(["--pool-size", &self.options.pool_size.to_string()])
            .args(["--idle-timeout", &self.options.idle_timeout.to_string()])
            .args(["--memory", "1g", "--cpus", self.options.cpus.unwrap_or("1")])
            .args(&self.options.extra)
            .env_remove("AGENTD_API_KEYS")
            .env_remove("AGENTD_CONFIG")
            .stderr(Stdio::inherit());
        let daemon = Daemon::spawn(&mut command, "agentd serve listening on ")
            .unwrap_or_else(|e| panic!("agentd serve did not start: {e}"));
        self.url = daemon.url().to_string();
        self.daemon = Some(daemon);
    }

    /// Stops the service process cleanly (SIGTERM), waiting at most `grace`.
    pub fn terminate(&mut self, grace: Duration) {
        if let Some(mut daemon) = self.daemon.take() {
            daemon.terminate(grace);
        }
    }

    /// SIGKILLs the service process (its sandboxes stay).
    pub fn kill(&mut self) {
        if let Some(mut daemon) = self.daemon.take() {
            daemon.kill();
        }
    }

    pub fn api(&self, key: &str) -> RuntimeApiClient {
        RuntimeApiClient::new(&self.url, key).unwrap()
    }

    /// Starts a sandbox for `session` with `key` and waits until it is ready.
    pub async fn ready_sandbox(&self, key: &str, session: &str) -> (StartResponse, SandboxClient) {
        self.ready_sandbox_for(key, &start_request(session)).await
    }

    /// Starts a sandbox for `request` with `key` and waits until it is ready.
    pub async fn ready_sandbox_for(
        &self,
        key: &str,
        request: &StartRequest,
    ) -> (StartResponse, SandboxClient) {
        let api = self.api(key);
        let started = api.start(request).await.unwrap();
        api.wait_until_ready(&started.access.runtime_id, Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        let client =
            SandboxClient::new(&started.access.url, started.access.session_api_key.clone())
                .unwrap();
        (started, client)
    }

    /// The sandbox this service finds for `session` (after a restart, say): the session must
    /// still be running on `runtime_id`.
    pub async fn found_sandbox(&self, key: &str, session: &str, runtime_id: &str) -> SandboxClient {
        let found = self.api(key).session(session).await.unwrap();
        assert_eq!(found.status, SessionStatus::Running);
        assert_eq!(found.access.runtime_id, runtime_id);
        SandboxClient::new(&found.access.url, found.access.session_api_key).unwrap()
    }

    /// The containers of this service (`docker ps -a`).
    pub fn containers(&self) -> Vec<String> {
        let out = Command::new("docker")
            .args(["ps", "-aq", "--filter"])
            .arg(format!("label=dev.sandboxd.serve.name={}", self.name))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // A clean stop (the service leaves its claimed sandboxes), then they are removed below.
        if let Some(daemon) = &mut self.daemon {
            daemon.terminate(Duration::from_secs(30));
        }
        drop(binaries::Cleanup(self.containers()));
    }
}

/// A `/start` body as OpenHands' RemoteRuntime sends it.
pub fn start_request(session: &str) -> StartRequest {
    StartRequest {
        image: "ghcr.io/all-hands-ai/runtime:0.62-nikolaik".to_string(),
        command: testkit::reference_start_command(&[]),
        working_dir: Some("/openhands/code/".to_string()),
        environment: Default::default(),
        session_id: session.to_string(),
        resource_factor: 1.0,
        runtime_class: None,
    }
}

/// Starts the sessions `s-0` to `s-3` all at once, alternately on the replicas `a` and `b`,
/// each with its name in `MARK`, and checks that each sandbox has its own `MARK` and that no
/// sandbox went to two sessions (`what` names a sandbox in the failures: a pod, a sandbox).
/// Their runtime ids, sorted.
pub async fn start_four_sessions_on_two_replicas(
    a: &Service,
    b: &Service,
    what: &str,
) -> Vec<String> {
    let starts = (0..4).map(|i| {
        let (service, session) = (if i % 2 == 0 { a } else { b }, format!("s-{i}"));
        async move {
            let mut request = start_request(&session);
            request
                .environment
                .insert("MARK".to_string(), session.clone());
            let (started, sandbox) = service.ready_sandbox_for(KEY_A, &request).await;
            let obs = sandbox.run("echo $MARK", None).await.unwrap();
            assert_eq!(obs.content.trim(), session, "{what} configured twice");
            started.access.runtime_id
        }
    });
    let mut ids = futures_util::future::join_all(starts).await;
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{what} was handed out twice: {ids:?}");
    ids
}

/// Waits (at most `secs` seconds) until the idle sandbox of `session` is stopped: the
/// service no longer finds the session.
pub async fn wait_until_idle_stopped(api: &RuntimeApiClient, session: &str, secs: u64) {
    eventually(secs, "the idle sandbox to be stopped", || async {
        api.session(session).await.is_err()
    })
    .await;
}

/// Checks that the service no longer knows the runtime `runtime_id` (404).
pub async fn assert_runtime_gone(api: &RuntimeApiClient, runtime_id: &str) {
    assert_eq!(
        api.runtime(runtime_id).await.unwrap_err().status(),
        Some(404)
    );
}

/// `sbx --json`, the client crate's CLI: the workspace's debug binary (scripts/test builds every
/// binary first).
pub fn sbx_json() -> Command {
    let mut command =
        Command::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/sbx"));
    command.arg("--json");
    command
}

/// `sbx --json runtime ARGS` against `service` with `key`.
pub fn sbx_runtime(service: &Service, key: &str, args: &[&str]) -> Output {
    sbx_json()
        .arg("runtime")
        .args(args)
        .env("SANDBOX_REMOTE_RUNTIME_API_URL", &service.url)
        .env("SANDBOX_API_KEY", key)
        .output()
        .unwrap()
}

/// What a command that must have succeeded printed on stdout, as JSON.
pub fn json_of(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Polls `cond` (every 100 ms) until it holds, for at most `secs` seconds.
pub async fn eventually<F, Fut>(secs: u64, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The container's `HostConfig` field, via `docker inspect`.
pub fn inspect(container: &str, format: &str) -> String {
    let out = Command::new("docker")
        .args(["inspect", "-f", format, container])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
