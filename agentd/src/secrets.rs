//! Secrets: values the agent may use in the sandbox (custom secrets, git tokens) that nothing
//! agentd writes or sends may hold in clear.
//!
//! A [`Secret`] has a name (the environment variable it is exported as in the sandbox's shell),
//! a value and a description; the agent is told names and descriptions only. A [`SecretMask`]
//! replaces every occurrence of every secret value with [`SECRET_HIDDEN`], in plain text and in
//! JSON at any depth (strings in objects *and* lists, and object keys; the reference skips
//! lists). Each path out of agentd masks in one place it always passes through: the event
//! stream before an event is stored or delivered (so `events.jsonl`, the controller, the agent's
//! view and the live display), `State::save` (`state.json`), `trajectory::save`, the LLM client
//! where the request body is made (the request sent, `--dump-requests`) and where a completion
//! log is written, and the log writer of the CLI ([`LogMask`]).

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use protocol::Event;
use serde_json::Value;

/// What stands in for a secret value (the reference's text).
pub const SECRET_HIDDEN: &str = "<secret_hidden>";

/// Shorter values are refused: masking them would hide ordinary text and could not be told
/// from it.
pub const MIN_SECRET_CHARS: usize = 4;

/// One secret. Its `Debug` form never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// The environment variable it is exported as in the sandbox (`[A-Za-z_][A-Za-z0-9_]*`).
    pub name: String,
    /// The value.
    pub value: String,
    /// What it is for, as the agent is told.
    pub description: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// A secret that cannot be used. Retrying cannot help: fix the settings or the environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The name is not an environment variable's name.
    #[error(
        "secret {0:?}: the name must be an environment variable's name (letters, digits, _; not starting with a digit)"
    )]
    BadName(String),
    /// Neither a value nor a variable to read it from, or both.
    #[error("secret {0}: give exactly one of `value` and `env`")]
    NoSource(String),
    /// The variable to read it from is not set (or not UTF-8).
    #[error("secret {name}: the environment variable {variable} is not set")]
    Unset {
        /// The secret.
        name: String,
        /// The variable.
        variable: String,
    },
    /// The value is too short to be masked (see [`MIN_SECRET_CHARS`]).
    #[error(
        "secret {0}: the value is shorter than {MIN_SECRET_CHARS} characters, too short to be masked in logs and events"
    )]
    TooShort(String),
}

/// `[secrets.NAME]` in the settings file: the value given, or read from agentd's environment.
///
/// ```toml
/// [secrets.STAGING_TOKEN]
/// env = "MY_STAGING_TOKEN"      # or: value = "..."
/// description = "API token of the staging server"
/// ```
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretSetting {
    /// The value itself.
    pub value: Option<String>,
    /// The environment variable of agentd to read the value from.
    pub env: Option<String>,
    /// What it is for (told to the agent).
    #[serde(default)]
    pub description: String,
}

impl Secret {
    /// The secret `name` of a settings entry; `env` looks up agentd's environment.
    pub fn from_setting(
        name: &str,
        setting: &SecretSetting,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Secret, SecretError> {
        let value = match (&setting.value, &setting.env) {
            (Some(value), None) => value.clone(),
            (None, Some(variable)) => env(variable).ok_or_else(|| SecretError::Unset {
                name: name.to_string(),
                variable: variable.clone(),
            })?,
            _ => return Err(SecretError::NoSource(name.to_string())),
        };
        Secret::new(name, value, &setting.description)
    }

    /// A checked secret.
    pub fn new(name: &str, value: String, description: &str) -> Result<Secret, SecretError> {
        if !is_variable_name(name) {
            return Err(SecretError::BadName(name.to_string()));
        }
        if value.chars().count() < MIN_SECRET_CHARS {
            return Err(SecretError::TooShort(name.to_string()));
        }
        Ok(Secret {
            name: name.to_string(),
            value,
            description: description.to_string(),
        })
    }
}

/// Whether `name` can be an environment variable's name in bash.
pub(crate) fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An event that would not decode once its secrets were masked (a secret equal to one of the
/// protocol's own words). Retrying cannot help; such a secret cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("an event could not be recorded with its secrets masked: {0}")]
pub struct MaskError(String);

/// Replaces secret values with [`SECRET_HIDDEN`]; cheap to clone; the default masks nothing.
#[derive(Clone, Default)]
pub struct SecretMask {
    /// Longest first, so that a secret containing another is hidden whole.
    values: Arc<[String]>,
}

impl std::fmt::Debug for SecretMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretMask({} values)", self.values.len())
    }
}

/// The keys of an event's top level that are never masked: its envelope and type tags.
const ENVELOPE: [&str; 6] = [
    "id",
    "timestamp",
    "source",
    "cause",
    "action",
    "observation",
];

impl SecretMask {
    /// A mask of `secrets`' values.
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> SecretMask {
        let mut values: Vec<String> = secrets
            .into_iter()
            .map(|s| s.value.clone())
            .filter(|v| !v.is_empty())
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        SecretMask {
            values: values.into(),
        }
    }

    /// Whether it masks nothing.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret value replaced.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for value in self.values.iter() {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), SECRET_HIDDEN));
            }
        }
        out
    }

    /// Masks every string in `value`, at any depth, object keys included.
    pub fn mask_json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(text) => {
                if let Cow::Owned(masked) = self.mask(text) {
                    *text = masked;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask_json(v)),
            Value::Object(map) => self.mask_object(map, &[]),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn mask_object(&self, map: &mut serde_json::Map<String, Value>, keep: &[&str]) {
        let masked_keys = map.keys().any(|k| matches!(self.mask(k), Cow::Owned(_)));
        if masked_keys {
            let entries = std::mem::take(map);
            for (key, value) in entries {
                map.insert(self.mask(&key).into_owned(), value);
            }
        }
        for (key, value) in map.iter_mut() {
            if !keep.contains(&key.as_str()) {
                self.mask_json(value);
            }
        }
    }

    /// `event` with every secret value masked, except in its envelope (ids, time, source,
    /// cause) and type tags.
    pub(crate) fn mask_event(&self, event: Event) -> Result<Event, MaskError> {
        if self.is_empty() {
            return Ok(event);
        }
        let mut json = serde_json::to_value(&event).map_err(|e| MaskError(e.to_string()))?;
        let Value::Object(map) = &mut json else {
            return Err(MaskError("an event is not a JSON object".to_string()));
        };
        self.mask_object(map, &ENVELOPE);
        serde_json::from_value(json).map_err(|e| MaskError(e.to_string()))
    }
}

/// The mask of agentd's own log lines, settable once the secrets are known (the log writer is
/// made before the settings are read). Its writer masks each line before it reaches stderr.
#[derive(Debug, Clone, Default)]
pub struct LogMask {
    mask: Arc<RwLock<SecretMask>>,
}

impl LogMask {
    /// Masks `mask`'s values from now on.
    pub fn set(&self, mask: SecretMask) {
        *self
            .mask
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = mask;
    }

    /// `text` with the secret values masked.
    pub fn mask(&self, text: &str) -> String {
        self.current().mask(text).into_owned()
    }

    fn current(&self) -> SecretMask {
        self.mask
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogMask {
    type Writer = MaskedStderr;

    fn make_writer(&'a self) -> MaskedStderr {
        MaskedStderr {
            mask: self.current(),
        }
    }
}

/// Standard error, masked: one formatted log line per write.
#[derive(Debug)]
pub struct MaskedStderr {
    mask: SecretMask,
}

impl std::io::Write for MaskedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut stderr = std::io::stderr().lock();
        match std::str::from_utf8(buf) {
            Ok(text) if !self.mask.is_empty() => {
                stderr.write_all(self.mask.mask(text).as_bytes())?;
            }
            _ => stderr.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests;
