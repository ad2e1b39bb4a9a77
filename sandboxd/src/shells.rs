//! The sandbox's bash shells: the `default` one (the reference's persistent session) and the
//! named ones a caller creates (`POST /shells`), each its own bash on its own PTY with its own
//! working directory, environment and history. `run` actions name the shell they run in.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use protocol::action::CmdRunArgs;
use protocol::api::{CreateShellRequest, ShellInfo};

use crate::bash::{BashShell, ShellConfig, ShellError};

/// The id of the main shell, the reference's persistent session.
pub(crate) const DEFAULT_SHELL: &str = "default";

/// Named shells a sandbox may have besides the default one.
pub(crate) const MAX_SHELLS: usize = 16;

/// A shell id that names no shell.
#[derive(Debug, thiserror::Error)]
#[error("no shell {0:?}")]
pub(crate) struct UnknownShell(pub(crate) String);

/// Why a shell was not created or closed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShellRefusal {
    /// The request is wrong (no retry helps).
    #[error("{0}")]
    Invalid(String),
    /// It conflicts with the shells there are (an id in use, the default shell, too many).
    #[error("{0}")]
    Conflict(String),
    /// There is no such shell.
    #[error(transparent)]
    Unknown(#[from] UnknownShell),
    /// bash did not start (a retry may help).
    #[error("the shell did not start: {0}")]
    Start(#[from] ShellError),
}

/// Every shell of the sandbox.
#[derive(Debug)]
pub(crate) struct Shells {
    config: Arc<ShellConfig>,
    working_dir: PathBuf,
    default: BashShell,
    named: Mutex<BTreeMap<String, BashShell>>,
}

impl Shells {
    /// The set with its `default` shell.
    pub(crate) fn new(config: Arc<ShellConfig>, working_dir: PathBuf, default: BashShell) -> Self {
        Shells {
            config,
            working_dir,
            default,
            named: Mutex::default(),
        }
    }

    fn named(&self) -> MutexGuard<'_, BTreeMap<String, BashShell>> {
        self.named.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The default shell.
    pub(crate) fn default_shell(&self) -> &BashShell {
        &self.default
    }

    /// The shell `id` names (`None`: the default one).
    pub(crate) fn get(&self, id: Option<&str>) -> Result<BashShell, UnknownShell> {
        match id {
            None | Some(DEFAULT_SHELL) => Ok(self.default.clone()),
            Some(id) => self
                .named()
                .get(id)
                .cloned()
                .ok_or_else(|| UnknownShell(id.to_owned())),
        }
    }

    /// Starts a named shell as `request` says.
    pub(crate) async fn create(
        &self,
        request: CreateShellRequest,
    ) -> Result<ShellInfo, ShellRefusal> {
        let id = match request.id {
            Some(id) => check_id(&id).map(|()| id)?,
            None => sandbox_common::random_hex(4)
                .map(|hex| format!("shell-{hex}"))
                .map_err(|e| ShellRefusal::Invalid(e.to_string()))?,
        };
        self.check_room(&id)?;
        for name in request.env.keys() {
            check_env_name(name)?;
        }
        let cwd = match &request.cwd {
            Some(dir) => self.working_dir.join(dir),
            None => self.working_dir.clone(),
        };
        if !cwd.is_dir() {
            return Err(ShellRefusal::Invalid(format!(
                "the working directory {} is not a directory",
                cwd.display()
            )));
        }
        let shell = BashShell::start(self.config.clone(), cwd).await?;
        if !request.env.is_empty() {
            let mut args = CmdRunArgs::new(crate::configure::export_command(&request.env));
            args.hidden = true;
            let obs = shell.run(args, Some(30.0), None).await;
            if crate::configure::exit_code(&obs) != Some(0) {
                return Err(ShellRefusal::Invalid(format!(
                    "the shell did not take the environment: {}",
                    obs.content.trim()
                )));
            }
        }
        // Checked again: another request may have taken the id or the last place meanwhile.
        let mut named = self.named();
        if named.contains_key(&id) || named.len() >= MAX_SHELLS {
            drop(named);
            self.check_room(&id)?;
            return Err(ShellRefusal::Conflict(format!("shell {id:?} exists")));
        }
        let info = describe(&id, &shell);
        named.insert(id, shell);
        Ok(info)
    }

    fn check_room(&self, id: &str) -> Result<(), ShellRefusal> {
        let named = self.named();
        if id == DEFAULT_SHELL || named.contains_key(id) {
            return Err(ShellRefusal::Conflict(format!("shell {id:?} exists")));
        }
        if named.len() >= MAX_SHELLS {
            return Err(ShellRefusal::Conflict(format!(
                "a sandbox has at most {MAX_SHELLS} named shells; close one first"
            )));
        }
        Ok(())
    }

    /// Every shell, the default one first.
    pub(crate) fn list(&self) -> Vec<ShellInfo> {
        let mut all = vec![describe(DEFAULT_SHELL, &self.default)];
        all.extend(self.named().iter().map(|(id, shell)| describe(id, shell)));
        all
    }

    /// Closes a named shell: its bash and everything it started are killed once its last
    /// request is answered.
    pub(crate) fn close(&self, id: &str) -> Result<(), ShellRefusal> {
        if id == DEFAULT_SHELL {
            return Err(ShellRefusal::Conflict(
                "the default shell cannot be closed".to_owned(),
            ));
        }
        match self.named().remove(id) {
            Some(_) => Ok(()),
            None => Err(UnknownShell(id.to_owned()).into()),
        }
    }

    /// The working directory of a shell, or the sandbox's when it has none yet.
    pub(crate) fn cwd(&self, shell: &BashShell) -> PathBuf {
        shell.cwd().unwrap_or_else(|| self.working_dir.clone())
    }
}

fn describe(id: &str, shell: &BashShell) -> ShellInfo {
    ShellInfo {
        id: id.to_owned(),
        cwd: shell.cwd().map(|d| d.to_string_lossy().into_owned()),
        running: shell.is_running(),
    }
}

/// 1 to 64 letters, digits, `-`, `_`, `.`.
pub(crate) fn check_id(id: &str) -> Result<(), ShellRefusal> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ShellRefusal::Invalid(format!(
            "a shell id is 1 to 64 letters, digits, '-', '_' and '.', not {id:?}"
        )))
    }
}

/// A shell variable's name.
pub(crate) fn check_env_name(name: &str) -> Result<(), ShellRefusal> {
    let mut bytes = name.bytes();
    let ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(ShellRefusal::Invalid(format!(
            "{name:?} is not a variable name"
        )))
    }
}
