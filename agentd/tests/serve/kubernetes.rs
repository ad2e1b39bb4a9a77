//! The kubernetes backend against a fake Kubernetes API server at the wire
//! (`testkit::FakeKube`: no control plane can run here): its pods are real sandboxds on this
//! machine behind pod addresses of their own, so a start through the runtime API and a
//! command through the front door truly run. Every object and watch agentd sent is then
//! checked against the API's schemas and documented parameters (kubernetes-validate, the
//! official client's API description), and so are the manifests of `deploy/kubernetes/`.
//!
//! Waits are on the fake's changes (no polling) or on the service's answers, each with a
//! deadline.

use std::path::PathBuf;
use std::time::Duration;

use client::ObservationExt;
use client::protocol::runtime_api::SessionStatus;
use serde_json::Value;
use testkit::FakeKube;

use crate::common::*;

/// The namespace of the tests' sandboxes.
const NAMESPACE: &str = "sandboxes";
/// The longest wait for the fake's pods to change.
const WAIT: Duration = Duration::from_secs(30);

async fn fake() -> FakeKube {
    FakeKube::start(sandboxd_binary()).await
}

/// A service on the kubernetes backend of `fake`.
fn options(fake: &FakeKube, pool: usize, idle: f64) -> Options {
    Options {
        pool_size: pool,
        idle_timeout: idle,
        cpus: None,
        extra: [
            "--backend",
            "kubernetes",
            "--k8s-api-server",
            fake.url(),
            "--k8s-namespace",
            NAMESPACE,
            "--k8s-sandboxd-port",
            &fake.sandboxd_port().to_string(),
            "--k8s-runtime-classes",
            "gvisor",
            "--app-ports",
            "0",
        ]
        .map(str::to_string)
        .to_vec(),
    }
}

/// The pods of the fake not yet claimed.
fn unclaimed(pods: &[&Value]) -> usize {
    pods.iter()
        .filter(|p| p["metadata"]["annotations"]["sandboxd.dev/claim"].is_null())
        .count()
}

/// Checks every object agentd created and every request it sent against the API's own
/// documents.
async fn assert_valid(fake: &FakeKube) {
    let requests = fake.requests();
    // kube-rs sends each object with its apiVersion and kind, as the schemas want them.
    let created: Vec<Value> = requests
        .iter()
        .filter(|r| r.method == "POST")
        .filter_map(|r| r.body.clone())
        .collect();
    let kinds: Vec<&str> = created.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"Pod") && kinds.contains(&"NetworkPolicy"),
        "{kinds:?}"
    );
    let problems = testkit::kube::check_requests(&requests, &created).await;
    assert!(problems.is_empty(), "{problems:#?}");
    let watches: Vec<_> = requests
        .iter()
        .filter(|r| r.param("watch") == Some("true"))
        .collect();
    assert!(!watches.is_empty(), "readiness was not watched");
    for watch in watches {
        assert_eq!(watch.path, format!("/api/v1/namespaces/{NAMESPACE}/pods"));
        assert!(
            watch
                .param("resourceVersion")
                .is_some_and(|v| !v.is_empty()),
            "a watch from no version: {watch:?}"
        );
        assert!(
            watch
                .param("fieldSelector")
                .is_some_and(|f| f.starts_with("metadata.name=rt-")),
            "{watch:?}"
        );
        assert!(watch.param("timeoutSeconds").is_some(), "{watch:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubernetes_sandboxes_run_through_the_front_door_recover_and_stop() {
    let fake = fake().await;
    let mut service = Service::start(options(&fake, 1, 0.0));
    fake.wait_until("a warm pod", WAIT, |s| s.ready_pods().len() == 1)
        .await;
    let (started, sandbox) = service.ready_sandbox(KEY_A, "in-a-pod").await;
    let runtime_id = started.access.runtime_id.clone();
    assert_eq!(
        started.access.url,
        format!("{}/sandboxes/{runtime_id}", service.url)
    );
    let obs = sandbox.run("echo from a pod", None).await.unwrap();
    assert_eq!(obs.content.trim(), "from a pod");
    assert_eq!(obs.exit_code(), Some(0));

    // The pod is what the service made it, and its policy admits only the service's pods.
    let snapshot = fake.snapshot();
    let pod = &snapshot.pods[&runtime_id];
    assert_eq!(
        pod["metadata"]["labels"]["sandboxd.dev/serve-name"],
        service.name
    );
    let claim: Value = serde_json::from_str(
        pod["metadata"]["annotations"]["sandboxd.dev/claim"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claim["session_id"], "in-a-pod");
    assert!(claim.get("pending_configuration").is_none(), "{claim}");
    let security = &pod["spec"]["containers"][0]["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    assert_eq!(
        pod["spec"]["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let policy = &snapshot.policies[&runtime_id];
    assert_eq!(
        policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "agentd-serve"
    );
    assert_eq!(
        policy["metadata"]["ownerReferences"][0]["uid"],
        pod["metadata"]["uid"]
    );

    // Kubernetes cannot freeze a pod: pausing is refused, and the sandbox goes on.
    let api = service.api(KEY_A);
    let refused = api.pause(&runtime_id).await.unwrap_err();
    assert_eq!(refused.status(), Some(409), "{refused}");
    assert!(refused.to_string().contains("cannot pause"), "{refused}");
    assert_eq!(
        api.session("in-a-pod").await.unwrap().status,
        SessionStatus::Running
    );
    // Images are the operator's: nothing is built or looked up.
    let exists = reqwest::Client::new()
        .get(format!("{}/image_exists?image=any", service.url))
        .header("X-API-Key", KEY_A)
        .send()
        .await
        .unwrap();
    assert_eq!(exists.status(), 409);

    // A runtime class the operator did not allow is refused; one it did is the pod's.
    let mut request = start_request("kata");
    request.runtime_class = Some("kata".to_string());
    let refused = api.start(&request).await.unwrap_err();
    assert_eq!(refused.status(), Some(403), "{refused}");
    assert!(
        refused.to_string().contains("--k8s-runtime-classes"),
        "{refused}"
    );
    let mut request = start_request("gvisor");
    request.runtime_class = Some("gvisor".to_string());
    request.resource_factor = 2.0;
    let (isolated, _) = service.ready_sandbox_for(KEY_A, &request).await;
    let pod = &fake.snapshot().pods[&isolated.access.runtime_id];
    assert_eq!(pod["spec"]["runtimeClassName"], "gvisor");
    // A pod's limits cannot change: the factor is the new pod's (1 CPU, 1 GiB at factor 1).
    let limits = &pod["spec"]["containers"][0]["resources"]["limits"];
    assert_eq!(limits["cpu"], "2000m");
    assert_eq!(limits["memory"], (2u64 << 30).to_string());

    // A killed service finds its sandboxes again in the cluster (its state directory is new).
    sandbox
        .write("/tmp/note.txt", "before the kill")
        .await
        .unwrap();
    service.kill();
    service.state = tempfile::tempdir().unwrap();
    service.spawn();
    let sandbox = service.found_sandbox(KEY_A, "in-a-pod", &runtime_id).await;
    let api = service.api(KEY_A);
    let obs = sandbox.run("cat /tmp/note.txt", None).await.unwrap();
    assert_eq!(obs.content.trim(), "before the kill");

    api.stop(&runtime_id).await.unwrap();
    let snapshot = fake.snapshot();
    assert!(!snapshot.pods.contains_key(&runtime_id));
    assert!(!snapshot.policies.contains_key(&runtime_id));
    assert_eq!(
        sandbox.run("true", None).await.unwrap_err().status(),
        Some(404)
    );
    assert_valid(&fake).await;
}

/// The runtime API's clients work unchanged against the kubernetes backend: `sbx runtime`
/// starts, lists and stops a pod's sandbox, and `agentd run --runtime remote` runs its task in
/// a pod of its own, which goes when the run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sbx_runtime_and_agentd_run_drive_kubernetes_sandboxes_unchanged() {
    let fake = fake().await;
    let service = Service::start(options(&fake, 0, 0.0));
    let started = json_of(&sbx_runtime(
        &service,
        KEY_A,
        &["start", "cli", "--wait", "60"],
    ));
    let runtime_id = started["runtime_id"].as_str().unwrap().to_string();
    assert!(fake.snapshot().pods.contains_key(&runtime_id));
    let listed = json_of(&sbx_runtime(&service, KEY_A, &["ls"]));
    assert_eq!(listed["runtimes"][0]["runtime_id"], runtime_id.as_str());
    json_of(&sbx_runtime(&service, KEY_A, &["stop", &runtime_id]));
    assert!(!fake.snapshot().pods.contains_key(&runtime_id));

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let actions = serde_json::json!([
        {"action": "run", "args": {"command": "echo from-a-pod-$((6*7))"}},
    ]);
    std::fs::write(&script, actions.to_string()).unwrap();
    let run = agentd()
        .args(["run", "--runtime", "remote", "--json", "--task", "t"])
        .args(["--session", "k8s-run", "--script"])
        .arg(&script)
        .arg("--sessions-dir")
        .arg(dir.path().join("sessions"))
        .env("SANDBOX_REMOTE_RUNTIME_API_URL", &service.url)
        .env("SANDBOX_API_KEY", KEY_A)
        .env_remove("AGENTD_CONFIG")
        .env_remove("SANDBOX_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let said: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["observation"] == "run")
        .map(|e| e["content"].as_str().unwrap_or_default().trim().to_string())
        .collect();
    assert_eq!(said, ["from-a-pod-42"]);
    assert!(fake.snapshot().pods.is_empty(), "the run's pod was left");
    assert!(service.api(KEY_A).list().await.unwrap().runtimes.is_empty());
    assert_valid(&fake).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_one_cluster_and_never_hand_out_a_pod_twice() {
    let fake = fake().await;
    let a = Service::start(options(&fake, 2, 0.0));
    fake.wait_until("two warm pods", WAIT, |s| unclaimed(&s.ready_pods()) == 2)
        .await;
    // B takes the same warm pods into its pool at start.
    let b = a.replica();
    let ids = start_four_sessions_on_two_replicas(&a, &b, "a pod").await;
    let snapshot = fake.snapshot();
    let sessions: Vec<String> = ids
        .iter()
        .map(|id| {
            let claim: Value = serde_json::from_str(
                snapshot.pods[id]["metadata"]["annotations"]["sandboxd.dev/claim"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
            claim["session_id"].as_str().unwrap().to_string()
        })
        .collect();
    let mut sorted = sessions.clone();
    sorted.sort();
    assert_eq!(sorted, ["s-0", "s-1", "s-2", "s-3"]);

    // The state is the cluster's: B answers for a session A started, and stops it.
    let (api_a, api_b) = (a.api(KEY_A), b.api(KEY_A));
    let found = api_b.session("s-0").await.unwrap();
    api_b.stop(&found.access.runtime_id).await.unwrap();
    assert_eq!(
        api_a.session("s-0").await.unwrap().status,
        SessionStatus::Stopped
    );
    eprintln!(
        "claims refused for an older version: {}",
        fake.snapshot().conflicts
    );
    assert_valid(&fake).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_kubernetes_sandboxes_are_stopped() {
    let fake = fake().await;
    let service = Service::start(options(&fake, 0, 1.0));
    let (started, _sandbox) = service.ready_sandbox(KEY_A, "idle").await;
    let runtime_id = started.access.runtime_id.clone();
    fake.wait_until("the idle pod to be deleted", WAIT, |s| {
        !s.pods.contains_key(&runtime_id) && !s.policies.contains_key(&runtime_id)
    })
    .await;
    assert_runtime_gone(&service.api(KEY_A), &runtime_id).await;
}

#[tokio::test]
async fn the_deploy_manifests_are_valid_kubernetes_objects() {
    // What an operator applies, and the reference of what a sandbox looks like.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes");
    let mut manifests = Vec::new();
    for dir in [dir.clone(), dir.join("reference")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                manifests.push(path);
            }
        }
    }
    manifests.sort();
    assert_eq!(manifests.len(), 5, "{manifests:?}");
    let problems = testkit::kube::validate_manifests(&manifests).await;
    assert!(problems.is_empty(), "{problems:#?}");
}
