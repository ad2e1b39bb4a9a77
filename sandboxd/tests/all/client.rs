//! The `client` crate and the `sbx` CLI against the real daemon.

use std::process::Command;

use client::SandboxClient;
use protocol::ObservationKind;
use protocol::action::FileEditArgs;

use crate::common::*;

#[tokio::test]
async fn typed_client_round_trip() {
    let sb = Sandbox::start().await;
    let c = SandboxClient::new(&sb.url, Some(KEY.to_owned())).unwrap();
    c.alive().await.unwrap();
    echo_with(&c, "typed").await;
    let path = format!("{}/t.txt", sb.ws_str());
    c.write(&path, "one\ntwo").await.unwrap();
    let obs = c.read(&path).await.unwrap();
    assert_eq!(obs.content, "one\ntwo\n");
    let mut edit = FileEditArgs::new(&path, "str_replace");
    edit.old_str = Some("two".into());
    edit.new_str = Some("2".into());
    let obs = c.edit(edit).await.unwrap();
    assert!(matches!(obs.kind, ObservationKind::Edit(_)), "{obs:?}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("t.txt")).unwrap(),
        "one\n2\n"
    );
    // A directory upload lands as DEST/<dirname>/..., and downloads back.
    upload_project(&c, &sb.ws_str()).await;
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("proj/src/main.py")).unwrap(),
        "print(1)\n"
    );
    let mut archive = download_zip(&c, &format!("{}/proj", sb.ws_str())).await;
    assert_eq!(archive.len(), 1);
    assert_eq!(archive.by_index(0).unwrap().name().unwrap(), "src/main.py");
    assert!(
        c.list_files(None)
            .await
            .unwrap()
            .contains(&"proj/".to_owned())
    );
    let wrong = SandboxClient::new(&sb.url, Some("nope".to_owned())).unwrap();
    let err = wrong.run("true", None).await.unwrap_err();
    assert_eq!(err.status(), Some(403));
}

pub(crate) fn sbx() -> Command {
    let path = std::path::Path::new(env!("CARGO_BIN_EXE_sandboxd")).with_file_name("sbx");
    assert!(
        path.exists(),
        "build the CLI first: cargo build -p client (scripts/test does)"
    );
    Command::new(path)
}

#[tokio::test]
async fn sbx_cli_exit_codes_and_json() {
    let sb = Sandbox::start().await;
    let out = sbx()
        .args(["--url", &sb.url, "--key", KEY, "run", "echo cli; exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cli"));
    let out = sbx()
        .args(["--url", &sb.url, "--key", KEY, "--json", "run", "echo json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let obs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(obs["content"], "json");
    let out = sbx()
        .args(["--url", &sb.url, "--key", "wrong", "run", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = sbx()
        .args([
            "--url",
            &sb.url,
            "--key",
            KEY,
            "run",
            "sleep 5",
            "--timeout",
            "0.5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    let out = sbx().arg("--help").output().unwrap();
    assert!(out.status.success());
}

#[tokio::test]
async fn sbx_cli_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sandboxd.sock");
    let sb = Sandbox::with_args(&["--unix-socket", &path.to_string_lossy()]).await;
    let url = format!("unix://{}", path.display());
    let out = sbx()
        .args(["--url", &url, "--key", KEY, "run", "echo via socket"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("via socket"));
    // SANDBOX_URL works the same, with the address exactly as sandboxd printed it.
    let out = sbx()
        .args(["--key", KEY, "ls"])
        .env("SANDBOX_URL", &sb.url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = sbx()
        .args(["--url", &sb.url, "--key", "wrong", "alive"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "/alive needs no key: {out:?}");
    let out = sbx()
        .args(["--url", &sb.url, "--key", "wrong", "run", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid API Key"));
    // A bad address is a usage error with a precise reason.
    let out = sbx().args(["--url", "unix:", "alive"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the Unix socket path is empty"), "{err}");
    // No daemon at that path: a connection error naming the socket.
    let missing = dir.path().join("missing.sock");
    let out = sbx()
        .args(["--url", &format!("unix:{}", missing.display()), "alive"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("via unix:{}", missing.display())),
        "{err}"
    );
}
