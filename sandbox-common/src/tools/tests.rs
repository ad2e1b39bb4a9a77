//! Unit tests of `tools.rs`.

use serde_json::json;

use super::*;

fn action(tool: &str, args: Value) -> Result<ToolAction, ToolCallError> {
    let Value::Object(map) = args else { panic!() };
    sandbox_tool_action(tool, &ToolArgs::new(tool, map)).expect("a sandbox tool")
}

#[test]
fn a_bash_timeout_is_a_hard_one_and_input_goes_to_the_running_program() {
    let call = action(EXECUTE_BASH, json!({"command": "make", "timeout": 90})).unwrap();
    let ActionKind::Run(run) = &call.kind else {
        panic!("{call:?}")
    };
    assert!(run.blocking && !run.is_input);
    assert_eq!(call.timeout, Some(90.0));

    let call = action(EXECUTE_BASH, json!({"command": "C-c", "is_input": "true"})).unwrap();
    let ActionKind::Run(run) = &call.kind else {
        panic!("{call:?}")
    };
    assert!(run.is_input && !run.blocking);
    assert_eq!(call.timeout, None);
}

#[test]
fn the_editor_views_through_a_read_and_edits_through_an_edit() {
    let view = action(
        STR_REPLACE_EDITOR,
        json!({"command": "view", "path": "/w/a.py", "view_range": [1, 3]}),
    )
    .unwrap();
    assert!(matches!(&view.kind, ActionKind::Read(r) if r.view_range == Some(vec![1, 3])));
    let edit = action(
        STR_REPLACE_EDITOR,
        json!({"command": "insert", "path": "/w/a.py", "insert_line": "2", "new_str": "x"}),
    )
    .unwrap();
    assert!(matches!(&edit.kind, ActionKind::Edit(e) if e.insert_line == Some(json!("2"))));
}

#[test]
fn other_tools_are_not_the_sandbox_s_and_bad_arguments_say_what_to_fix() {
    assert!(sandbox_tool_action("think", &ToolArgs::new("think", Map::new())).is_none());
    assert_eq!(
        action(EXECUTE_IPYTHON_CELL, json!({})).unwrap_err().0,
        "Missing required argument \"code\" in tool call execute_ipython_cell"
    );
    assert_eq!(
        action(EXECUTE_BASH, json!({"command": "ls", "is_input": 3}))
            .unwrap_err()
            .0,
        "Invalid argument \"is_input\" in tool call execute_bash: must be `true` or `false`."
    );
    let names: Vec<&str> = sandbox_tools(false).iter().map(|t| t.name).collect();
    assert_eq!(names, [EXECUTE_BASH, STR_REPLACE_EDITOR]);
}
