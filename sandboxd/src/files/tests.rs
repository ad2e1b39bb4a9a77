//! End-to-end tests of the file actions: the reference's recorded exchanges
//! (`fixtures/reference-exchanges.txt`, with `/workspace` replaced by a temporary directory)
//! and every message of docs/protocol.md §6–7.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use protocol::Observation;
use protocol::action::{FileEditArgs, FileReadArgs, FileWriteArgs};
use serde_json::{Value, json};

use super::{Editor, FileContext, read, write};

/// A temporary `/workspace` with an editor, speaking the wire JSON of the fixture.
struct Workspace {
    dir: tempfile::TempDir,
    root: String,
    editor: Editor,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_owned();
        Workspace {
            dir,
            root,
            editor: Editor::new(),
        }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn ctx(&self) -> FileContext<'_> {
        FileContext {
            cwd: self.dir.path(),
            initial_dir: self.dir.path(),
            owner: None,
        }
    }

    /// `/workspace` → the temporary directory, in a JSON text.
    fn sub(&self, text: &str) -> String {
        text.replace("/workspace", &self.root)
    }

    fn args<T: serde::de::DeserializeOwned>(&self, args: Value) -> T {
        serde_json::from_str(&self.sub(&args.to_string())).unwrap()
    }

    fn read(&self, args: Value) -> Observation {
        read(&self.args::<FileReadArgs>(args), &self.ctx(), &self.editor)
    }

    fn write(&self, args: Value) -> Observation {
        write(&self.args::<FileWriteArgs>(args), &self.ctx())
    }

    fn edit(&self, args: Value) -> Observation {
        self.editor
            .edit(&self.args::<FileEditArgs>(args), &self.ctx())
    }

    /// The observation of the file action `action` (`read`, `write` or `edit`) with `args`.
    fn act(&self, action: &str, args: Value) -> Observation {
        match action {
            "read" => self.read(args),
            "write" => self.write(args),
            "edit" => self.edit(args),
            other => panic!("not a file action: {other}"),
        }
    }

    /// Asserts that `obs` serialises to the fixture's response (after `/workspace` substitution).
    fn expect(&self, obs: &Observation, response: &str) {
        let expected: Value = serde_json::from_str(&self.sub(response)).unwrap();
        let actual = serde_json::to_value(obs).unwrap();
        assert_eq!(actual, expected);
    }

    /// The `content` of an observation, with the temporary directory written as `/workspace`.
    fn content(&self, obs: &Observation) -> String {
        obs.content.replace(&self.root, "/workspace")
    }
}

fn edit_extras(obs: &Observation) -> &protocol::observation::FileEditExtras {
    match &obs.kind {
        protocol::ObservationKind::Edit(extras) => extras,
        other => panic!("not an edit observation: {other:?}"),
    }
}

fn is_error(obs: &Observation) -> bool {
    matches!(obs.kind, protocol::ObservationKind::Error(_))
}

#[test]
fn editor_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + Default>() {}
    assert_send_sync::<Editor>();
}

/// The exchanges of `reference-exchanges.txt` from "write new file" to "edit missing path", in
/// the recorded order (each depends on the files the previous ones left behind).
#[test]
fn reference_exchanges_in_order() {
    let ws = Workspace::new();
    fs::create_dir(ws.path("sub")).unwrap();

    let exchanges = [
        (
            "write",
            json!({"path": "hello.sh", "content": "echo \"Hello, World!\""}),
            r#"{"message": "I wrote to the file /workspace/hello.sh.", "observation": "write", "content": "", "extras": {"path": "/workspace/hello.sh"}}"#,
        ),
        (
            "read",
            json!({"path": "hello.sh"}),
            r#"{"message": "I read the file /workspace/hello.sh.", "observation": "read", "content": "echo \"Hello, World!\"\n", "extras": {"path": "/workspace/hello.sh", "impl_source": "default"}}"#,
        ),
        (
            "read",
            json!({"path": "nope.txt"}),
            r#"{"message": "File not found: /workspace/nope.txt. Your current working directory is /workspace.", "observation": "error", "content": "File not found: /workspace/nope.txt. Your current working directory is /workspace.", "extras": {"error_id": ""}}"#,
        ),
        (
            "read",
            json!({"path": "/workspace"}),
            r#"{"message": "Path is a directory: /workspace. You can only read files", "observation": "error", "content": "Path is a directory: /workspace. You can only read files", "extras": {"error_id": ""}}"#,
        ),
        (
            "read",
            json!({"path": "hello.sh", "start": 0, "end": 1}),
            r#"{"message": "I read the file /workspace/hello.sh.", "observation": "read", "content": "echo \"Hello, World!\"\n", "extras": {"path": "/workspace/hello.sh", "impl_source": "default"}}"#,
        ),
        (
            "write",
            json!({"path": "t2.txt", "content": "a\nb\n"}),
            r#"{"message": "I wrote to the file /workspace/t2.txt.", "observation": "write", "content": "", "extras": {"path": "/workspace/t2.txt"}}"#,
        ),
        (
            "read",
            json!({"path": "t2.txt"}),
            r#"{"message": "I read the file /workspace/t2.txt.", "observation": "read", "content": "a\nb\n\n", "extras": {"path": "/workspace/t2.txt", "impl_source": "default"}}"#,
        ),
        (
            "read",
            json!({"path": "/workspace/hello.sh", "impl_source": "oh_aci"}),
            r#"{"message": "I read the file /workspace/hello.sh.", "observation": "read", "content": "Here's the result of running `cat -n` on /workspace/hello.sh:\n     1\techo \"Hello, World!\"\n     2\t\n", "extras": {"path": "/workspace/hello.sh", "impl_source": "oh_aci"}}"#,
        ),
        (
            "read",
            json!({"path": "/workspace/t2.txt", "impl_source": "oh_aci", "view_range": [1, 5]}),
            r#"{"message": "I read the file /workspace/t2.txt.", "observation": "read", "content": "NOTE: We only show up to 3 since there're only 3 lines in this file.\nHere's the result of running `cat -n` on /workspace/t2.txt:\n     1\ta\n     2\tb\n     3\t\n", "extras": {"path": "/workspace/t2.txt", "impl_source": "oh_aci"}}"#,
        ),
        (
            "read",
            json!({"path": "hello.sh", "impl_source": "oh_aci"}),
            r#"{"message": "I read the file hello.sh.", "observation": "read", "content": "ERROR:\nInvalid `path` parameter: hello.sh. The path should be an absolute path, starting with `/`. Maybe you meant /workspace/hello.sh?", "extras": {"path": "hello.sh", "impl_source": "oh_aci"}}"#,
        ),
        (
            "read",
            json!({"path": "/workspace", "impl_source": "oh_aci"}),
            r#"{"message": "I read the file /workspace.", "observation": "read", "content": "Here's the files and directories up to 2 levels deep in /workspace, excluding hidden items:\n/workspace/\n/workspace/hello.sh\n/workspace/sub/\n/workspace/t2.txt", "extras": {"path": "/workspace", "impl_source": "oh_aci"}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "create", "file_text": "line one\nline two\nline one", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "File created successfully at: /workspace/e.txt", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": null, "new_content": null, "impl_source": "oh_aci", "diff": "--- /workspace/e.txt\n+++ /workspace/e.txt\n@@ -1 +1,3 @@\n-\n+line one\n+line two\n+line one", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "create", "file_text": "x", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "ERROR:\nInvalid `path` parameter: /workspace/e.txt. File already exists at: /workspace/e.txt. Cannot overwrite files using command `create`.", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": null, "new_content": null, "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "str_replace", "old_str": "line one", "new_str": "L1", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "ERROR:\nNo replacement was performed. Multiple occurrences of old_str `line one` in lines [1, 3]. Please ensure it is unique.", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": "line one", "new_content": "L1", "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "str_replace", "old_str": "zzz", "new_str": "L1", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "ERROR:\nNo replacement was performed, old_str `zzz` did not appear verbatim in /workspace/e.txt.", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": "zzz", "new_content": "L1", "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "str_replace", "old_str": "line two", "new_str": "LINE 2", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "The file /workspace/e.txt has been edited. Here's the result of running `cat -n` on a snippet of /workspace/e.txt:\n     1\tline one\n     2\tLINE 2\n     3\tline one\nReview the changes and make sure they are as expected. Edit the file again if necessary.", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": "line two", "new_content": "LINE 2", "impl_source": "oh_aci", "diff": "--- /workspace/e.txt\n+++ /workspace/e.txt\n@@ -2 +2 @@\n-line two\n+LINE 2", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "insert", "insert_line": 1, "new_str": "inserted", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "The file /workspace/e.txt has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\tline one\n     2\tinserted\n     3\tLINE 2\n     4\tline one\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": null, "new_content": "inserted", "impl_source": "oh_aci", "diff": "--- /workspace/e.txt\n+++ /workspace/e.txt\n@@ -1,0 +2 @@\n+inserted", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "insert", "insert_line": 99, "new_str": "x", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "ERROR:\nInvalid `insert_line` parameter: 99. It should be within the range of allowed values: [0, 4]", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": null, "new_content": "x", "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "undo_edit", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "Last edit to /workspace/e.txt undone successfully. Here's the result of running `cat -n` on /workspace/e.txt:\n     1\tline one\n     2\tLINE 2\n     3\tline one\n", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": null, "new_content": null, "impl_source": "oh_aci", "diff": "--- /workspace/e.txt\n+++ /workspace/e.txt\n@@ -2 +1,0 @@\n-inserted", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "view", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "Here's the result of running `cat -n` on /workspace/e.txt:\n     1\tline one\n     2\tLINE 2\n     3\tline one\n", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": null, "new_content": null, "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "e.txt", "command": "view", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file e.txt.", "observation": "edit", "content": "ERROR:\nInvalid `path` parameter: e.txt. The path should be an absolute path, starting with `/`. Maybe you meant /workspace/e.txt?", "extras": {"path": "e.txt", "prev_exist": false, "old_content": null, "new_content": null, "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/e.txt", "command": "frobnicate", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/e.txt.", "observation": "edit", "content": "ERROR:\nUnrecognized command frobnicate. The allowed commands for the oh_editor tool are: view, create, str_replace, insert, undo_edit", "extras": {"path": "/workspace/e.txt", "prev_exist": false, "old_content": null, "new_content": null, "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
        (
            "edit",
            json!({"path": "/workspace/missing.txt", "command": "view", "impl_source": "oh_aci"}),
            r#"{"message": "I edited the file /workspace/missing.txt.", "observation": "edit", "content": "ERROR:\nInvalid `path` parameter: /workspace/missing.txt. The path /workspace/missing.txt does not exist. Please provide a valid path.", "extras": {"path": "/workspace/missing.txt", "prev_exist": false, "old_content": null, "new_content": null, "impl_source": "oh_aci", "diff": "", "_diff_cache": null}}"#,
        ),
    ];
    for (action, args, response) in exchanges {
        ws.expect(&ws.act(action, args), response);
    }

    // The summary lines at the end of the fixture.
    let obs = ws.write(json!({"path": "/workspace/newdir/deep/f.txt", "content": "x"}));
    ws.expect(&obs, r#"{"message": "I wrote to the file /workspace/newdir/deep/f.txt.", "observation": "write", "content": "", "extras": {"path": "/workspace/newdir/deep/f.txt"}}"#);
    assert_eq!(
        ws.read(json!({"path": "t2.txt", "start": 1, "end": 2}))
            .content,
        "b\n"
    );
    ws.write(json!({"path": "t2.txt", "content": "Z", "start": 1, "end": 2}));
    assert_eq!(ws.read(json!({"path": "t2.txt"})).content, "a\nZ\n\n");
    let view = |range: Value| {
        ws.content(&ws.read(
            json!({"path": "/workspace/t2.txt", "impl_source": "oh_aci", "view_range": range}),
        ))
    };
    assert_eq!(
        view(json!([0, 1])),
        "ERROR:\nInvalid `view_range` parameter: [0, 1]. Its first element `0` should be within the range of lines of the file: [1, 3]."
    );
    assert_eq!(
        view(json!([2, 1])),
        "ERROR:\nInvalid `view_range` parameter: [2, 1]. Its second element `1` should be greater than or equal to the first element `2`."
    );
    assert_eq!(
        view(json!([2, -1])),
        "Here's the result of running `cat -n` on /workspace/t2.txt:\n     2\tZ\n     3\t\n"
    );

    let obs = ws.edit(json!({"path": "/workspace/e.txt", "command": "str_replace", "old_str": "  LINE 2 \n", "new_str": " Line Two\n ", "impl_source": "oh_aci"}));
    assert!(ws.content(&obs).starts_with("The file /workspace/e.txt has been edited. Here's the result of running `cat -n` on a snippet of /workspace/e.txt:\n     1\tline one\n     2\t"));
    // Both strings were stripped for the retry.
    assert_eq!(
        fs::read_to_string(ws.path("e.txt")).unwrap(),
        "line one\nLine Two\nline one"
    );

    let obs = ws.edit(json!({"path": "/workspace/e.txt", "command": "insert", "insert_line": "1", "new_str": "x", "impl_source": "oh_aci"}));
    assert!(
        ws.content(&obs).starts_with(
            "The file /workspace/e.txt has been edited. Here's the result of running `c"
        )
    );
    assert_eq!(
        fs::read_to_string(ws.path("e.txt")).unwrap(),
        "line one\nx\nLine Two\nline one"
    );
}

#[test]
fn binary_files_are_refused_in_both_read_modes() {
    let ws = Workspace::new();
    fs::write(ws.path("img.png"), super::binary::tests::PNG).unwrap();
    let expected = r#"{"message": "ERROR_BINARY_FILE", "observation": "error", "content": "ERROR_BINARY_FILE", "extras": {"error_id": ""}}"#;
    ws.expect(&ws.read(json!({"path": "img.png"})), expected);
    ws.expect(
        &ws.read(json!({"path": "/workspace/img.png", "impl_source": "oh_aci"})),
        expected,
    );
    // Relative paths are sniffed in the shell's directory, not the daemon's.
    ws.expect(
        &ws.read(json!({"path": "img.png", "impl_source": "oh_aci"})),
        expected,
    );

    fs::write(ws.path("bin.dat"), b"\x00\x01\x02\x03binary\xff\xfe").unwrap();
    let obs = ws.edit(json!({"path": "/workspace/bin.dat", "command": "view"}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nFile validation failed for /workspace/bin.dat: File appears to be binary and this file type cannot be read or edited by this tool."
    );
    let obs = ws.edit(json!({"path": "/workspace/bin.dat", "command": "str_replace", "old_str": "a", "new_str": "b"}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nFile validation failed for /workspace/bin.dat: File appears to be binary and this file type cannot be read or edited by this tool."
    );
}

#[test]
fn default_read_errors() {
    let ws = Workspace::new();
    fs::write(ws.path("latin1.txt"), b"caf\xe9\n").unwrap();
    let obs = ws.read(json!({"path": "latin1.txt"}));
    assert!(is_error(&obs));
    assert_eq!(
        ws.content(&obs),
        "File could not be decoded as utf-8: /workspace/latin1.txt."
    );

    nix::unistd::mkfifo(
        &ws.path("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let obs = ws.read(json!({"path": "fifo"}));
    assert_eq!(
        ws.content(&obs),
        "Path is not a regular file: /workspace/fifo. You can only read files"
    );

    fs::write(ws.path("file"), "x").unwrap();
    let obs = ws.read(json!({"path": "file/below"}));
    assert_eq!(
        ws.content(&obs),
        "[Errno 20] Not a directory: '/workspace/file/below'"
    );

    // CRLF and CR line ends read as Python's universal newlines.
    fs::write(ws.path("crlf.txt"), "a\r\nb\rc").unwrap();
    assert_eq!(
        ws.read(json!({"path": "crlf.txt", "start": 1})).content,
        "b\nc"
    );
}

#[test]
fn write_modes_owners_and_errors() {
    let ws = Workspace::new();
    let obs = ws.write(json!({"path": "new.txt", "content": ""}));
    assert!(!is_error(&obs));
    assert_eq!(fs::read_to_string(ws.path("new.txt")).unwrap(), "\n");
    assert_eq!(
        fs::metadata(ws.path("new.txt")).unwrap().mode() & 0o777,
        0o664
    );

    fs::write(ws.path("exec.sh"), "old\n").unwrap();
    fs::set_permissions(ws.path("exec.sh"), fs::Permissions::from_mode(0o751)).unwrap();
    ws.write(json!({"path": "exec.sh", "content": "new"}));
    assert_eq!(fs::read_to_string(ws.path("exec.sh")).unwrap(), "new\n");
    assert_eq!(
        fs::metadata(ws.path("exec.sh")).unwrap().mode() & 0o777,
        0o751
    );

    let obs = ws.write(json!({"path": "/workspace", "content": "x"}));
    assert_eq!(
        ws.content(&obs),
        "Path is a directory: /workspace. You can only write to files"
    );

    fs::write(ws.path("bad.txt"), b"\xff\n").unwrap();
    let obs = ws.write(json!({"path": "bad.txt", "content": "x"}));
    assert_eq!(
        ws.content(&obs),
        "File could not be decoded as utf-8: /workspace/bad.txt"
    );
    assert_eq!(
        fs::read(ws.path("bad.txt")).unwrap(),
        b"\xff\n",
        "left untouched"
    );

    let obs = ws.write(json!({"path": "exec.sh/x/y.txt", "content": "x"}));
    assert_eq!(
        ws.content(&obs),
        "[Errno 20] Not a directory: '/workspace/exec.sh/x'"
    );

    nix::unistd::mkfifo(
        &ws.path("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let obs = ws.write(json!({"path": "fifo", "content": "x"}));
    assert_eq!(
        ws.content(&obs),
        "Path is not a regular file: /workspace/fifo. You can only write to files"
    );

    // Splicing keeps the lines outside [start, end); CRLF lines come back as LF (Python's
    // universal newlines on reading).
    fs::write(ws.path("lines.txt"), "1\r\n2\n3\n4\n").unwrap();
    ws.write(json!({"path": "lines.txt", "content": "two\nthree", "start": 1, "end": 3}));
    assert_eq!(
        fs::read_to_string(ws.path("lines.txt")).unwrap(),
        "1\ntwo\nthree\n4\n"
    );

    if nix::unistd::geteuid().is_root() {
        let ctx = FileContext {
            owner: Some((4321, 4322)),
            ..ws.ctx()
        };
        let args = FileWriteArgs::new("owned/dir/f.txt", "x");
        assert!(!is_error(&write(&args, &ctx)));
        let meta = fs::metadata(ws.path("owned/dir/f.txt")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
        let meta = fs::metadata(ws.path("owned/dir")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
        // Existing files keep their owner.
        std::os::unix::fs::chown(ws.path("exec.sh"), Some(1), Some(2)).unwrap();
        assert!(!is_error(&write(&FileWriteArgs::new("exec.sh", "y"), &ctx)));
        let meta = fs::metadata(ws.path("exec.sh")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (1, 2));
    }
}

#[test]
fn validation_messages_in_order() {
    let ws = Workspace::new();
    fs::create_dir(ws.path("dir")).unwrap();
    fs::write(ws.path("doc.PDF"), "%PDF-1.4\n").unwrap();
    fs::write(ws.path("f.txt"), "one\ntwo\nthree\n").unwrap();
    let content = |args: Value| ws.content(&ws.edit(args));

    for (args, expected) in [
        (
            json!({"path": "nothere.txt", "command": "view"}),
            "ERROR:\nInvalid `path` parameter: nothere.txt. The path should be an absolute path, starting with `/`.",
        ),
        (
            json!({"path": "./dir//", "command": "view"}),
            "ERROR:\nInvalid `path` parameter: dir. The path should be an absolute path, starting with `/`. Maybe you meant /workspace/dir?",
        ),
        (
            json!({"path": "/workspace/dir", "command": "str_replace", "old_str": "a"}),
            "ERROR:\nInvalid `path` parameter: /workspace/dir. The path /workspace/dir is a directory and only the `view` command can be used on directories.",
        ),
        (
            json!({"path": "/workspace/doc.PDF", "command": "insert"}),
            "ERROR:\nInvalid `path` parameter: /workspace/doc.PDF. The path /workspace/doc.PDF points to a binary file (.PDF) and only the `view` command can be used on supported binary files.",
        ),
        (
            json!({"path": "/workspace/doc.PDF", "command": "view"}),
            "ERROR:\nError in converting file to Markdown: converting documents is not supported by sandboxd. Please use Python code to read /workspace/doc.PDF",
        ),
        (
            json!({"path": "/workspace/gone", "command": "bogus"}),
            "ERROR:\nInvalid `path` parameter: /workspace/gone. The path /workspace/gone does not exist. Please provide a valid path.",
        ),
        (
            json!({"path": "/workspace/dir", "command": ""}),
            "ERROR:\nInvalid `path` parameter: /workspace/dir. The path /workspace/dir is a directory and only the `view` command can be used on directories.",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": ""}),
            "ERROR:\nUnrecognized command . The allowed commands for the oh_editor tool are: view, create, str_replace, insert, undo_edit",
        ),
        (
            json!({"path": "/workspace/new.txt", "command": "create"}),
            "ERROR:\nParameter `file_text` is required for command: create.",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "str_replace"}),
            "ERROR:\nParameter `old_str` is required for command: str_replace.",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "insert", "new_str": "x"}),
            "ERROR:\nParameter `insert_line` is required for command: insert.",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "insert", "insert_line": 0}),
            "ERROR:\nParameter `new_str` is required for command: insert.",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "str_replace", "old_str": "one", "new_str": "one"}),
            "ERROR:\nInvalid `new_str` parameter: one. No replacement was performed. `new_str` and `old_str` must be different.",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "insert", "insert_line": "x1", "new_str": "a"}),
            "ERROR:\nInvalid insert_line value: 'x1'. Expected an integer.",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "insert", "insert_line": -1, "new_str": "a"}),
            "ERROR:\nInvalid `insert_line` parameter: -1. It should be within the range of allowed values: [0, 3]",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "insert", "insert_line": "123456789012345678901234567890", "new_str": "a"}),
            "ERROR:\nInvalid `insert_line` parameter: 123456789012345678901234567890. It should be within the range of allowed values: [0, 3]",
        ),
        (
            json!({"path": "/workspace/f.txt", "command": "undo_edit"}),
            "ERROR:\nNo edit history found for /workspace/f.txt.",
        ),
    ] {
        assert_eq!(content(args.clone()), expected, "{args}");
    }
    let obs = ws.edit(
        json!({"path": "/workspace/f.txt", "command": "view", "impl_source": "llm_based_edit"}),
    );
    assert_eq!(
        obs.content,
        "ERROR:\nUnsupported impl_source `llm_based_edit` for the edit action: sandboxd only runs the `oh_aci` editor."
    );
    assert_eq!(edit_extras(&obs).diff.as_deref(), Some(""));

    // The parent directory must exist for `create`.
    assert_eq!(
        content(json!({"path": "/workspace/no/such.txt", "command": "create", "file_text": "x"})),
        "ERROR:\nRan into [Errno 2] No such file or directory: '/workspace/no/such.txt' while trying to write to /workspace/no/such.txt"
    );
    // Undecodable and not detectably legacy: the UTF-8 error of the reference.
    fs::write(ws.path("odd.txt"), b"abc\x81\n").unwrap();
    assert_eq!(
        content(json!({"path": "/workspace/odd.txt", "command": "view"})),
        "ERROR:\nRan into 'utf-8' codec can't decode byte 0x81 in position 3: invalid start byte while trying to read /workspace/odd.txt"
    );
}

#[test]
fn large_files_fail_on_size_without_being_read() {
    let ws = Workspace::new();
    let big = fs::File::create(ws.path("big.log")).unwrap();
    // Sparse: nothing to read, so reading it would be the slow part.
    big.set_len(10 * 1024 * 1024 + 1).unwrap();
    let obs = ws.edit(json!({"path": "/workspace/big.log", "command": "view"}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nFile validation failed for /workspace/big.log: File is too large (10.0MB). Maximum allowed size is 10MB."
    );
    big.set_len(10_747_904).unwrap();
    let obs =
        ws.edit(json!({"path": "/workspace/big.log", "command": "str_replace", "old_str": "a"}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nFile validation failed for /workspace/big.log: File is too large (10.2MB). Maximum allowed size is 10MB."
    );
}

#[test]
fn special_files_do_not_block_the_editor() {
    let ws = Workspace::new();
    nix::unistd::mkfifo(
        &ws.path("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    for command in ["view", "undo_edit"] {
        let obs = ws.edit(json!({"path": "/workspace/fifo", "command": command}));
        assert_eq!(
            ws.content(&obs),
            "ERROR:\nFile validation failed for /workspace/fifo: The path is not a regular file, so this tool cannot read or edit it."
        );
    }
    let obs = ws.edit(json!({"path": "/workspace/fifo", "command": "create", "file_text": "x"}));
    assert!(
        ws.content(&obs)
            .contains("File already exists at: /workspace/fifo.")
    );
}

#[test]
fn view_ranges_and_directory_view_range() {
    let ws = Workspace::new();
    fs::write(ws.path("f.txt"), "1\n2\n3\n4\n5").unwrap();
    let view = |range: Value| {
        ws.content(
            &ws.edit(json!({"path": "/workspace/f.txt", "command": "view", "view_range": range})),
        )
    };
    assert_eq!(
        view(json!([1])),
        "ERROR:\nInvalid `view_range` parameter: [1]. It should be a list of two integers."
    );
    assert_eq!(
        view(json!([1, 2, 3])),
        "ERROR:\nInvalid `view_range` parameter: [1, 2, 3]. It should be a list of two integers."
    );
    assert_eq!(
        view(json!([6, 7])),
        "ERROR:\nInvalid `view_range` parameter: [6, 7]. Its first element `6` should be within the range of lines of the file: [1, 5]."
    );
    assert_eq!(
        view(json!([3, -2])),
        "ERROR:\nInvalid `view_range` parameter: [3, -2]. Its second element `-2` should be greater than or equal to the first element `3`."
    );
    assert_eq!(
        view(json!([2, 3])),
        "Here's the result of running `cat -n` on /workspace/f.txt:\n     2\t2\n     3\t3\n"
    );
    assert_eq!(
        view(json!([5, 5])),
        "Here's the result of running `cat -n` on /workspace/f.txt:\n     5\t5\n"
    );
    assert_eq!(
        view(json!([4, 9])),
        "NOTE: We only show up to 5 since there're only 5 lines in this file.\nHere's the result of running `cat -n` on /workspace/f.txt:\n     4\t4\n     5\t5\n"
    );
    // An empty list means "no range", as `if not view_range` does.
    assert_eq!(
        view(json!([])),
        "Here's the result of running `cat -n` on /workspace/f.txt:\n     1\t1\n     2\t2\n     3\t3\n     4\t4\n     5\t5\n"
    );

    let obs = ws.edit(json!({"path": "/workspace", "command": "view", "view_range": [1, 2]}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nInvalid `view_range` parameter: [1, 2]. The `view_range` parameter is not allowed when `path` points to a directory."
    );

    // An empty file has no lines, so every range is out of it.
    fs::write(ws.path("empty.txt"), "").unwrap();
    let obs =
        ws.edit(json!({"path": "/workspace/empty.txt", "command": "view", "view_range": [1, 1]}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nInvalid `view_range` parameter: [1, 1]. Its first element `1` should be within the range of lines of the file: [1, 0]."
    );
    let obs = ws.edit(json!({"path": "/workspace/empty.txt", "command": "view"}));
    assert_eq!(
        ws.content(&obs),
        "Here's the result of running `cat -n` on /workspace/empty.txt:\n     1\t\n"
    );

    // With a range the selected text goes through `splitlines`, so a form feed splits a line.
    fs::write(ws.path("ff.txt"), "a\x0cb\nc\n").unwrap();
    let obs =
        ws.edit(json!({"path": "/workspace/ff.txt", "command": "view", "view_range": [1, 2]}));
    assert_eq!(
        ws.content(&obs),
        "Here's the result of running `cat -n` on /workspace/ff.txt:\n     1\ta\n     2\tb\n     3\tc\n"
    );
}

#[test]
fn file_and_directory_views_are_clipped_at_16000_characters() {
    let ws = Workspace::new();
    let line = "x".repeat(99);
    let text: String = (0..200).map(|_| format!("{line}\n")).collect();
    fs::write(ws.path("long.txt"), &text).unwrap();
    let obs = ws.edit(json!({"path": "/workspace/long.txt", "command": "view"}));
    // 160 full lines of 100 characters fill the 16 000; the notice goes on line 161.
    let notice = super::editor::TEXT_FILE_TRUNCATED_NOTICE;
    assert!(
        ws.content(&obs)
            .ends_with(&format!("   160\t{line}\n   161\t{notice}\n"))
    );

    fs::create_dir(ws.path("many")).unwrap();
    for i in 0..400 {
        fs::write(
            ws.path(&format!("many/entry-with-a-fairly-long-name-{i:05}")),
            "",
        )
        .unwrap();
    }
    let obs = ws.read(json!({"path": "/workspace/many", "impl_source": "oh_aci"}));
    assert!(
        obs.content
            .ends_with(super::listing::DIRECTORY_TRUNCATED_NOTICE)
    );
}

#[test]
fn str_replace_snippets_empty_old_str_and_history() {
    let ws = Workspace::new();
    let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    fs::write(ws.path("f.txt"), &text).unwrap();
    let obs = ws.edit(json!({"path": "/workspace/f.txt", "command": "str_replace", "old_str": "line 10\n", "new_str": "ten\nTEN\n"}));
    // Snippet: lines max(1, 10 - 3) ..= 10 + 4 + 2 of the new file, terminators kept.
    let expected_snippet: String = (7..=16)
        .map(|n| {
            let body = match n {
                10 => "ten".to_owned(),
                11 => "TEN".to_owned(),
                n if n > 11 => format!("line {}", n - 1),
                n => format!("line {n}"),
            };
            format!("{n:6}\t{body}\n")
        })
        .collect();
    assert_eq!(
        ws.content(&obs),
        format!(
            "The file /workspace/f.txt has been edited. Here's the result of running `cat -n` on a snippet of /workspace/f.txt:\n{expected_snippet}{:6}\t\nReview the changes and make sure they are as expected. Edit the file again if necessary.",
            17
        )
    );
    assert_eq!(
        edit_extras(&obs).diff.as_deref(),
        Some("--- /workspace/f.txt\n+++ /workspace/f.txt\n@@ -10 +10,2 @@\n-line 10\n+ten\n+TEN")
            .map(|d| d.replace("/workspace", &ws.root))
            .as_deref()
    );

    // Empty old_str: matches at every position, including after the final newline.
    let ws = Workspace::new();
    ws.write(json!({"path": "three.txt", "content": "a\nb\nc"}));
    let obs = ws.edit(json!({"path": "/workspace/three.txt", "command": "str_replace", "old_str": "", "new_str": "x"}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nNo replacement was performed. Multiple occurrences of old_str `` in lines [1, 2, 3, 4]. Please ensure it is unique."
    );
    fs::write(ws.path("empty.txt"), "").unwrap();
    let obs = ws.edit(json!({"path": "/workspace/empty.txt", "command": "str_replace", "old_str": "", "new_str": "hello"}));
    assert_eq!(
        ws.content(&obs),
        "The file /workspace/empty.txt has been edited. Here's the result of running `cat -n` on a snippet of /workspace/empty.txt:\n     1\thello\nReview the changes and make sure they are as expected. Edit the file again if necessary."
    );
    assert_eq!(fs::read_to_string(ws.path("empty.txt")).unwrap(), "hello");
    // Whitespace-only old_str strips to "" on the retry.
    let obs = ws.edit(json!({"path": "/workspace/three.txt", "command": "str_replace", "old_str": "  ", "new_str": "x"}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nNo replacement was performed. Multiple occurrences of old_str `` in lines [1, 2, 3, 4]. Please ensure it is unique."
    );
}

#[test]
fn insert_snippets_and_gluing() {
    let ws = Workspace::new();
    fs::write(ws.path("g.txt"), "a\nb").unwrap();
    let obs = ws.edit(json!({"path": "/workspace/g.txt", "command": "insert", "insert_line": 2, "new_str": "new"}));
    assert_eq!(fs::read_to_string(ws.path("g.txt")).unwrap(), "a\nbnew\n");
    assert_eq!(
        ws.content(&obs),
        "The file /workspace/g.txt has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\ta\n     2\tbnew\n     3\t\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary."
    );

    let text: String = (1..=20).map(|i| format!("{i}\n")).collect();
    fs::write(ws.path("n.txt"), &text).unwrap();
    let obs = ws.edit(json!({"path": "/workspace/n.txt", "command": "insert", "insert_line": 10, "new_str": "A\nB"}));
    // Lines max(1, 10 - 3) ..= min(20 + 2, 10 + 4 + 2), numbered from 7.
    let expected: String = ["7", "8", "9", "10", "A", "B", "11", "12", "13", "14"]
        .iter()
        .enumerate()
        .map(|(i, body)| format!("{:6}\t{body}\n", i + 7))
        .collect();
    assert_eq!(
        ws.content(&obs),
        format!(
            "The file /workspace/n.txt has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n{expected}{:6}\t\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
            17
        )
    );

    let obs = ws.edit(json!({"path": "/workspace/n.txt", "command": "insert", "insert_line": 0, "new_str": "top"}));
    assert!(ws.content(&obs).contains("     1\ttop\n     2\t1\n"));
    assert_eq!(
        edit_extras(&obs)
            .diff
            .as_deref()
            .map(|d| d.replace(&ws.root, "/workspace")),
        Some("--- /workspace/n.txt\n+++ /workspace/n.txt\n@@ -0,0 +1 @@\n+top".to_owned())
    );
}

#[test]
fn undo_history_is_capped_at_ten_and_create_records_its_text() {
    let ws = Workspace::new();
    let obs = ws.edit(json!({"path": "/workspace/u.txt", "command": "create", "file_text": "v0"}));
    assert_eq!(
        ws.content(&obs),
        "File created successfully at: /workspace/u.txt"
    );
    // Undo right after create writes back the created text.
    let obs = ws.edit(json!({"path": "/workspace/u.txt", "command": "undo_edit"}));
    assert_eq!(
        ws.content(&obs),
        "Last edit to /workspace/u.txt undone successfully. Here's the result of running `cat -n` on /workspace/u.txt:\n     1\tv0\n"
    );
    assert_eq!(edit_extras(&obs).diff.as_deref(), Some(""));

    for i in 0..12 {
        ws.edit(json!({"path": "/workspace/u.txt", "command": "str_replace", "old_str": format!("v{i}"), "new_str": format!("v{}", i + 1)}));
    }
    assert_eq!(fs::read_to_string(ws.path("u.txt")).unwrap(), "v12");
    for expected in (2..12).rev() {
        let obs = ws.edit(json!({"path": "/workspace/u.txt", "command": "undo_edit"}));
        assert!(obs.content.starts_with("Last edit to"), "{}", obs.content);
        assert_eq!(
            fs::read_to_string(ws.path("u.txt")).unwrap(),
            format!("v{expected}")
        );
    }
    let obs = ws.edit(json!({"path": "/workspace/u.txt", "command": "undo_edit"}));
    assert_eq!(
        ws.content(&obs),
        "ERROR:\nNo edit history found for /workspace/u.txt."
    );
    // History is keyed by the normalised path.
    ws.edit(json!({"path": "/workspace//u.txt", "command": "str_replace", "old_str": "v2", "new_str": "w"}));
    let obs = ws.edit(json!({"path": "/workspace/./u.txt", "command": "undo_edit"}));
    assert!(obs.content.starts_with("Last edit to"));
}

#[test]
fn non_utf8_files_round_trip_in_their_encoding() {
    let ws = Workspace::new();
    let original = "Привет, мир!\nЭто файл в кодировке windows-1251.\nСтрока три.\n";
    let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(original);
    fs::write(ws.path("ru.txt"), &bytes).unwrap();

    let obs =
        ws.edit(json!({"path": "/workspace/ru.txt", "command": "view", "view_range": [1, 1]}));
    assert_eq!(
        ws.content(&obs),
        "Here's the result of running `cat -n` on /workspace/ru.txt:\n     1\tПривет, мир!\n"
    );
    let obs = ws.edit(json!({"path": "/workspace/ru.txt", "command": "str_replace", "old_str": "Строка три.", "new_str": "Третья строка."}));
    assert!(
        obs.content.contains("     3\tТретья строка.\n"),
        "{}",
        obs.content
    );
    let expected = original.replace("Строка три.", "Третья строка.");
    let (expected_bytes, _, _) = encoding_rs::WINDOWS_1251.encode(&expected);
    assert_eq!(
        fs::read(ws.path("ru.txt")).unwrap(),
        expected_bytes.as_ref()
    );

    // A character the encoding lacks leaves the file untouched.
    let obs = ws.edit(
        json!({"path": "/workspace/ru.txt", "command": "insert", "insert_line": 0, "new_str": "☃"}),
    );
    assert!(
        obs.content
            .starts_with("ERROR:\nRan into 'charmap' codec can't encode character '\\u2603'"),
        "{}",
        obs.content
    );
    assert_eq!(
        fs::read(ws.path("ru.txt")).unwrap(),
        expected_bytes.as_ref()
    );

    let obs = ws.edit(json!({"path": "/workspace/ru.txt", "command": "undo_edit"}));
    assert!(obs.content.contains("     3\tСтрока три.\n"));
    assert_eq!(fs::read(ws.path("ru.txt")).unwrap(), bytes.as_ref());

    // UTF-8 with a byte order mark: hidden in the view, kept in the file.
    fs::write(ws.path("bom.txt"), b"\xEF\xBB\xBFone\n").unwrap();
    let obs = ws.edit(json!({"path": "/workspace/bom.txt", "command": "str_replace", "old_str": "one", "new_str": "two"}));
    assert!(obs.content.contains("     1\ttwo\n"));
    assert_eq!(fs::read(ws.path("bom.txt")).unwrap(), b"\xEF\xBB\xBFtwo\n");
}

#[test]
fn crlf_files_are_edited_with_universal_newlines() {
    let ws = Workspace::new();
    fs::write(ws.path("w.txt"), "a\r\nb\r\n").unwrap();
    let obs = ws.edit(json!({"path": "/workspace/w.txt", "command": "view"}));
    assert_eq!(
        ws.content(&obs),
        "Here's the result of running `cat -n` on /workspace/w.txt:\n     1\ta\n     2\tb\n     3\t\n"
    );
    ws.edit(json!({"path": "/workspace/w.txt", "command": "str_replace", "old_str": "a\nb", "new_str": "c"}));
    assert_eq!(fs::read_to_string(ws.path("w.txt")).unwrap(), "c\n");
}

#[test]
fn edit_diff_uses_path_as_given_and_is_empty_for_views() {
    let ws = Workspace::new();
    fs::write(ws.path("d.txt"), "x\n").unwrap();
    let obs = ws.edit(json!({"path": "/workspace//d.txt", "command": "str_replace", "old_str": "x", "new_str": "y"}));
    let extras = edit_extras(&obs);
    assert_eq!(extras.path, format!("{}//d.txt", ws.root));
    assert_eq!(
        extras
            .diff
            .as_deref()
            .map(|d| d.replace(&ws.root, "/workspace")),
        Some("--- /workspace//d.txt\n+++ /workspace//d.txt\n@@ -1 +1 @@\n-x\n+y".to_owned())
    );
    assert_eq!(extras.old_content.as_deref(), Some("x"));
    assert_eq!(extras.new_content.as_deref(), Some("y"));
    assert!(
        ws.content(&obs)
            .starts_with("The file /workspace/d.txt has been edited.")
    );
    let obs = ws.edit(json!({"path": "/workspace/d.txt", "command": "view"}));
    assert_eq!(edit_extras(&obs).diff.as_deref(), Some(""));
}

#[test]
fn create_hands_new_files_to_the_owner() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let ws = Workspace::new();
    let ctx = FileContext {
        owner: Some((777, 778)),
        ..ws.ctx()
    };
    let args: FileEditArgs =
        ws.args(json!({"path": "/workspace/c.txt", "command": "create", "file_text": "x"}));
    ws.editor.edit(&args, &ctx);
    let meta = fs::metadata(Path::new(&ws.root).join("c.txt")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (777, 778));
}
