//! Files held in memory, packed as a tar archive for the engine: a build context (with its
//! `Dockerfile`), or the files of a layer ([`super::layer`]) unpacked at `/`.

/// A file of a build context or of a layer.
#[derive(Debug, Clone, Copy)]
pub struct ContextFile<'a> {
    name: &'a str,
    data: &'a [u8],
    mode: u32,
}

impl<'a> ContextFile<'a> {
    /// A file `name` (a relative path: in a layer, relative to `/`) with these contents and
    /// permission bits.
    pub fn new(name: &'a str, data: &'a [u8], mode: u32) -> ContextFile<'a> {
        ContextFile { name, data, mode }
    }
}

/// The tar archive of `files`, each owned by root (uid and gid 0) with its mode and a zero
/// mtime. Missing parent directories are not listed: the engine makes them (`0755`, root's).
pub(crate) fn pack(files: &[ContextFile<'_>]) -> std::io::Result<Vec<u8>> {
    let size = files.iter().map(|f| f.data.len() + 1024).sum();
    let mut tar = tar::Builder::new(Vec::with_capacity(size));
    for file in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(file.data.len() as u64);
        header.set_mode(file.mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, file.name, file.data)?;
    }
    tar.into_inner()
}

#[cfg(test)]
mod tests;
