//! Unit tests of `runtime/docker/layer.rs`.

use super::*;

#[test]
fn the_layers_files_unpack_at_the_root_owned_by_root_with_their_modes() {
    let archive = pack(&[
        LayerFile {
            path: "/opt/sandboxd/bin/sandboxd",
            data: b"\x7fELF",
            mode: 0o755,
        },
        LayerFile {
            path: "/usr/local/bin/sudo",
            data: b"#!/bin/sh\n",
            mode: 0o755,
        },
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
            ("opt/sandboxd/bin/sandboxd".to_string(), 0o755, 0, 4),
            ("usr/local/bin/sudo".to_string(), 0o755, 0, 10)
        ]
    );
}
