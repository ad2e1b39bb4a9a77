//! `sbx runtime`: the client crate's CLI for the runtime API, against the real service.

use serde_json::Value;

use crate::common::*;

#[test]
fn sbx_runtime_starts_lists_pauses_resumes_and_stops_a_sandbox() {
    let service = Service::start(Options::default());
    let started = json_of(&sbx_runtime(
        &service,
        KEY_A,
        &["start", "cli", "--wait", "60"],
    ));
    let runtime_id = started["runtime_id"].as_str().unwrap().to_string();
    assert!(started["url"].as_str().unwrap().starts_with("http://"));
    assert!(!started["session_api_key"].as_str().unwrap().is_empty());

    let status = json_of(&sbx_runtime(&service, KEY_A, &["status", "cli"]));
    assert_eq!(status["session"]["status"], "running");
    assert_eq!(status["runtime"]["pod_status"], "ready");
    let listed = json_of(&sbx_runtime(&service, KEY_A, &["ls"]));
    let ids: Vec<&str> = listed["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runtime_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [runtime_id.as_str()]);
    // Another key sees nothing of it; a wrong key is refused with a failure status.
    let other = json_of(&sbx_runtime(&service, KEY_B, &["ls"]));
    assert_eq!(other["runtimes"], Value::Array(Vec::new()));
    let refused = sbx_runtime(&service, "not-a-key", &["ls"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"));

    json_of(&sbx_runtime(&service, KEY_A, &["pause", &runtime_id]));
    let status = json_of(&sbx_runtime(&service, KEY_A, &["status", "cli"]));
    assert_eq!(status["session"]["status"], "paused");
    json_of(&sbx_runtime(&service, KEY_A, &["resume", &runtime_id]));
    json_of(&sbx_runtime(&service, KEY_A, &["stop", &runtime_id]));
    let gone = sbx_runtime(&service, KEY_A, &["status", "cli"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(service.containers().is_empty());
}
