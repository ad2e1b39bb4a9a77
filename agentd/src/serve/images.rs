//! Which sandbox image a caller's image runs as: the caller's image is mapped to a local one
//! (the configured mapping, itself if the engine has it, else the default image), and a local
//! base image is made a sandbox image once ([`image::sandbox_image_for`]) and remembered.
//!
//! A backend without an image engine (kubernetes: its nodes pull images) runs the configured
//! mapping, else the default image, as it is named: the operator publishes those as sandbox
//! images. Nothing can be looked up there, so `/image_exists` is refused rather than guessed.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use bollard::Docker;
use protocol::runtime_api::ImageInfo;

use super::{ServeConfig, ServeError};
use crate::runtime::docker::{DockerError, image};

/// Local image → sandbox image tag, made on first use.
#[derive(Debug)]
pub(super) struct SandboxImages {
    /// The image of sandboxes whose image this host does not have.
    default_image: String,
    /// Caller image → local image.
    mapped: BTreeMap<String, String>,
    /// The sandboxd binary base images are made sandbox images with.
    sandboxd: Option<PathBuf>,
    /// Held while an image is made: one build at a time.
    tags: tokio::sync::Mutex<HashMap<String, String>>,
}

impl SandboxImages {
    pub(super) fn new(config: &ServeConfig) -> SandboxImages {
        SandboxImages {
            default_image: config.default_image.clone(),
            mapped: config.images.clone(),
            sandboxd: config.sandboxd_binary.clone(),
            tags: tokio::sync::Mutex::default(),
        }
    }

    /// The sandbox image a caller's image runs as.
    pub(super) async fn for_caller(
        &self,
        docker: Option<&Docker>,
        image: &str,
    ) -> Result<String, ServeError> {
        let Some(docker) = docker else {
            return Ok(self.configured_or_default(image).to_string());
        };
        let local = self.local_image_for(docker, image).await?;
        self.sandbox_image(Some(docker), &local).await
    }

    /// The image a caller's image runs as where images cannot be looked up: its mapping, else
    /// the default image.
    fn configured_or_default(&self, image: &str) -> &str {
        self.configured(image).unwrap_or(&self.default_image)
    }

    /// The local image a caller's image runs as when the configuration decides it: its
    /// mapping, or the default image for none.
    fn configured(&self, image: &str) -> Option<&str> {
        if let Some(mapped) = self.mapped.get(image) {
            return Some(mapped);
        }
        image.is_empty().then_some(self.default_image.as_str())
    }

    /// The local image a caller's image names: its mapping (or the default image for none),
    /// else itself.
    pub(super) fn configured_or_itself(&self, image: &str) -> String {
        self.configured(image).unwrap_or(image).to_string()
    }

    /// The local image a caller's image names, described, if the engine has it: `None` when
    /// `/start` would run another image instead. Refused without an engine: a registry the
    /// nodes pull from is not the service's to look into.
    pub(super) async fn local_info(
        &self,
        docker: Option<&Docker>,
        image: &str,
    ) -> Result<Option<ImageInfo>, ServeError> {
        let Some(docker) = docker else {
            return Err(ServeError::Unsupported(format!(
                "this service cannot tell whether image {image:?} exists: its sandboxes' nodes pull images from where the operator published them, which it cannot look into. Run a sandbox image the operator published (it runs {:?} for this name): set SANDBOX_RUNTIME_CONTAINER_IMAGE, and the client asks no /image_exists and no /build",
                self.configured_or_default(image)
            )));
        };
        let local = self.configured_or_itself(image);
        match image::describe(docker, &local).await {
            Ok(info) => Ok(Some(info)),
            Err(DockerError::ImageMissing { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The local image a caller's image runs as: its mapping, itself if the engine has it,
    /// else the default image.
    async fn local_image_for(&self, docker: &Docker, image: &str) -> Result<String, ServeError> {
        if let Some(local) = self.configured(image) {
            return Ok(local.to_string());
        }
        if image::exists(docker, image).await? {
            Ok(image.to_string())
        } else {
            Ok(self.default_image.clone())
        }
    }

    /// The sandbox image for a local image (made once, with sandboxd added, if it is a base);
    /// without an engine, the image as it is named (the operator's sandbox image).
    pub(super) async fn sandbox_image(
        &self,
        docker: Option<&Docker>,
        local: &str,
    ) -> Result<String, ServeError> {
        let Some(docker) = docker else {
            return Ok(local.to_string());
        };
        let mut tags = self.tags.lock().await;
        if let Some(tag) = tags.get(local) {
            return Ok(tag.clone());
        }
        let tag = image::sandbox_image_for(docker, local, self.sandboxd.as_deref(), |line| {
            tracing::info!(target: "agentd::build", "{line}");
        })
        .await?
        .tag;
        tags.insert(local.to_string(), tag.clone());
        Ok(tag)
    }
}

#[cfg(test)]
mod tests;
