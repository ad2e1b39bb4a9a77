//! Unit tests of `display.rs`.

use super::*;

#[test]
fn actions_and_observations_read_well() {
    let action: Event = serde_json::from_str(
        r#"{"id": 3, "source": "agent", "action": "run",
                "args": {"command": "ls", "thought": "look around"}}"#,
    )
    .unwrap();
    assert_eq!(
        render(&action),
        "#3    agent run\n        (look around)\n        $ ls"
    );
    let obs: Event = serde_json::from_str(
        r#"{"id": 4, "source": "environment", "cause": 3, "observation": "run",
                "content": "a\nb", "extras": {"command": "ls", "metadata": {"exit_code": 0,
                "pid": -1, "username": null, "hostname": null, "working_dir": null,
                "py_interpreter_path": null, "prefix": "", "suffix": ""}, "hidden": false}}"#,
    )
    .unwrap();
    assert_eq!(
        render(&obs),
        "#4    env   run → exit 0\n        a\n        b"
    );
}

#[test]
fn long_output_is_summarised() {
    let long = "x".repeat(MAX_SHOWN + 10);
    assert!(shorten(&long).ends_with("[… 10 more characters in the event log]"));
}

#[test]
fn a_long_cell_shows_its_first_and_last_lines() {
    let code: Vec<String> = (1..=100).map(|n| format!("line {n}")).collect();
    let shown = shorten_code(&code.join("\n"));
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 31);
    assert_eq!(lines[0], "line 1");
    assert_eq!(lines[19], "line 20");
    assert_eq!(lines[20], "[… 70 more lines in the event log]");
    assert_eq!(lines[21], "line 91");
    assert_eq!(lines[30], "line 100");
    assert_eq!(shorten_code("a\nb"), "a\nb");
}
