//! The official Python MCP SDK (`mcp` from PyPI) for the tests that need a real MCP peer: a
//! cached venv made on first use with `python3 -m venv` and `pip install -r
//! python/requirements.txt` (every package pinned), shared by every test (and test binary) of
//! the machine. Nothing is skipped when it cannot be made: the test that asked fails with pip's
//! output. [`McpClient`] is an MCP host on it; `python/` also holds the MCP servers the tests
//! run.
//!
//! The venv is `AGENTD_MCP_VENV` if set, else `${XDG_CACHE_HOME:-$HOME/.cache}/agentd/
//! mcp-venv-HASH` (see [`crate::venv`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use nix::fcntl::{Flock, FlockArg};

use crate::venv::{Venv, beside, run};

/// The `mcp` version installed (pinned in `python/requirements.txt`): the one OpenHands 0.62
/// pins, so the tests also show that what an OpenHands host speaks works.
pub const MCP_VERSION: &str = "1.16.0";

/// What the venv holds, every package pinned.
const REQUIREMENTS: &str = include_str!("../python/requirements.txt");

/// The venv of the MCP SDK.
const VENV: Venv = Venv {
    name: "mcp",
    override_var: "AGENTD_MCP_VENV",
    requirements_file: "requirements.txt",
    requirements: REQUIREMENTS,
    pip_args: &[],
};

/// The Python interpreter of the venv with `mcp` ([`MCP_VERSION`]), made if it is missing.
/// Panics with pip's output when it cannot be made (no `python3`, no `venv` module, no PyPI).
pub fn mcp_python() -> PathBuf {
    VENV.python(has_mcp)
}

/// A directory of wheels of everything in `python/requirements.txt`, for CPython 3.11 on x86-64
/// Linux (the base image's `python3`): downloaded from PyPI once (beside the venv) with the
/// venv's pip, so that a sandbox without PyPI can `pip install --no-index --find-links` them.
pub fn wheelhouse() -> PathBuf {
    let dir = beside(&venv_dir(), "wheels");
    let done = dir.join(".complete");
    if done.is_file() {
        return dir;
    }
    let python = mcp_python();
    let lock_path = beside(&venv_dir(), "wheels.lock");
    let lock_file = std::fs::File::create(&lock_path)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", lock_path.display()));
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("cannot lock {}: {e}", lock_path.display()));
    if done.is_file() {
        return dir;
    }
    run(Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--platform",
            "manylinux_2_17_x86_64",
            "--platform",
            "manylinux2014_x86_64",
            "--platform",
            "manylinux_2_28_x86_64",
            "--dest",
        ])
        .arg(&dir)
        .arg("--requirement")
        .arg(script("requirements.txt")));
    std::fs::write(&done, b"").unwrap_or_else(|e| panic!("cannot write {}: {e}", done.display()));
    dir
}

fn venv_dir() -> PathBuf {
    VENV.dir()
}

fn has_mcp(python: &Path) -> bool {
    python.is_file()
        && Command::new(python)
            .args([
                "-c",
                &format!(
                    "import importlib.metadata as m, mcp; assert m.version('mcp') == '{MCP_VERSION}'"
                ),
            ])
            .output()
            .is_ok_and(|out| out.status.success())
}

/// A script of this crate's `python/` directory (the MCP peers the tests run).
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("python")
        .join(name)
}

/// How [`McpClient`] reaches its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpTransport {
    /// Streamable HTTP.
    StreamableHttp,
    /// The older HTTP with Server-Sent Events (`GET .../sse`, then `POST`s to the endpoint it
    /// names).
    Sse,
}

/// An MCP host on the Python SDK (`python/mcp_client.py`), connected to one server: each call
/// writes a line to it and waits for its answer (blocking the calling thread). In its own
/// process group, killed with it on drop.
#[derive(Debug)]
pub struct McpClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl McpClient {
    /// Connects to the MCP server at `url` sending `headers`; `Err` is why it could not (the
    /// SDK's exception, e.g. a refused key).
    pub fn connect(
        transport: McpTransport,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<McpClient, String> {
        let headers: serde_json::Map<String, serde_json::Value> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
            .collect();
        let transport = match transport {
            McpTransport::StreamableHttp => "shttp",
            McpTransport::Sse => "sse",
        };
        let mut command = Command::new(mcp_python());
        command
            .arg(script("mcp_client.py"))
            .args([
                transport,
                url,
                &serde_json::Value::Object(headers).to_string(),
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the MCP client: {e}"));
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            panic!("the MCP client has no pipes")
        };
        let mut client = McpClient {
            child,
            stdin,
            stdout: std::io::BufReader::new(stdout),
        };
        let first = client.read();
        match first.get("connected") {
            Some(_) => Ok(client),
            None => Err(first["failed"].as_str().unwrap_or_default().to_owned()),
        }
    }

    /// The tools the server lists (as MCP's JSON: `name`, `description`, `inputSchema`, ...).
    pub fn list_tools(&mut self) -> Vec<serde_json::Value> {
        let answer = self.request(serde_json::json!({"op": "list"}));
        match answer.get("tools") {
            Some(serde_json::Value::Array(tools)) => tools.clone(),
            _ => panic!("no tool list: {answer}"),
        }
    }

    /// Calls `name` with `args`: the `CallToolResult` as JSON (`content`, `isError`, ...), or
    /// `{"exception": WHY}` when the SDK raised.
    pub fn call(&mut self, name: &str, args: serde_json::Value) -> serde_json::Value {
        self.request(serde_json::json!({"op": "call", "name": name, "args": args}))
    }

    fn request(&mut self, request: serde_json::Value) -> serde_json::Value {
        use std::io::Write;
        writeln!(self.stdin, "{request}")
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|e| panic!("the MCP client is gone: {e}"));
        self.read()
    }

    fn read(&mut self) -> serde_json::Value {
        use std::io::BufRead;
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("the MCP client said {line:?}: {e}")),
            _ => panic!("the MCP client ended without an answer"),
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The texts of a `CallToolResult`'s text blocks, joined by newlines.
pub fn result_text(result: &serde_json::Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The stdio MCP server `python/mcp_server.py NAME` on the venv's Python, as
/// `/update_mcp_server` and agentd's settings name one.
pub fn stdio_server(name: &str) -> protocol::api::McpStdioServer {
    protocol::api::McpStdioServer {
        name: name.to_owned(),
        command: mcp_python().to_string_lossy().into_owned(),
        args: vec![
            script("mcp_server.py").to_string_lossy().into_owned(),
            name.to_owned(),
        ],
        env: std::collections::BTreeMap::new(),
    }
}

/// `python/mcp_server.py NAME` serving on 127.0.0.1 (a free port) over `transport`, its tools
/// named with `tool_prefix` first; [`crate::Daemon::url`] is its MCP URL (`.../mcp` or
/// `.../sse`). Killed with its process group when dropped.
pub fn http_server(name: &str, transport: McpTransport, tool_prefix: &str) -> crate::Daemon {
    let flag = match transport {
        McpTransport::StreamableHttp => "--http",
        McpTransport::Sse => "--sse",
    };
    let mut command = Command::new(mcp_python());
    command
        .arg(script("mcp_server.py"))
        .args([name, flag])
        .env("TOOL_PREFIX", tool_prefix);
    crate::Daemon::spawn(&mut command, "listening on ")
        .unwrap_or_else(|e| panic!("the MCP server {name} did not start: {e}"))
}
