//! The idle reaper: stops sandboxes whose sandboxd reports (`/server_info` `idle_time`) more
//! than the idle timeout without an action. Paused sandboxes, and those not ready yet, are left
//! alone.

use std::time::Duration;

use client::SandboxClient;
use tokio::sync::watch;

use super::ServeError;
use super::table::{Entry, Table};

/// How often the reaper looks: a quarter of the timeout, within 250 ms and 30 s.
fn period(timeout: Duration) -> Duration {
    (timeout / 4).clamp(Duration::from_millis(250), Duration::from_secs(30))
}

/// Whether `idle_secs` without an action is too many.
fn is_idle(idle_secs: f64, timeout: Duration) -> bool {
    idle_secs >= timeout.as_secs_f64()
}

/// Until `stop` turns true, forgets the sandboxes of `table` idle for `timeout` and has
/// `remove` remove them.
pub(super) async fn run<F>(
    table: &Table,
    timeout: Duration,
    mut stop: watch::Receiver<bool>,
    remove: impl Fn(Entry) -> F,
) where
    F: Future<Output = Result<(), ServeError>>,
{
    let period = period(timeout);
    loop {
        tokio::select! {
            () = tokio::time::sleep(period) => {}
            _ = stop.changed() => return,
        }
        for entry in table.serving() {
            let Some(idle) = idle_time(&entry.container.local_url).await else {
                continue;
            };
            if !is_idle(idle, timeout) {
                continue;
            }
            let runtime_id = entry.claim.runtime_id.clone();
            if table.remove(&runtime_id).is_none() {
                continue;
            }
            tracing::info!(%runtime_id, idle, "stopping an idle sandbox");
            if let Err(e) = remove(entry).await {
                tracing::warn!(%runtime_id, error = %e, "cannot stop an idle sandbox");
            }
        }
    }
}

/// The seconds sandboxd at `local_url` has been without an action; `None` when it does not
/// say.
async fn idle_time(local_url: &str) -> Option<f64> {
    let client = SandboxClient::new(local_url, None).ok()?;
    Some(client.server_info().await.ok()?.idle_time)
}

#[cfg(test)]
mod tests;
