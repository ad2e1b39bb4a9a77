//! Unit tests of `render.rs`.

use super::*;

fn obs(json: &str) -> Observation {
    serde_json::from_str(json).unwrap()
}

/// `run ls -l (empty ws)` from the reference exchanges.
const RUN_OK: &str = r#"{"message": "Command `ls -l` executed with exit code 0.", "observation": "run",
        "content": "total 0", "extras": {"command": "ls -l", "metadata": {"exit_code": 0, "pid": -1,
        "username": "root", "hostname": "sandbox", "working_dir": "/workspace",
        "py_interpreter_path": "/usr/bin/python", "prefix": "",
        "suffix": "\n[The command completed with exit code 0.]"}, "hidden": false}, "success": true}"#;

/// `run hard timeout 2.5 loop`, shortened suffix.
const RUN_TIMEOUT: &str = r#"{"message": "x", "observation": "run", "content": "1\n2",
        "extras": {"command": "loop", "metadata": {"exit_code": -1, "pid": -1, "username": null,
        "hostname": null, "working_dir": null, "py_interpreter_path": null, "prefix": "",
        "suffix": "\n[The command timed out after 2.5 seconds.]"}, "hidden": false}, "success": false}"#;

fn run_with_code(code: i64) -> Observation {
    obs(&RUN_OK.replace("\"exit_code\": 0", &format!("\"exit_code\": {code}")))
}

#[test]
fn run_text_and_status() {
    let ok = obs(RUN_OK);
    assert_eq!(ok.exit_code(), Some(0));
    assert_eq!(
        ok.display_text(),
        "total 0\n[The command completed with exit code 0.]"
    );
    assert_eq!(ok.cli_status(), 0);
    assert!(!ok.is_error());

    let timeout = obs(RUN_TIMEOUT);
    assert_eq!(timeout.exit_code(), Some(-1));
    assert_eq!(timeout.cli_status(), exit_status::TIMED_OUT);

    assert_eq!(run_with_code(127).cli_status(), 127);
    assert_eq!(run_with_code(255).cli_status(), 255);
    assert_eq!(run_with_code(256).cli_status(), 1);
    assert_eq!(run_with_code(-2).cli_status(), 1);
}

#[test]
fn prefix_is_shown_before_the_content() {
    let json = RUN_OK.replace(
        r#""prefix": """#,
        r#""prefix": "[Below is the output of the previous command.]\n""#,
    );
    assert!(
        obs(&json)
            .display_text()
            .starts_with("[Below is the output of the previous command.]\ntotal 0")
    );
}

#[test]
fn error_observation() {
    let err = obs(
        r#"{"message": "ERROR_BINARY_FILE", "observation": "error", "content": "ERROR_BINARY_FILE", "extras": {"error_id": ""}}"#,
    );
    assert!(err.is_error());
    assert_eq!(err.exit_code(), None);
    assert_eq!(err.cli_status(), exit_status::FAILURE);
    assert_eq!(err.display_text(), "ERROR_BINARY_FILE");
}

#[test]
fn write_shows_its_message() {
    let write = obs(
        r#"{"message": "I wrote to the file /workspace/f.txt.", "observation": "write", "content": "", "extras": {"path": "/workspace/f.txt"}}"#,
    );
    assert_eq!(
        write.display_text(),
        "I wrote to the file /workspace/f.txt."
    );
    assert_eq!(write.cli_status(), 0);
}
