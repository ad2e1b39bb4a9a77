//! Files an [`Llm`](super::Llm) can leave behind: each request body exactly as sent
//! (`dump_requests_folder`: `000001.json`, `000002.json`, ... continuing after the files
//! already there), and each completed call with its response, cost and latency
//! (`log_completions_folder`: `<unix-µs>-<pid>-<seq>-<model>.json`, sortable by time and
//! unique across processes). Failing to write is logged, never an error of the call.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

/// Writes numbered request bodies into one folder.
#[derive(Debug)]
pub(crate) struct RequestDump {
    dir: PathBuf,
    next: AtomicU64,
}

impl RequestDump {
    /// Creates `dir` if needed; numbering continues after the highest `NNNNNN.json` in it.
    pub(crate) fn open(dir: &Path) -> std::io::Result<RequestDump> {
        std::fs::create_dir_all(dir)?;
        let mut highest = 0;
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name();
            let number = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(number) = number {
                highest = highest.max(number);
            }
        }
        Ok(RequestDump {
            dir: dir.to_path_buf(),
            next: AtomicU64::new(highest + 1),
        })
    }

    /// Writes `body` as the next numbered file.
    pub(crate) async fn write(&self, body: &[u8]) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{n:06}.json"));
        if let Err(error) = tokio::fs::write(&path, body).await {
            tracing::warn!(path = %path.display(), %error, "cannot dump the LLM request");
        }
    }
}

/// Writes one JSON file per completed call.
#[derive(Debug)]
pub(crate) struct CompletionLog {
    dir: PathBuf,
    next: AtomicU64,
}

impl CompletionLog {
    /// Creates `dir` if needed.
    pub(crate) fn open(dir: &Path) -> std::io::Result<CompletionLog> {
        std::fs::create_dir_all(dir)?;
        Ok(CompletionLog {
            dir: dir.to_path_buf(),
            next: AtomicU64::new(1),
        })
    }

    /// Writes `entry` for a call to `model` made at `unix_micros`.
    pub(crate) async fn write(&self, model: &str, unix_micros: u128, entry: &Value) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let model: String = model
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let name = format!(
            "{unix_micros:020}-{}-{n:06}-{model}.json",
            std::process::id()
        );
        let path = self.dir.join(name);
        let text = match serde_json::to_vec_pretty(entry) {
            Ok(text) => text,
            Err(error) => {
                tracing::warn!(%error, "cannot encode the completion log");
                return;
            }
        };
        if let Err(error) = tokio::fs::write(&path, text).await {
            tracing::warn!(path = %path.display(), %error, "cannot write the completion log");
        }
    }
}
