//! `--unix-socket`: the API served on a Unix domain socket (for sandboxes without a network),
//! reached through the `client` crate, and the socket file's life cycle.
//!
//! `Sandbox::url` is then `unix:PATH`; its raw `reqwest` helpers (`request`, `act`, `run`) speak
//! TCP only, so these tests use `SandboxClient`.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use client::SandboxClient;

use crate::common::*;

/// A working directory that does not exist: a daemon given it exits after binding.
const NO_SUCH_DIR: &str = "/nonexistent/sandboxd-test";

/// Starts a sandboxd listening on the Unix socket `path` only.
async fn start_on(path: &Path) -> Sandbox {
    Sandbox::with_args(&["--unix-socket", &path.to_string_lossy()]).await
}

/// A path for a socket in a fresh directory (short: socket paths are limited to 107 bytes).
fn socket_path(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

#[tokio::test]
async fn the_api_is_served_on_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    // The parent directory does not exist yet: sandboxd creates it.
    let path = socket_path(&dir, "run/sandboxd.sock");
    let mut sb = start_on(&path).await;
    assert_eq!(sb.url, format!("unix:{}", path.display()));
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o666);

    let c = SandboxClient::new(&sb.url, Some(KEY.to_owned())).unwrap();
    assert_eq!(c.target().to_string(), sb.url);
    c.alive().await.unwrap();
    c.server_info().await.unwrap();
    echo_with(&c, "over the socket").await;
    let file = format!("{}/notes.txt", sb.ws_str());
    c.write(&file, "one\ntwo").await.unwrap();
    assert_eq!(c.read(&file).await.unwrap().content, "one\ntwo\n");

    let local = tempfile::tempdir().unwrap();
    std::fs::write(local.path().join("up.txt"), "uploaded\n").unwrap();
    c.upload_file(&local.path().join("up.txt"), &sb.ws_str(), false)
        .await
        .unwrap();
    upload_project(&c, &sb.ws_str()).await;
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("up.txt")).unwrap(),
        "uploaded\n"
    );
    let names = c.list_files(None).await.unwrap();
    for name in ["proj/", "notes.txt", "up.txt"] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    assert_eq!(
        c.list_files(Some("proj/src")).await.unwrap(),
        ["main.py".to_owned()]
    );
    let archive = download_zip(&c, &format!("{}/proj", sb.ws_str())).await;
    assert_eq!(archive.len(), 1);

    // The socket is world-writable, so the key is what keeps strangers out.
    for key in [Some("wrong".to_owned()), None] {
        let other = SandboxClient::new(&sb.url, key).unwrap();
        let err = other.run("true", None).await.unwrap_err();
        assert_eq!(err.status(), Some(403), "{err}");
        assert_eq!(err.detail(), Some("Invalid API Key"));
    }

    let status = sb.terminate();
    assert!(status.success(), "{status:?}");
    assert!(
        std::fs::symlink_metadata(&path).is_err(),
        "the socket file is removed on clean shutdown"
    );
    let err = c.alive().await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
}

#[tokio::test]
async fn a_stale_socket_is_replaced_but_a_live_one_is_not_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = socket_path(&dir, "sandboxd.sock");
    // What a daemon that was killed leaves behind: a socket file nobody listens on.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(is_socket(&path));
    let sb = start_on(&path).await;
    let c = SandboxClient::new(&sb.url, Some(KEY.to_owned())).unwrap();
    assert_eq!(
        c.run("echo replaced", None).await.unwrap().content,
        "replaced"
    );

    // A second daemon on the same path must not steal the first one's socket. (Its working
    // directory does not exist, so were it to bind, it would still exit rather than hang.)
    let out = Command::new(env!("CARGO_BIN_EXE_sandboxd"))
        .args(["0", "--working-dir", NO_SUCH_DIR, "--unix-socket"])
        .arg(&path)
        .env_remove("SANDBOXD_UNIX_SOCKET")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot listen on unix:{}: another process is listening on this socket",
            path.display()
        )),
        "{err}"
    );
    assert!(is_socket(&path));
    assert_eq!(
        c.run("echo still here", None).await.unwrap().content,
        "still here"
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_socket_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = socket_path(&dir, "precious.txt");
    std::fs::write(&file, "keep me").unwrap();
    let subdir = socket_path(&dir, "a-directory");
    std::fs::create_dir(&subdir).unwrap();
    let link = socket_path(&dir, "a-link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    for path in [&file, &subdir, &link] {
        let out = Command::new(env!("CARGO_BIN_EXE_sandboxd"))
            .args(["0", "--working-dir", NO_SUCH_DIR, "--unix-socket"])
            .arg(path)
            .env_remove("SANDBOXD_UNIX_SOCKET")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "sandboxd: cannot listen on unix:{}: the path exists and is not a socket; \
                 refusing to remove it",
                path.display()
            )),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    assert!(subdir.is_dir());
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
}

#[tokio::test]
async fn the_socket_can_be_given_in_the_environment_and_relative() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    // A relative path is resolved against sandboxd's current directory and printed absolute.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sandboxd"))
        .args(["0", "--working-dir", "ws", "--no-login-shell"])
        .args(["--username", "root", "--no-enable-browser"])
        .current_dir(dir.path())
        .env("SANDBOXD_UNIX_SOCKET", "sock/s.sock")
        .env_remove("SESSION_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).map(|_| line)
    })
    .await
    .unwrap()
    .unwrap();
    let path = dir.path().canonicalize().unwrap().join("sock/s.sock");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        line,
        format!("sandboxd listening on unix:{}\n", path.display())
    );
    assert!(status.success(), "{status:?}");
    assert!(std::fs::symlink_metadata(&path).is_err());
}
