//! One layer on an image, made without the image builder: a container of the base is created
//! (never networked), the layer's files are uploaded into it, its script runs once as root,
//! and the container is committed as the new image with labels added and the base's
//! entrypoint, command and user kept.
//!
//! The builder commits once per Dockerfile step (`COPY`, `COPY`, `RUN`, `LABEL`: four), and a
//! commit costs seconds on storage drivers that diff whole trees (fuse-overlayfs, vfs: ≈ 6 s
//! each for the default image here); this commits once.
//!
//! The container is named `sandboxd-layer-…` (a label on it would be committed into the image
//! and so into every sandbox of it): [`sweep`] removes those an agentd that died meanwhile left.

use std::collections::HashMap;
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerConfig, ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CommitContainerOptionsBuilder, CreateContainerOptionsBuilder, ListContainersOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, StartContainerOptions,
    UploadToContainerOptionsBuilder, WaitContainerOptions,
};
use futures_util::StreamExt;

use super::DockerError;
use super::archive::{ContextFile, pack};
use super::inspect::is_not_found;

/// The name prefix of the containers layers are made in.
const NAME_PREFIX: &str = "sandboxd-layer-";

/// How long a layer's script may run (a `useradd`, a `chown` of a home and a venv).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);

/// How old a layer's container must be before [`sweep`] takes it for a leftover.
const SWEEP_AGE: Duration = Duration::from_secs(600);

/// What a layer holds.
#[derive(Debug)]
pub(crate) struct Layer<'a> {
    /// Put in place before the script runs (their names relative to `/`).
    pub(crate) files: &'a [ContextFile<'a>],
    /// Run by `/bin/sh -c` as root; its failure is the layer's, with its output.
    pub(crate) script: &'a str,
    /// Added to the image's labels.
    pub(crate) labels: &'a [(&'a str, &'a str)],
    /// The image's user: `Some("root")` to make it root, `None` to keep the base's.
    pub(crate) user: Option<&'a str>,
}

/// Makes the image `repo:tag` of `base` with `layer` on top. The base's configuration (environment, working
/// directory, entrypoint, command, user unless `layer.user`, labels) is kept. On any failure
/// the container is removed and no tag is made.
pub(crate) async fn commit(
    docker: &Docker,
    base: &str,
    (repo, tag): (&str, &str),
    layer: &Layer<'_>,
) -> Result<(), DockerError> {
    let base_config = docker.inspect_image(base).await?.config.unwrap_or_default();
    let suffix = sandbox_common::random_hex(6).map_err(|e| DockerError::Entropy(e.to_string()))?;
    let name = format!("{NAME_PREFIX}{suffix}");
    let body = ContainerCreateBody {
        image: Some(base.to_string()),
        user: Some("0".to_string()),
        entrypoint: Some(vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            layer.script.to_string(),
        ]),
        cmd: Some(Vec::new()),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            network_mode: Some("none".to_string()),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    };
    let options = CreateContainerOptionsBuilder::default().name(&name).build();
    let id = docker.create_container(Some(options), body).await?.id;
    let made = async {
        let archive = pack(layer.files)
            .map_err(|e| DockerError::Build(format!("cannot pack the layer's files: {e}")))?;
        let options = UploadToContainerOptionsBuilder::default().path("/").build();
        docker
            .upload_to_container(&id, Some(options), bollard::body_full(archive.into()))
            .await?;
        run_script(docker, &id).await?;
        // Fields left empty are taken from the container, which has the base's but for the
        // entrypoint, command and user the script ran with: those are given.
        let mut labels: HashMap<String, String> = base_config.labels.clone().unwrap_or_default();
        labels.extend(
            layer
                .labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let config = ContainerConfig {
            entrypoint: base_config.entrypoint.clone(),
            cmd: base_config
                .cmd
                .clone()
                .filter(|cmd| !cmd.is_empty())
                .or_else(|| {
                    // An empty entrypoint and command would take the container's (the script).
                    base_config
                        .entrypoint
                        .as_ref()
                        .is_none_or(Vec::is_empty)
                        .then(|| vec!["/bin/sh".to_string()])
                }),
            user: Some(
                layer
                    .user
                    .map(str::to_string)
                    .or_else(|| base_config.user.clone())
                    .filter(|u| !u.is_empty())
                    .unwrap_or_else(|| "root".to_string()),
            ),
            labels: Some(labels),
            ..ContainerConfig::default()
        };
        let options = CommitContainerOptionsBuilder::default()
            .container(&id)
            .repo(repo)
            .tag(tag)
            .pause(false)
            .build();
        docker.commit_container(options, config).await?;
        Ok::<(), DockerError>(())
    }
    .await;
    remove(docker, &id).await;
    made
}

/// Starts the layer's container and waits for its script; a failure says how it ended and
/// what it printed last.
async fn run_script(docker: &Docker, id: &str) -> Result<(), DockerError> {
    let mut exited = docker.wait_container(id, None::<WaitContainerOptions>);
    docker
        .start_container(id, None::<StartContainerOptions>)
        .await?;
    let status = match tokio::time::timeout(SCRIPT_TIMEOUT, exited.next()).await {
        Err(_) => {
            return Err(DockerError::Build(format!(
                "the layer's script did not end within {SCRIPT_TIMEOUT:?}"
            )));
        }
        Ok(Some(Ok(response))) => response.status_code,
        // A non-zero exit comes as an error of the wait.
        Ok(Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. }))) => code,
        Ok(Some(Err(e))) => return Err(e.into()),
        Ok(None) => -1,
    };
    if status == 0 {
        return Ok(());
    }
    let options = LogsOptionsBuilder::default()
        .stdout(true)
        .stderr(true)
        .tail("20")
        .build();
    let output: Vec<String> = docker
        .logs(id, Some(options))
        .filter_map(|chunk| async move { chunk.ok() })
        .map(|chunk| String::from_utf8_lossy(&chunk.into_bytes()).into_owned())
        .collect()
        .await;
    Err(DockerError::Build(format!(
        "the layer's script exited with status {status}:\n{}",
        output.concat().trim_end()
    )))
}

async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::default().force(true).build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => {}
        Err(e) if is_not_found(&e) => {}
        Err(e) => tracing::warn!(%id, error = %e, "cannot remove a layer's container"),
    }
}

/// Removes the layer containers older than [`SWEEP_AGE`]: an agentd died while making them.
pub(crate) async fn sweep(docker: &Docker) -> Result<(), DockerError> {
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&HashMap::from([(
            "name".to_string(),
            vec![format!("^/{NAME_PREFIX}")],
        )]))
        .build();
    let now = chrono::Utc::now().timestamp();
    for container in docker.list_containers(Some(options)).await? {
        let ours = container
            .names
            .iter()
            .flatten()
            .any(|n| n.trim_start_matches('/').starts_with(NAME_PREFIX));
        let old = container
            .created
            .is_some_and(|created| now - created > SWEEP_AGE.as_secs() as i64);
        if let (true, true, Some(id)) = (ours, old, container.id) {
            remove(docker, &id).await;
        }
    }
    Ok(())
}
