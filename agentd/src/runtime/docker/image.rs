//! Sandbox images: any base image with bash becomes one by adding sandboxd in one thin layer
//! ([`layer`](super::layer): one container, one commit). The tag names the base image's id and
//! the sandboxd binary's and the layer's digests, so a made image is reused until any changes.
//!
//! Also: importing a root filesystem tarball as a base image (what `docker import` does).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::query_parameters::{BuildImageOptionsBuilder, CreateImageOptionsBuilder};
use futures_util::{Stream, StreamExt, TryStreamExt};
use sandbox_common::hex;
use sha2::{Digest, Sha256};

pub use super::archive::ContextFile;
use super::archive::pack;
use super::config::{SANDBOX_UID, SANDBOX_USER, SANDBOXD_PATH};
use super::inspect::is_not_found;
use super::layer::{self, Layer};
use super::user::SandboxUser;
use super::{DockerError, labels};
use crate::runtime::sandboxd::{WORKSPACE, default_sandboxd_binary};

/// The repository sandbox images are tagged in.
pub(crate) const REPOSITORY: &str = "sandboxd-runtime";

/// A sandbox image ready to run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SandboxImage {
    /// Its tag, e.g. `sandboxd-runtime:0.1.0-3f2a...`.
    pub tag: String,
    /// Whether it was built now (false: it existed already, or the image was one already).
    pub built: bool,
    /// How long making it took.
    #[serde(with = "secs")]
    pub elapsed: Duration,
}

/// The sandboxd binary to make `image` a sandbox image with: `given`, else
/// [`default_sandboxd_binary`]; [`DockerError::NoSandboxd`] when there is none.
fn sandboxd_binary(given: Option<&Path>, image: &str) -> Result<PathBuf, DockerError> {
    given
        .map(Path::to_path_buf)
        .or_else(default_sandboxd_binary)
        .ok_or_else(|| DockerError::NoSandboxd {
            image: image.to_string(),
        })
}

/// The sandbox image to run `image` as: `image` itself if it is one, else the one
/// [`ensure_sandbox_image`] makes of it with the sandboxd binary `sandboxd` (or the default,
/// [`sandboxd_binary`]). `progress` receives each line a build prints.
pub async fn sandbox_image_for(
    docker: &Docker,
    image: &str,
    sandboxd: Option<&Path>,
    progress: impl FnMut(&str),
) -> Result<SandboxImage, DockerError> {
    let started = Instant::now();
    if is_sandbox_image(docker, image).await? {
        return Ok(SandboxImage {
            tag: image.to_string(),
            built: false,
            elapsed: started.elapsed(),
        });
    }
    let binary = sandboxd_binary(sandboxd, image)?;
    ensure_sandbox_image(docker, image, &binary, progress).await
}

/// Inspects an image the engine has; a missing one is [`DockerError::ImageMissing`] (no
/// registry is asked).
async fn inspect_local(
    docker: &Docker,
    image: &str,
) -> Result<bollard::models::ImageInspect, DockerError> {
    match docker.inspect_image(image).await {
        Ok(inspect) => Ok(inspect),
        Err(e) if is_not_found(&e) => Err(DockerError::ImageMissing {
            image: image.to_string(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Whether the engine has `image` (no registry is asked).
pub(crate) async fn exists(docker: &Docker, image: &str) -> Result<bool, DockerError> {
    match inspect_local(docker, image).await {
        Ok(_) => Ok(true),
        Err(DockerError::ImageMissing { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// When `image` was made and its size; [`DockerError::ImageMissing`] when the engine lacks it.
pub(crate) async fn describe(
    docker: &Docker,
    image: &str,
) -> Result<protocol::runtime_api::ImageInfo, DockerError> {
    let inspect = inspect_local(docker, image).await?;
    Ok(protocol::runtime_api::ImageInfo {
        upload_time: inspect.created.map(|d| d.to_string()).unwrap_or_default(),
        image_size_bytes: inspect.size.unwrap_or_default(),
    })
}

/// Gives the image `source` the name `name` (`REPOSITORY[:TAG]`, default tag `latest`).
pub(crate) async fn tag(docker: &Docker, source: &str, name: &str) -> Result<(), DockerError> {
    let (repo, tag) = split_name(name);
    let options = bollard::query_parameters::TagImageOptionsBuilder::default()
        .repo(repo)
        .tag(tag)
        .build();
    docker.tag_image(source, Some(options)).await?;
    Ok(())
}

/// `REPOSITORY[:TAG]` split, with `latest` for no tag; a registry's `host:port/` is not a tag.
pub(crate) fn split_name(name: &str) -> (&str, &str) {
    match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (name, "latest"),
    }
}

/// Whether `image` already carries sandboxd (it was made by [`ensure_sandbox_image`]).
pub async fn is_sandbox_image(docker: &Docker, image: &str) -> Result<bool, DockerError> {
    Ok(inspect_local(docker, image)
        .await?
        .config
        .and_then(|c| c.labels)
        .is_some_and(|l| l.contains_key(labels::SANDBOXD_VERSION)))
}

/// Makes `base` a sandbox image with the sandboxd at `sandboxd`, or finds the one made
/// before (a build is logged). `progress` receives each line the build prints.
pub async fn ensure_sandbox_image(
    docker: &Docker,
    base: &str,
    sandboxd: &Path,
    mut progress: impl FnMut(&str),
) -> Result<SandboxImage, DockerError> {
    let started = Instant::now();
    let inspect = inspect_local(docker, base).await?;
    let base_id = inspect.id.unwrap_or_default();
    let base_user = inspect.config.and_then(|c| c.user).unwrap_or_default();
    let binary = tokio::fs::read(sandboxd)
        .await
        .map_err(|source| DockerError::SandboxdBinary {
            path: sandboxd.to_path_buf(),
            source,
        })?;
    let version = env!("CARGO_PKG_VERSION");
    let script = sandbox_script();
    let user = needs_root(&base_user).then_some("root");
    let digest = hex(&Sha256::new()
        .chain_update(b"sandbox layer v2\0")
        .chain_update(base_id.as_bytes())
        .chain_update(&binary)
        .chain_update(script.as_bytes())
        .chain_update(SUDO_SHIM.as_bytes())
        .chain_update(user.unwrap_or_default().as_bytes())
        .finalize()[..8]);
    let tag = format!("{REPOSITORY}:{version}-{digest}");
    if docker.inspect_image(&tag).await.is_ok() {
        return Ok(SandboxImage {
            tag,
            built: false,
            elapsed: started.elapsed(),
        });
    }
    progress(&format!("adding sandboxd to {base} as {tag}"));
    let files = [
        // Relative to `/`, where the layer is unpacked.
        ContextFile::new(SANDBOXD_PATH.trim_start_matches('/'), &binary, 0o755),
        ContextFile::new(
            SUDO_SHIM_PATH.trim_start_matches('/'),
            SUDO_SHIM.as_bytes(),
            0o755,
        ),
    ];
    let layer = Layer {
        files: &files,
        script: &script,
        labels: &[
            (labels::SANDBOXD_VERSION, version),
            (labels::BASE_IMAGE, base),
        ],
        user,
    };
    layer::commit(docker, base, split_name(&tag), &layer).await?;
    let elapsed = started.elapsed();
    tracing::info!(%tag, secs = elapsed.as_secs_f64(), "built sandbox image");
    Ok(SandboxImage {
        tag,
        built: true,
        elapsed,
    })
}

/// Where the sudo shim goes: ahead of the real sudo on every PATH, `secure_path` included.
const SUDO_SHIM_PATH: &str = "/usr/local/bin/sudo";

/// `sudo` in a sandbox whose policy forbids it fails with a message that says so and names
/// the setting, instead of sudo's own "no new privileges flag is set". Where sudo is allowed
/// (no-new-privileges off), and for root (which needs no privilege escalation), it is sudo.
const SUDO_SHIM: &str = r#"#!/bin/sh
# Installed by agentd in front of /usr/bin/sudo (see agentd/src/runtime/docker/image.rs).
if [ "$(id -u)" != 0 ] && grep -qs '^NoNewPrivs:[[:space:]]*1' /proc/self/status; then
  echo "sudo: not allowed in this sandbox: the operator runs it without privilege escalation (sudo policy: agentd --sudo or [docker] sudo; agentd serve --sudo, [serve] sudo or sudo_keys)" >&2
  exit 1
fi
if [ ! -x /usr/bin/sudo ]; then
  echo "sudo: not installed in this sandbox's image" >&2
  exit 127
fi
exec /usr/bin/sudo "$@"
"#;

/// Whether a base that runs as `base_user` must be made to run as root (sandboxd starts as
/// root and drops to the sandbox user).
fn needs_root(base_user: &str) -> bool {
    !matches!(base_user, "" | "root" | "0" | "0:0" | "root:root")
}

/// The sandbox layer's script, after sandboxd and the sudo shim are in place. The base may lack
/// our user: add `openhands` (uid 1000) where missing, with sudo where the base has it; make
/// the workspace; check that sandboxd runs there.
fn sandbox_script() -> String {
    format!(
        r#"set -e
if ! id -u {SANDBOX_USER} >/dev/null 2>&1; then
  if command -v useradd >/dev/null 2>&1; then useradd -m -u {SANDBOX_UID} -U -s /bin/bash {SANDBOX_USER}
  else adduser -D -u {SANDBOX_UID} -s /bin/bash {SANDBOX_USER}; fi
fi
if [ -d /etc/sudoers.d ] && [ ! -e /etc/sudoers.d/{SANDBOX_USER} ]; then
  echo '{SANDBOX_USER} ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/{SANDBOX_USER}; chmod 0440 /etc/sudoers.d/{SANDBOX_USER}
fi
mkdir -p {WORKSPACE}; chown {SANDBOX_UID}:{SANDBOX_UID} {WORKSPACE}
{SANDBOXD_PATH} --version >/dev/null
"#
    )
}

/// The sandbox image `image` with its sandbox user renumbered to `user` (home and workspace
/// handed over), built once per image and user and reused: a bind-mounted workspace then
/// belongs to the same uid inside and outside. Needs `sed` and `chown` in the image, which
/// every image with bash has; the password files are edited directly, since busybox images
/// lack `usermod`.
pub(crate) async fn ensure_user_image(
    docker: &Docker,
    image: &str,
    user: SandboxUser,
) -> Result<String, DockerError> {
    let inspect = inspect_local(docker, image).await?;
    let id = inspect.id.unwrap_or_default();
    let short = id.trim_start_matches("sha256:").get(..12).unwrap_or("0");
    let tag = format!("{REPOSITORY}:user-{short}-{}-{}", user.uid, user.gid);
    if docker.inspect_image(&tag).await.is_ok() {
        return Ok(tag);
    }
    let started = Instant::now();
    let script = user_script(user);
    let value = format!("{}:{}", user.uid, user.gid);
    let layer = Layer {
        files: &[],
        script: &script,
        labels: &[(labels::SANDBOX_USER, &value)],
        user: Some("root"),
    };
    layer::commit(docker, image, split_name(&tag), &layer).await?;
    tracing::info!(%tag, secs = started.elapsed().as_secs_f64(), "made the sandbox user {user}");
    Ok(tag)
}

/// The group takes the gid unless a group has it already (the user then joins that group), the
/// user takes uid and gid, its home, the workspace and the image's venv (the base image's
/// `$VIRTUAL_ENV`, where `pip install` goes) are handed over.
fn user_script(user: SandboxUser) -> String {
    let SandboxUser { uid, gid } = user;
    format!(
        r#"set -e
home=$(sed -n 's/^{SANDBOX_USER}:[^:]*:[^:]*:[^:]*:[^:]*:\([^:]*\):.*/\1/p' /etc/passwd)
[ -n "$home" ] || {{ echo "the image has no user {SANDBOX_USER}" >&2; exit 1; }}
if ! cut -d: -f3 /etc/group | grep -qx '{gid}'; then
  sed -i 's/^\({SANDBOX_USER}:[^:]*\):[0-9]*:/\1:{gid}:/' /etc/group
fi
sed -i 's/^\({SANDBOX_USER}:[^:]*\):[0-9]*:[0-9]*:/\1:{uid}:{gid}:/' /etc/passwd
chown -R {uid}:{gid} "$home" {WORKSPACE}
if [ -n "${{VIRTUAL_ENV:-}}" ] && [ -d "$VIRTUAL_ENV" ]; then chown -R {uid}:{gid} "$VIRTUAL_ENV"; fi
"#
    )
}

/// Builds the image `tag` from an in-memory context (which holds a `Dockerfile`), with `labels`
/// on the result, passing each line the build prints to `progress`, and checks that the tag
/// exists afterwards. No registry is consulted: `FROM` must name a local image.
pub async fn build(
    docker: &Docker,
    tag: &str,
    context: &[ContextFile<'_>],
    labels: &HashMap<&str, &str>,
    mut progress: impl FnMut(&str),
) -> Result<(), DockerError> {
    let archive = pack(context)
        .map_err(|e| DockerError::Build(format!("cannot pack the build context: {e}")))?;
    let options = BuildImageOptionsBuilder::default()
        .t(tag)
        .rm(true)
        .forcerm(true)
        .labels(labels)
        .build();
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(archive.into())));
    let mut tail = Vec::new();
    while let Some(info) = stream.next().await {
        let info = info.map_err(|e| DockerError::Build(e.to_string()))?;
        if let Some(detail) = info.error_detail {
            let message = detail.message.unwrap_or_default();
            return Err(DockerError::Build(format!(
                "{message}\n{}",
                tail.join("\n")
            )));
        }
        for line in info.stream.iter().flat_map(|s| s.lines()) {
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            progress(line);
            tail.push(line.to_string());
            if tail.len() > 20 {
                tail.remove(0);
            }
        }
    }
    // A build that ends without an error but without the tag is still a failure.
    docker
        .inspect_image(tag)
        .await
        .map_err(|e| DockerError::Build(format!("{tag} was not created: {e}")))?;
    Ok(())
}

/// Imports a root filesystem tarball (`stream`, e.g. a file or stdin) as the image `tag`
/// (`repo:tag`), as `docker import` does; returns the new image's id.
pub async fn import_rootfs<S>(docker: &Docker, stream: S, tag: &str) -> Result<String, DockerError>
where
    S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
{
    let (repo, version) = split_name(tag);
    let options = CreateImageOptionsBuilder::default()
        .from_src("-")
        .repo(repo)
        .tag(version)
        .changes(vec!["CMD [\"/bin/bash\"]".to_string()])
        .build();
    let infos: Vec<_> = docker
        .create_image(Some(options), Some(bollard::body_try_stream(stream)), None)
        .try_collect()
        .await
        .map_err(|e| DockerError::Build(format!("import failed: {e}")))?;
    let id = infos
        .iter()
        .rev()
        .find_map(|i| i.status.clone())
        .unwrap_or_default();
    Ok(id)
}

mod secs {
    pub(crate) fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests;
