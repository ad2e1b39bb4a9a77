//! What the Docker benchmarks share: a bare `docker run` to compare against, and statistics.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One `docker run --rm IMAGE true`: what a bare container costs here.
pub fn docker_run_true(image: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new("docker")
        .args(["run", "--rm", image, "true"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    started.elapsed()
}

/// The `p` quantile (0..=1) of `samples` (sorted in place).
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
