//! Limits and isolation: a fork bomb and a memory hog are contained and sandboxd still
//! answers; without network there is no network; a read-only root stays read-only.

use crate::common::{Running, config};
use agentd::docker::{Egress, Network};

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

#[tokio::test]
async fn the_sandbox_user_can_neither_kill_nor_inspect_sandboxd() {
    let sandbox = Running::up(&config(|_| {}).await).await;
    let find_sandboxd = "for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = sandboxd ] && echo ${p#/proc/}; done | head -n1";
    let (_, pid) = sandbox.sh(find_sandboxd).await;
    let pid = pid.trim();
    assert!(!pid.is_empty(), "sandboxd is in the sandbox's process list");
    // Its environment (with the session key) and init's are root's.
    let (code, out) = sandbox
        .sh(&format!("cat /proc/{pid}/environ /proc/1/environ 2>&1"))
        .await;
    assert_ne!(code, 0, "{out}");
    assert_eq!(out.matches("Permission denied").count(), 2, "{out}");
    // Every signal the user may send, to every process it may signal.
    let (_, out) = sandbox
        .sh(&format!("kill -9 {pid} 2>&1; kill -9 -1; echo sent"))
        .await;
    assert!(out.contains("Operation not permitted"), "{out}");
    sandbox.client.alive().await.expect("sandboxd answers");
    let (code, out) = sandbox.sh("echo still here").await;
    assert_eq!((code, out.trim()), (0, "still here"));
}

#[tokio::test]
async fn a_fork_bomb_that_never_stops_is_ended_by_c_c_or_kill_all_keeping_the_shell() {
    let sandbox = Running::up(&config(|c| c.limits.pids = Some(256)).await).await;
    let (code, _) = sandbox.sh("export MARK=kept; cd /tmp").await;
    assert_eq!(code, 0);
    for recovery in ["C-c at the prompt", "POST /processes/kill_all"] {
        // The classic bomb: every call forks two more in the background, for ever.
        let (code, out) = sandbox
            .sh("bomb() { bomb | bomb & }; bomb; echo started")
            .await;
        assert!(code == 0 && out.contains("started"), "{recovery}: {out}");
        // Until the pids limit is (nearly) full: read through sandboxd, which needs no fork.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let mut n = 0;
            // cgroup v1, then v2.
            for path in [
                "/sys/fs/cgroup/pids/pids.current",
                "/sys/fs/cgroup/pids.current",
            ] {
                let current = sandbox
                    .client
                    .read(path)
                    .await
                    .expect("file actions answer during the bomb");
                n = n.max(
                    current
                        .content
                        .lines()
                        .last()
                        .and_then(|l| l.split_whitespace().last())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_default(),
                );
            }
            if n >= 200 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{recovery}: the bomb reached {n} pids"
            );
        }
        sandbox.client.alive().await.expect("sandboxd answers");
        let killed = match recovery {
            "C-c at the prompt" => {
                let obs = sandbox
                    .client
                    .execute_json(&serde_json::json!({
                        "action": "run",
                        "args": {"command": "C-c", "is_input": true},
                        "timeout": 60,
                    }))
                    .await
                    .expect("C-c");
                let content = obs["content"].as_str().unwrap_or_default().to_owned();
                let killed = content
                    .split("C-c at the prompt killed ")
                    .nth(1)
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|n| n.parse().ok());
                killed.unwrap_or_else(|| panic!("no kill note: {content}"))
            }
            _ => sandbox.client.kill_all_processes().await.expect("kill_all"),
        };
        assert!(killed >= 150, "{recovery}: killed {killed}");
        let (code, out) = sandbox.sh("echo $MARK $(pwd) $(ls / | wc -l)").await;
        assert_eq!(code, 0, "{recovery}: {out}");
        assert!(out.trim().starts_with("kept /tmp "), "{recovery}: {out}");
    }
}

/// A Python one-liner run in a sandbox: connects to HOST PORT (5 s at most) and prints
/// `connected`, or the error's class and message.
fn probe(host: &str, port: u16) -> String {
    format!(
        "python3 -c \"import socket,sys\ns=socket.socket();s.settimeout(5)\ntry:\n s.connect((sys.argv[1],int(sys.argv[2])));print('connected')\nexcept Exception as e:print(type(e).__name__,e)\" {host} {port}"
    )
}

/// The sandbox's default gateway: the host's address on the sandbox's network.
async fn gateway(sandbox: &Running) -> String {
    let (_, out) = sandbox
        .sh("python3 -c \"import socket,struct\nfor l in open('/proc/net/route').readlines()[1:]:\n f=l.split()\n if f[1]=='00000000': print(socket.inet_ntoa(struct.pack('<L',int(f[2],16))))\"")
        .await;
    out.trim().to_string()
}

#[tokio::test]
async fn sandboxes_reach_neither_each_other_nor_the_hosts_services_unless_allowed() {
    // A service of the host's, on every address (connecting is enough: nothing is read).
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let a = Running::up(&config(|_| {}).await).await;
    let b = Running::up(&config(|c| c.host_ports = vec![port]).await).await;

    let host = gateway(&a).await;
    let (_, out) = a.sh(&probe(&host, port)).await;
    assert!(
        out.starts_with("ConnectionRefusedError"),
        "a -> host: {out}"
    );
    // The host's other addresses are the host too.
    let (_, out) = a.sh(&probe("172.17.0.1", port)).await;
    assert!(
        out.starts_with("ConnectionRefusedError"),
        "a -> docker0: {out}"
    );

    // The neighbour's sandboxd, at its address on its own network.
    let (_, b_ip) = b.sh("hostname -I").await;
    let b_ip = b_ip.split_whitespace().next().unwrap().to_string();
    let (_, out) = a.sh(&probe(&b_ip, 8000)).await;
    assert!(!out.starts_with("connected"), "a -> b: {out}");

    // b may reach the one host port it was given, and no other.
    let (_, out) = b.sh(&probe(&gateway(&b).await, port)).await;
    assert_eq!(out.trim(), "connected", "b -> allowed host port");
    let (_, out) = b.sh(&probe(&gateway(&b).await, 8000)).await;
    assert!(
        out.starts_with("ConnectionRefusedError"),
        "b -> host: {out}"
    );
    drop(listener);
}

#[tokio::test]
async fn an_egress_policy_refuses_at_once_what_it_does_not_allow() {
    // TEST-NET-1 (RFC 5737): nothing may answer there; a refused packet never leaves the host.
    let deny = Running::up(&config(|c| c.egress = Egress::Deny).await).await;
    let (_, out) = deny.sh(&probe("192.0.2.1", 80)).await;
    assert!(out.starts_with("ConnectionRefusedError"), "deny: {out}");
    let only = Running::up(&config(|c| c.egress = "192.0.2.7/32:443".parse().unwrap()).await).await;
    let started = std::time::Instant::now();
    let (_, out) = only.sh(&probe("192.0.2.1", 443)).await;
    assert!(
        out.starts_with("ConnectionRefusedError"),
        "allow-list: {out}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "refused fast"
    );
    // The metadata address is refused whatever the policy.
    let (_, out) = only.sh(&probe("169.254.169.254", 80)).await;
    assert!(out.starts_with("ConnectionRefusedError"), "metadata: {out}");
}
