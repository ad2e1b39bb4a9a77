//! `run_ipython` against a real ipykernel (docs/protocol.md §5). The kernel runs on `/usr/bin/python3`
//! (`scripts/setup` installs `python3-ipykernel`): the `python3` first on `PATH` may lack it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox_common::ProcStat;
use serde_json::{Value, json};

use crate::common::*;

pub(crate) const PYTHON: &str = "/usr/bin/python3";
const NO_OUTPUT: &str = "[Code executed successfully with no output]";
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

async fn start_with(extra: &[&str]) -> Sandbox {
    Sandbox::with_args(&[&["--python", PYTHON], extra].concat()).await
}

async fn start() -> Sandbox {
    start_with(&[]).await
}

/// A cell as the client sends it by default (timeout 120).
async fn cell(sb: &Sandbox, code: &str) -> Value {
    sb.act(json!({"action": "run_ipython", "args": {"code": code}, "timeout": 120}))
        .await
}

/// The output of a cell without the two extra lines.
async fn output(sb: &Sandbox, code: &str) -> String {
    sb.act(json!({"action": "run_ipython", "args": {"code": code, "include_extra": false}, "timeout": 120}))
        .await["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs `code` as a cell without extras and the `timeout` sent as is: it must time out, the
/// notice giving `seconds` as Python prints the float.
async fn assert_cell_times_out(sb: &Sandbox, code: &str, timeout: Value, seconds: &str) {
    let obs = sb
        .act(json!({"action": "run_ipython", "args": {"code": code, "include_extra": false}, "timeout": timeout}))
        .await;
    assert_eq!(
        obs["content"],
        json!(format!("[Execution timed out ({seconds} seconds).]"))
    );
}

fn extra(cwd: &str) -> String {
    format!("\n[Jupyter current working directory: {cwd}]\n[Jupyter Python interpreter: {PYTHON}]")
}

fn observation(code: &str, content: &str, image_urls: Value) -> Value {
    json!({
        "message": "Code executed in IPython cell.",
        "observation": "run_ipython",
        "content": content,
        "extras": {"code": code, "image_urls": image_urls},
        "success": true,
    })
}

/// Pids of the daemon's child processes whose command line contains `needle`.
fn children_running(daemon: i32, needle: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{daemon}/task")) else {
        return pids;
    };
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in children.split_whitespace().filter_map(|p| p.parse().ok()) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(needle) {
                pids.push(pid);
            }
        }
    }
    pids
}

fn gone(pid: i32) -> bool {
    // A zombie waiting for its new parent counts as gone.
    u32::try_from(pid)
        .ok()
        .and_then(ProcStat::read)
        .is_none_or(|stat| stat.is_zombie())
}

/// SIGKILLs a kernel as the OOM killer would, and waits until sandboxd has reaped it (so it
/// has noticed the death before the next cell).
async fn kill_and_wait_until_reaped(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    eventually("the killed kernel to be reaped", || {
        !exists(format!("/proc/{pid}"))
    })
    .await;
}

#[tokio::test]
async fn values_persist_and_output_is_the_references() {
    let sb = start().await;
    let ws = sb.ws_str();
    assert_eq!(
        cell(&sb, "print(1)").await,
        observation("print(1)", &format!("1{}", extra(&ws)), Value::Null)
    );
    assert_eq!(
        cell(&sb, "x = 1").await,
        observation("x = 1", &format!("{NO_OUTPUT}{}", extra(&ws)), Value::Null)
    );
    let obs = sb
        .act(json!({"action": "run_ipython", "args": {"code": "x", "include_extra": false}, "timeout": 120}))
        .await;
    assert_eq!(obs, observation("x", "1", Value::Null));
    // Streams and results concatenate in arrival order; trailing whitespace goes.
    assert_eq!(
        output(&sb, "import sys\nprint('a', end='', flush=True)\nsys.stderr.write('b\\n'); sys.stderr.flush()\nx + 1").await,
        "ab\n2"
    );
    // `print("")` is output (an empty line), not "no output".
    assert_eq!(cell(&sb, "print('')").await["content"], json!(extra(&ws)));
    // Only SGR colour sequences are stripped.
    assert_eq!(
        output(&sb, r"print('\x1b[31mred\x1b[0m \x1b[2Kkept')").await,
        "red \u{1b}[2Kkept"
    );
}

#[tokio::test]
async fn a_displayed_png_becomes_a_data_url() {
    let sb = start().await;
    let code = format!(
        "from IPython.display import Image, display\nimport base64\ndisplay(Image(data=base64.b64decode('{PNG}')))"
    );
    assert_eq!(
        cell(&sb, &code).await,
        observation(
            &code,
            &format!("<IPython.core.display.Image object>{}", extra(&sb.ws_str())),
            json!([format!("data:image/png;base64,{PNG}")]),
        )
    );
}

#[tokio::test]
async fn an_error_is_its_traceback_without_colours() {
    let sb = start().await;
    let content = output(&sb, "1/0").await;
    // IPython 8.5 writes `Cell In [1]`, later versions `Cell In[1]`.
    let content = content.replace("Cell In [1]", "Cell In[1]");
    assert_eq!(
        content,
        "---------------------------------------------------------------------------\nZeroDivisionError                         Traceback (most recent call last)\nCell In[1], line 1\n----> 1 1/0\n\nZeroDivisionError: division by zero"
    );
    // Output before the error is kept; the kernel carries on.
    let content = output(&sb, "print('before')\nraise ValueError('bad')").await;
    assert!(content.starts_with("before\n----"), "{content}");
    assert!(content.ends_with("ValueError: bad"), "{content}");
    assert_eq!(output(&sb, "2 * 21").await, "42");
}

#[tokio::test]
async fn a_timed_out_cell_is_interrupted_and_the_kernel_stays_usable() {
    let sb = start().await;
    assert_eq!(output(&sb, "kept = 41").await, NO_OUTPUT);
    let code = "import time\nprint('partial', flush=True)\ntime.sleep(30)";
    let started = Instant::now();
    let obs = sb
        .act(json!({"action": "run_ipython", "args": {"code": code}, "timeout": 2}))
        .await;
    let took = started.elapsed();
    // Partial output is discarded, as the reference does.
    assert_eq!(
        obs,
        observation(
            code,
            &format!(
                "[Execution timed out (2.0 seconds).]{}",
                extra(&sb.ws_str())
            ),
            Value::Null
        )
    );
    assert!(took >= Duration::from_secs(2), "{took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    // Interrupted, not restarted: the state is still there, at once.
    let started = Instant::now();
    assert_eq!(output(&sb, "kept + 1").await, "42");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A fractional timeout is printed as Python prints the float.
    assert_cell_times_out(&sb, "while True: pass", json!(0.5), "0.5").await;
    assert_eq!(output(&sb, "kept").await, "41");
}

#[tokio::test]
async fn a_cell_that_ignores_interrupts_gets_a_new_kernel() {
    let sb = start().await;
    let code = "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        pass";
    assert_cell_times_out(&sb, code, json!(1), "1.0").await;
    let content = output(&sb, "print('fresh')").await;
    assert_eq!(
        content,
        "[The IPython kernel did not stop after a timed-out cell was interrupted and was restarted: variables, imports and other state from earlier cells are lost.]\nfresh"
    );
}

#[tokio::test]
async fn a_kernel_that_dies_comes_back_and_says_its_state_is_lost() {
    let sb = start().await;
    assert_eq!(output(&sb, "lost = 1").await, NO_OUTPUT);
    let content = output(
        &sb,
        "print('last words', flush=True)\nimport os; os._exit(1)",
    )
    .await;
    assert!(
        content.starts_with("last words\n") || content.starts_with("[The IPython"),
        "{content}"
    );
    assert!(
        content.ends_with("[The IPython kernel died while running this cell (exit code 1). It will be restarted for the next cell; variables, imports and other state from earlier cells are lost.]"),
        "{content}"
    );
    // Told once: the next cell runs in a fresh kernel without a note.
    let content = output(&sb, "'lost' in dir()").await;
    assert_eq!(content, "False");

    // Killed from outside between cells (as the OOM killer does): the next cell says so.
    let pid: i32 = output(&sb, "import os; os.getpid()").await.parse().unwrap();
    kill_and_wait_until_reaped(pid).await;
    let content = output(&sb, "import os; os.getpid()").await;
    let (note, new_pid) = content.split_once('\n').unwrap();
    assert_eq!(
        note,
        "[The IPython kernel died (killed by SIGKILL, possibly out of memory) and was restarted: variables, imports and other state from earlier cells are lost.]"
    );
    assert_ne!(new_pid, pid.to_string());
    assert_eq!(output(&sb, "6 * 7").await, "42");
}

#[tokio::test]
async fn concurrent_cells_after_a_death_restart_the_kernel_once() {
    let sb = Arc::new(start().await);
    let pid: i32 = output(&sb, "import os; os.getpid()").await.parse().unwrap();
    let daemon: i32 = output(&sb, "os.getppid()").await.parse().unwrap();
    kill_and_wait_until_reaped(pid).await;
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let sb = sb.clone();
            tokio::spawn(async move { output(&sb, "import os; os.getpid()").await })
        })
        .collect();
    let mut notes = 0;
    let mut pids = Vec::new();
    for task in tasks {
        let content = task.await.unwrap();
        let last = content.lines().last().unwrap().to_owned();
        if content.starts_with("[The IPython kernel died") {
            notes += 1;
        }
        pids.push(last.parse::<i32>().unwrap());
    }
    assert_eq!(notes, 1, "the loss is reported once");
    pids.dedup();
    assert_eq!(pids.len(), 1, "one new kernel serves every cell: {pids:?}");
    assert_ne!(pids[0], pid);
    assert_eq!(children_running(daemon, "ipykernel_launcher"), pids);
    assert!(gone(pid));
}

#[tokio::test]
async fn the_kernel_follows_cd_in_bash() {
    let sb = start().await;
    let ws = sb.ws_str();
    assert_eq!(
        cell(&sb, "import os; print(os.getcwd())").await["content"],
        json!(format!("{ws}{}", extra(&ws)))
    );
    sb.run("mkdir -p 'sub dir' && cd 'sub dir'").await;
    let sub = format!("{ws}/sub dir");
    assert_eq!(
        cell(&sb, "print(os.getcwd())").await["content"],
        json!(format!("{sub}{}", extra(&sub)))
    );
    // Python moving does not move bash, and the shown directory stays bash's.
    assert_eq!(
        cell(&sb, "os.chdir('/'); print(os.getcwd())").await["content"],
        json!(format!("/{}", extra(&sub)))
    );
    assert_eq!(content(&sb.run("pwd").await), sub);
    // Only a move in bash is pushed to the kernel.
    assert_eq!(output(&sb, "print(os.getcwd())").await, "/");
    sb.run("cd ..").await;
    assert_eq!(output(&sb, "print(os.getcwd())").await, ws);
}

#[tokio::test]
async fn cells_and_bash_do_not_wait_for_each_other() {
    let sb = Arc::new(start().await);
    // A cell while bash sleeps.
    let marker = sb.ws.join("bash-started");
    let slow_bash = {
        let sb = sb.clone();
        tokio::spawn(async move { sb.run("touch bash-started && sleep 4 && echo slept").await })
    };
    eventually("bash to start sleeping", || exists(&marker)).await;
    assert_eq!(output(&sb, "1 + 1").await, "2");
    assert!(!slow_bash.is_finished(), "the cell waited for bash");
    assert_eq!(content(&slow_bash.await.unwrap()), "slept");

    // Bash and file actions while a cell sleeps.
    let marker = sb.ws.join("cell-started");
    let slow_cell = {
        let sb = sb.clone();
        tokio::spawn(async move {
            output(
                &sb,
                "import time\nopen('cell-started', 'w').close()\ntime.sleep(4)\nprint('woke')",
            )
            .await
        })
    };
    eventually("the cell to start sleeping", || exists(&marker)).await;
    assert_eq!(content(&sb.run("echo bash").await), "bash");
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "echo static", "is_static": true}, "timeout": 30}))
        .await;
    assert_eq!(content(&obs), "static");
    std::fs::write(sb.ws.join("f.txt"), "data\n").unwrap();
    let read = sb
        .act(json!({"action": "read", "args": {"path": "f.txt"}}))
        .await;
    assert_eq!(read["content"], json!("data\n"));
    assert!(
        !slow_cell.is_finished(),
        "bash or file actions waited for the cell"
    );
    assert_eq!(slow_cell.await.unwrap(), "woke");
}

#[tokio::test]
async fn without_ipykernel_a_cell_is_a_clear_error_observation() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let status = std::process::Command::new(PYTHON)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(status.success());
    let python = venv.join("bin/python").to_string_lossy().into_owned();
    // `--plugins jupyter`: the failed background start must not stop the daemon either.
    let sb = Sandbox::with_args(&["--python", &python, "--plugins", "jupyter"]).await;
    let text = format!(
        "IPython is not available: {python} cannot import ipykernel (install python3-ipykernel or pass --python)"
    );
    let obs = cell(&sb, "print(1)").await;
    assert_eq!(
        obs,
        json!({"message": text, "observation": "error", "content": text, "extras": {"error_id": ""}})
    );
    assert_eq!(content(&sb.run("echo still here").await), "still here");
}

#[tokio::test]
async fn the_jupyter_plugin_starts_the_kernel_in_the_background() {
    let mut sb = start_with(&["--plugins", "agent_skills", "jupyter"]).await;
    let daemon: i32 = content(&sb.run("echo $PPID").await).parse().unwrap();
    // Started before any cell asked for it.
    eventually("the kernel process", || {
        !children_running(daemon, "ipykernel_launcher").is_empty()
    })
    .await;
    let kernel = children_running(daemon, "ipykernel_launcher")[0];
    // agent_skills without the openhands package: ignored, the kernel works.
    assert_eq!(
        output(&sb, "import os; os.getpid()").await,
        kernel.to_string()
    );
    if nix::unistd::geteuid().is_root() {
        // As the shell's user, here root (`--username root`).
        assert_eq!(output(&sb, "os.getuid()").await, "0");
    }
    // Stopping the daemon stops the kernel.
    assert!(sb.terminate().success());
    eventually("the kernel to be gone", || gone(kernel)).await;
}

#[tokio::test]
async fn the_kernel_runs_as_the_sandbox_user() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let sb = Sandbox::with(Options {
        user: Some("nobody"),
        extra_args: vec!["--python".into(), PYTHON.into()],
        ..Options::default()
    })
    .await;
    assert_eq!(
        output(
            &sb,
            "import os, getpass; print(os.getuid(), getpass.getuser(), os.getcwd())"
        )
        .await,
        format!("65534 nobody {}", sb.ws_str())
    );
    let content = output(&sb, "open('/root/.secret', 'w')").await;
    assert!(content.contains("PermissionError"), "{content}");
    // Interrupts reach a kernel of another user.
    assert_cell_times_out(&sb, "import time; time.sleep(30)", json!(1), "1.0").await;
    assert_eq!(output(&sb, "'still' + ' here'").await, "'still here'");
}

#[tokio::test]
async fn pip_installs_with_the_kernels_interpreter() {
    let sb = start().await;
    // A wheel built on the spot: no network needed.
    let build = r#"import os, sys, tempfile, zipfile
d = tempfile.mkdtemp()
files = {
    "sbxdemo/__init__.py": "VALUE = 'installed'\n",
    "sbxdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
    "sbxdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
files["sbxdemo-1.0.dist-info/RECORD"] = "".join(f"{n},,\n" for n in files) + "sbxdemo-1.0.dist-info/RECORD,,\n"
whl = os.path.join(d, "sbxdemo-1.0-py3-none-any.whl")
with zipfile.ZipFile(whl, "w") as z:
    for name, text in files.items():
        z.writestr(name, text)"#;
    assert_eq!(output(&sb, build).await, NO_OUTPUT);
    let content = output(&sb, "%pip install --no-index --target $d/site $whl").await;
    assert!(
        content.contains("Successfully installed sbxdemo-1.0"),
        "{content}"
    );
    assert_eq!(
        output(
            &sb,
            "sys.path.insert(0, d + '/site')\nimport sbxdemo\nsbxdemo.VALUE"
        )
        .await,
        "'installed'"
    );
}

/// Output that never pauses must not keep the timeout from firing (the bash session had that
/// bug; the kernel's wait loop checks its deadline on every message too).
#[tokio::test]
async fn a_cell_that_floods_output_still_times_out() {
    let sb = start().await;
    assert_eq!(output(&sb, "1").await, "1");
    let started = Instant::now();
    assert_cell_times_out(&sb, "while True: print('x' * 100)", json!(1), "1.0").await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output(&sb, "'calm'").await, "'calm'");
}

#[tokio::test]
async fn a_cell_sent_while_the_kernel_boots_waits_for_it() {
    // The daemon answers as soon as bash is up; the kernel is still starting.
    let sb = start_with(&["--plugins", "jupyter"]).await;
    let alive = sb
        .request(reqwest::Method::GET, "/alive")
        .send()
        .await
        .unwrap();
    assert_eq!(alive.status(), 200);
    let pid = output(&sb, "import os; os.getpid()").await;
    let daemon: i32 = output(&sb, "os.getppid()").await.parse().unwrap();
    // The background kernel served the cell: no second one was started.
    assert_eq!(
        children_running(daemon, "ipykernel_launcher"),
        vec![pid.parse::<i32>().unwrap()]
    );
}
