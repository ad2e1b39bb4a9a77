//! The remote runtime: a sandboxd started here, as someone else would, reached by URL and key.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd::ScriptedAgent;
use agentd::{RunSpec, run_session};
use agentd::{Runtime, RuntimeConfig, RuntimeError, RuntimeKind, error_id};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use protocol::{Event, ObservationKind};
use testkit::Daemon;

use crate::common::{error_id_of, live, local_sandboxd, metadata, run, sh};

const KEY: &str = "remote-sekret";

/// A sandboxd of our own, killed with its group on drop.
struct Sandboxd {
    daemon: Daemon,
    _workspace: tempfile::TempDir,
}

impl Sandboxd {
    fn start() -> Sandboxd {
        Self::start_with(&[])
    }

    /// One with `extra` arguments (`--unix-socket PATH`).
    fn start_with(extra: &[&str]) -> Sandboxd {
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
            .args(extra)
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

/// An HTTP proxy on `127.0.0.1:0` in front of a sandboxd that records every request body, so
/// a test can see what agentd sends.
struct RecordingProxy {
    url: String,
    /// (path, body) of every request, in order.
    recorded: Arc<Mutex<Vec<(String, Bytes)>>>,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Upstream {
    target: String,
    http: reqwest::Client,
    recorded: Arc<Mutex<Vec<(String, Bytes)>>>,
}

impl RecordingProxy {
    async fn start(target: &str) -> RecordingProxy {
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let upstream = Upstream {
            target: target.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
            recorded: recorded.clone(),
        };
        let app = axum::Router::new().fallback(forward).with_state(upstream);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        RecordingProxy {
            url,
            recorded,
            server,
        }
    }

    /// The recorded bodies of requests to `path`.
    fn bodies(&self, path: &str) -> Vec<serde_json::Value> {
        self.recorded
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, body)| serde_json::from_slice(body).unwrap())
            .collect()
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn forward(State(upstream): State<Upstream>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let path = parts.uri.path().to_string();
    upstream
        .recorded
        .lock()
        .unwrap()
        .push((path.clone(), body.clone()));
    let query = parts
        .uri
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes()).unwrap();
    let mut sent = upstream
        .http
        .request(method, format!("{}{path}{query}", upstream.target))
        .body(body);
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" {
            sent = sent.header(name.as_str(), value.as_bytes());
        }
    }
    let answer = sent.send().await.unwrap();
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let body = answer.bytes().await.unwrap();
    (status, [("content-type", content_type)], body.to_vec()).into_response()
}

/// Regression: agentd sent every action's `tool_call_metadata` (with the model's whole
/// response) to sandboxd, only to have it stamped back on the observation. The request now
/// carries none, and the observation in the session's event stream still has the action's.
#[tokio::test]
async fn tool_call_metadata_is_not_sent_to_sandboxd_but_is_on_the_observation() {
    let sandboxd = Sandboxd::start();
    let proxy = RecordingProxy::start(sandboxd.daemon.url()).await;
    let sessions = tempfile::tempdir().unwrap();
    let spec = RunSpec::new(
        "metadata",
        sessions.path(),
        "say hi",
        Box::new(ScriptedAgent::new([run(1, "echo hi")])),
        RuntimeConfig {
            remote_url: Some(proxy.url.clone()),
            ..sandboxd.config(Some(KEY))
        },
        10,
    );
    let outcome = run_session(spec, |_| {}).await.unwrap();
    assert!(outcome.finished(), "{:?}", outcome.state);

    // Before the agent's command, the workspace was looked at (`pwd`, `read`s of instruction
    // files and scripts): the agent's is the one `run` of `echo hi`.
    let sent: Vec<_> = proxy
        .bodies("/execute_action")
        .into_iter()
        .filter(|b| b["action"]["args"]["command"] == "echo hi")
        .collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["action"]["action"], "run", "{}", sent[0]);
    assert_eq!(sent[0]["action"]["args"]["command"], "echo hi");
    assert!(
        sent[0]["action"].get("tool_call_metadata").is_none(),
        "the request carries tool_call_metadata: {}",
        sent[0]
    );

    let events = outcome.stream.all();
    let action_id = events
        .iter()
        .find_map(|e| match &**e {
            Event::Action(a) if a.tool_call_metadata.is_some() => a.id,
            _ => None,
        })
        .unwrap();
    let observation = events
        .iter()
        .find_map(|e| match &**e {
            Event::Observation(o) if o.cause == Some(action_id) => Some(o.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        matches!(observation.kind, ObservationKind::Run(_)),
        "{observation:?}"
    );
    assert_eq!(observation.content.trim(), "hi");
    assert_eq!(observation.tool_call_metadata, Some(metadata(1)));
}

/// The stdio MCP servers of a sandbox reached over a Unix socket (a Docker sandbox without
/// network is): agentd posts them and calls them through the proxy on the same socket.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_stdio_servers_of_a_sandbox_on_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("sandbox.sock");
    let sandboxd = Sandboxd::start_with(&["--unix-socket", socket.to_str().unwrap()]);
    assert!(
        sandboxd.daemon.url().starts_with("unix:"),
        "{}",
        sandboxd.daemon.url()
    );
    let mut runtime = Runtime::start(&sandboxd.config(Some(KEY))).await.unwrap();
    let settings = agentd::McpSettings {
        stdio_servers: vec![testkit::stdio_server("sock")],
        ..agentd::McpSettings::default()
    };
    assert_eq!(runtime.connect_mcp(&settings).await, []);
    let names: Vec<String> = runtime
        .mcp_tools()
        .into_iter()
        .map(|t| t.function.name)
        .collect();
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    let mut call = protocol::Action::from(protocol::ActionKind::Mcp(protocol::action::McpArgs {
        name: "echo".into(),
        arguments: serde_json::json!({"text": "over the socket"})
            .as_object()
            .unwrap()
            .clone(),
        ..Default::default()
    }));
    call.id = Some(7);
    call.tool_call_metadata = Some(metadata(7));
    let observation = runtime.execute(&call).await;
    assert!(
        matches!(observation.kind, ObservationKind::Mcp(_)),
        "{observation:?}"
    );
    assert!(
        observation.content.contains("sock says over the socket"),
        "{}",
        observation.content
    );
    assert_eq!(observation.cause, Some(7));
    assert_eq!(observation.tool_call_metadata, Some(metadata(7)));
}
