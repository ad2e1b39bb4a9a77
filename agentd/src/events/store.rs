//! The on-disk form of a stream: `events.jsonl`, one event per line, only ever appended.
//!
//! Each event is written with one `write` of the whole line before anyone is told about it, so
//! a killed agentd loses nothing it announced (the page cache outlives the process; surviving a
//! power cut would need an fsync per event, which this store does not pay for). A line without
//! its newline, or that does not parse, at the very end is a torn write: it is cut off when the
//! stream is opened. Anything wrong before the end is corruption and an error.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use protocol::Event;

/// The file name of a stream in its session directory.
pub(crate) const FILE_NAME: &str = "events.jsonl";

/// Errors reading or writing a stream's file.
#[derive(Debug, thiserror::Error)]
pub enum EventLogError {
    /// The file or its directory could not be read or written.
    #[error("event store {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line before the last is not the event it should be (not a torn write: the file was
    /// damaged or edited).
    #[error("event store {path} is corrupt at line {line}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// An event could not be encoded.
    #[error("cannot encode an event: {0}")]
    Encode(#[from] serde_json::Error),
    /// An event would not decode with its secrets masked (a secret equal to one of the
    /// protocol's words); it is not recorded, in clear or otherwise.
    #[error(transparent)]
    Mask(#[from] crate::secrets::MaskError),
}

/// An open `events.jsonl`, positioned for appending.
#[derive(Debug)]
pub(super) struct EventLog {
    path: PathBuf,
    file: File,
}

impl EventLog {
    /// Opens (or creates) the store in `dir` and reads back its events; a torn last line is
    /// cut off.
    pub(super) fn open(dir: &Path) -> Result<(EventLog, Vec<Event>), EventLogError> {
        let path = dir.join(FILE_NAME);
        let io = |source| EventLogError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io)?;
        let (events, good_len, torn) = read_events(&file, &path)?;
        if let Some(reason) = torn {
            tracing::warn!(path = %path.display(), %reason, "cutting off a torn last event");
            file.set_len(good_len).map_err(io)?;
        }
        Ok((EventLog { path, file }, events))
    }

    /// Appends one event as a line.
    pub(super) fn append(&mut self, event: &Event) -> Result<(), EventLogError> {
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|source| EventLogError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// Reads every complete event. Returns them, the byte length of the good prefix, and why the
/// tail was torn (if it was).
fn read_events(
    file: &File,
    path: &Path,
) -> Result<(Vec<Event>, u64, Option<String>), EventLogError> {
    let mut reader = BufReader::new(file);
    let mut events = Vec::new();
    let mut good_len = 0u64;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| EventLogError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            return Ok((events, good_len, None));
        }
        number += 1;
        let complete = line.last() == Some(&b'\n');
        let parsed = serde_json::from_slice::<Event>(&line)
            .map_err(|e| e.to_string())
            .and_then(|event| match event.id() {
                Some(id) if id == events.len() as i64 => Ok(event),
                other => Err(format!("expected id {}, found {other:?}", events.len())),
            });
        let at_end = reader.fill_buf().map(<[u8]>::is_empty).unwrap_or(true);
        match (parsed, complete) {
            (Ok(event), true) => {
                events.push(event);
                good_len += read as u64;
            }
            (Ok(_), false) => return Ok((events, good_len, Some("no final newline".into()))),
            (Err(reason), _) if at_end => return Ok((events, good_len, Some(reason))),
            (Err(reason), _) => {
                return Err(EventLogError::Corrupt {
                    path: path.to_path_buf(),
                    line: number,
                    reason,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
