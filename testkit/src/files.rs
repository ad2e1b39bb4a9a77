//! Reading what a test's subject wrote to disk.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The paths of the entries of `dir`, sorted; panics when it cannot be read.
pub fn sorted_paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
        .collect();
    paths.sort();
    paths
}

/// The JSON file at `path`; panics when it cannot be read or parsed.
pub fn read_json(path: &Path) -> Value {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
