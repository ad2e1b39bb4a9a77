//! Unit tests of `events/store.rs`.

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

/// The log file of a stream in `dir` that wrote three user messages and was closed.
fn closed_log_of_three(dir: &Path) -> PathBuf {
    drop(stream_of(dir, 3));
    dir.join(FILE_NAME)
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
    let path = closed_log_of_three(dir.path());
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
    let path = closed_log_of_three(dir.path());
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
