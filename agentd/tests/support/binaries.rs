//! What the Docker and service tests share: the binaries under test and the base image.

use std::path::PathBuf;
use std::process::Command;

use agentd::docker::DEFAULT_BASE_IMAGE;

/// The base image; `AGENTD_TEST_BASE` overrides.
pub fn base_image() -> String {
    testkit::base_image(DEFAULT_BASE_IMAGE)
}

/// The sandboxd put into images: `AGENTD_SANDBOXD_BIN` (CI: the static build), else this
/// workspace's debug build.
pub fn sandboxd_binary() -> PathBuf {
    testkit::sandboxd_binary("debug")
}

/// The agentd binary under test.
pub fn agentd() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
    command.env("AGENTD_SANDBOXD_BIN", sandboxd_binary());
    command
}
