//! Short commands agentd runs on the host for a sandbox (`mkfs.ext4`, `mount`, `iptables`):
//! each in its own process group, its stdin empty or a given input, its output read
//! concurrently up to a cap (the rest drained), waited for and reaped. Blocking: call it from
//! a blocking thread.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};

/// The most of a command's stdout that is kept (`iptables -S` of many sandboxes' rules).
const MAX_STDOUT: u64 = 16 << 20;
/// The most of its stderr that is kept (an error message).
const MAX_STDERR: u64 = 64 << 10;

/// How a command ended: its status and the (capped) output.
#[derive(Debug)]
pub(super) struct Output {
    pub(super) status: ExitStatus,
    pub(super) stdout: Vec<u8>,
    /// Its stderr, trimmed.
    pub(super) stderr: String,
}

/// Runs `program` with `args` and waits for it; `Err` when it could not be started.
pub(super) fn output<S: AsRef<OsStr>>(program: &str, args: &[S]) -> std::io::Result<Output> {
    run(program, args, None)
}

/// Runs `program` with `args`, `input` on its stdin, and waits for it; `Err` when it could
/// not be started.
pub(super) fn output_with_input<S: AsRef<OsStr>>(
    program: &str,
    args: &[S],
    input: &[u8],
) -> std::io::Result<Output> {
    run(program, args, Some(input))
}

fn run<S: AsRef<OsStr>>(
    program: &str,
    args: &[S],
    input: Option<&[u8]>,
) -> std::io::Result<Output> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (stdout, stderr) = std::thread::scope(|scope| {
        if let (Some(mut stdin), Some(input)) = (stdin, input) {
            // A program that exits without reading it all is answered by its status.
            scope.spawn(move || {
                use std::io::Write;
                let _ = stdin.write_all(input);
            });
        }
        let stderr = scope.spawn(move || stderr.map(|s| capped(s, MAX_STDERR)));
        let stdout = stdout.map(|s| capped(s, MAX_STDOUT)).unwrap_or_default();
        (stdout, stderr.join().ok().flatten().unwrap_or_default())
    });
    let status = child.wait()?;
    Ok(Output {
        status,
        stdout,
        stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
    })
}

/// The first `cap` bytes of `from`; the rest is read and dropped, so the writer never blocks.
fn capped(mut from: impl Read, cap: u64) -> Vec<u8> {
    let mut kept = Vec::new();
    let _ = (&mut from).take(cap).read_to_end(&mut kept);
    let _ = std::io::copy(&mut from, &mut std::io::sink());
    kept
}
