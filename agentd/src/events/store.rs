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
mod tests {
    use super::super::EventStream;
    use super::super::tests::message;
    use super::*;
    use protocol::EventSource;

    /// A stream in `dir` holding `n` user messages.
    fn stream_of(dir: &Path, n: usize) -> EventStream {
        let stream = EventStream::open(dir).unwrap();
        for i in 0..n {
            stream
                .add(message(&i.to_string()), EventSource::User)
                .unwrap();
        }
        stream
    }

    #[test]
    fn a_stream_reads_back_what_it_wrote_and_goes_on_numbering() {
        let dir = tempfile::tempdir().unwrap();
        let stream = stream_of(dir.path(), 5);
        let before = stream.all();
        drop(stream);
        let stream = EventStream::open(dir.path()).unwrap();
        assert_eq!(stream.all(), before);
        let next = stream.add(message("5"), EventSource::Agent).unwrap();
        assert_eq!(next.id(), Some(5));
    }

    #[test]
    fn a_torn_last_write_is_cut_off_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let stream = stream_of(dir.path(), 3);
        drop(stream);
        let path = dir.path().join(FILE_NAME);
        let whole = std::fs::read(&path).unwrap();
        // Half of a fourth event, as if the process died mid-write.
        let mut torn = whole.clone();
        torn.extend_from_slice(br#"{"id": 3, "source": "user", "action": "mess"#);
        std::fs::write(&path, &torn).unwrap();

        let stream = EventStream::open(dir.path()).unwrap();
        assert_eq!(stream.len(), 3);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            whole,
            "the torn tail is gone"
        );
        assert_eq!(
            stream.add(message("3"), EventSource::User).unwrap().id(),
            Some(3)
        );
        drop(stream);
        assert_eq!(EventStream::open(dir.path()).unwrap().len(), 4);
    }

    #[test]
    fn damage_before_the_end_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let stream = stream_of(dir.path(), 3);
        drop(stream);
        let path = dir.path().join(FILE_NAME);
        let text = std::fs::read_to_string(&path).unwrap();
        let damaged = text.replacen("\"id\":1", "\"id\":7", 1);
        assert_ne!(damaged, text);
        std::fs::write(&path, damaged).unwrap();
        let err = EventStream::open(dir.path()).unwrap_err();
        assert!(
            matches!(err, EventLogError::Corrupt { line: 2, .. }),
            "{err}"
        );
    }
}
