//! The `docker` backend: one hardened container per sandbox on one Docker engine
//! ([`DockerHost`]), sandboxd's port published on the service's publish address.

use std::collections::BTreeMap;

use async_trait::async_trait;
use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};

use super::{Backend, Found, SandboxState, ServedSandbox, Spec, Warm, port_of};
use crate::runtime::docker::inspect::{app_ports_of, label, state_of, url_of};
use crate::runtime::docker::{DockerError, DockerHost, Limits, SandboxConfig, labels};
use crate::serve::{ServeConfig, ServeError};

/// Sandboxes as containers of the local Docker engine.
#[derive(Debug)]
pub(in crate::serve) struct DockerBackend {
    docker: DockerHost,
}

impl DockerBackend {
    /// Connects to the engine `DOCKER_HOST` (or the local socket) names.
    pub(in crate::serve) fn connect() -> Result<DockerBackend, ServeError> {
        Ok(DockerBackend {
            docker: DockerHost::connect()?,
        })
    }
}

/// The labels every sandbox of `config`'s service carries.
pub(in crate::serve) fn serve_labels(
    config: &ServeConfig,
    spec: &Spec<'_>,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::SERVE_NAME.to_string(), config.name.clone()),
        (
            labels::SERVE_RUNTIME_ID.to_string(),
            spec.runtime_id.to_string(),
        ),
        (
            labels::SERVE_PROFILE.to_string(),
            spec.profile.label(config),
        ),
    ])
}

#[async_trait]
impl Backend for DockerBackend {
    fn kind(&self) -> &'static str {
        "docker"
    }

    fn engine(&self) -> Option<&bollard::Docker> {
        Some(self.docker.docker())
    }

    async fn create(&self, config: &ServeConfig, spec: Spec<'_>) -> Result<Warm, ServeError> {
        let sandbox_config = SandboxConfig {
            publish_address: config.publish_address.clone(),
            labels: serve_labels(config, &spec),
            ..spec.sandbox(config, spec.tag.to_string(), spec.profile.user)
        };
        let sandbox = self.docker.up(&sandbox_config, None).await?;
        let port = port_of(&sandbox.url).ok_or_else(|| {
            ServeError::Internal(format!("sandbox {} has no published port", sandbox.name))
        })?;
        Ok(Warm {
            runtime_id: spec.runtime_id.to_string(),
            container: ServedSandbox {
                id: sandbox.id,
                local_url: sandbox.url,
                port,
                app_ports: sandbox.app_ports,
                image: spec.tag.to_string(),
            },
            configure_key: sandbox.session_api_key,
        })
    }

    async fn remove(&self, id: &str) -> Result<(), ServeError> {
        match self.docker.down(id).await {
            Ok(()) | Err(DockerError::NoSuchSandbox(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn pause(&self, id: &str) -> Result<(), ServeError> {
        Ok(self.docker.pause(id).await?)
    }

    async fn unpause(&self, id: &str) -> Result<(), ServeError> {
        Ok(self.docker.unpause(id).await?)
    }

    async fn update_limits(&self, id: &str, limits: &Limits) -> Result<(), ServeError> {
        Ok(self.docker.update_limits(id, limits).await?)
    }

    async fn state(&self, id: &str) -> Result<SandboxState, ServeError> {
        Ok(state(self.docker.get_state(id).await?))
    }

    async fn find(&self, name: &str) -> Result<Vec<Found>, ServeError> {
        let containers = self
            .docker
            .inspect_labelled(labels::SERVE_NAME, name)
            .await?;
        Ok(containers.iter().map(found).collect())
    }
}

/// A container's state as a sandbox's (`None`: no container).
pub(in crate::serve) fn state(state: Option<ContainerStateStatusEnum>) -> SandboxState {
    match state {
        Some(ContainerStateStatusEnum::RUNNING) => SandboxState::Running,
        Some(ContainerStateStatusEnum::PAUSED) => SandboxState::Paused,
        _ => SandboxState::Down,
    }
}

/// What an inspected container of the service is.
pub(in crate::serve) fn found(inspect: &ContainerInspectResponse) -> Found {
    let local_url = url_of(inspect);
    let port = local_url.as_deref().and_then(port_of);
    let container = local_url.zip(port).map(|(local_url, port)| ServedSandbox {
        id: inspect.id.clone().unwrap_or_default(),
        local_url,
        port,
        app_ports: app_ports_of(inspect),
        image: inspect
            .config
            .as_ref()
            .and_then(|c| c.image.clone())
            .unwrap_or_default(),
    });
    Found {
        runtime_id: label(inspect, labels::SERVE_RUNTIME_ID)
            .unwrap_or_default()
            .to_string(),
        id: inspect.id.clone().unwrap_or_default(),
        state: state(state_of(inspect)),
        container,
        configure_key: configure_key(inspect),
        profile: label(inspect, labels::SERVE_PROFILE).map(str::to_string),
        // A container's labels cannot change: its claim is in the state directory.
        claim: None,
    }
}

/// The key a waiting sandboxd takes its configuration with (in its container's environment).
fn configure_key(inspect: &ContainerInspectResponse) -> Option<String> {
    inspect
        .config
        .as_ref()?
        .env
        .as_ref()?
        .iter()
        .find_map(|kv| {
            kv.strip_prefix("SANDBOXD_CONFIGURE_KEY=")
                .map(str::to_string)
        })
}
