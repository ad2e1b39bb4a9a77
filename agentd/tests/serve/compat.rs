//! OpenHands' own `RemoteRuntime` (openhands-ai 0.62.0) against `agentd serve`, through
//! `scripts/compat/remote_runtime.sh`: connect, a bash command, a file edit, close. Needs a
//! Python 3.12 (pyenv) and PyPI; the venv is cached, so only the first run installs. Without a
//! Python 3.12 the check is skipped and says so, unless `AGENTD_REQUIRE_COMPAT` is set (CI sets
//! it): then that is a failure, so CI cannot pass without the check.

use std::process::Command;

#[test]
fn openhands_remote_runtime_drives_a_sandbox() {
    check_remote_runtime("");
}

/// The same check with every data-plane request through the front door
/// (`url` = the service's `/sandboxes/{runtime_id}`).
#[test]
fn openhands_remote_runtime_drives_a_sandbox_through_the_front_door() {
    check_remote_runtime("--front-door");
}

fn check_remote_runtime(serve_args: &str) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = repo.join("scripts/compat/remote_runtime.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("AGENTD_BIN", env!("CARGO_BIN_EXE_agentd"))
        .env("AGENTD_SANDBOXD_BIN", crate::common::sandboxd_binary())
        .env("AGENTD_IMAGE", crate::common::base_image())
        .env("AGENTD_SERVE_ARGS", serve_args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => {}
        Some(3) if std::env::var_os("AGENTD_REQUIRE_COMPAT").is_some() => {
            panic!("AGENTD_REQUIRE_COMPAT is set and there is no Python 3.12:\n{stderr}")
        }
        Some(3) => {
            eprintln!(
                "SKIPPED: no Python 3.12 on this machine (pyenv versions/3.12.*, or PYTHON312):\n{stderr}"
            );
        }
        other => {
            panic!("the OpenHands RemoteRuntime check failed ({other:?}):\n{stdout}\n{stderr}")
        }
    }
}
