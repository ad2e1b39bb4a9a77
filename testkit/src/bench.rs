//! Statistics of a benchmark's samples, the same for every benchmark of the workspace.

use std::time::Duration;

/// The `p` quantile (0..=1) of `samples` (sorted in place).
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let idx = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[idx]
}

/// The median and the 99th percentile of `samples` (sorted in place).
pub fn p50_p99(samples: &mut [Duration]) -> (Duration, Duration) {
    (percentile(samples, 0.5), percentile(samples, 0.99))
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
