//! Limits and isolation: a fork bomb and a memory hog are contained and sandboxd still
//! answers; without network there is no network; a read-only root stays read-only.

use crate::common::{Running, config};
use agentd::docker::Network;

#[tokio::test]
async fn a_fork_bomb_hits_the_pids_limit_and_the_sandbox_survives() {
    let sandbox = Running::up(&config(|c| c.limits.pids = Some(128)).await).await;
    let (_, max) = sandbox
        .sh("cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max")
        .await;
    assert_eq!(max.trim(), "128");

    // A bomb that disarms itself after 5 seconds, so the test needs no way to kill it.
    let bomb = "end=$((SECONDS + 5)); bomb() { [ $SECONDS -lt $end ] || return; bomb & bomb; wait; }; \
                ( bomb ) 2>&1 | grep -m1 -o 'Resource temporarily unavailable'; true";
    let (_, out) = sandbox.sh(bomb).await;
    assert!(out.contains("Resource temporarily unavailable"), "{out}");

    sandbox.client.alive().await.expect("sandboxd answers");
    let (code, out) = sandbox.sh("echo still here").await;
    assert_eq!((code, out.trim()), (0, "still here"));
}

#[tokio::test]
async fn a_memory_hog_is_killed_and_the_sandbox_survives() {
    let sandbox = Running::up(&config(|c| c.limits.memory_bytes = Some(256 << 20)).await).await;
    // Touches 1 GiB, four times the limit, with no swap to escape to.
    let (code, out) = sandbox
        .sh("python3 -c 'b = bytearray(1 << 30); print(len(b))'")
        .await;
    assert_ne!(code, 0, "the hog got its memory: {out}");
    assert!(!out.contains("1073741824"), "{out}");

    sandbox.client.alive().await.expect("sandboxd answers");
    let (code, out) = sandbox.sh("echo still here").await;
    assert_eq!((code, out.trim()), (0, "still here"));
}

#[tokio::test]
async fn without_network_there_is_only_loopback() {
    let sandbox = Running::up(&config(|c| c.network = Network::None).await).await;
    assert!(
        sandbox.sandbox.url.starts_with("unix:"),
        "{}",
        sandbox.sandbox.url
    );

    let (_, interfaces) = sandbox
        .sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        .await;
    assert_eq!(interfaces.trim(), "lo");
    // Not even the host: its address on Docker's bridge is unreachable.
    let (code, out) = sandbox
        .sh("curl -sS -m 3 -o /dev/null http://172.17.0.1:1/ 2>&1")
        .await;
    assert_ne!(code, 0);
    assert!(
        out.contains("Couldn't connect") || out.contains("Network is unreachable"),
        "{out}"
    );
}

#[tokio::test]
async fn a_read_only_root_leaves_only_tmp_home_and_workspace_writable() {
    let workspace = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(workspace.path(), Some(1000), Some(1000)).unwrap();
    let sandbox = Running::up(
        &config(|c| {
            c.read_only_root = true;
            c.workspace = Some(workspace.path().to_path_buf());
        })
        .await,
    )
    .await;
    let (code, out) = sandbox
        .sh("touch /opt/x 2>&1; touch /tmp/x ~/x /workspace/x && echo writable")
        .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(out.contains("writable"), "{out}");
}
