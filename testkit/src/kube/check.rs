//! What agentd sent the fake, checked against the Kubernetes API's own documents in a cached
//! venv from PyPI (`python/k8s-requirements.txt`, see [`crate::venv`]): every object
//! validated in strict mode (no unknown field) with `kubernetes-validate`'s schemas of the
//! version agentd pins, and every request's path, method, query parameters and patch type
//! against those the official client of that version (generated from the API's OpenAPI
//! document) says the API has (`python/k8s_check.py`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::Recorded;
use crate::venv::Venv;

/// The Kubernetes version agentd's `k8s-openapi` feature pins.
pub const KUBERNETES_VERSION: &str = "1.33";

/// How long one check may take (the schemas are read from disk; seconds at most).
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);

const VENV: Venv = Venv {
    name: "k8s",
    override_var: "AGENTD_K8S_VENV",
    requirements_file: "k8s-requirements.txt",
    requirements: include_str!("../../python/k8s-requirements.txt"),
    pip_args: &["--no-deps"],
};

/// What is wrong, one line each; empty when nothing is.
pub type Problems = Vec<String>;

fn ready(python: &Path) -> bool {
    python.is_file()
        && std::process::Command::new(python)
            .args([
                "-c",
                "import importlib.metadata as m, kubernetes_validate; assert m.version('kubernetes') == '33.1.0'",
            ])
            .output()
            .is_ok_and(|out| out.status.success())
}

/// The venv's Python, made on first use (on a blocking thread: pip takes a while).
async fn python() -> PathBuf {
    tokio::task::spawn_blocking(|| VENV.python(ready))
        .await
        .unwrap_or_else(|e| panic!("making the kubernetes-validate venv failed: {e}"))
}

async fn check(input: Value) -> Problems {
    let python = python().await;
    let script = crate::python_mcp::script("k8s_check.py");
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run k8s_check.py: {e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let text = input.to_string();
    let run = async move {
        stdin.write_all(text.as_bytes()).await?;
        drop(stdin);
        child.wait_with_output().await
    };
    let out = tokio::time::timeout(CHECK_TIMEOUT, run)
        .await
        .unwrap_or_else(|_| panic!("k8s_check.py took more than {CHECK_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("k8s_check.py failed: {e}"));
    assert!(
        out.status.success(),
        "k8s_check.py failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "k8s_check.py said {:?}: {e}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(
        report["operations"].as_u64().unwrap_or(0) > 0,
        "k8s_check.py found no documented operation: {report}"
    );
    report["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect()
}

/// Checks `requests` (their paths, methods, query parameters, patch types) and `objects`
/// (each validated strictly).
pub async fn check_requests(requests: &[Recorded], objects: &[Value]) -> Problems {
    let requests: Vec<Value> = requests
        .iter()
        .map(|r| {
            json!({
                "method": r.method,
                "path": r.path,
                "query": r.query.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                "content_type": r.content_type,
            })
        })
        .collect();
    check(json!({"version": KUBERNETES_VERSION, "objects": objects, "requests": requests})).await
}

/// Validates every document of the YAML files `manifests` strictly.
pub async fn validate_manifests(manifests: &[PathBuf]) -> Problems {
    check(json!({"version": KUBERNETES_VERSION, "manifests": manifests})).await
}
