//! The remote runtime: a sandboxd started here, as someone else would, reached by URL and key.

use std::process::{Command, Stdio};
use std::time::Duration;

use agentd::runtime::{Runtime, RuntimeConfig, RuntimeError, RuntimeKind, error_id};

use testkit::Daemon;

use crate::common::{error_id_of, live, local_sandboxd, run, sh};

const KEY: &str = "remote-sekret";

/// A sandboxd of our own, killed with its group on drop.
struct Sandboxd {
    daemon: Daemon,
    _workspace: tempfile::TempDir,
}

impl Sandboxd {
    fn start() -> Sandboxd {
        let workspace = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(local_sandboxd());
        cmd.arg("0")
            .arg("--working-dir")
            .arg(workspace.path())
            .args([
                "--username",
                "root",
                "--no-login-shell",
                "--no-enable-browser",
            ])
            .env("SESSION_API_KEY", KEY)
            .env_remove("SANDBOXD_UNIX_SOCKET")
            .stderr(Stdio::null());
        let daemon = Daemon::spawn(&mut cmd, "sandboxd listening on ")
            .unwrap_or_else(|e| panic!("sandboxd did not start: {e}"));
        Sandboxd {
            daemon,
            _workspace: workspace,
        }
    }

    fn config(&self, key: Option<&str>) -> RuntimeConfig {
        RuntimeConfig {
            kind: RuntimeKind::Remote,
            remote_url: Some(self.daemon.url().to_string()),
            remote_api_key: key.map(str::to_string),
            ..RuntimeConfig::default()
        }
    }
}

#[tokio::test]
async fn a_remote_sandbox_runs_actions_and_outlives_its_runtime() {
    let sandboxd = Sandboxd::start();
    let runtime = Runtime::start(&sandboxd.config(Some(KEY))).await.unwrap();
    assert_eq!(runtime.kind(), RuntimeKind::Remote);
    assert_eq!(runtime.url(), sandboxd.daemon.url());
    assert_eq!(runtime.pid(), None);
    assert_eq!(sh(&runtime, "echo hi").await, "hi");
    runtime.health().await.unwrap();
    runtime.close().await.unwrap();
    // Not ours to stop.
    assert!(live(sandboxd.daemon.pid()));
    let again = Runtime::start(&sandboxd.config(Some(KEY))).await.unwrap();
    assert_eq!(sh(&again, "echo still here").await, "still here");
}

#[tokio::test]
async fn a_wrong_key_fails_the_start_clearly() {
    let sandboxd = Sandboxd::start();
    for key in [Some("wrong"), None] {
        let err = Runtime::start(&sandboxd.config(key)).await.unwrap_err();
        let RuntimeError::Unauthorized { status, .. } = &err else {
            panic!("unexpected error: {err}");
        };
        assert_eq!(*status, 403);
        assert!(
            err.to_string().contains("refused the session API key"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_remote_runtime_needs_a_url() {
    let err = Runtime::start(&RuntimeConfig {
        kind: RuntimeKind::Remote,
        ..RuntimeConfig::default()
    })
    .await
    .unwrap_err();
    assert!(matches!(err, RuntimeError::Config(_)), "{err}");
}

/// A remote sandbox that goes away is unreachable, not dead: it may come back.
#[tokio::test]
async fn a_remote_sandbox_that_went_away_is_reported_unreachable() {
    let sandboxd = Sandboxd::start();
    let runtime = Runtime::start(&sandboxd.config(Some(KEY))).await.unwrap();
    drop(sandboxd);
    let obs = runtime.execute(&run(51, "echo hi")).await;
    assert_eq!(error_id_of(&obs), error_id::UNREACHABLE, "{}", obs.content);
    assert!(
        obs.content.contains("could not be reached"),
        "{}",
        obs.content
    );
    assert_eq!(obs.cause, Some(51));
    assert!(runtime.is_alive());
    assert!(matches!(
        runtime.health().await,
        Err(RuntimeError::Unreachable { .. })
    ));
}

#[tokio::test]
async fn a_remote_sandbox_that_never_answers_times_out() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = Runtime::start(&RuntimeConfig {
        kind: RuntimeKind::Remote,
        remote_url: Some(format!("http://127.0.0.1:{port}")),
        startup_timeout: Duration::from_millis(200),
        ..RuntimeConfig::default()
    })
    .await
    .unwrap_err();
    assert!(matches!(err, RuntimeError::StartTimeout { .. }), "{err}");
    assert!(err.to_string().contains("did not become ready"), "{err}");
}
