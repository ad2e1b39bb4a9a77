//! What the Docker benchmarks share: a bare `docker run` to compare against, and the statistics
//! (`testkit::bench`'s).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use testkit::bench::{ms, percentile};

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
