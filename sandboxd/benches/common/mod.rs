//! What the sandboxd benchmarks share: starting the daemon and measuring its readiness, the
//! report's heading and rows, and the verdict column (the statistics are `testkit::bench`'s).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::bench::ms;

const BIN: &str = env!("CARGO_BIN_EXE_sandboxd");

/// The report's first lines: `title` with the machine's cores (and `detail` after them), then
/// the column headings over a name column `width` wide.
pub fn print_heading(title: &str, detail: &str, width: usize) {
    println!(
        "{title} ({} cores{detail})",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("{:<width$} {:>9} {:>9}", "", "p50 ms", "p99 ms");
}

/// A row of the report: `name` in a column `width` wide, the p50 and p99 in ms, then `note`.
pub fn print_quantiles(width: usize, name: &str, p50: Duration, p99: Duration, note: &str) {
    println!("{name:<width$} {:>9.3} {:>9.3}{note}", ms(p50), ms(p99));
}

/// `ok` or `MISSED`, for the target column.
pub fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running sandboxd, stopped with SIGTERM and reaped on drop.
pub struct Daemon {
    pub child: std::process::Child,
    pub url: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

/// Starts sandboxd on `ws` with `extra` arguments and returns it with the time from spawn to
/// the first 200 from `/alive` (polled: the readiness time is what is measured).
pub async fn start(
    ws: &std::path::Path,
    extra: &[&str],
    http: &reqwest::Client,
) -> (Daemon, Duration) {
    let port = free_port();
    let t0 = Instant::now();
    let child = Command::new(BIN)
        .arg(port.to_string())
        .arg("--working-dir")
        .arg(ws)
        .args([
            "--username",
            "root",
            "--no-enable-browser",
            "--no-login-shell",
        ])
        .args(extra)
        .env_remove("SESSION_API_KEY")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    loop {
        if let Ok(resp) = http.get(format!("{url}/alive")).send().await
            && resp.status().is_success()
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "sandboxd did not start"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    (Daemon { child, url }, t0.elapsed())
}
