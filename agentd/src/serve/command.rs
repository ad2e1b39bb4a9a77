//! The caller's start command line and environment, mapped onto sandboxd's.
//!
//! OpenHands sends `<prefix> python -u -m openhands.runtime.action_execution_server PORT
//! --working-dir DIR [--plugins ...] --username U --user-id N [--browsergym-eval-env ...]
//! [--no-enable-browser]` (docs/protocol.md §1.1). The arguments after the module name are the reference
//! server's, which sandboxd accepts; the interpreter prefix is dropped, the port, listen address
//! and output directory are the service's. Flags other than the reference's are refused: they
//! could change how sandboxd listens or authenticates.

use std::collections::BTreeMap;

use crate::runtime::docker::SandboxUser;
use crate::runtime::docker::config::SANDBOX_USER;
use crate::runtime::sandboxd::WORKSPACE;

/// Flags that take one value.
const ONE_VALUE: &[&str] = &["--working-dir", "--username", "--user-id"];
/// Flags that take any number of values (up to the next flag).
const MANY_VALUES: &[&str] = &["--plugins", "--browsergym-eval-env"];
/// Flags without a value.
const NO_VALUE: &[&str] = &["--enable-browser", "--no-enable-browser"];

/// sandboxd's arguments for the caller's `command`, listening on `port` (the sandbox's
/// sandboxd port); `Err` says what cannot be used.
pub fn sandboxd_args(command: &[String], port: u16) -> Result<Vec<String>, String> {
    let rest: &[String] = if let Some(m) = command.iter().position(|a| a == "-m") {
        command.get(m + 2..).unwrap_or_default()
    } else if command
        .first()
        .is_some_and(|a| a.rsplit('/').next() == Some("sandboxd"))
    {
        &command[1..]
    } else {
        command
    };
    let mut args = vec![
        port.to_string(),
        "--host".to_string(),
        "0.0.0.0".to_string(),
        "--output-dir".to_string(),
        "/tmp/sandboxd-outputs".to_string(),
    ];
    let mut working_dir = false;
    let mut port_seen = false;
    let mut i = 0;
    while i < rest.len() {
        let arg = &rest[i];
        i += 1;
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        if !flag.starts_with("--") {
            if !port_seen && flag.parse::<u16>().is_ok() {
                // The caller's port (60000 from OpenHands): the service picks its own.
                port_seen = true;
                continue;
            }
            return Err(format!("unexpected argument {arg:?} in the start command"));
        }
        if ONE_VALUE.contains(&flag) {
            let value = match inline {
                Some(value) => value,
                None => {
                    let value = rest.get(i).ok_or_else(|| format!("{flag} needs a value"))?;
                    i += 1;
                    value.clone()
                }
            };
            working_dir |= flag == "--working-dir";
            args.push(flag.to_string());
            args.push(value);
        } else if MANY_VALUES.contains(&flag) {
            args.push(flag.to_string());
            args.extend(inline);
            while let Some(value) = rest.get(i).filter(|v| !v.starts_with("--")) {
                args.push(value.clone());
                i += 1;
            }
        } else if NO_VALUE.contains(&flag) && inline.is_none() {
            args.push(flag.to_string());
        } else {
            return Err(format!(
                "the start command's flag {flag} is not one of the reference server's (--working-dir, --plugins, --username, --user-id, --enable-browser, --no-enable-browser, --browsergym-eval-env)"
            ));
        }
    }
    if !working_dir {
        args.push("--working-dir".to_string());
        args.push(WORKSPACE.to_string());
    }
    Ok(args)
}

/// The user sandboxd's arguments (from [`sandboxd_args`]) ask for: `--username root` or
/// `--user-id 0` is root, `--user-id N` the sandbox user as uid and gid N, neither the image's
/// sandbox user (1000). `Err` for a name the images do not have: the service never runs a
/// sandbox as someone other than the one asked for.
pub(crate) fn requested_user(args: &[String]) -> Result<SandboxUser, String> {
    let value = |flag: &str| {
        args.windows(2)
            .rev()
            .find(|w| w[0] == flag)
            .map(|w| w[1].as_str())
    };
    let uid = match value("--user-id") {
        Some(text) => Some(
            text.parse::<u32>()
                .map_err(|_| format!("--user-id {text:?} is not a user id"))?,
        ),
        None => None,
    };
    match (value("--username"), uid) {
        (Some("root"), None | Some(0)) | (None, Some(0)) => Ok(SandboxUser::ROOT),
        (Some("root"), Some(uid)) => Err(format!(
            "--username root with --user-id {uid}: root is uid 0"
        )),
        (Some(name), Some(0)) if name == SANDBOX_USER => Err(format!(
            "--username {SANDBOX_USER} with --user-id 0: uid 0 is root (ask for --username root)"
        )),
        (None, None) => Ok(SandboxUser::default()),
        (Some(name), uid) if name == SANDBOX_USER => Ok(uid
            .map(|uid| SandboxUser { uid, gid: uid })
            .unwrap_or_default()),
        (None, Some(uid)) => Ok(SandboxUser { uid, gid: uid }),
        (Some(name), _) => Err(format!(
            "--username {name:?}: this service's sandboxes run as {SANDBOX_USER} (with any --user-id) or root"
        )),
    }
}

/// sandboxd's environment: the caller's, without sandboxd's own settings (`SANDBOXD_*`) and
/// with the session key the service made.
pub fn environment(
    caller: &BTreeMap<String, String>,
    session_api_key: &str,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = caller
        .iter()
        .filter(|(k, _)| !k.starts_with("SANDBOXD_") && k.as_str() != "SESSION_API_KEY")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.insert("SESSION_API_KEY".to_string(), session_api_key.to_string());
    env
}

#[cfg(test)]
mod tests;
