//! IPython benchmark of sandboxd, printed as one table measured in one run: p50/p99 of a `pass`
//! cell over HTTP after warm-up, the kernel's cold start (first cell on a fresh daemon, which
//! starts the kernel), and start-to-`/alive` and start-to-first-cell with `--plugins jupyter`
//! (kernel started in the background). Run with `cargo bench -p sandboxd --bench ipython`;
//! `SANDBOXD_PYTHON` picks the interpreter (default `/usr/bin/python3`, which needs ipykernel).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "benchmark binary"
)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::{Daemon, print_heading, print_quantiles, verdict};
use testkit::bench::{ms, p50_p99, percentile};

/// sandboxd with the kernel on `python`, its HTTP client, and the time to `/alive`.
async fn start(ws: &std::path::Path, python: &str, extra: &[&str]) -> (Sandbox, Duration) {
    let http = reqwest::Client::new();
    let mut args = vec!["--python", python];
    args.extend_from_slice(extra);
    let (daemon, took) = common::start(ws, &args, &http).await;
    (Sandbox { daemon, http }, took)
}

struct Sandbox {
    daemon: Daemon,
    http: reqwest::Client,
}

impl Sandbox {
    async fn cell(&self, code: &str) -> Value {
        let body =
            json!({"action": {"action": "run_ipython", "args": {"code": code}, "timeout": 120}});
        let resp = self
            .http
            .post(format!("{}/execute_action", self.daemon.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success());
        let obs: Value = resp.json().await.unwrap();
        assert_eq!(obs["observation"], json!("run_ipython"), "{obs}");
        obs
    }
}

#[tokio::main]
async fn main() {
    let python = std::env::var("SANDBOXD_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
    let ws = tempfile::tempdir().unwrap();
    const STARTS: usize = 5;

    // Cold start: the first cell of a fresh daemon starts the kernel.
    let mut cold = Vec::new();
    for _ in 0..STARTS {
        let (daemon, _) = start(ws.path(), &python, &[]).await;
        let t = Instant::now();
        daemon.cell("pass").await;
        cold.push(t.elapsed());
    }

    // With `--plugins jupyter` the kernel starts in the background: `/alive` stays fast, and
    // a first cell waits for the kernel only as long as it is still booting.
    let mut alive = Vec::new();
    let mut first = Vec::new();
    for _ in 0..STARTS {
        let t = Instant::now();
        let (daemon, to_alive) = start(ws.path(), &python, &["--plugins", "jupyter"]).await;
        alive.push(to_alive);
        daemon.cell("pass").await;
        first.push(t.elapsed());
    }

    // Warm round trips.
    let (daemon, _) = start(ws.path(), &python, &[]).await;
    for _ in 0..50 {
        daemon.cell("pass").await;
    }
    const N: usize = 500;
    let mut pass = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        daemon.cell("pass").await;
        pass.push(t.elapsed());
    }
    let mut print = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        daemon.cell("print(1)").await;
        print.push(t.elapsed());
    }

    let (p50, p99) = p50_p99(&mut pass);
    let (q50, q99) = p50_p99(&mut print);
    let c50 = percentile(&mut cold, 0.5);
    let a50 = percentile(&mut alive, 0.5);
    let f50 = percentile(&mut first, 0.5);
    print_heading(
        &format!("sandboxd IPython, {N} samples per series, one run"),
        &format!(", {python}"),
        40,
    );
    print_quantiles(
        40,
        "`pass` cell over HTTP (warm)",
        p50,
        p99,
        &format!("   target p50 <= 5 ms: {}", verdict(ms(p50) <= 5.0)),
    );
    print_quantiles(40, "`print(1)` cell over HTTP (warm)", q50, q99, "");
    println!(
        "{:<40} {:>9.1}             ({STARTS} starts)",
        "kernel cold start (first cell)",
        ms(c50)
    );
    println!(
        "{:<40} {:>9.1}             ({STARTS} starts)   target <= 50 ms: {}",
        "--plugins jupyter: start to /alive",
        ms(a50),
        verdict(ms(a50) <= 50.0)
    );
    println!(
        "{:<40} {:>9.1}             ({STARTS} starts)   reference ≈ 9 s",
        "--plugins jupyter: start to first cell",
        ms(f50)
    );
}
