use protocol::ObservationKind;
use protocol::action::TaskTrackingArgs;
use serde_json::json;

use super::{message, normalize, track};

#[test]
fn a_plan_is_written_as_tasks_md_and_viewed_back() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = normalize(Some(&json!([
        {"title": "Read the code", "status": "done"},
        {"title": "Fix the bug", "status": "in_progress", "notes": "in parser.rs"},
        {}
    ])))
    .unwrap();
    assert_eq!(
        tasks[2],
        json!({"id": "task-3", "title": "Untitled task", "status": "todo", "notes": ""})
    );
    let plan = TaskTrackingArgs {
        command: "plan".to_string(),
        task_list: tasks,
        thought: String::new(),
    };
    let answer = track(&plan, Some(dir.path()));
    assert!(matches!(answer.kind, ObservationKind::TaskTracking(_)));
    assert_eq!(
        answer.content,
        format!(
            "Task list has been updated with 3 items. Stored in session directory: {}",
            dir.path().join("TASKS.md").display()
        )
    );
    let view = TaskTrackingArgs {
        command: "view".to_string(),
        ..TaskTrackingArgs::default()
    };
    assert_eq!(
        track(&view, Some(dir.path())).content,
        "# Task List\n\n1. ✅ Read the code\n\n2. 🔄 Fix the bug\nin parser.rs\n3. ⏳ Untitled task\n\n"
    );
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(
        track(&view, Some(empty.path())).content,
        "No task list found. Use the \"plan\" command to create one."
    );
    let other = TaskTrackingArgs {
        command: "erase".to_string(),
        ..TaskTrackingArgs::default()
    };
    assert_eq!(track(&other, None).content, "Unknown command: erase");
}

#[test]
fn bad_task_lists_get_the_reference_messages() {
    assert_eq!(
        normalize(None).unwrap_err(),
        "Missing required argument \"task_list\" for \"plan\" command in tool call task_tracker"
    );
    assert_eq!(
        normalize(Some(&json!("a"))).unwrap_err(),
        "Invalid format for \"task_list\". Expected a list but got <class 'str'>."
    );
    assert_eq!(
        normalize(Some(&json!([1]))).unwrap_err(),
        "Unexpected task format in task_list: <class 'int'>. Each task should be a dictionary."
    );
    assert_eq!(message(0), "Clearing the task list.");
    assert_eq!(message(1), "Managing 1 task item.");
    assert_eq!(message(4), "Managing 4 task items.");
}
