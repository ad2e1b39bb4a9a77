//! What the host can give one sandbox, so that a `resource_factor` it cannot meet is refused
//! with a 400 that says what it can give, instead of the engine's opaque failure at start.

use bollard::Docker;

use crate::runtime::docker::{DockerError, Limits};

use super::ServeError;

/// The host's CPUs and memory, as the Docker engine reports them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct HostCapacity {
    pub(crate) cpus: Option<f64>,
    pub(crate) memory_bytes: Option<i64>,
}

impl HostCapacity {
    /// Asks the engine (`GET /info`); unknown (every factor passes here) without one: a
    /// cluster's scheduler then decides, by the sandbox's requests.
    pub(crate) async fn of(docker: Option<&Docker>) -> Result<HostCapacity, ServeError> {
        let Some(docker) = docker else {
            return Ok(HostCapacity {
                cpus: None,
                memory_bytes: None,
            });
        };
        let info = docker.info().await.map_err(DockerError::from)?;
        Ok(HostCapacity {
            cpus: info.ncpu.filter(|&n| n > 0).map(|n| n as f64),
            memory_bytes: info.mem_total.filter(|&m| m > 0),
        })
    }

    /// Refuses `factor` when the limits it scales `base` to exceed the host: the message says
    /// what was asked, what the host has, and the largest factor it can give.
    pub(crate) fn check(&self, base: &Limits, factor: f64) -> Result<(), ServeError> {
        let asked = base.scaled(factor);
        let cpus_over = matches!((asked.cpus, self.cpus), (Some(a), Some(h)) if a > h);
        let memory_over =
            matches!((asked.memory_bytes, self.memory_bytes), (Some(a), Some(h)) if a > h);
        if !cpus_over && !memory_over {
            return Ok(());
        }
        let largest = [
            base.cpus.zip(self.cpus).map(|(b, h)| h / b),
            base.memory_bytes
                .zip(self.memory_bytes)
                .map(|(b, h)| h as f64 / b as f64),
        ]
        .into_iter()
        .flatten()
        .fold(f64::INFINITY, f64::min);
        // Two decimals, rounded down so that the factor named is one the host can give.
        let largest = (largest * 100.0).floor() / 100.0;
        Err(ServeError::BadRequest(format!(
            "resource_factor {factor} asks for {} and {} of memory; this host has {} and {}: \
             the largest resource_factor it can give is {largest}",
            cpus(asked.cpus),
            gib(asked.memory_bytes),
            cpus(self.cpus),
            gib(self.memory_bytes),
        )))
    }
}

fn cpus(n: Option<f64>) -> String {
    n.map_or_else(|| "unlimited CPUs".to_string(), |n| format!("{n} CPUs"))
}

fn gib(bytes: Option<i64>) -> String {
    bytes.map_or_else(
        || "unlimited".to_string(),
        |b| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
    )
}

#[cfg(test)]
mod tests;
