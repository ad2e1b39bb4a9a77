//! Latency benchmark of sandboxd, printed as one table measured in one run:
//! `run true` and a 1 KB `read` over HTTP against a plain `bash -c true` fork+exec on the same
//! machine, start-to-`/alive`, and idle memory. Run with `cargo bench -p sandboxd --bench latency`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "benchmark binary"
)]

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

mod common;

use common::{print_heading, print_quantiles, start, verdict};
use testkit::bench::{ms, p50_p99, percentile};

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[tokio::main]
async fn main() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("1k.txt"), "x".repeat(1023) + "\n").unwrap();
    let http = reqwest::Client::new();

    // Start-to-ready over several starts.
    let mut starts = Vec::new();
    for _ in 0..10 {
        let (daemon, took) = start(ws.path(), &[], &http).await;
        starts.push(took);
        drop(daemon);
    }
    let (daemon, _) = start(ws.path(), &[], &http).await;
    let url = format!("{}/execute_action", daemon.url);

    let act = |body: serde_json::Value| {
        let http = http.clone();
        let url = url.clone();
        async move {
            let resp = http
                .post(&url)
                .json(&json!({ "action": body }))
                .send()
                .await
                .unwrap();
            assert!(resp.status().is_success());
            resp.bytes().await.unwrap()
        }
    };
    let run_true = json!({"action": "run", "args": {"command": "true"}, "timeout": 30});
    let read_1k = json!({"action": "read", "args": {"path": "1k.txt"}, "timeout": 30});

    // Warm up.
    for _ in 0..50 {
        act(run_true.clone()).await;
        act(read_1k.clone()).await;
    }
    const N: usize = 500;
    let mut fork = Vec::with_capacity(N);
    let mut run = Vec::with_capacity(N);
    let mut read = Vec::with_capacity(N);
    // Interleave so that machine noise hits every series alike.
    for _ in 0..N {
        let t = Instant::now();
        let ok = Command::new("bash")
            .args(["-c", "true"])
            .status()
            .unwrap()
            .success();
        fork.push(t.elapsed());
        assert!(ok);
        let t = Instant::now();
        act(run_true.clone()).await;
        run.push(t.elapsed());
        let t = Instant::now();
        act(read_1k.clone()).await;
        read.push(t.elapsed());
    }
    let pid = daemon.child.id();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss = rss_kib(pid);
    let shell_rss: u64 = children(pid).into_iter().map(rss_kib).sum();

    let (f50, f99) = p50_p99(&mut fork);
    let (r50, r99) = p50_p99(&mut run);
    let (d50, d99) = p50_p99(&mut read);
    let s50 = percentile(&mut starts, 0.5);
    print_heading(
        &format!("sandboxd latency, {N} samples per series, one run"),
        "",
        34,
    );
    print_quantiles(34, "bash -c true (fork+exec baseline)", f50, f99, "");
    let against_fork = |p50: Duration, target_ms: f64| {
        format!(
            "   ratio to bash -c true: {:.2}x (p50)   target p50 <= {target_ms} ms: {}",
            ms(p50) / ms(f50),
            verdict(ms(p50) <= target_ms)
        )
    };
    print_quantiles(
        34,
        "run `true` over HTTP",
        r50,
        r99,
        &against_fork(r50, 2.0),
    );
    print_quantiles(34, "read 1 KB over HTTP", d50, d99, &against_fork(d50, 0.5));
    println!(
        "{:<34} {:>9.3}             (10 starts)   target <= 50 ms: {}",
        "start to /alive",
        ms(s50),
        verdict(ms(s50) <= 50.0)
    );
    println!(
        "{:<34} {:>9.1} MB (sandboxd)  + {:.1} MB (its bash)   target sandboxd <= 15 MB: {}",
        "idle RSS after the runs",
        rss as f64 / 1024.0,
        shell_rss as f64 / 1024.0,
        verdict(rss <= 15 * 1024)
    );
}
