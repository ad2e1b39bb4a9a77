//! Where agentd's tests and benchmarks find the sandboxd binary and the base image.

use std::path::PathBuf;

/// The sandboxd binary agentd's tests and benchmarks run or put into images:
/// `AGENTD_SANDBOXD_BIN` (CI: the static build), else `target/<build>/sandboxd` of this
/// workspace (`build`: `debug`, `release`, `x86_64-unknown-linux-gnu/release`, ...).
pub fn sandboxd_binary(build: &str) -> PathBuf {
    std::env::var_os("AGENTD_SANDBOXD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../target")
                .join(build)
                .join("sandboxd")
        })
}

/// The base image of the Docker tests and benchmarks: `AGENTD_TEST_BASE`, else `default`.
pub fn base_image(default: &str) -> String {
    std::env::var("AGENTD_TEST_BASE").unwrap_or_else(|_| default.to_string())
}
