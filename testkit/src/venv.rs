//! Cached Python virtual environments made from PyPI on first use (the MCP SDK's, the
//! Kubernetes schemas'): `python3 -m venv`, then `pip install -r python/FILE` (every package
//! pinned), shared by every test (and test binary) of the machine. Nothing is skipped when one
//! cannot be made: the test that asked fails with pip's output.
//!
//! A venv is its override variable's directory if set, else `${XDG_CACHE_HOME:-$HOME/.cache}/
//! agentd/NAME-venv-HASH` (`HASH` of the requirements, so a change makes a new one). It is
//! built in a temporary directory beside it and renamed into place (pip is then run as
//! `python -m pip`: the scripts' `#!` lines name the old place), under a lock file, so that
//! tests starting together build it once and never see half of it.

use std::path::{Path, PathBuf};
use std::process::Command;

use nix::fcntl::{Flock, FlockArg};

/// One cached venv.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Venv {
    /// What it is for, in its directory's name (`mcp`, `k8s`).
    pub(crate) name: &'static str,
    /// The variable that names its directory instead.
    pub(crate) override_var: &'static str,
    /// Its requirements file in this crate's `python/` directory...
    pub(crate) requirements_file: &'static str,
    /// ... and that file's text (for the hash).
    pub(crate) requirements: &'static str,
    /// pip's further arguments (`--no-deps` for a file that pins everything).
    pub(crate) pip_args: &'static [&'static str],
}

impl Venv {
    /// Its directory.
    pub(crate) fn dir(&self) -> PathBuf {
        if let Some(dir) = std::env::var_os(self.override_var) {
            return PathBuf::from(dir);
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        // FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
        let hash = self
            .requirements
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        cache
            .join("agentd")
            .join(format!("{}-venv-{hash:016x}", self.name))
    }

    /// Its Python interpreter, the venv made if `ready` does not hold of it. Panics with pip's
    /// output when it cannot be made (no `python3`, no `venv` module, no PyPI).
    pub(crate) fn python(&self, ready: impl Fn(&Path) -> bool) -> PathBuf {
        let venv = self.dir();
        let python = venv.join("bin/python");
        if ready(&python) {
            return python;
        }
        let parent = venv.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        let lock_path = beside(&venv, "lock");
        let lock_file = std::fs::File::create(&lock_path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", lock_path.display()));
        let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
            .unwrap_or_else(|(_, e)| panic!("cannot lock {}: {e}", lock_path.display()));
        if ready(&python) {
            return python;
        }
        let building = beside(&venv, &format!("building-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&building);
        run(Command::new("python3").args(["-m", "venv"]).arg(&building));
        run(Command::new(building.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                // A registry that stops answering fails the install instead of hanging it.
                "--timeout",
                "60",
            ])
            .args(self.pip_args)
            .arg("--requirement")
            .arg(crate::python_mcp::script(self.requirements_file)));
        let _ = std::fs::remove_dir_all(&venv);
        std::fs::rename(&building, &venv).unwrap_or_else(|e| {
            panic!(
                "cannot move {} to {}: {e}",
                building.display(),
                venv.display()
            )
        });
        assert!(
            ready(&python),
            "{} is not what {} asks for after pip install",
            venv.display(),
            self.requirements_file
        );
        python
    }
}

/// `path` with `.suffix` added to its name.
pub(crate) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Runs `command`, panicking with its output when it fails.
pub(crate) fn run(command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
