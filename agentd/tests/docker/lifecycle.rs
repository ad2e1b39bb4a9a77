//! Coming up, going down, failing to come up, and the garbage collection of orphans, through
//! the library and through the `agentd sandbox` CLI.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use agentd::docker::Owner;
use agentd::docker::{DockerError, DockerHost, Egress, GcPolicy, Network};
use serde_json::Value;

use crate::common::{Cleanup, Running, agentd, config, container_exists, sandbox_image};

#[tokio::test]
async fn down_removes_the_container_and_its_socket_directory() {
    let docker = DockerHost::connect().unwrap();
    let sandbox = docker
        .up(
            &config(|c| c.network = agentd::docker::Network::None).await,
            None,
        )
        .await
        .unwrap();
    let _cleanup = Cleanup(vec![sandbox.id.clone()]);
    let socket = sandbox.url.strip_prefix("unix:").unwrap().to_string();
    assert!(std::path::Path::new(&socket).exists());
    docker.down(&sandbox.name).await.unwrap();
    assert!(!container_exists(&sandbox.id));
    assert!(!std::path::Path::new(&socket).parent().unwrap().exists());
    assert!(matches!(
        docker.down(&sandbox.id).await,
        Err(DockerError::NoSuchSandbox(_))
    ));
}

#[tokio::test]
async fn the_port_is_published_on_loopback_only() {
    let sandbox = Running::with(|_| {}).await;
    assert!(sandbox.sandbox.url.starts_with("http://127.0.0.1:"));
    let out = std::process::Command::new("docker")
        .args([
            "inspect",
            "-f",
            "{{json .HostConfig.PortBindings}}",
            &sandbox.sandbox.id,
        ])
        .output()
        .unwrap();
    let bindings: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(bindings["8000/tcp"][0]["HostIp"], "127.0.0.1");
    // The key is required.
    let anonymous = client::SandboxClient::new(&sandbox.sandbox.url, None).unwrap();
    let err = anonymous.run("true", None).await.unwrap_err();
    assert_eq!(err.status(), Some(403));
}

#[tokio::test]
async fn a_sandbox_that_never_listens_is_reported_with_its_output_and_removed() {
    let docker = DockerHost::connect().unwrap();
    let config = config(|c| {
        // sandboxd cannot bind a socket there and exits.
        c.env.insert(
            "SANDBOXD_UNIX_SOCKET".to_string(),
            "/proc/no-such-dir/sandboxd.sock".to_string(),
        );
        c.name = Some(format!("sandbox-broken-{}", std::process::id()));
    })
    .await;
    let owner = Owner::current();
    let err = docker.up(&config, owner.as_ref()).await.unwrap_err();
    let DockerError::NotReady { id, reason, logs } = &err else {
        panic!("unexpected error: {err}");
    };
    assert!(reason.contains("exited with status"), "{reason}");
    assert!(logs.contains("/proc/no-such-dir/sandboxd.sock"), "{logs}");
    assert!(
        !container_exists(id),
        "the failed container was left behind"
    );
}

#[tokio::test]
async fn an_egress_policy_without_network_is_refused_not_ignored() {
    let docker = DockerHost::connect().unwrap();
    let config = config(|c| {
        c.network = Network::None;
        c.egress = Egress::Deny;
    })
    .await;
    let err = docker.up(&config, None).await.unwrap_err();
    assert!(matches!(err, DockerError::Unsupported(_)), "{err}");
}

#[tokio::test]
async fn the_cli_brings_up_lists_runs_in_and_takes_down_a_sandbox() {
    let image = sandbox_image().await;
    let out = agentd()
        .args(["sandbox", "up", "--no-jupyter", "--json", "--image", &image])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sandbox: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = sandbox["id"].as_str().unwrap().to_string();
    let _cleanup = Cleanup(vec![id.clone()]);
    let name = sandbox["name"].as_str().unwrap();
    assert!(sandbox["session_api_key"].as_str().unwrap().len() >= 32);

    let ls = agentd().args(["sandbox", "ls", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&ls.stdout).unwrap();
    let entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .expect("listed");
    assert_eq!(entry["state"], "running");
    assert_eq!(entry["owner_pid"], Value::Null);

    let exec = agentd()
        .args([
            "sandbox", "exec", name, "--", "echo", "hi", "&&", "exit", "3",
        ])
        .output()
        .unwrap();
    assert_eq!(exec.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&exec.stdout).contains("hi"));

    let down = agentd().args(["sandbox", "down", &id]).output().unwrap();
    assert!(down.status.success());
    assert!(!container_exists(&id));
    let again = agentd().args(["sandbox", "down", &id]).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("no sandbox"));
}

#[tokio::test]
async fn gc_removes_the_sandboxes_of_a_killed_agentd_and_keeps_the_rest() {
    let image = sandbox_image().await;
    // A detached sandbox, which gc must keep.
    let docker = DockerHost::connect().unwrap();
    let detached = docker.up(&config(|_| {}).await, None).await.unwrap();
    let _cleanup = Cleanup(vec![detached.id.clone()]);
    // An owned one: `up --attach` stays in the foreground as its owner.
    let (mut owner, owned) = up_attached(&image);
    let owned_id = owned["id"].as_str().unwrap().to_string();
    let _owned_cleanup = Cleanup(vec![owned_id.clone()]);

    // While the owner lives, gc leaves it alone.
    let removed = docker.gc(GcPolicy::default()).await.unwrap();
    assert!(!removed.contains(&owned_id));
    assert!(container_exists(&owned_id));

    owner.kill().unwrap(); // SIGKILL: no clean-up.
    owner.wait().unwrap();
    let listed = docker.list().await.unwrap();
    let entry = listed
        .iter()
        .find(|s| s.id == owned_id)
        .expect("still there");
    assert!(entry.orphaned);

    let report: Value = serde_json::from_slice(&gc_cli().stdout).unwrap();
    let removed: Vec<&str> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(removed.contains(&owned_id.as_str()), "{report}");
    assert!(!removed.contains(&detached.id.as_str()), "{report}");
    assert!(!container_exists(&owned_id));
    assert!(container_exists(&detached.id));
}

/// A sandbox being made has its network and firewall rules before any container uses them,
/// which is what a left-behind network looks like: `gc` (here of another agentd) must leave
/// them alone while the maker holds its setup lock, or the sandbox would start without its
/// rules. Once the lock is gone (its maker died) they are leftovers and go, with the lock file.
#[tokio::test]
async fn gc_leaves_the_network_and_rules_of_a_sandbox_being_made_alone() {
    // A live sandbox with network: its rules stay whatever happens, and our chains exist.
    let live = Running::with(|_| {}).await;
    let live_bridge = docker_inspect(
        &live.sandbox.id,
        "{{index .Config.Labels \"dev.sandboxd.bridge\"}}",
    );
    let bridge = format!("sbx-{}", sandbox_common::random_hex(5).unwrap());
    // The maker's setup lock, taken first as `up` takes it: other tests' gc runs meanwhile.
    std::fs::create_dir_all("/run/sandboxd/setup").unwrap();
    let lock_file = std::path::PathBuf::from(format!("/run/sandboxd/setup/{bridge}"));
    let holder = FlockHolder::lock(&lock_file);
    assert!(
        lock_file.exists(),
        "a concurrent gc took the lock file before flock locked it"
    );
    let made = std::process::Command::new("docker")
        .args(["network", "create", "--label", "dev.sandboxd.managed=true"])
        .args([
            "-o",
            &format!("com.docker.network.bridge.name={bridge}"),
            &bridge,
        ])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let comment = format!("sandboxd:{bridge}");
    let rule = [
        "-w",
        "-t",
        "filter",
        "-A",
        "SANDBOXD-FORWARD",
        "-i",
        &bridge,
        "-m",
        "comment",
        "--comment",
        &comment,
        "-j",
        "DROP",
    ];
    let added = std::process::Command::new("iptables")
        .args(rule)
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let policy = std::path::PathBuf::from(format!("/run/sandboxd/egress/{bridge}.json"));
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::write(&policy, b"{}").unwrap();
    let network_exists = || {
        std::process::Command::new("docker")
            .args(["network", "inspect", &bridge])
            .output()
            .unwrap()
            .status
            .success()
    };
    let rules_of = |bridge: &str| {
        let out = std::process::Command::new("iptables")
            .args(["-w", "-t", "filter", "-S", "SANDBOXD-FORWARD"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&format!("sandboxd:{bridge}")))
            .count()
    };

    gc_cli();
    assert!(
        network_exists(),
        "gc removed the network of a sandbox being made"
    );
    assert_eq!(
        rules_of(&bridge),
        1,
        "gc removed the rules of a sandbox being made"
    );
    assert!(
        policy.exists(),
        "gc removed the egress policy of a sandbox being made"
    );

    drop(holder);
    gc_cli();
    assert!(!network_exists(), "a left-behind network was kept");
    assert_eq!(
        rules_of(&bridge),
        0,
        "the rules of a left-behind network were kept"
    );
    assert!(
        !policy.exists(),
        "the policy of a left-behind network was kept"
    );
    assert!(
        !lock_file.exists(),
        "the lock file of a maker that died was kept"
    );
    assert!(
        rules_of(&live_bridge) > 0,
        "gc removed the rules of a live sandbox"
    );
    assert_eq!(live.sh("echo still").await, (0, "still".to_string()));
}

/// The socket directory of a sandbox without network exists before its container does: `gc`
/// must leave it alone while its maker holds it (the directory is the lock), and take it once
/// the maker is gone.
#[tokio::test]
async fn gc_leaves_the_socket_directory_of_a_sandbox_being_made_alone() {
    let live = Running::with(|c| c.network = Network::None).await;
    let live_dir = std::path::Path::new(live.sandbox.url.strip_prefix("unix:").unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    let root = live_dir.parent().unwrap();
    let being_made = root.join(format!(
        "sandbox-being-made-{}",
        sandbox_common::random_hex(4).unwrap()
    ));
    std::fs::create_dir(&being_made).unwrap();
    let holder = FlockHolder::lock(&being_made);
    gc_cli();
    assert!(
        being_made.is_dir(),
        "gc removed the socket directory of a sandbox being made"
    );
    drop(holder);
    gc_cli();
    assert!(
        !being_made.exists(),
        "a left-behind socket directory was kept"
    );
    assert!(
        live_dir.is_dir(),
        "gc removed the socket directory of a live sandbox"
    );
    assert_eq!(live.sh("echo still").await, (0, "still".to_string()));
}

/// `docker inspect -f FORMAT` of `id`, trimmed.
fn docker_inspect(id: &str, format: &str) -> String {
    let out = std::process::Command::new("docker")
        .args(["inspect", "-f", format, id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `agentd sandbox gc --json`, which must succeed.
fn gc_cli() -> std::process::Output {
    let gc = agentd().args(["sandbox", "gc", "--json"]).output().unwrap();
    assert!(gc.status.success(), "{gc:?}");
    gc
}

/// An exclusive `flock` on a path (flock(1) takes the same flock(2) lock as agentd), held by
/// a child in its own process group until dropped, when the group is killed and reaped.
struct FlockHolder(std::process::Child);

impl FlockHolder {
    /// Returns once the lock is held.
    fn lock(path: &std::path::Path) -> Self {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("flock")
            .arg(path)
            .args(["-c", "echo locked; exec sleep 600"])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let holder = Self(child);
        assert_eq!(line.trim(), "locked");
        holder
    }
}

impl Drop for FlockHolder {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(-(self.0.id() as i32));
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// What an agentd that died while making a sandbox disk leaves (an old image file, an old
/// template being made) and the content cache and templates of an image the engine no longer
/// has go with `gc`; the cache and template of an image it has stay.
#[tokio::test]
async fn gc_removes_old_disk_leftovers_and_the_content_of_gone_images() {
    let sandbox = Running::with(|c| c.disk_bytes = Some(64 << 20)).await;
    let root = std::path::Path::new("/var/lib/sandboxd/disks");
    let gone_image = "0000000000000000000000000000000000000000000000000000000000000000";
    let gone = [".content", ".templates"].map(|cache| root.join(cache).join(gone_image));
    for dir in &gone {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::create_dir(gone[1].join("partial-0")).unwrap();
    std::fs::write(gone[1].join("partial-0.img"), b"").unwrap();
    // The templates of the test image: the one its sandbox was copied from, and one an agentd
    // died making.
    let live_templates = root
        .join(".templates")
        .join(image_id_of(&sandbox.sandbox.id));
    // (Other tests make templates of other sizes and paths meanwhile.)
    let templates = || -> Vec<_> {
        std::fs::read_dir(&live_templates)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "img"))
            .filter(|p| !p.to_string_lossy().contains("partial-"))
            .collect()
    };
    let kept_templates = templates();
    assert!(
        !kept_templates.is_empty(),
        "no template of the test image was kept"
    );
    let dead_partial = live_templates.join("partial-dead");
    std::fs::create_dir(&dead_partial).unwrap();
    let dead_partial_img = dead_partial.with_extension("img");
    let leftover = root.join("sandbox-left-by-a-dead-agentd.img");
    // Older than the ten minutes a disk may take to be made.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for path in [&leftover, &dead_partial_img] {
        let file = std::fs::File::create(path).unwrap();
        file.set_modified(old).unwrap();
    }
    let docker = DockerHost::connect().unwrap();
    docker.gc(GcPolicy::default()).await.unwrap();
    for dir in &gone {
        assert!(!dir.exists(), "{} of a gone image was kept", dir.display());
    }
    assert!(!leftover.exists(), "an old leftover disk was kept");
    assert!(
        !dead_partial_img.exists(),
        "an old partial template was kept"
    );
    assert!(
        !dead_partial.exists(),
        "an old partial template's mount point was kept"
    );
    for template in &kept_templates {
        assert!(template.exists(), "{} went", template.display());
    }
    let kept = std::fs::read_dir(root.join(".content")).unwrap().count();
    assert!(kept >= 1, "the content of the test image went too");
}

/// The engine's id of the image of `container`, without `sha256:`.
fn image_id_of(container: &str) -> String {
    docker_inspect(container, "{{.Image}}")
        .trim_start_matches("sha256:")
        .to_string()
}

#[tokio::test]
async fn attach_removes_its_sandbox_on_sigterm() {
    let image = sandbox_image().await;
    let (mut owner, sandbox) = up_attached(&image);
    let id = sandbox["id"].as_str().unwrap().to_string();
    let _cleanup = Cleanup(vec![id.clone()]);
    let status = std::process::Command::new("kill")
        .args(["-TERM", &owner.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(owner.wait().unwrap().success());
    assert!(!container_exists(&id));
}

/// Starts `agentd sandbox up --attach` (the sandbox's owner, in the foreground) and returns it
/// with the sandbox it printed.
fn up_attached(image: &str) -> (std::process::Child, Value) {
    let mut owner = agentd()
        .args([
            "sandbox",
            "up",
            "--attach",
            "--no-jupyter",
            "--json",
            "--image",
            image,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(owner.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let sandbox = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    (owner, sandbox)
}
