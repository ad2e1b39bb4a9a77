//! Unit tests of `files/read_write.rs`.

use super::*;

fn select(text: &str, start: i64, end: i64) -> String {
    match select_lines(text.as_bytes(), start, end) {
        Ok(s) => s,
        Err(_) => panic!("select failed"),
    }
}

/// `read_lines(all_lines, start, end)` of the reference, transcribed line by line.
fn reference_read_lines(lines: &[&str], start: i64, end: i64) -> String {
    let n = lines.len() as i64;
    let start = start.max(0).min(n);
    let end = if end == -1 { -1 } else { end.max(0) };
    let end = end.min(n);
    if end == -1 {
        return lines[start as usize..].concat();
    }
    let begin = 0.max(start.min(n - 2));
    let end = (begin + 1).max(end);
    let end = (end as usize).min(lines.len());
    let begin = (begin as usize).min(end);
    lines[begin..end].concat()
}

#[test]
fn line_selection_matches_the_reference_definition() {
    assert_eq!(select("a\nb\n\n", 1, 2), "b\n");
    let texts = ["", "a", "a\n", "a\nb", "a\nb\n\n", "1\n2\n3\n4\n5\n6"];
    for text in texts {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for start in -3..9 {
            for end in -3..9 {
                assert_eq!(
                    select(text, start, end),
                    reference_read_lines(&lines, start, end),
                    "{text:?} start={start} end={end}"
                );
            }
        }
    }
    assert_eq!(select("a\nb\n", i64::MAX, i64::MAX), "a\nb\n");
    assert_eq!(select("a\nb\n", i64::MIN, i64::MIN), "a\n");
}

#[test]
fn universal_newlines_and_invalid_utf8() {
    assert_eq!(select("a\r\nb\rc", 0, -1), "a\nb\nc");
    assert!(matches!(
        select_lines(&b"ok\n\xff\n"[..], 0, 1),
        Err(LinesError::Decode)
    ));
}

#[test]
fn splice_follows_insert_lines() {
    let original = python_lines("a\nb\n\n");
    assert_eq!(splice(&original, "Z", 1, 2), "a\nZ\n\n");
    assert_eq!(splice(&original, "x", 0, -1), "x\n");
    assert_eq!(splice(&original, "x", -1, -2), "a\nb\nx\nb\n\n");
    assert_eq!(splice(&original, "x", 10, 10), "a\nb\n\nx\n");
    assert_eq!(splice(&[], "", 0, -1), "\n");
}

#[test]
fn chmod_and_chown_failures_read_like_the_reference() {
    for (errno, message) in [
        (
            1,
            "File /w/f written, but failed to change ownership and permissions: [Errno 1] Operation not permitted: '/w/f'",
        ),
        (30, "[Errno 30] Read-only file system: '/w/f'"),
    ] {
        assert_eq!(
            metadata_error(&io::Error::from_raw_os_error(errno), "/w/f"),
            message,
            "errno {errno}"
        );
    }
}

#[test]
fn a_new_file_behind_a_dangling_symlink_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/nonexistent-dir/x", dir.path().join("dl")).unwrap();
    let ctx = FileContext {
        cwd: dir.path(),
        initial_dir: dir.path(),
        owner: None,
    };
    let obs = write(&FileWriteArgs::new("dl", "x"), &ctx);
    let abs = format!("{}/dl", dir.path().display());
    assert_eq!(obs.content, format!("File not found: {abs}"));
}

#[test]
fn resolve_normalises_like_pathlib() {
    let cwd = Path::new("/workspace");
    assert_eq!(resolve("hello.sh", cwd), "/workspace/hello.sh");
    assert_eq!(resolve("./a//b/", cwd), "/workspace/a/b");
    assert_eq!(resolve("/etc/./x", cwd), "/etc/x");
    assert_eq!(resolve("../x", cwd), "/workspace/../x");
    assert_eq!(resolve("", cwd), "/workspace");
}
