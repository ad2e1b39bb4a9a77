//! Limits and isolation: a fork bomb and a memory hog are contained and sandboxd still
//! answers; without network there is no network; a read-only root stays read-only.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Running, sandbox_image};
use agentd::docker::{Egress, Network};

#[tokio::test]
async fn a_fork_bomb_hits_the_pids_limit_and_the_sandbox_survives() {
    let sandbox = Running::with(|c| c.limits.pids = Some(128)).await;
    let (_, max) = sandbox
        .sh("cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max")
        .await;
    assert_eq!(max.trim(), "128");

    // A bomb that disarms itself after 5 seconds, so the test needs no way to kill it.
    let bomb = "end=$((SECONDS + 5)); bomb() { [ $SECONDS -lt $end ] || return; bomb & bomb; wait; }; \
                ( bomb ) 2>&1 | grep -m1 -o 'Resource temporarily unavailable'; true";
    let (_, out) = sandbox.sh(bomb).await;
    assert!(out.contains("Resource temporarily unavailable"), "{out}");

    sandbox.assert_survived().await;
}

#[tokio::test]
async fn a_memory_hog_is_killed_and_the_sandbox_survives() {
    let sandbox = Running::with(|c| c.limits.memory_bytes = Some(256 << 20)).await;
    // Touches 1 GiB, four times the limit, with no swap to escape to.
    let (code, out) = sandbox
        .sh("python3 -c 'b = bytearray(1 << 30); print(len(b))'")
        .await;
    assert_ne!(code, 0, "the hog got its memory: {out}");
    assert!(!out.contains("1073741824"), "{out}");

    sandbox.assert_survived().await;
}

#[tokio::test]
async fn without_network_there_is_only_loopback() {
    let sandbox = Running::with(|c| c.network = Network::None).await;
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
    let sandbox = Running::with(|c| {
        c.read_only_root = true;
        c.workspace = Some(workspace.path().to_path_buf());
    })
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
    let sandbox = Running::with(|_| {}).await;
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
    sandbox.assert_survived().await;
}

#[tokio::test]
async fn a_fork_bomb_that_never_stops_is_ended_by_c_c_or_kill_all_keeping_the_shell() {
    let sandbox = Running::with(|c| c.limits.pids = Some(256)).await;
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
    let a = Running::with(|_| {}).await;
    let b = Running::with(|c| c.host_ports = vec![port]).await;

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
    let deny = Running::with(|c| c.egress = Egress::Deny).await;
    let (_, out) = deny.sh(&probe("192.0.2.1", 80)).await;
    assert!(out.starts_with("ConnectionRefusedError"), "deny: {out}");
    let only = Running::with(|c| c.egress = "192.0.2.7/32:443".parse().unwrap()).await;
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

/// The port the outside world's server listens on, in its own network namespace (so it can
/// collide with nothing).
const WORLD_PORT: u16 = 8080;

/// A server standing in for the outside world: a container of the sandbox image on a Docker
/// network of its own, both removed on drop. It answers an HTTP request `hello from web` and
/// a connection that starts with a TLS record `TLS-ARRIVED` (so a ClientHello that passed
/// the proxy is seen to arrive).
struct World {
    name: String,
    ip: Ipv4Addr,
}

impl World {
    fn start(image: &str) -> World {
        let name = format!("egress-world-{}", std::process::id());
        let docker = |args: &[&str]| {
            let out = Command::new("docker").args(args).output().unwrap();
            assert!(out.status.success(), "docker {args:?}: {out:?}");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let _ = Command::new("docker").args(["rm", "-f", &name]).output();
        let _ = Command::new("docker")
            .args(["network", "rm", &name])
            .output();
        docker(&["network", "create", &name]);
        let world = World {
            name: name.clone(),
            ip: Ipv4Addr::UNSPECIFIED,
        };
        let server = format!(
            "import socket,threading\n\
             s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
             s.bind(('0.0.0.0',{WORLD_PORT}));s.listen(64);print('ready',flush=True)\n\
             def serve(c):\n \
             d=c.recv(65536)\n \
             if d[:1]==b'\\x16': c.sendall(b'TLS-ARRIVED\\n')\n \
             else: c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 15\\r\\nConnection: close\\r\\n\\r\\nhello from web\\n')\n \
             c.close()\n\
             while True:\n \
             c,_=s.accept();threading.Thread(target=serve,args=(c,)).start()\n"
        );
        docker(&[
            "run",
            "-d",
            "--name",
            &name,
            "--network",
            &name,
            "--entrypoint",
            "python3",
            image,
            "-u",
            "-c",
            &server,
        ]);
        // Listening once it says so (its output, followed: no polling).
        let mut logs = Command::new("docker")
            .args(["logs", "-f", &name])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let ready = std::io::BufReader::new(logs.stdout.take().unwrap())
            .lines()
            .any(|l| l.is_ok_and(|l| l.trim() == "ready"));
        let _ = logs.kill();
        let _ = logs.wait();
        assert!(ready, "the world's server did not start");
        let ip = docker(&[
            "inspect",
            "-f",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            &name,
        ]);
        let mut world = world;
        world.ip = ip
            .parse()
            .unwrap_or_else(|_| panic!("world address {ip:?}"));
        world
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "-f", &self.name])
            .output();
        let _ = Command::new("docker")
            .args(["network", "rm", &self.name])
            .output();
    }
}

/// A Python script run in a sandbox: sends a real ClientHello (OpenSSL's, server name NAME)
/// to NAME PORT and prints `TLS-ARRIVED` if the world's server got it, else what the TLS
/// library makes of the answer.
fn tls_probe(name: &str, port: u16) -> String {
    format!(
        "python3 -c \"import socket,ssl,sys\ninc=ssl.MemoryBIO();out=ssl.MemoryBIO()\no=ssl.create_default_context().wrap_bio(inc,out,server_hostname=sys.argv[1])\ntry: o.do_handshake()\nexcept ssl.SSLWantReadError: pass\ns=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=8)\ns.sendall(out.read())\nd=s.recv(100)\nif d.startswith(b'TLS-ARRIVED'): print('TLS-ARRIVED')\nelse:\n inc.write(d)\n try: o.do_handshake()\n except Exception as e: print(type(e).__name__,e)\" {name} {port}"
    )
}

#[tokio::test]
async fn a_domain_policy_lets_its_names_through_and_refuses_others_at_once_saying_why() {
    let world = World::start(&sandbox_image().await);
    let ip = world.ip;
    let sandbox = Running::with(|c| {
        c.egress = format!("web.test:{WORLD_PORT}").parse().unwrap();
        c.egress_hosts =
            BTreeMap::from([("web.test".to_string(), ip), ("other.test".to_string(), ip)]);
    })
    .await;

    // The allowed name, over HTTP, reaches the world.
    let (code, out) = sandbox
        .sh(&format!("curl -sS -m 10 http://web.test:{WORLD_PORT}/"))
        .await;
    assert_eq!((code, out.trim()), (0, "hello from web"), "web.test: {out}");

    // Another name at the same address is refused at once, with a reason the agent can read.
    let started = Instant::now();
    let (_, out) = sandbox
        .sh(&format!(
            "curl -sS -m 10 -w '\\nstatus=%{{http_code}}' http://other.test:{WORLD_PORT}/"
        ))
        .await;
    assert!(
        out.contains(&format!(
            "egress to other.test:{WORLD_PORT} is not allowed by this sandbox's policy"
        )) && out.contains("status=403"),
        "other.test: {out}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "refused fast: {:?}",
        started.elapsed()
    );

    // The bare address, without an allowed Host, is refused too.
    let (_, out) = sandbox
        .sh(&format!(
            "curl -sS -m 10 -w '\\nstatus=%{{http_code}}' http://{ip}:{WORLD_PORT}/"
        ))
        .await;
    assert!(
        out.contains(&format!("egress to {ip}:{WORLD_PORT} is not allowed"))
            && out.contains("status=403"),
        "bare address: {out}"
    );
    // Nor does an allowed Host help on a connection the firewall does not hand the proxy
    // (a port no domain rule names): refused at once.
    let (_, out) = sandbox
        .sh(&format!(
            "curl -sS -m 10 -H 'Host: web.test' http://{ip}:{}/ 2>&1",
            WORLD_PORT + 1
        ))
        .await;
    assert!(
        out.contains("Connection refused") || out.contains("Couldn't connect"),
        "other port: {out}"
    );

    // TLS: the server name decides.
    let (_, out) = sandbox.sh(&tls_probe("web.test", WORLD_PORT)).await;
    assert_eq!(out.trim(), "TLS-ARRIVED", "SNI web.test");
    let started = Instant::now();
    let (_, out) = sandbox.sh(&tls_probe("other.test", WORLD_PORT)).await;
    assert!(
        out.contains("SSLError") && out.to_uppercase().contains("ACCESS_DENIED"),
        "SNI other.test: {out}"
    );
    assert!(started.elapsed() < Duration::from_secs(4), "refused fast");
}

/// The container's writable layer as the engine measures it, in bytes.
fn writable_layer_bytes(id: &str) -> u64 {
    let out = Command::new("docker")
        .args(["container", "inspect", "--size", "-f", "{{.SizeRw}}", id])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Issue 14.8: 2 GiB written into `$HOME` came off the host's free disk. Every place the
/// sandbox user can write is on the sandbox's disk (here the storage driver has no quota, so a
/// disk of its own), which ends at its size with ENOSPC; the root is read-only; the sandbox
/// answers on, and the host's side of it is gone as soon as it runs.
#[tokio::test]
async fn a_disk_fill_stops_at_the_sandboxs_disk_and_the_sandbox_goes_on() {
    let sandbox = Running::with(|c| c.disk_bytes = Some(64 << 20)).await;
    let disk = &sandbox.sandbox.disk;
    assert!(
        disk.contains("64 MiB (the storage driver's quota)")
            || (disk.contains(
                "64 MiB of its own for /home/openhands, /opt/venv, /var/tmp, /workspace"
            ) && disk.contains("the root file system is read-only")),
        "{disk}"
    );
    // The image's content is on the disk: the home's dot files, the venv's Python and pip.
    let (code, out) = sandbox
        .sh("test -f ~/.bashrc && python -c 'import ipykernel; print(\"kernel ok\")' && pip --version >/dev/null && echo ok")
        .await;
    assert_eq!(code, 0, "{out}");
    let before = writable_layer_bytes(&sandbox.sandbox.id);
    for place in ["~", "/var/tmp", "/opt/venv", "/workspace"] {
        let (_, out) = sandbox
            .sh(&format!(
                "dd if=/dev/zero of={place}/fill bs=1M count=200 2>&1 | head -n1; rm -f {place}/fill"
            ))
            .await;
        assert!(out.contains("No space left on device"), "{place}: {out}");
    }
    // Nothing else of the root file system takes writes (the mount points found are skipped).
    let (code, out) = sandbox
        .sh("root=$(stat -c %d /); for d in $(find / -xdev -type d -perm -0002 2>/dev/null) /opt /usr/local; do [ \"$(stat -c %d $d)\" = $root ] || continue; touch $d/sbx-probe 2>/dev/null && echo WROTE $d; done; echo checked")
        .await;
    assert_eq!((code, out.trim()), (0, "checked"));
    let obs = sandbox.client.write("/etc/sbx-probe", "x\n").await.unwrap();
    assert!(
        obs.content.contains("Read-only file system")
            && obs
                .content
                .contains("is on a read-only file system: nothing can be written there"),
        "{}",
        obs.content
    );
    let after = writable_layer_bytes(&sandbox.sandbox.id);
    assert!(
        after < before + (4 << 20),
        "the writable layer grew from {before} to {after} bytes"
    );
    sandbox.client.alive().await.expect("sandboxd answers");
    let (code, out) = sandbox.sh("echo still here > ~/note && cat ~/note").await;
    assert_eq!((code, out.trim()), (0, "still here"));
    // A second sandbox's disk is a copy of the same template: none of the first's writes.
    let second = Running::with(|c| c.disk_bytes = Some(64 << 20)).await;
    let (code, out) = second
        .sh("test -f ~/.bashrc && ls -A ~ /var/tmp /workspace | grep -c note")
        .await;
    assert_eq!((code, out.trim()), (1, "0"), "{out}");
    // The host keeps no mount or file of it: the container's mounts hold the disk.
    let root = "/var/lib/sandboxd/disks";
    let name = &sandbox.sandbox.name;
    assert!(!std::path::Path::new(&format!("{root}/{name}.img")).exists());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&format!("{root}/{name}")), "{mounts}");
}

/// With sudo the root must stay writable (package installs): the limit then covers only the
/// disk's paths, and the sandbox says that the root is not limited.
#[tokio::test]
async fn with_sudo_the_sandbox_says_that_its_root_is_not_limited() {
    let sandbox = Running::with(|c| {
        c.sudo = true;
        c.disk_bytes = Some(64 << 20);
    })
    .await;
    let disk = &sandbox.sandbox.disk;
    if disk.contains("storage driver's quota") {
        return;
    }
    assert!(disk.contains("NOT limited"), "{disk}");
    let (code, out) = sandbox
        .sh("sudo touch /usr/local/sbx-probe && echo root writable")
        .await;
    assert_eq!((code, out.trim()), (0, "root writable"));
}
