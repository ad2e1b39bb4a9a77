//! A sandbox's disk: at most [`SandboxConfig::disk_bytes`] written, enforced one of two ways,
//! and never silently not at all.
//!
//! - **Storage quota.** Where the engine's storage driver can limit a container's writable
//!   layer (`HostConfig::storage_opt` `size`: overlay2 on xfs mounted with `pquota`, btrfs,
//!   zfs, devicemapper), that is the limit: the whole container, root included. Whether the
//!   driver can is found once per [`super::DockerHost`] by creating (not starting) a container
//!   with the option ([`probe`]).
//! - **A disk of its own.** Elsewhere (fuse-overlayfs, overlay2 on ext4, vfs...) the sandbox gets
//!   a sparse ext4 image of that size under [`DISK_ROOT`], loop-mounted on the host (`nosuid`,
//!   `nodev`), and the places its user can write are bind-mounted from it: the user's home,
//!   `/var/tmp`, `/workspace` when no workspace is mounted, and the paths the image names in
//!   its `dev.sandboxd.writable` label (the default image: `/opt/venv`). Each starts with the
//!   image's content there. The root file system is then read-only, so nothing else grows: a
//!   full disk is `ENOSPC` for the agent, never the host's disk. `/tmp` stays the sized tmpfs
//!   it always is. With `sudo` the root must stay writable (package installs), so the root is
//!   then *not* limited, and the report says so.
//!
//! Making a disk is on the path to a sandbox's first observation, so it is done once per
//! image, size, set of paths and owner: that first disk, formatted and filled (from a
//! per-image cache of tar files), is kept unmounted as a **template**
//! (`DISK_ROOT/.templates/IMAGE-ID/KEY.img`), and every sandbox's disk is a sparse copy of
//! it (only its data extents, some tens of MB, are copied; in the kernel), then mounted: tens
//! of milliseconds instead of a format and an unpack.
//!
//! Once the container has started it holds its own mounts of the disk, so the host's mount is
//! detached and the image file deleted at once ([`release`]): the disk lives exactly as long
//! as the container's mounts, however the container goes (`agentd sandbox down`, `docker rm
//! -f`, a crash), and nothing of it is left on the host to clean up. (A sandbox container is
//! never started twice.) [`sweep`] removes what an agentd that died while making a disk left,
//! and the templates and content of images the engine no longer has.
//! Loop-mounting needs root on the host (as the firewall does).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, DownloadFromContainerOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use sandbox_common::hex;
use sha2::{Digest, Sha256};

use super::inspect::is_not_found;
use super::labels;
use super::user::SandboxUser;
use super::{DockerError, host_command};
use crate::runtime::sandboxd::WORKSPACE;

/// Where the sandboxes' own disks live: `NAME.img` and its mount point `NAME/`, the per-image
/// content cache in [`CONTENT_DIR`] and the disk templates in [`TEMPLATES_DIR`].
pub(crate) const DISK_ROOT: &str = "/var/lib/sandboxd/disks";

/// The per-image content cache in [`DISK_ROOT`]: `IMAGE-ID/SLOT.tar`.
const CONTENT_DIR: &str = ".content";

/// The disk templates in [`DISK_ROOT`]: `IMAGE-ID/KEY.img`, and `IMAGE-ID/partial-…` while one
/// is being made.
const TEMPLATES_DIR: &str = ".templates";

/// The prefix of a template being made (its mount point, and its image with `.img`).
const PARTIAL_PREFIX: &str = "partial-";

/// The default size of a sandbox's disk.
pub(crate) const DEFAULT_DISK_BYTES: u64 = 10 << 30;

/// The smallest disk that holds an ext4 file system and the image's content.
pub(crate) const MIN_DISK_BYTES: u64 = 16 << 20;

/// The image label naming (space-separated) further paths the sandbox user writes.
pub(crate) const WRITABLE_LABEL: &str = "dev.sandboxd.writable";

/// Whether the engine can limit a container's writable layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StorageQuota {
    /// `storage_opt` `size` works.
    Supported,
    /// It does not; the engine said why.
    Unsupported(String),
}

/// How a sandbox's disk is limited: what [`super::SandboxContainer::disk`] reports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DiskLimit {
    /// Not limited: the configuration asked for no limit.
    Unlimited,
    /// The engine's storage quota limits the whole container.
    StorageQuota {
        /// The limit.
        bytes: u64,
    },
    /// A disk of the sandbox's own holds every path its user can write.
    OwnDisk {
        /// The disk's size.
        bytes: u64,
        /// The container paths on it.
        paths: Vec<String>,
        /// Whether the root file system is read-only (false with sudo: then it is not limited).
        read_only_root: bool,
        /// Why the storage quota could not be used.
        why: String,
    },
}

impl std::fmt::Display for DiskLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiskLimit::Unlimited => write!(f, "not limited (asked for no limit)"),
            DiskLimit::StorageQuota { bytes } => {
                write!(f, "{} (the storage driver's quota)", human(*bytes))
            }
            DiskLimit::OwnDisk {
                bytes,
                paths,
                read_only_root,
                why,
            } => {
                write!(f, "{} of its own for {}", human(*bytes), paths.join(", "))?;
                if *read_only_root {
                    write!(f, "; the root file system is read-only")?;
                } else {
                    write!(
                        f,
                        "; the root file system stays writable for sudo and is NOT limited"
                    )?;
                }
                write!(f, " (no storage quota: {why})")
            }
        }
    }
}

/// `bytes` as `10 GiB`, `512 MiB`, or bytes.
fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// What the container's configuration gets from its disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DiskMounts {
    /// `HostConfig::storage_opt` `size`, when the engine limits the writable layer.
    pub(crate) storage_size: Option<u64>,
    /// Bind mounts (`HOST:CONTAINER:rw`) of the disk's directories.
    pub(crate) binds: Vec<String>,
    /// Everything writable is on the disk: the root must be read-only.
    pub(crate) read_only_root: bool,
}

/// Why a sandbox's disk could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// A disk size that cannot work.
    #[error("a disk of {bytes} bytes is too small: at least {MIN_DISK_BYTES} bytes (16 MiB)")]
    TooSmall {
        /// What was asked for.
        bytes: u64,
    },
    /// A file or directory of the disk could not be made or read.
    #[error("sandbox disk: {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `mkfs.ext4` or `mount` failed (or is missing); retrying will not help until fixed.
    #[error(
        "sandbox disk: `{command}` failed: {output} (a disk of its own needs root on the host, e2fsprogs and loop devices; or give the sandbox no disk limit)"
    )]
    Command {
        /// The command line.
        command: String,
        /// Its exit status and stderr.
        output: String,
    },
}

/// Finds whether the engine limits a container's writable layer, by creating (never
/// starting) a container of `image` with a size and removing it.
pub(crate) async fn probe(docker: &Docker, image: &str) -> Result<StorageQuota, DockerError> {
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        entrypoint: Some(Vec::new()),
        cmd: Some(vec!["true".to_string()]),
        labels: Some(scratch_label()),
        host_config: Some(HostConfig {
            storage_opt: Some(HashMap::from([(
                "size".to_string(),
                MIN_DISK_BYTES.to_string(),
            )])),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    };
    match docker
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            body,
        )
        .await
    {
        Ok(created) => {
            remove_container(docker, &created.id).await;
            Ok(StorageQuota::Supported)
        }
        Err(e)
            if e.to_string().contains("storage-opt") || e.to_string().contains("storage opt") =>
        {
            let driver = docker
                .info()
                .await
                .ok()
                .and_then(|info| info.driver)
                .unwrap_or_else(|| "unknown".to_string());
            Ok(StorageQuota::Unsupported(format!(
                "the {driver} storage driver: {}",
                engine_message(&e)
            )))
        }
        Err(e) => Err(e.into()),
    }
}

/// The engine's own message in a bollard error.
fn engine_message(e: &bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::DockerResponseServerError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The label of the short-lived containers made here (never started): `gc` removes any left
/// behind by an agentd that died meanwhile.
fn scratch_label() -> HashMap<String, String> {
    HashMap::from([(labels::SCRATCH.to_string(), "true".to_string())])
}

async fn remove_container(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::default().force(true).build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => {}
        Err(e) if is_not_found(&e) => {}
        Err(e) => tracing::warn!(%id, error = %e, "cannot remove a probe container"),
    }
}

/// The container paths a sandbox user can write, to be put on its own disk: its home,
/// `/var/tmp`, the workspace unless one is mounted there, and the image's
/// [`WRITABLE_LABEL`] paths. Sorted, without duplicates; only absolute paths below `/`.
pub(crate) fn writable_paths(
    home: &str,
    workspace_mounted: bool,
    image_label: Option<&str>,
) -> Vec<String> {
    let mut paths = vec![home.to_string(), "/var/tmp".to_string()];
    if !workspace_mounted {
        paths.push(WORKSPACE.to_string());
    }
    paths.extend(
        image_label
            .unwrap_or_default()
            .split_ascii_whitespace()
            .map(str::to_string),
    );
    paths.retain(|p| is_plain_absolute(p));
    paths.sort();
    paths.dedup();
    paths
}

/// Whether `path` is absolute, not `/`, and has no empty, `.` or `..` components.
fn is_plain_absolute(path: &str) -> bool {
    path.strip_prefix('/').is_some_and(|rest| {
        rest.split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
    })
}

/// The directory on the disk for a container path: `/opt/venv` → `opt_venv`.
pub(crate) fn slot(path: &str) -> String {
    path.trim_start_matches('/').replace('/', "_")
}

/// A sandbox's own disk, made and mounted on the host. Dropping it detaches the host's mount
/// and deletes the image file ([`release`]), also when the `up` that made it fails or is
/// cancelled; a container started on it keeps its own mounts, and so the disk, until it ends.
#[derive(Debug)]
pub(crate) struct OwnDisk {
    dir: PathBuf,
}

impl OwnDisk {
    /// Its mount point on the host.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Drops it on a blocking thread (unmounting waits for the kernel).
    pub(crate) async fn release(self) {
        let _ = tokio::task::spawn_blocking(move || drop(self)).await;
    }
}

impl Drop for OwnDisk {
    fn drop(&mut self) {
        release(&self.dir);
    }
}

/// Makes a sandbox's own disk of `bytes` for `paths`, filled with `image`'s content there: a
/// copy of the template for them ([`template`]), mounted.
pub(crate) async fn make(
    docker: &Docker,
    name: &str,
    bytes: u64,
    image: &str,
    paths: &[String],
    owner: SandboxUser,
) -> Result<OwnDisk, DockerError> {
    if bytes < MIN_DISK_BYTES {
        return Err(DiskError::TooSmall { bytes }.into());
    }
    let root = Path::new(DISK_ROOT);
    if let Some(parent) = root.parent() {
        std::fs::create_dir_all(parent).map_err(|source| DiskError::Io {
            what: "cannot create",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    create_dir(root, 0o700)?;
    let template = template(docker, bytes, image, paths, owner).await?;
    let disk = OwnDisk {
        dir: root.join(name),
    };
    // On a blocking thread, which finishes even if this future is dropped: the disk is then
    // dropped with the thread's result, and released.
    tokio::task::spawn_blocking(move || {
        let img = disk.dir.with_extension("img");
        copy_sparse(&template, &img).map_err(|source| DiskError::Io {
            what: "cannot copy the disk template to",
            path: img.clone(),
            source,
        })?;
        mount(&img, &disk.dir)?;
        Ok::<OwnDisk, DiskError>(disk)
    })
    .await
    .map_err(|e| blocking_failed(root, e))?
    .map_err(DockerError::from)
}

/// The unmounted disk image, formatted and filled, that the disks of `bytes` for `paths`
/// owned by `owner` of `image` are copies of: made now unless it exists. Two agentds making
/// the same one at once each make their own and rename it into place; either is whole.
async fn template(
    docker: &Docker,
    bytes: u64,
    image: &str,
    paths: &[String],
    owner: SandboxUser,
) -> Result<PathBuf, DockerError> {
    let id = image_id(docker, image).await?;
    let dir = Path::new(DISK_ROOT).join(TEMPLATES_DIR).join(&id);
    let template = dir.join(format!("{}.img", template_key(bytes, paths, owner)));
    if template.is_file() {
        return Ok(template);
    }
    let contents = image_contents(docker, &id, image, paths).await?;
    create_dir(&Path::new(DISK_ROOT).join(TEMPLATES_DIR), 0o700)?;
    create_dir(&dir, 0o700)?;
    let suffix = sandbox_common::random_hex(6).map_err(|e| DockerError::Entropy(e.to_string()))?;
    let partial = OwnDisk {
        dir: dir.join(format!("{PARTIAL_PREFIX}{suffix}")),
    };
    let paths = paths.to_vec();
    let made = template.clone();
    tokio::task::spawn_blocking(move || {
        let img = partial.dir.with_extension("img");
        format(&img, bytes)?;
        mount(&img, &partial.dir)?;
        fill(&partial.dir, &paths, &contents, owner)?;
        // A whole, cleanly unmounted file system; dropping `partial` then removes its mount
        // point (and the image, had anything failed before the rename).
        run("umount", &[partial.dir.as_os_str()])?;
        std::fs::rename(&img, &made).map_err(|source| DiskError::Io {
            what: "cannot keep the disk template",
            path: made.clone(),
            source,
        })
    })
    .await
    .map_err(|e| blocking_failed(&dir, e))??;
    tracing::debug!(template = %template.display(), "made a sandbox disk template");
    Ok(template)
}

/// The name of the template of disks of `bytes` for `paths` owned by `owner`, in its image's
/// directory: a digest of all four (and of the layout's version, so that a change to how
/// disks are filled makes new ones).
fn template_key(bytes: u64, paths: &[String], owner: SandboxUser) -> String {
    let mut digest = Sha256::new()
        .chain_update(b"sandbox disk template v1\0")
        .chain_update(bytes.to_le_bytes())
        .chain_update(owner.uid.to_le_bytes())
        .chain_update(owner.gid.to_le_bytes());
    for path in paths {
        digest.update(path.as_bytes());
        digest.update(b"\0");
    }
    hex(&digest.finalize()[..12])
}

/// The error of a blocking thread that did not finish (it panicked, or the runtime is
/// shutting down).
fn blocking_failed(path: &Path, e: tokio::task::JoinError) -> DiskError {
    DiskError::Io {
        what: "making the disk failed",
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Copies `from` to a new file `to` of the same length with its holes kept: only the data
/// extents (`SEEK_DATA` to `SEEK_HOLE`) are copied, in the kernel. A file system without
/// hole reporting says the whole file is data; the copy is then whole, and only slower.
fn copy_sparse(from: &Path, to: &Path) -> std::io::Result<()> {
    use nix::unistd::{Whence, lseek};
    use std::io::{Read, Seek, SeekFrom};
    let mut source = std::fs::File::open(from)?;
    let length = i64::try_from(source.metadata()?.len()).map_err(std::io::Error::other)?;
    let mut copy = std::fs::File::create_new(to)?;
    copy.set_len(length.unsigned_abs())?;
    let mut offset = 0;
    while offset < length {
        let start = match lseek(&source, offset, Whence::SeekData) {
            Ok(start) => start,
            // No data after `offset`: the rest is a hole.
            Err(nix::errno::Errno::ENXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let end = lseek(&source, start, Whence::SeekHole)?;
        let extent = (end - start).unsigned_abs();
        source.seek(SeekFrom::Start(start.unsigned_abs()))?;
        copy.seek(SeekFrom::Start(start.unsigned_abs()))?;
        let copied = std::io::copy(&mut (&mut source).take(extent), &mut copy)?;
        if copied != extent {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{} shrank while it was copied", from.display()),
            ));
        }
        offset = end;
    }
    Ok(())
}

/// Creates the sparse image `img` of `bytes` and makes an ext4 file system in it.
fn format(img: &Path, bytes: u64) -> Result<(), DiskError> {
    let file = std::fs::File::create_new(img).map_err(|source| DiskError::Io {
        what: "cannot create the disk image",
        path: img.to_path_buf(),
        source,
    })?;
    file.set_len(bytes).map_err(|source| DiskError::Io {
        what: "cannot size the disk image",
        path: img.to_path_buf(),
        source,
    })?;
    drop(file);
    run(
        "mkfs.ext4",
        &[
            "-q".as_ref(),
            "-F".as_ref(),
            "-m".as_ref(),
            "0".as_ref(),
            // A scratch file system for one sandbox: no journal, half the overhead.
            "-O".as_ref(),
            "^has_journal".as_ref(),
            img.as_os_str(),
        ],
    )
}

/// Mounts the disk image `img` at a new directory `dir` (`nosuid`, `nodev`).
fn mount(img: &Path, dir: &Path) -> Result<(), DiskError> {
    create_dir(dir, 0o700)?;
    run(
        "mount",
        &[
            "-o".as_ref(),
            "loop,nosuid,nodev".as_ref(),
            img.as_os_str(),
            dir.as_os_str(),
        ],
    )
}

/// The binds of a disk made by [`make`] for `paths`.
pub(crate) fn binds(dir: &Path, paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .map(|path| format!("{}:{path}:rw", dir.join(slot(path)).display()))
        .collect()
}

/// Puts each path's image content (a tar whose first component is the path's last one) into
/// its slot on the mounted disk, owners and modes kept.
fn fill(
    dir: &Path,
    paths: &[String],
    contents: &HashMap<String, PathBuf>,
    owner: SandboxUser,
) -> Result<(), DiskError> {
    for path in paths {
        let target = dir.join(slot(path));
        let Some(tar) = contents.get(path) else {
            // Not in the image: an empty directory of the sandbox user's.
            create_dir(&target, 0o755)?;
            nix::unistd::chown(
                &target,
                Some(nix::unistd::Uid::from_raw(owner.uid)),
                Some(nix::unistd::Gid::from_raw(owner.gid)),
            )
            .map_err(|e| DiskError::Io {
                what: "cannot give the sandbox user",
                path: target.clone(),
                source: e.into(),
            })?;
            continue;
        };
        let stage = dir.join(format!(".stage-{}", slot(path)));
        create_dir(&stage, 0o700)?;
        let io = |what, source| DiskError::Io {
            what,
            path: tar.clone(),
            source,
        };
        let file = std::fs::File::open(tar).map_err(|e| io("cannot open the image content", e))?;
        let mut archive = tar::Archive::new(std::io::BufReader::new(file));
        archive.set_preserve_permissions(true);
        archive.set_preserve_ownerships(true);
        archive.set_preserve_mtime(true);
        archive
            .unpack(&stage)
            .map_err(|e| io("cannot unpack the image content", e))?;
        let base = Path::new(path)
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_default();
        std::fs::rename(stage.join(base), &target)
            .map_err(|e| io("the image content has no top directory", e))?;
        std::fs::remove_dir(&stage).map_err(|e| io("cannot tidy the disk", e))?;
    }
    Ok(())
}

/// The id of `image` without its `sha256:`: the name of its cache directories.
async fn image_id(docker: &Docker, image: &str) -> Result<String, DockerError> {
    let id = docker.inspect_image(image).await?.id.unwrap_or_default();
    Ok(id.trim_start_matches("sha256:").to_string())
}

/// The image's content at each path, as tar files cached per image id (`id`) under
/// `DISK_ROOT/.content/IMAGE-ID/SLOT.tar`: made once (from a created, never started,
/// container of the image), then reused. A path the image does not have is left out.
async fn image_contents(
    docker: &Docker,
    id: &str,
    image: &str,
    paths: &[String],
) -> Result<HashMap<String, PathBuf>, DockerError> {
    let cache = Path::new(DISK_ROOT).join(CONTENT_DIR).join(id);
    let mut found = HashMap::new();
    let mut missing = Vec::new();
    for path in paths {
        let file = cache.join(format!("{}.tar", slot(path)));
        let absent = cache.join(format!("{}.absent", slot(path)));
        if file.is_file() {
            found.insert(path.clone(), file);
        } else if !absent.exists() {
            missing.push(path.clone());
        }
    }
    if missing.is_empty() {
        return Ok(found);
    }
    create_dir(&Path::new(DISK_ROOT).join(CONTENT_DIR), 0o700)?;
    create_dir(&cache, 0o700)?;
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        entrypoint: Some(Vec::new()),
        cmd: Some(vec!["true".to_string()]),
        labels: Some(scratch_label()),
        ..ContainerCreateBody::default()
    };
    let suffix = sandbox_common::random_hex(6).map_err(|e| DockerError::Entropy(e.to_string()))?;
    let options = CreateContainerOptionsBuilder::default()
        .name(&format!("sandbox-content-{suffix}"))
        .build();
    let container = docker.create_container(Some(options), body).await?.id;
    let copied = async {
        for path in &missing {
            let file = cache.join(format!("{}.tar", slot(path)));
            match copy_out(docker, &container, path, &file).await {
                Ok(()) => {
                    found.insert(path.clone(), file);
                }
                Err(e) if is_not_found(&e) => {
                    let absent = cache.join(format!("{}.absent", slot(path)));
                    std::fs::write(&absent, b"").map_err(|source| DiskError::Io {
                        what: "cannot write the content cache",
                        path: absent.clone(),
                        source,
                    })?;
                }
                Err(e) => return Err(DockerError::from(e)),
            }
        }
        Ok(())
    };
    let result = copied.await;
    remove_container(docker, &container).await;
    result.map(|()| found)
}

/// Writes the archive of `path` in `container` to `file` (through a temporary file of this
/// call's own, renamed when whole, so that a cache entry is never partial, also when two
/// sandboxes of a new image fill the cache at once).
async fn copy_out(
    docker: &Docker,
    container: &str,
    path: &str,
    file: &Path,
) -> Result<(), bollard::errors::Error> {
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(path)
        .build();
    let mut stream = docker.download_from_container(container, Some(options));
    let partial = file.with_extension(format!("partial-{container}"));
    let io = |e: std::io::Error| bollard::errors::Error::IOError { err: e };
    let mut out = tokio::fs::File::create(&partial).await.map_err(io)?;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => out.write_all(&bytes).await.map_err(io)?,
            Err(e) => {
                drop(out);
                let _ = tokio::fs::remove_file(&partial).await;
                return Err(e);
            }
        }
    }
    out.flush().await.map_err(io)?;
    drop(out);
    tokio::fs::rename(&partial, file).await.map_err(io)
}

/// Detaches the host's mount of a sandbox's disk and deletes its image file (best effort,
/// logged). A container that has started keeps its own mounts, and with them the disk, until
/// it ends: the loop device holds the deleted file, and frees it then.
fn release(dir: &Path) {
    if is_mounted(dir)
        && let Err(e) = run("umount", &["-l".as_ref(), dir.as_os_str()])
    {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot unmount a sandbox disk");
        return;
    }
    for (path, result) in [
        (dir.to_path_buf(), std::fs::remove_dir(dir)),
        (
            dir.with_extension("img"),
            std::fs::remove_file(dir.with_extension("img")),
        ),
    ] {
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot delete a sandbox disk")
            }
        }
    }
}

/// How old a disk being made must be before [`sweep`] takes it for a leftover: another agentd
/// may be making one right now.
const SWEEP_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the scratch containers and releases the disks an agentd left behind while making
/// them (older than [`SWEEP_AGE`]; disks of no container in `live`), and the content cache
/// of images the engine no longer has.
pub(crate) async fn sweep(docker: &Docker, live: &[String]) -> Result<(), DockerError> {
    let options = bollard::query_parameters::ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&HashMap::from([(
            "label".to_string(),
            vec![format!("{}=true", labels::SCRATCH)],
        )]))
        .build();
    let now = chrono::Utc::now().timestamp();
    for container in docker.list_containers(Some(options)).await? {
        let old = container
            .created
            .is_some_and(|created| now - created > SWEEP_AGE.as_secs() as i64);
        if let (true, Some(id)) = (old, container.id) {
            remove_container(docker, &id).await;
        }
    }
    // The content of images the engine no longer has.
    let images: Vec<String> = docker
        .list_images(None::<bollard::query_parameters::ListImagesOptions>)
        .await?
        .into_iter()
        .map(|image| image.id.trim_start_matches("sha256:").to_string())
        .collect();
    let mut stale = Vec::new();
    for cache in [CONTENT_DIR, TEMPLATES_DIR] {
        let Ok(entries) = std::fs::read_dir(Path::new(DISK_ROOT).join(cache)) else {
            continue;
        };
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            if images.contains(&id) {
                stale.extend(partials(&entry.path(), SWEEP_AGE));
            } else {
                // A template being made has its mount point here: released first.
                let _ = tokio::task::spawn_blocking({
                    let dir = entry.path();
                    move || {
                        for partial in partials(&dir, std::time::Duration::ZERO) {
                            release(&partial);
                        }
                        let _ = std::fs::remove_dir_all(dir);
                    }
                })
                .await;
            }
        }
    }
    let Ok(entries) = std::fs::read_dir(DISK_ROOT) else {
        return Ok(());
    };
    let mut orphans = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let stem = name.strip_suffix(".img").unwrap_or(&name).to_string();
        let young = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < SWEEP_AGE));
        if !young && !live.contains(&stem) && !orphans.contains(&stem) {
            orphans.push(stem);
        }
    }
    let _ = tokio::task::spawn_blocking(move || {
        for stem in orphans {
            release(&Path::new(DISK_ROOT).join(stem));
        }
        for partial in stale {
            release(&partial);
        }
    })
    .await;
    Ok(())
}

/// The mount points of the templates being made in an image's template directory `dir` for
/// at least `age` (a template is made in seconds: an old one was left by an agentd that died
/// meanwhile).
fn partials(dir: &Path, age: std::time::Duration) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PARTIAL_PREFIX))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|elapsed| elapsed >= age))
        })
        // `partial-…` and `partial-….img`: one mount point.
        .map(|e| e.path().with_extension(""))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Whether something is mounted at `dir` (from `/proc/self/mountinfo`).
fn is_mounted(dir: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let dir = dir.to_string_lossy();
    info.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .any(|mount_point| mount_point == dir)
}

fn create_dir(dir: &Path, mode: u32) -> Result<(), DiskError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(source) => {
            return Err(DiskError::Io {
                what: "cannot create",
                path: dir.to_path_buf(),
                source,
            });
        }
    }
    // The umask may have taken bits away.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).map_err(|source| {
        DiskError::Io {
            what: "cannot set the mode of",
            path: dir.to_path_buf(),
            source,
        }
    })
}

/// Runs a short host command ([`host_command`]), and fails with its stderr unless it
/// succeeds. Blocking: call it from a blocking thread.
fn run(program: &str, args: &[&std::ffi::OsStr]) -> Result<(), DiskError> {
    let command_line = || {
        std::iter::once(program.to_string())
            .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let output = host_command::output(program, args).map_err(|e| DiskError::Command {
        command: command_line(),
        output: e.to_string(),
    })?;
    if output.status.success() {
        return Ok(());
    }
    Err(DiskError::Command {
        command: command_line(),
        output: format!("{}: {}", output.status, output.stderr),
    })
}

#[cfg(test)]
mod tests;
