//! Docker runtime benchmark, against the real engine, in one run:
//! - create-to-first-`run`-observation of a sandbox (default hardened config, `true`), p50 over
//!   10 runs, next to a bare `docker run --rm IMAGE true` of the same image, and their ratio
//!   (target <= 1.5);
//! - the time to make a sandbox image from a base the engine has never seen (target <= 10 s).
//!
//! Needs the base image (`images/base/build.sh`) and a sandboxd for images
//! (`AGENTD_SANDBOXD_BIN`, else the workspace's debug build).
#![allow(clippy::print_stdout, reason = "a benchmark prints its results")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly"
)]

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use agentd::docker::DEFAULT_BASE_IMAGE;
use agentd::docker::{self as image, ContextFile, ensure_sandbox_image};
use agentd::docker::{DockerHost, SandboxConfig};

mod common;

use common::{docker_run_true, ms, percentile};

const RUNS: usize = 10;

#[tokio::main]
async fn main() {
    let base = testkit::base_image(DEFAULT_BASE_IMAGE);
    let sandboxd = testkit::sandboxd_binary("debug");
    let docker = DockerHost::connect().unwrap();
    let image = ensure_sandbox_image(docker.docker(), &base, &sandboxd, |_| {})
        .await
        .unwrap()
        .tag;
    let config = SandboxConfig {
        image: image.clone(),
        ..SandboxConfig::default()
    };

    // One of each first, so neither side pays for a cold page cache.
    sandbox_round(&docker, &config).await;
    docker_run_true(&image);

    let mut ours = Vec::new();
    let mut bare = Vec::new();
    for _ in 0..RUNS {
        ours.push(sandbox_round(&docker, &config).await);
        bare.push(docker_run_true(&image));
    }
    let (ours, bare) = (percentile(&mut ours, 0.5), percentile(&mut bare, 0.5));
    println!("docker runtime, {RUNS} runs each, image {image}");
    println!(
        "  sandbox create -> first run observation  p50 {:>8.1} ms",
        ms(ours)
    );
    println!(
        "  docker run --rm IMAGE true              p50 {:>8.1} ms",
        ms(bare)
    );
    println!(
        "  ratio                                   {:>8.2}   (target <= 1.5)",
        ours.as_secs_f64() / bare.as_secs_f64()
    );

    let new_base = format!("sandboxd-bench-base:{}", std::process::id());
    let dockerfile = format!("FROM {base}\nLABEL bench.run=\"{new_base}\"\n");
    let context = [ContextFile::new("Dockerfile", dockerfile.as_bytes(), 0o644)];
    image::build(
        docker.docker(),
        &new_base,
        &context,
        &HashMap::new(),
        |_| {},
    )
    .await
    .unwrap();
    let built = ensure_sandbox_image(docker.docker(), &new_base, &sandboxd, |_| {})
        .await
        .unwrap();
    assert!(built.built);
    println!(
        "  sandbox image from a new base            {:>8.1} ms   (target <= 10000)",
        ms(built.elapsed)
    );
    let _ = Command::new("docker")
        .args(["rmi", "-f", &built.tag, &new_base])
        .output();
}

async fn sandbox_round(docker: &DockerHost, config: &SandboxConfig) -> Duration {
    let started = Instant::now();
    let sandbox = docker.up(config, None).await.unwrap();
    let obs = sandbox.client().unwrap().run("true", None).await.unwrap();
    let elapsed = started.elapsed();
    assert!(obs.content.is_empty(), "{obs:?}");
    docker.down(&sandbox.id).await.unwrap();
    elapsed
}
