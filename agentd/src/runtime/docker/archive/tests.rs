//! Unit tests of `runtime/docker/archive.rs`.

use super::*;

#[test]
fn the_files_are_packed_owned_by_root_with_their_paths_and_modes() {
    let archive = pack(&[
        ContextFile::new("Dockerfile", b"FROM x\n", 0o644),
        ContextFile::new("opt/sandboxd/bin/sandboxd", b"\x7fELF", 0o755),
    ])
    .unwrap();
    let mut archive = tar::Archive::new(archive.as_slice());
    let entries: Vec<(String, u32, u64, u64)> = archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let h = e.header();
            (
                e.path().unwrap().display().to_string(),
                h.mode().unwrap(),
                h.uid().unwrap(),
                h.size().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            ("Dockerfile".to_string(), 0o644, 0, 7),
            ("opt/sandboxd/bin/sandboxd".to_string(), 0o755, 0, 4)
        ]
    );
}
