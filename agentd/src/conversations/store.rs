//! `conversation.json`: what a conversation was created with, and whose it is. Written once
//! at creation (atomically: a temporary file renamed into place); the session's own files
//! (`events.jsonl`, `state.json`) hold everything that changes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use protocol::conversation::LlmSettings;

use super::ServerError;

/// The file in a conversation's directory.
pub(super) const META_FILE: &str = "conversation.json";
/// The conversation's host workspace, in its directory.
pub(super) const WORKSPACE_DIR: &str = "workspace";

/// What a conversation was created with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Meta {
    pub(super) id: String,
    pub(super) title: String,
    /// The fingerprint of the key that created it (`serve::auth::Caller`).
    pub(super) owner: String,
    pub(super) created_at: String,
    pub(super) task: String,
    pub(super) agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) llm: Option<LlmSettings>,
    /// `local`, `docker` or `remote`.
    pub(super) runtime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) branch: Option<String>,
    pub(super) confirmation_mode: bool,
    pub(super) max_iterations: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) max_budget: Option<f64>,
    #[serde(default)]
    pub(super) conversation_instructions: String,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ServerError + '_ {
    move |source| ServerError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Meta {
    /// Writes `dir/conversation.json`.
    pub(super) fn save(&self, dir: &Path) -> Result<(), ServerError> {
        let path = dir.join(META_FILE);
        let tmp = dir.join(format!("{META_FILE}.tmp"));
        let json = serde_json::to_vec_pretty(self).map_err(|e| ServerError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        std::fs::write(&tmp, json).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))
    }

    /// Reads `dir/conversation.json`.
    pub(super) fn load(dir: &Path) -> Result<Meta, ServerError> {
        let path = dir.join(META_FILE);
        let text = std::fs::read(&path).map_err(io(&path))?;
        serde_json::from_slice(&text).map_err(|e| ServerError::Io {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })
    }
}

/// The directories of the conversations under `root` that have a `conversation.json`.
pub(super) fn list(root: &Path) -> Result<Vec<PathBuf>, ServerError> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(root)(e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let path = entry.map_err(io(root))?.path();
        if path.join(META_FILE).is_file() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Whether `id` is a conversation id (32 lowercase hex digits): anything else in a URL is
/// refused before it comes near a path.
pub(super) fn is_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A title from the task: its first line, at most 60 characters.
pub(super) fn title_of(task: &str) -> String {
    let line = task.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim();
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
