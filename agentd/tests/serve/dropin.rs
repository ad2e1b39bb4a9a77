//! What OpenHands users expect of a drop-in runtime service: app ports reached through
//! `work_hosts`, sudo as the operator's policy, images built with `/build` and answered
//! truthfully by `/image_exists`, and no warm sandbox left behind by a clean stop.

use std::io::Write;
use std::time::Duration;

use base64::Engine;
use client::ObservationExt;
use serde_json::Value;

use crate::common::*;

#[tokio::test]
async fn an_app_on_an_app_port_is_reached_through_work_hosts() {
    let service = Service::start(Options::default());
    let (started, sandbox) = service.ready_sandbox(KEY_A, "app").await;
    let mut ports: Vec<u16> = started.access.work_hosts.values().copied().collect();
    ports.sort_unstable();
    assert_eq!(ports, [12000, 12001], "{:?}", started.access.work_hosts);
    // sandboxd's /server_info and the environment agree on them.
    let info = sandbox.server_info().await.unwrap();
    assert_eq!(info.app_ports, [12000, 12001]);
    let obs = sandbox
        .run("echo $APP_PORT_1 $APP_PORT_2", None)
        .await
        .unwrap();
    assert_eq!(obs.content.trim(), "12000 12001");

    let obs = sandbox
        .run(
            "mkdir -p /tmp/site && echo served-by-the-agent > /tmp/site/index.html && (python -m http.server $APP_PORT_1 --directory /tmp/site >/tmp/http.log 2>&1 &)",
            None,
        )
        .await
        .unwrap();
    assert_eq!(obs.exit_code(), Some(0), "{}", obs.content);
    let (url, _) = started
        .access
        .work_hosts
        .iter()
        .find(|(_, port)| **port == 12000)
        .unwrap();
    let http = reqwest::Client::new();
    // The engine's proxy accepts connections before the agent's server listens: wait for
    // the page itself.
    eventually(20, "the agent's server to answer", || {
        let request = http.get(url).send();
        async move {
            match request.await {
                Ok(response) => response
                    .text()
                    .await
                    .is_ok_and(|page| page.trim() == "served-by-the-agent"),
                Err(_) => false,
            }
        }
    })
    .await;
    // The session answers the same hosts.
    let session = service.api(KEY_A).session("app").await.unwrap();
    assert_eq!(session.access.work_hosts, started.access.work_hosts);
}

#[tokio::test]
async fn sudo_is_the_operators_policy_per_key() {
    let mut config = tempfile::NamedTempFile::new().unwrap();
    writeln!(config, "[serve]\nsudo_keys = [\"{KEY_B}\"]").unwrap();
    let service = Service::start(Options {
        extra: vec!["--config".into(), config.path().display().to_string()],
        ..Options::pooled(1)
    });
    // Key A: refused, and the refusal says it is the policy.
    let (_, sandbox) = service.ready_sandbox(KEY_A, "no-sudo").await;
    let obs = sandbox.run("sudo -n true", None).await.unwrap();
    assert_ne!(obs.exit_code(), Some(0), "{}", obs.content);
    assert!(obs.content.contains("sudo policy"), "{}", obs.content);
    // Key B: the sandbox user becomes root with sudo.
    let (_, sandbox) = service.ready_sandbox(KEY_B, "sudo").await;
    let obs = sandbox
        .run(
            "whoami; sudo -n whoami; sudo -n touch /root/granted && echo ok",
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        obs.content.split_whitespace().collect::<Vec<_>>(),
        ["openhands", "root", "ok"]
    );
}

/// `POST /build` as OpenHands' RemoteRuntimeBuilder sends it: a multipart form with the
/// base64 of a gzipped tar of the context.
async fn build(service: &Service, dockerfile: &str, target: &str) -> Value {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_size(dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "./Dockerfile", dockerfile.as_bytes())
        .unwrap();
    let context = base64::engine::general_purpose::STANDARD
        .encode(tar.into_inner().unwrap().finish().unwrap());
    let form = reqwest::multipart::Form::new()
        .part(
            "context",
            reqwest::multipart::Part::text(context).file_name("context.tar.gz"),
        )
        .text("target_image", target.to_string());
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{}/build", service.url))
        .header("X-API-Key", KEY_A)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let id = response.json::<Value>().await.unwrap()["build_id"]
        .as_str()
        .unwrap()
        .to_string();
    let status_for = |key: &'static str| {
        http.get(format!("{}/build_status?build_id={id}", service.url))
            .header("X-API-Key", key)
            .send()
    };
    // Another key does not see it.
    assert_eq!(status_for(KEY_B).await.unwrap().status(), 404);
    let status = status_for(KEY_A).await.unwrap();
    assert_eq!(status.status(), 200);
    status.json().await.unwrap()
}

#[tokio::test]
async fn build_makes_the_runtime_image_and_image_exists_tells_the_truth() {
    let service = Service::start(Options::default());
    let api = service.api(KEY_A);
    let target = format!("agentd.local/runtime:test-{}", std::process::id());
    assert!(!api.image_exists(&target).await.unwrap());
    let status = build(
        &service,
        &format!("FROM {}\nRUN echo not run here\n", base_image()),
        &target,
    )
    .await;
    assert_eq!(status["status"], "SUCCESS", "{status}");
    assert_eq!(status["image"], target.as_str());
    assert!(api.image_exists(&target).await.unwrap());
    // The built image runs as itself.
    let mut request = start_request("built");
    request.image = target.clone();
    let (started, sandbox) = service.ready_sandbox_for(KEY_A, &request).await;
    assert!(started.image.is_some());
    let obs = sandbox.run("python --version", None).await.unwrap();
    assert!(obs.content.contains("Python 3"), "{}", obs.content);

    let status = build(
        &service,
        "FROM no-such-registry.example/base:1\n",
        "agentd.local/x:y",
    )
    .await;
    assert_eq!(status["status"], "FAILURE", "{status}");
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .contains("not on this host"),
        "{status}"
    );
    let _ = std::process::Command::new("docker")
        .args(["image", "rm", &target])
        .output();
}

#[tokio::test]
async fn a_clean_stop_removes_the_warm_sandboxes_and_keeps_the_claimed_ones() {
    let mut service = Service::start(Options::pooled(1));
    let (started, _) = service.ready_sandbox(KEY_A, "kept").await;
    let api = service.api(KEY_A);
    eventually(60, "the pool to refill", || {
        let api = api.clone();
        async move { api.list().await.unwrap().warm.values().sum::<usize>() == 1 }
    })
    .await;
    assert_eq!(service.containers().len(), 2);
    service.terminate(Duration::from_secs(30));
    let left = service.containers();
    assert_eq!(left.len(), 1, "{left:?}");
    let name = std::process::Command::new("docker")
        .args(["inspect", "-f", "{{.Name}}", &left[0]])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&name.stdout)
            .trim()
            .trim_start_matches('/'),
        started.access.runtime_id
    );
}
