//! `agentd serve` benchmark, against the real engine, in one run: what a caller feels from
//! `POST /start` until its first observation (`pod_status` polled until `ready`, then `run
//! true` on the sandbox), with a warm pool (p50/p99 over 20 starts, each taken when the pool
//! has a ready sandbox) and cold (pool size 0: the container is created in the request), next
//! to a bare `docker run --rm IMAGE true` on the base image. Targets: warm p50 <= 50 ms; cold
//! p50 under 1.5x the bare docker run. Then the front door (`--front-door`): the warm start
//! through it, and what it adds to each action (`run true` through the front door against the
//! same sandbox's published port, alternately, p50/p99 over 200 actions each).
//!
//! Needs the base image (`images/base/build.sh`) and a sandboxd for images
//! (`AGENTD_SANDBOXD_BIN`, else the workspace's debug build).
#![allow(clippy::print_stdout, reason = "a benchmark prints its results")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use client::{ObservationExt, RuntimeApiClient, SandboxClient};
use protocol::runtime_api::{PodStatus, StartRequest};
use testkit::Daemon;

mod common;

use common::{docker_run_true, ms, percentile};

const WARM_RUNS: usize = 20;
const COLD_RUNS: usize = 5;
const KEY: &str = "bench-key";
const ACTIONS: usize = 200;

struct Service {
    daemon: Daemon,
    url: String,
    name: String,
    _state: tempfile::TempDir,
}

impl Service {
    fn start(name: &str, pool: usize, extra: &[&str]) -> Service {
        let sandboxd = testkit::sandboxd_binary("debug");
        let state = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--api-key", KEY])
            .args(["--name", name, "--pool-size", &pool.to_string()])
            .args(["--idle-timeout", "0"])
            .args(extra)
            .arg("--state-dir")
            .arg(state.path())
            .env("AGENTD_SANDBOXD_BIN", sandboxd)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::inherit());
        let daemon = Daemon::spawn(&mut command, "agentd serve listening on ")
            .unwrap_or_else(|e| panic!("agentd serve did not start: {e}"));
        let url = daemon.url().to_string();
        Service {
            daemon,
            url,
            name: name.to_string(),
            _state: state,
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.daemon.terminate(Duration::from_secs(30));
        let out = Command::new("docker")
            .args(["ps", "-aq", "--filter"])
            .arg(format!("label=dev.sandboxd.serve.name={}", self.name))
            .output()
            .unwrap();
        let ids = String::from_utf8_lossy(&out.stdout).to_string();
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if !ids.is_empty() {
            let _ = Command::new("docker")
                .args(["rm", "-f"])
                .args(ids)
                .stdout(Stdio::null())
                .status();
        }
    }
}

fn request(session: String) -> StartRequest {
    StartRequest {
        image: "ghcr.io/all-hands-ai/runtime:0.62-nikolaik".to_string(),
        command: testkit::reference_start_command(&[]),
        working_dir: None,
        environment: Default::default(),
        session_id: session,
        resource_factor: 1.0,
        runtime_class: None,
    }
}

/// Starts `runs` sandboxes one after another (each stopped before the next); with `warm`, each
/// start waits until the pool has a ready sandbox. Returns, per start, the time until the
/// first observation: `/start`, polls of `pod_status` until `ready`, then a `run` of `true` on
/// the sandbox's data plane, as a caller does it.
async fn measure(service: &Service, runs: usize, warm: bool) -> Vec<Duration> {
    let api = RuntimeApiClient::new(&service.url, KEY).unwrap();
    let mut firsts = Vec::new();
    for i in 0..runs {
        if warm {
            let deadline = Instant::now() + Duration::from_secs(120);
            while api.list().await.unwrap().warm.values().sum::<usize>() == 0 {
                assert!(Instant::now() < deadline, "the pool does not fill");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let t0 = Instant::now();
        let started = api.start(&request(format!("bench-{i}"))).await.unwrap();
        while api
            .runtime(&started.access.runtime_id)
            .await
            .unwrap()
            .pod_status
            != PodStatus::Ready
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let sandbox =
            SandboxClient::new(&started.access.url, started.access.session_api_key.clone())
                .unwrap();
        let obs = sandbox.run("true", None).await.unwrap();
        firsts.push(t0.elapsed());
        assert_eq!(obs.exit_code(), Some(0), "{}", obs.content);
        api.stop(&started.access.runtime_id).await.unwrap();
    }
    firsts
}

#[tokio::main]
async fn main() {
    let pid = std::process::id();
    let warm_service = Service::start(&format!("bench-warm-{pid}"), 2, &[]);
    // One unmeasured round first, so neither side pays for a cold page cache.
    measure(&warm_service, 1, true).await;
    let mut warm = measure(&warm_service, WARM_RUNS, true).await;
    drop(warm_service);
    let cold_service = Service::start(&format!("bench-cold-{pid}"), 0, &[]);
    let mut cold = measure(&cold_service, COLD_RUNS, false).await;
    drop(cold_service);
    let front_service = Service::start(&format!("bench-front-{pid}"), 2, &["--front-door"]);
    measure(&front_service, 1, true).await;
    let mut front = measure(&front_service, WARM_RUNS, true).await;
    let (mut through, mut direct) = per_action(&front_service).await;
    drop(front_service);
    let image =
        std::env::var("AGENTD_BENCH_IMAGE").unwrap_or_else(|_| "sandboxd-base:bookworm".into());
    docker_run_true(&image);
    let mut bare: Vec<Duration> = (0..COLD_RUNS).map(|_| docker_run_true(&image)).collect();

    let (w50, w99) = (percentile(&mut warm, 0.5), percentile(&mut warm, 0.99));
    let (c50, c99) = (percentile(&mut cold, 0.5), percentile(&mut cold, 0.99));
    let b50 = percentile(&mut bare, 0.5);
    println!("agentd serve: POST /start -> pod_status ready -> first observation (`run true`)");
    println!(
        "  warm pool  p50 {:>8.1} ms  p99 {:>8.1} ms  ({WARM_RUNS} starts; target p50 <= 50 ms: {})",
        ms(w50),
        ms(w99),
        if ms(w50) <= 50.0 { "ok" } else { "MISSED" }
    );
    println!(
        "  cold       p50 {:>8.1} ms  p99 {:>8.1} ms  ({COLD_RUNS} starts, no pool)",
        ms(c50),
        ms(c99)
    );
    println!(
        "  bare `docker run --rm {image} true`  p50 {:>8.1} ms  ({COLD_RUNS} runs)",
        ms(b50)
    );
    let ratio = c50.as_secs_f64() / b50.as_secs_f64();
    println!(
        "  ratio cold / bare docker run p50  {ratio:.2}x  (target < 1.5x: {})",
        if ratio < 1.5 { "ok" } else { "MISSED" }
    );
    println!(
        "  ratio warm / bare docker run p50  {:.3}x",
        w50.as_secs_f64() / b50.as_secs_f64()
    );
    let (f50, f99) = (percentile(&mut front, 0.5), percentile(&mut front, 0.99));
    println!(
        "  warm pool, front door  p50 {:>8.1} ms  p99 {:>8.1} ms  ({WARM_RUNS} starts; direct above)",
        ms(f50),
        ms(f99)
    );
    let (t50, t99) = (
        percentile(&mut through, 0.5),
        percentile(&mut through, 0.99),
    );
    let (d50, d99) = (percentile(&mut direct, 0.5), percentile(&mut direct, 0.99));
    println!("per action (`run true`, {ACTIONS} each, alternating):");
    println!(
        "  direct URL   p50 {:>7.2} ms  p99 {:>7.2} ms",
        ms(d50),
        ms(d99)
    );
    println!(
        "  front door   p50 {:>7.2} ms  p99 {:>7.2} ms  (added: p50 {:+.2} ms, p99 {:+.2} ms)",
        ms(t50),
        ms(t99),
        ms(t50) - ms(d50),
        ms(t99) - ms(d99)
    );
}

/// One sandbox of a front-door service, `run true` alternately through the front door and at
/// its published port (the direct URL the service would hand out without the front door):
/// the times of each.
async fn per_action(service: &Service) -> (Vec<Duration>, Vec<Duration>) {
    let api = RuntimeApiClient::new(&service.url, KEY).unwrap();
    let started = api
        .start(&request("bench-actions".to_string()))
        .await
        .unwrap();
    let runtime_id = &started.access.runtime_id;
    api.wait_until_ready(runtime_id, Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    // The container is named by its runtime id; sandboxd is its port 8000.
    let out = Command::new("docker")
        .args(["port", runtime_id, "8000"])
        .output()
        .unwrap();
    let published = String::from_utf8_lossy(&out.stdout);
    let direct_url = format!("http://{}", published.lines().next().unwrap().trim());
    let key = started.access.session_api_key.clone();
    let front = SandboxClient::new(&started.access.url, key.clone()).unwrap();
    let direct = SandboxClient::new(&direct_url, key).unwrap();
    let (mut through, mut straight) = (Vec::new(), Vec::new());
    for _ in 0..ACTIONS {
        for (client, times) in [(&front, &mut through), (&direct, &mut straight)] {
            let t0 = Instant::now();
            let obs = client.run("true", None).await.unwrap();
            times.push(t0.elapsed());
            assert_eq!(obs.exit_code(), Some(0), "{}", obs.content);
        }
    }
    api.stop(runtime_id).await.unwrap();
    (through, straight)
}
