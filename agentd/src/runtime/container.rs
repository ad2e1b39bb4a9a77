//! The Docker runtime as a [`super::Runtime`] backend: one container from
//! [`DockerHost::up`], owned by this process (the owner label lets `agentd sandbox gc` remove
//! it if agentd is killed), watched for its exit, and removed on close or, best effort, on drop.

use std::time::Duration;

use bollard::query_parameters::{InspectContainerOptions, WaitContainerOptions};
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::death::{SandboxDeath, record_death};
use super::docker::image;
use super::docker::labels::Owner;
use super::docker::{DockerError, DockerHost, SandboxContainer};
use super::{RuntimeConfig, RuntimeError};

/// Longest wait for the removal of a container dropped without [`ContainerBackend::close`].
const DROP_REMOVAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Container log lines kept in a death's detail.
const LOG_LINES: usize = 20;

/// A running sandbox container, removed on drop.
#[derive(Debug)]
pub(super) struct ContainerBackend {
    docker: DockerHost,
    pub(crate) sandbox: SandboxContainer,
    watcher: JoinHandle<()>,
    removed: bool,
}

/// Makes the sandbox image if `config.docker.image` is a base image, then creates and starts
/// the container and waits until sandboxd answers.
pub(super) async fn start(
    config: &RuntimeConfig,
    death: &watch::Sender<Option<SandboxDeath>>,
) -> Result<ContainerBackend, RuntimeError> {
    let docker = DockerHost::connect()?;
    let mut sandbox_config = config.docker.clone();
    if sandbox_config.workspace.is_none() {
        sandbox_config.workspace = match &config.workspace {
            Some(dir) => Some(std::path::absolute(dir).map_err(|source| RuntimeError::Io {
                what: "bad workspace",
                path: dir.clone(),
                source,
            })?),
            None => None,
        };
    }
    sandbox_config.ready_timeout = config.startup_timeout;
    sandbox_config.image = image::sandbox_image_for(
        docker.docker(),
        &sandbox_config.image,
        config.sandboxd_binary.as_deref(),
        |line| tracing::info!(target: "agentd::build", "{line}"),
    )
    .await?
    .tag;
    let sandbox = docker
        .up(&sandbox_config, Owner::current().as_ref())
        .await?;
    let watcher = tokio::spawn(watch_container(
        docker.clone(),
        sandbox.id.clone(),
        death.clone(),
    ));
    Ok(ContainerBackend {
        docker,
        sandbox,
        watcher,
        removed: false,
    })
}

impl ContainerBackend {
    /// Asks the engine whether the container still runs; records and returns the death if not.
    /// `None` when it runs or the engine cannot tell.
    pub(crate) async fn check(
        &self,
        death: &watch::Sender<Option<SandboxDeath>>,
    ) -> Option<SandboxDeath> {
        let summary = match self.docker.get(&self.sandbox.id).await {
            Ok(_) => return None,
            Err(DockerError::NoSuchSandbox(_)) => "the container is gone".to_string(),
            Err(DockerError::Unreachable { .. }) => "the container is not running".to_string(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot ask the engine about the sandbox container");
                return None;
            }
        };
        record_death(death, summary, self.output().await);
        death.borrow().clone()
    }

    /// The container's last output.
    pub(crate) async fn output(&self) -> String {
        self.docker.tail_logs(&self.sandbox.id, LOG_LINES).await
    }

    /// Removes the container (and its socket directory).
    pub(crate) async fn close(mut self) -> Result<(), RuntimeError> {
        self.watcher.abort();
        match self.docker.down(&self.sandbox.id).await {
            Ok(()) | Err(DockerError::NoSuchSandbox(_)) => {
                self.removed = true;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl Drop for ContainerBackend {
    fn drop(&mut self) {
        self.watcher.abort();
        if self.removed {
            return;
        }
        // Drop cannot await, and the caller's async runtime may be shutting down: remove it
        // from a thread with a runtime of its own, and wait for that (bounded).
        let id = self.sandbox.id.clone();
        let removal = std::thread::Builder::new()
            .name("sandbox-removal".to_string())
            .spawn(move || remove_now(&id));
        let outcome = match removal {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|_| Err("the removal thread panicked".to_string())),
            Err(e) => Err(format!("cannot start a thread: {e}")),
        };
        if let Err(e) = outcome {
            tracing::warn!(
                id = %self.sandbox.id,
                error = %e,
                "could not remove the sandbox container; `agentd sandbox gc` will"
            );
        }
    }
}

/// Removes container `id` on a fresh current-thread runtime.
fn remove_now(id: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let removal = async {
            match DockerHost::connect()?.down(id).await {
                Ok(()) | Err(DockerError::NoSuchSandbox(_)) => Ok(()),
                Err(e) => Err(e),
            }
        };
        match tokio::time::timeout(DROP_REMOVAL_TIMEOUT, removal).await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {DROP_REMOVAL_TIMEOUT:?}")),
        }
    })
}

/// Waits for the container to stop and records how.
async fn watch_container(
    docker: DockerHost,
    id: String,
    death: watch::Sender<Option<SandboxDeath>>,
) {
    let summary = loop {
        let mut wait = docker
            .docker()
            .wait_container(&id, None::<WaitContainerOptions>);
        match wait.next().await {
            Some(Ok(response)) => {
                break format!("the container exited with status {}", response.status_code);
            }
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => {
                break format!("the container exited with status {code}");
            }
            Some(Err(e)) if super::docker::inspect::is_not_found(&e) => {
                break "the container was removed".to_string();
            }
            None => break "the container stopped".to_string(),
            Some(Err(e)) => {
                // The engine connection broke or timed out: still running? Then wait again.
                tracing::debug!(%id, error = %e, "waiting for the sandbox container failed");
                match docker.get(&id).await {
                    Ok(_) | Err(DockerError::Engine(_)) => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Err(DockerError::NoSuchSandbox(_)) => {
                        break "the container is gone".to_string();
                    }
                    Err(_) => break "the container is not running".to_string(),
                }
            }
        }
    };
    let oom = docker
        .docker()
        .inspect_container(&id, None::<InspectContainerOptions>)
        .await
        .ok()
        .and_then(|inspect| inspect.state?.oom_killed)
        .unwrap_or(false);
    let summary = if oom {
        format!("{summary} (out of memory)")
    } else {
        summary
    };
    let detail = docker.tail_logs(&id, LOG_LINES).await;
    record_death(&death, summary, detail);
}
