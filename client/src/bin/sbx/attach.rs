//! `sbx attach`: a person's interactive terminal into a sandbox, over the terminal WebSocket.
//! The local terminal is put in raw mode while attached (when stdin is one); Ctrl-] detaches
//! and leaves the terminal running; the program's exit ends `sbx` with its status.

use std::io::{IsTerminal, Read, Write};

use anyhow::Context;
use client::protocol::api::{CreateTerminalRequest, TerminalEvent};
use client::{SandboxClient, TerminalOutput};
use nix::sys::termios::{self, SetArg, Termios};

/// The byte that detaches (Ctrl-]).
const DETACH: u8 = 0x1d;

/// Restores the local terminal's mode when dropped.
struct RawMode(Option<Termios>);

impl RawMode {
    fn enter() -> RawMode {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return RawMode(None);
        }
        let Ok(saved) = termios::tcgetattr(&stdin) else {
            return RawMode(None);
        };
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        let _ = termios::tcsetattr(&stdin, SetArg::TCSANOW, &raw);
        RawMode(Some(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = &self.0 {
            let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, saved);
        }
    }
}

/// The local terminal's size (columns, rows), from `stty size`.
fn local_size() -> Option<(u16, u16)> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    let out = std::process::Command::new("stty")
        .arg("size")
        .stdin(std::process::Stdio::inherit())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.split_whitespace();
    let rows = parts.next()?.parse().ok()?;
    let cols = parts.next()?.parse().ok()?;
    Some((cols, rows))
}

/// Attaches to terminal `id`, or to a new one running `command` (a login bash when empty) that
/// is closed when its program ends. Returns the exit status to end with.
pub(crate) async fn attach(
    sandbox: &SandboxClient,
    id: Option<String>,
    command: Vec<String>,
) -> anyhow::Result<u8> {
    let size = local_size();
    let (id, created) = match id {
        Some(id) => (id, false),
        None => {
            let request = CreateTerminalRequest {
                command: (!command.is_empty()).then_some(command),
                cols: size.map(|s| s.0),
                rows: size.map(|s| s.1),
                ..CreateTerminalRequest::default()
            };
            (sandbox.create_terminal(&request).await?.id, true)
        }
    };
    let mut socket = sandbox
        .attach_terminal(&id)
        .await
        .with_context(|| format!("cannot attach to terminal {id}"))?;
    if let (false, Some((cols, rows))) = (created, size) {
        socket.resize(cols, rows).await?;
    }
    let interactive = std::io::stdin().is_terminal();
    let raw = RawMode::enter();
    let (keys_tx, mut keys) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stdin.read(&mut buf) {
            if keys_tx.blocking_send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut resized =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())?;
    let mut stdout = std::io::stdout();
    // Not `keys.is_closed()`: that is true as soon as the reader thread ends, while what it
    // read may still be queued (input from a pipe that ended before the first turn of the loop
    // was never sent, and the program waited for it forever).
    let mut reading = true;
    let code = loop {
        tokio::select! {
            output = socket.next() => match output? {
                Some(TerminalOutput::Data(bytes)) => {
                    stdout.write_all(&bytes)?;
                    stdout.flush()?;
                }
                Some(TerminalOutput::Event(TerminalEvent::Exit { code })) => break Some(code),
                Some(TerminalOutput::Event(TerminalEvent::Error { detail })) => {
                    eprint!("\r\n[sbx: {detail}]\r\n");
                }
                Some(TerminalOutput::Event(TerminalEvent::Skipped { bytes })) => {
                    eprint!("\r\n[sbx: {bytes} bytes of earlier output are gone]\r\n");
                }
                None => break None,
            },
            typed = keys.recv(), if reading => match typed {
                Some(bytes) if interactive && bytes.contains(&DETACH) => {
                    drop(raw);
                    eprintln!("\n[detached from terminal {id}; `sbx attach {id}` to come back]");
                    let _ = socket.close().await;
                    return Ok(0);
                }
                Some(bytes) => socket.input(&bytes).await?,
                // Input ended (a pipe): keep showing output until the program ends.
                None => reading = false,
            },
            _ = resized.recv() => {
                if let Some((cols, rows)) = local_size() {
                    socket.resize(cols, rows).await?;
                }
            }
        }
    };
    drop(raw);
    if created {
        let _ = sandbox.close_terminal(&id).await;
    }
    match code {
        Some(code) => Ok(u8::try_from(code).unwrap_or(1)),
        None => anyhow::bail!("the connection to terminal {id} closed"),
    }
}
