//! What the Docker, runtime and service tests share: the binaries under test, the base image,
//! and the removal of sandboxes whatever happens to a test.

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

/// Removes sandbox containers when a test ends, however it ends: as `agentd sandbox down` does
/// (the container, its network and firewall rules, its socket directory), then whatever of
/// them is still there (a container agentd does not manage) with `docker rm -f`. Blocking, with
/// the CLIs: drop cannot wait for async work. Quiet: what is already gone is no failure.
#[derive(Debug)]
pub struct Cleanup(pub Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let quiet = || std::process::Stdio::null();
        let _ = agentd()
            .args(["sandbox", "down"])
            .args(&self.0)
            .stdout(quiet())
            .stderr(quiet())
            .status();
        let _ = Command::new("docker")
            .args(["rm", "-f", "-v"])
            .args(&self.0)
            .stdout(quiet())
            .stderr(quiet())
            .status();
    }
}
