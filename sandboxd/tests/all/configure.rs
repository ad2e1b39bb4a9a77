//! The pre-started mode (`--await-configuration`) a runtime API service's warm pool uses: one
//! authenticated `POST /configure`, taken in place by the shell started while waiting, or, when
//! that shell cannot honour it, by sandboxd re-executed with it.

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use testkit::Daemon;

const CONFIGURE_KEY: &str = "configure-sekret";

/// Sends `action` to the sandboxd at `url` with `key`; its JSON answer.
async fn observe(http: &reqwest::Client, url: &str, key: &str, action: Value) -> Value {
    testkit::json_answer(
        http.post(format!("{url}/execute_action"))
            .header("X-Session-API-Key", key)
            .json(&json!({ "action": action })),
    )
    .await
}

fn sandboxd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sandboxd"));
    cmd.env_remove("SESSION_API_KEY")
        .env_remove("SANDBOXD_CONFIGURE_KEY")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

#[tokio::test]
async fn a_configuration_restarts_sandboxd_with_its_arguments_environment_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let mut daemon = Daemon::spawn(
        sandboxd()
            .args(["--await-configuration", "0"])
            .env("SANDBOXD_CONFIGURE_KEY", CONFIGURE_KEY)
            .env("INHERITED", "from-the-container"),
        "sandboxd awaiting configuration on ",
    )
    .unwrap_or_else(|e| panic!("unexpected first line: {e}"));
    let url = daemon.url().to_string();
    let port = url.rsplit(':').next().unwrap().to_string();
    let http = reqwest::Client::new();

    // Not ready for actions: clients keep waiting.
    let alive = http.get(format!("{url}/alive")).send().await.unwrap();
    assert_eq!(alive.status(), 503);
    let configure = |key: &'static str, body: Value| {
        http.post(format!("{url}/configure"))
            .header("X-Session-API-Key", key)
            .json(&body)
            .send()
    };
    let wrong = configure("wrong", json!({"args": [port]})).await.unwrap();
    assert_eq!(wrong.status(), 403);
    let invalid = configure(CONFIGURE_KEY, json!({"args": ["0", "--bogus"]}))
        .await
        .unwrap();
    assert_eq!(invalid.status(), 400);
    let detail: Value = invalid.json().await.unwrap();
    assert!(
        detail["detail"].as_str().unwrap().contains("--bogus"),
        "{detail}"
    );
    // Regression (issue 14.1): an environment the re-executed sandboxd would refuse is refused
    // here, not after the configuration was taken.
    let invalid = configure(
        CONFIGURE_KEY,
        json!({"args": ["0"], "env": {"NO_CHANGE_TIMEOUT_SECONDS": "10000000000000000000"}}),
    )
    .await
    .unwrap();
    assert_eq!(invalid.status(), 400);
    let detail: Value = invalid.json().await.unwrap();
    assert!(
        detail["detail"]
            .as_str()
            .unwrap()
            .contains("NO_CHANGE_TIMEOUT_SECONDS"),
        "{detail}"
    );

    // A valid one: sandboxd comes back on the same address with that configuration.
    let ok = configure(
        CONFIGURE_KEY,
        json!({
            "args": [port, "--working-dir", ws, "--username", "root", "--no-login-shell",
                     "--no-enable-browser"],
            "env": {"SESSION_API_KEY": "session-key", "CALLER_VAR": "from-the-caller",
                    "NO_CHANGE_TIMEOUT_SECONDS": "1"},
        }),
    )
    .await
    .unwrap();
    assert_eq!(ok.status(), 200);
    // Read on a blocking thread: the runtime must go on running, so that the client notices
    // that the connection of `/configure` closed when sandboxd re-executed itself.
    // Kept (as `_daemon`) until the end: dropping it kills sandboxd.
    let (_daemon, second) = tokio::task::spawn_blocking(move || {
        let line = daemon.next_line();
        (daemon, line)
    })
    .await
    .unwrap();
    let second = second.unwrap();
    assert_eq!(second, format!("sandboxd listening on {url}"));

    let run = |key: &'static str, command: &str| {
        http.post(format!("{url}/execute_action"))
            .header("X-Session-API-Key", key)
            .json(&json!({"action": {"action": "run", "args": {"command": command}}}))
            .send()
    };
    assert_eq!(run(CONFIGURE_KEY, "true").await.unwrap().status(), 403);
    let echo = "echo $CALLER_VAR $INHERITED ${SANDBOXD_CONFIGURE_KEY:-no-configure-key} $PWD";
    let obs = observe(
        &http,
        &url,
        "session-key",
        json!({"action": "run", "args": {"command": echo}}),
    )
    .await;
    assert_eq!(
        obs["content"].as_str().unwrap().trim(),
        format!(
            "from-the-caller from-the-container no-configure-key {}",
            ws.display()
        )
    );
    // NO_CHANGE_TIMEOUT_SECONDS from the configuration: a silent command returns after ~1 s.
    let started = std::time::Instant::now();
    let sleep = json!({"action": "run", "args": {"command": "sleep 30"}});
    let obs = observe(&http, &url, "session-key", sleep).await;
    assert!(started.elapsed().as_secs() < 10, "{obs}");
    assert_eq!(obs["extras"]["metadata"]["exit_code"], json!(-1), "{obs}");
}

#[tokio::test]
async fn a_configuration_the_waiting_shell_can_honour_is_taken_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let ws_arg = ws.display().to_string();
    let warm = [
        "0",
        "--working-dir",
        &ws_arg,
        "--python",
        "/usr/bin/python3",
        "--username",
        "root",
    ];
    let daemon = Daemon::spawn(
        sandboxd()
            .arg("--await-configuration")
            .args(warm)
            .env("SANDBOXD_CONFIGURE_KEY", CONFIGURE_KEY),
        "sandboxd awaiting configuration on ",
    )
    .unwrap_or_else(|e| panic!("unexpected first line: {e}"));
    let url = daemon.url().to_string();
    let port = url.rsplit(':').next().unwrap().to_string();
    let http = reqwest::Client::new();
    let mut args: Vec<String> = warm.iter().map(|a| a.to_string()).collect();
    args[0] = port;
    args.extend(["--plugins", "jupyter", "--no-enable-browser"].map(String::from));
    let ok = http
        .post(format!("{url}/configure"))
        .header("X-Session-API-Key", CONFIGURE_KEY)
        .json(
            &json!({"args": args, "env": {"SESSION_API_KEY": "session-key",
                                            "CALLER_VAR": "it's \"quoted\" $HOME"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    // Ready when the answer came: the same listener serves the caller's actions at once.
    let alive = http.get(format!("{url}/alive")).send().await.unwrap();
    let status = alive.status();
    assert_eq!(status, 200, "{}", alive.text().await.unwrap());
    let act = |key: &'static str, action: Value| {
        http.post(format!("{url}/execute_action"))
            .header("X-Session-API-Key", key)
            .json(&json!({ "action": action }))
            .send()
    };
    assert_eq!(
        act(
            CONFIGURE_KEY,
            json!({"action": "run", "args": {"command": "true"}})
        )
        .await
        .unwrap()
        .status(),
        403
    );
    let expected = "it's \"quoted\" $HOME";
    for is_static in [false, true] {
        let command = "echo \"$CALLER_VAR\" ${SANDBOXD_CONFIGURE_KEY:-no-configure-key} $PWD";
        let action = json!({"action": "run", "args": {"command": command, "is_static": is_static}});
        let obs = observe(&http, &url, "session-key", action).await;
        assert_eq!(
            obs["content"].as_str().unwrap().trim(),
            format!("{expected} no-configure-key {}", ws.display()),
            "is_static: {is_static}"
        );
    }
    // The kernel (started by the configuration's plugin) has the caller's environment too.
    let code =
        "import os; print(os.environ['CALLER_VAR'], os.environ.get('SANDBOXD_CONFIGURE_KEY'))";
    let cell = json!({"action": "run_ipython", "args": {"code": code}});
    let obs = observe(&http, &url, "session-key", cell).await;
    assert!(
        obs["content"]
            .as_str()
            .unwrap()
            .contains(&format!("{expected} None")),
        "{obs}"
    );
    // No browser asked for: no downloads folder.
    assert!(!ws.join(".downloads").exists());
    drop(daemon);
}

#[tokio::test]
async fn awaiting_a_configuration_needs_a_key() {
    let status = sandboxd()
        .args(["--await-configuration", "0"])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
}
