//! A sandbox does what sandboxd does, inside its container: bash, IPython, files, its
//! workspace mount; and it runs hardened.

use std::os::unix::fs::chown;

use client::ObservationExt;

use crate::common::Running;

#[tokio::test]
async fn a_sandbox_runs_bash_ipython_and_files_in_its_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    chown(workspace.path(), Some(1000), Some(1000)).unwrap();
    std::fs::write(
        workspace.path().join("from-host.txt"),
        "hello from the host\n",
    )
    .unwrap();
    let sandbox = Running::with(|c| {
        c.workspace = Some(workspace.path().to_path_buf());
        c.plugins = vec!["jupyter".to_string()];
    })
    .await;

    let (code, out) = sandbox.sh("pwd && whoami && cat from-host.txt").await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.trim(), "/workspace\nopenhands\nhello from the host");

    // Files written in the sandbox appear on the host, owned by the sandbox user.
    let obs = sandbox
        .client
        .write("/workspace/from-sandbox.txt", "written inside\n")
        .await
        .unwrap();
    assert!(!obs.is_error(), "{obs:?}");
    let on_host = workspace.path().join("from-sandbox.txt");
    assert!(
        std::fs::read_to_string(&on_host)
            .unwrap()
            .starts_with("written inside\n")
    );
    let read = sandbox
        .client
        .read("/workspace/from-host.txt")
        .await
        .unwrap();
    assert!(read.content.contains("hello from the host"), "{read:?}");

    // The kernel is real, and runs in the container.
    let cell = serde_json::json!({
        "action": "run_ipython",
        "args": {"code": "import os, getpass\nprint(getpass.getuser(), os.getcwd(), 6 * 7)"}
    });
    let obs = sandbox.client.execute_json(&cell).await.unwrap();
    assert_eq!(obs["observation"], "run_ipython", "{obs}");
    let content = obs["content"].as_str().unwrap();
    assert!(content.contains("openhands /workspace 42"), "{content}");
}

#[tokio::test]
async fn a_sandbox_cannot_see_host_files_and_holds_no_privileges() {
    // A file on the host, outside any mount.
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "host secret").unwrap();
    let sandbox = Running::with(|_| {}).await;

    let (code, out) = sandbox
        .sh(&format!("cat {} ; echo status=$?", secret.path().display()))
        .await;
    assert_eq!(code, 0);
    assert!(out.contains("No such file"), "{out}");
    assert!(!out.contains("host secret"), "{out}");

    let (_, status) = sandbox
        .sh("grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status")
        .await;
    assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
    assert!(status.contains("CapBnd:\t0000000000000000"), "{status}");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    // No way up: sudo is setuid, which no-new-privileges disarms.
    let (code, out) = sandbox.sh("sudo -n true 2>&1").await;
    assert_ne!(code, 0, "sudo worked: {out}");
    // PID 1 is the init that reaps orphans, not sandboxd.
    let (_, init) = sandbox.sh("tr '\\0' ' ' < /proc/1/cmdline").await;
    assert!(init.starts_with("/sbin/docker-init"), "{init}");
}

#[tokio::test]
async fn orphaned_zombies_are_reaped() {
    let sandbox = Running::with(|_| {}).await;
    // A grandchild that exits after its parent: it is re-parented to PID 1, which must reap it.
    let (code, _) = sandbox
        .sh("for i in 1 2 3; do (sleep 0.1 &); done; sleep 1")
        .await;
    assert_eq!(code, 0);
    let (_, zombies) = sandbox.sh("ps -eo stat= | grep -c '^Z' || true").await;
    assert_eq!(zombies.trim(), "0");
}

#[tokio::test]
async fn sudo_can_be_granted() {
    let sandbox = Running::with(|c| c.sudo = true).await;
    let (code, out) = sandbox
        .sh("sudo -n whoami && sudo -n touch /etc/granted")
        .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("root"), "{out}");
}

#[tokio::test]
async fn uploads_and_a_read_only_root_follow_the_workspace_owner() {
    use std::os::unix::fs::MetadataExt;

    let workspace = tempfile::tempdir().unwrap();
    chown(workspace.path(), Some(4321), Some(4321)).unwrap();
    std::fs::write(workspace.path().join("theirs.txt"), "the owner's\n").unwrap();
    chown(workspace.path().join("theirs.txt"), Some(4321), Some(4321)).unwrap();
    let sandbox = Running::with(|c| {
        c.workspace = Some(workspace.path().to_path_buf());
        c.read_only_root = true;
    })
    .await;

    // The shell is the owner: it changes the owner's file and its home is its own.
    let (code, out) = sandbox
        .sh("id -u; id -g; echo more >> theirs.txt && touch ~/.x && mkdir -p from/bash && echo ok")
        .await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.trim(), "4321\n4321\nok");

    sandbox
        .client
        .upload_bytes("up.txt", b"uploaded\n".to_vec(), "/workspace/sub", false)
        .await
        .unwrap();
    for made in ["sub/up.txt", "sub", "from/bash", "theirs.txt"] {
        let meta = std::fs::metadata(workspace.path().join(made)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4321, 4321), "owner of {made}");
    }
    // Downloads read what the owner has.
    let zip = sandbox
        .client
        .download_files("/workspace/sub")
        .await
        .unwrap();
    assert!(zip.starts_with(b"PK"), "a zip archive");
}
