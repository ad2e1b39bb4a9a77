//! The front door: sandboxes reached through the service's own address by runtime id, over
//! plain HTTP and over TLS (a certificate made for the test), with `sbx` and the typed client
//! unchanged.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use std::io::{Read, Write};

use client::SandboxClient;

use crate::common::*;

fn front_door() -> Options {
    Options {
        extra: vec!["--front-door".to_string()],
        ..Options::default()
    }
}

#[tokio::test]
async fn sandboxes_are_reached_through_the_front_door_by_runtime_id() {
    let service = Service::start(front_door());
    let (started, client) = service.ready_sandbox(KEY_A, "front").await;
    let runtime_id = &started.access.runtime_id;
    assert_eq!(
        started.access.url,
        format!("{}/sandboxes/{runtime_id}", service.url)
    );
    let observation = client
        .run("echo through the front door", None)
        .await
        .unwrap();
    assert!(
        observation.content.contains("through the front door"),
        "{observation:?}"
    );

    // sandboxd still checks the session key; an unknown runtime is the front door's 404.
    let wrong = SandboxClient::new(&started.access.url, Some("wrong".to_string())).unwrap();
    assert_eq!(
        wrong.run("true", None).await.unwrap_err().status(),
        Some(403)
    );
    let unknown = reqwest::get(format!("{}/sandboxes/rt-nothere/alive", service.url))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    // Paused, it is answered 503 at the door (a frozen sandboxd would never answer); resumed,
    // its shell is as it was.
    client.run("export KEPT=yes", None).await.unwrap();
    let api = service.api(KEY_A);
    api.pause(runtime_id).await.unwrap();
    assert_eq!(
        client.run("true", None).await.unwrap_err().status(),
        Some(503)
    );
    api.resume(runtime_id).await.unwrap();
    let observation = client.run("echo $KEPT", None).await.unwrap();
    assert!(observation.content.contains("yes"), "{observation:?}");
    api.stop(runtime_id).await.unwrap();
    assert_eq!(
        client.run("true", None).await.unwrap_err().status(),
        Some(404)
    );
}

/// Runs openssl with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "openssl {args:?} failed");
}

/// A test CA (`ca.pem`) and a certificate it signed for `localhost` and 127.0.0.1 with its
/// key: (CA, certificate, key).
fn certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        dir,
        &[
            &["req", "-x509"],
            &ec[..],
            &[
                "-days",
                "1",
                "-subj",
                "/CN=test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            &["req"],
            &ec[..],
            &[
                "-subj",
                "/CN=localhost",
                "-keyout",
                "key.pem",
                "-out",
                "cert.csr",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "cert.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "ext.cnf",
            "-out",
            "cert.pem",
        ],
    );
    (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    )
}

/// `sbx --json ARGS` trusting `ca`.
fn sbx(ca: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    sbx_json()
        .args(args)
        .env("SSL_CERT_FILE", ca)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn the_runtime_api_and_the_front_door_speak_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificate(dir.path());
    let mut options = front_door();
    options.extra.extend([
        "--tls-cert".to_string(),
        cert.display().to_string(),
        "--tls-key".to_string(),
        key.display().to_string(),
        "--public-host".to_string(),
        "localhost".to_string(),
    ]);
    let service = Service::start(options);
    assert!(service.url.starts_with("https://"), "{}", service.url);
    let port = service.url.rsplit(':').next().unwrap();
    let api_url = format!("https://localhost:{port}");
    let api = [
        ("SANDBOX_REMOTE_RUNTIME_API_URL", api_url.as_str()),
        ("SANDBOX_API_KEY", KEY_A),
    ];
    let started = json_of(&sbx(
        &ca,
        &api,
        &["runtime", "start", "tls", "--wait", "60"],
    ));
    let url = started["url"].as_str().unwrap();
    let runtime_id = started["runtime_id"].as_str().unwrap();
    assert_eq!(url, format!("{api_url}/sandboxes/{runtime_id}"));
    let session = [
        ("SANDBOX_URL", url),
        (
            "SESSION_API_KEY",
            started["session_api_key"].as_str().unwrap(),
        ),
    ];
    let ran = json_of(&sbx(&ca, &session, &["run", "echo over tls"]));
    assert!(
        ran["content"].as_str().unwrap().contains("over tls"),
        "{ran}"
    );

    // Plain HTTP on the TLS port gets no answer; a client that does not trust the
    // certificate refuses it.
    let mut plain = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    plain
        .write_all(b"GET /alive HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/1.1 200"),
        "plain HTTP was answered"
    );
    let untrusted = sbx(Path::new("/nonexistent"), &api, &["runtime", "ls"]);
    assert_eq!(untrusted.status.code(), Some(1));
    json_of(&sbx(&ca, &api, &["runtime", "stop", runtime_id]));
}
