//! Test harness: start a real sandboxd, send it actions, stop it cleanly.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use testkit::Daemon;

use serde_json::{Value, json};

pub const KEY: &str = "sekret";

/// Options for one daemon.
pub struct Options {
    pub no_change_timeout: u64,
    pub key: Option<&'static str>,
    pub browser: bool,
    pub extra_args: Vec<String>,
    /// Run the shell as this user (root only); the working directory is opened up for it.
    pub user: Option<&'static str>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            no_change_timeout: 10,
            key: Some(KEY),
            browser: false,
            extra_args: Vec::new(),
            user: None,
        }
    }
}

/// A running sandboxd with its own working and output directories.
pub struct Sandbox {
    daemon: Daemon,
    pub url: String,
    pub key: Option<&'static str>,
    pub http: reqwest::Client,
    pub ws: PathBuf,
    _dir: tempfile::TempDir,
}

impl Sandbox {
    pub async fn start() -> Sandbox {
        Self::with(Options::default()).await
    }

    pub async fn with(opts: Options) -> Sandbox {
        Self::try_with(opts).await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// A daemon started with `args` added to its command line.
    pub async fn with_args(args: &[&str]) -> Sandbox {
        Self::with(Options {
            extra_args: args.iter().map(|a| (*a).to_owned()).collect(),
            ..Options::default()
        })
        .await
    }

    /// A daemon whose non-blocking commands return after `seconds` without output.
    pub async fn with_no_change_timeout(seconds: u64) -> Sandbox {
        Self::with(Options {
            no_change_timeout: seconds,
            ..Options::default()
        })
        .await
    }

    /// Starts a daemon; `Err` carries why it did not start and what it printed on stderr.
    pub async fn try_with(opts: Options) -> Result<Sandbox, String> {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("workspace");
        let out = dir.path().join("outputs");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        if opts.user.is_some() {
            use std::os::unix::fs::PermissionsExt;
            for d in [dir.path(), ws.as_path()] {
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
            }
        }
        let stderr = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sandboxd"));
        cmd.arg("0")
            .arg("--working-dir")
            .arg(&ws)
            .arg("--output-dir")
            .arg(&out)
            .args([
                "--username",
                opts.user.unwrap_or("root"),
                "--no-login-shell",
            ])
            .env(
                "NO_CHANGE_TIMEOUT_SECONDS",
                opts.no_change_timeout.to_string(),
            )
            .env_remove("SESSION_API_KEY")
            .env("RUST_LOG", "sandboxd=debug")
            .stderr(stderr);
        if !opts.browser {
            cmd.arg("--no-enable-browser");
        }
        if let Some(key) = opts.key {
            cmd.env("SESSION_API_KEY", key);
        }
        cmd.args(&opts.extra_args);
        let daemon = Daemon::spawn(&mut cmd, "sandboxd listening on ").map_err(|e| {
            let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
            format!("sandboxd did not start: {e}\n{log}")
        })?;
        Ok(Sandbox {
            url: daemon.url().to_owned(),
            daemon,
            key: opts.key,
            http: reqwest::Client::new(),
            ws,
            _dir: dir,
        })
    }

    /// sandboxd's pid.
    pub fn pid(&self) -> u32 {
        self.daemon.pid()
    }

    pub fn ws_str(&self) -> String {
        self.ws.to_string_lossy().into_owned()
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.daemon
            .terminate(Duration::from_secs(10))
            .expect("sandboxd ignored SIGTERM")
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(key) = self.key {
            req = req.header("X-Session-API-Key", key);
        }
        req
    }

    /// POSTs `body` to `path`: the status and the JSON answer (its text as a JSON string when
    /// it is not JSON).
    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        testkit::status_and_json(self.request(reqwest::Method::POST, path).json(body)).await
    }

    /// Executes an action and returns the observation; panics on a non-200 answer.
    pub async fn act(&self, action: Value) -> Value {
        let (status, body) = self
            .post_json("/execute_action", &json!({ "action": action }))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// A `run` with the client's defaults (timeout 120, non-blocking).
    pub async fn run(&self, command: &str) -> Value {
        self.act(json!({"action": "run", "args": {"command": command}, "timeout": 120}))
            .await
    }

    /// A blocking `run` with a hard timeout, as the client sends `set_hard_timeout`.
    pub async fn run_hard(&self, command: &str, timeout: f64) -> Value {
        self.act(json!({"action": "run", "args": {"command": command, "blocking": true}, "timeout": timeout}))
            .await
    }

    pub async fn input(&self, text: &str) -> Value {
        self.act(
            json!({"action": "run", "args": {"command": text, "is_input": true}, "timeout": 120}),
        )
        .await
    }
}

impl Drop for Sandbox {
    /// A clean stop first (sandboxd then stops its shells and kernels itself); the daemon's own
    /// drop SIGKILLs whatever is left of its process group.
    fn drop(&mut self) {
        self.daemon.terminate(Duration::from_secs(10));
    }
}

/// Content of an observation.
pub fn content(obs: &Value) -> &str {
    obs["content"].as_str().unwrap_or_default()
}

pub fn exit_code(obs: &Value) -> i64 {
    obs["extras"]["metadata"]["exit_code"].as_i64().unwrap()
}

/// Asserts that a command observation shows `expected` and exit code 0.
pub fn assert_output(obs: &Value, expected: &str) {
    assert_eq!(content(obs), expected);
    assert_eq!(exit_code(obs), 0);
}

pub fn meta<'a>(obs: &'a Value, key: &str) -> &'a Value {
    &obs["extras"]["metadata"][key]
}

/// Waits (bounded) until `cond` holds; for effects with no event to wait on, like reaping.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn exists(path: impl AsRef<Path>) -> bool {
    path.as_ref().exists()
}

/// Runs `echo TEXT` with the typed client: it must print `text` and succeed.
pub async fn echo_with(c: &client::SandboxClient, text: &str) {
    use client::ObservationExt;
    let obs = c.run(&format!("echo {text}"), None).await.unwrap();
    assert_eq!(obs.content, text);
    assert_eq!(obs.exit_code(), Some(0));
}

/// Uploads a local directory `proj` holding `src/main.py` into `dest` with the typed client.
pub async fn upload_project(c: &client::SandboxClient, dest: &str) {
    let local = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(local.path().join("proj/src")).unwrap();
    std::fs::write(local.path().join("proj/src/main.py"), "print(1)\n").unwrap();
    c.upload_file(&local.path().join("proj"), dest, true)
        .await
        .unwrap();
}

/// `path` in the sandbox, downloaded with the typed client as a zip archive.
pub async fn download_zip(
    c: &client::SandboxClient,
    path: &str,
) -> zip::ZipArchive<std::io::Cursor<Vec<u8>>> {
    let zip = c.download_files(path).await.unwrap();
    zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap()
}
