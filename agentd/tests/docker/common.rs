//! Shared set-up for the Docker tests: the sandbox image (built once per run from the base that
//! `images/base/build.sh` imports) and sandboxes that are removed even when a test fails.

use std::process::Command;

use agentd::docker::Owner;
use agentd::docker::ensure_sandbox_image;
use agentd::docker::{DockerHost, SandboxConfig, SandboxContainer};
use client::{ObservationExt, SandboxClient};
use tokio::sync::OnceCell;

#[path = "../support/binaries.rs"]
mod binaries;

pub use binaries::{Cleanup, agentd, base_image, sandboxd_binary};

static IMAGE: OnceCell<String> = OnceCell::const_new();

/// The sandbox image of this run (built on first use, reused by tag afterwards).
pub async fn sandbox_image() -> String {
    IMAGE
        .get_or_init(|| async {
            let docker = DockerHost::connect().expect("Docker engine");
            ensure_sandbox_image(docker.docker(), &base_image(), &sandboxd_binary(), |_| {})
                .await
                .unwrap_or_else(|e| panic!("cannot make the sandbox image: {e}"))
                .tag
        })
        .await
        .clone()
}

/// A config for the test image with `edit` applied.
pub async fn config(edit: impl FnOnce(&mut SandboxConfig)) -> SandboxConfig {
    let mut config = SandboxConfig {
        image: sandbox_image().await,
        plugins: Vec::new(),
        ..SandboxConfig::default()
    };
    edit(&mut config);
    config
}

/// A running sandbox, removed on drop.
pub struct Running {
    pub sandbox: SandboxContainer,
    pub client: SandboxClient,
    _cleanup: Cleanup,
}

impl Running {
    /// Brings a sandbox up, owned by the test process so that a concurrent `gc` leaves it be.
    pub async fn up(config: &SandboxConfig) -> Running {
        let docker = DockerHost::connect().expect("Docker engine");
        let sandbox = docker
            .up(config, Owner::current().as_ref())
            .await
            .unwrap_or_else(|e| panic!("sandbox did not come up: {e}"));
        let client = sandbox.client().expect("client");
        Running {
            _cleanup: Cleanup(vec![sandbox.id.clone()]),
            sandbox,
            client,
        }
    }

    /// A sandbox of the test image with `edit` applied to its config ([`config`]), up.
    pub async fn with(edit: impl FnOnce(&mut SandboxConfig)) -> Running {
        Running::up(&config(edit).await).await
    }

    /// Runs `command` and returns (exit code, output).
    pub async fn sh(&self, command: &str) -> (i64, String) {
        let obs = self.client.run(command, Some(60.0)).await.expect("run");
        (obs.exit_code().expect("a run observation"), obs.content)
    }

    /// Asserts that the sandbox survived whatever the test did: sandboxd answers `/alive` and
    /// its shell still runs a command.
    pub async fn assert_survived(&self) {
        self.client.alive().await.expect("sandboxd answers");
        let (code, out) = self.sh("echo still here").await;
        assert_eq!((code, out.trim()), (0, "still here"));
    }
}

/// Whether the engine knows a container with this id.
pub fn container_exists(id: &str) -> bool {
    Command::new("docker")
        .args(["inspect", "--type", "container", id])
        .output()
        .is_ok_and(|o| o.status.success())
}
