//! The `task_tracker` tool: a plan kept in the state and in the session's `TASKS.md`, viewed
//! back by the model; answered on the host.

use protocol::{Event, ObservationKind};
use serde_json::json;
use testkit::Reply;

use super::{run_scripted, session_dir, session_events, state, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_plans_its_tasks_and_views_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let fake = run_scripted(
        dir.path(),
        dir.path(),
        [
            Reply::tool_calls([(
                "task_tracker",
                json!({"command": "plan", "task_list": [
                    {"id": "1", "title": "Read the code", "status": "done"},
                    {"title": "Fix the bug", "status": "in_progress", "notes": "parser.rs"}
                ]}),
            )]),
            Reply::tool_calls([(
                "task_tracker",
                json!({"command": "plan", "task_list": "oops"}),
            )]),
            Reply::tool_calls([("task_tracker", json!({"command": "view"}))]),
            Reply::finish("planned"),
        ],
        "Plan it.",
        "[agent]\ntask_tracker = true\n",
        &[],
    )
    .await;
    const LIST: &str = "# Task List\n\n1. ✅ Read the code\n\n2. 🔄 Fix the bug\nparser.rs\n";
    let file = session_dir(dir.path()).join("TASKS.md");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), LIST);
    let answers: Vec<(String, String)> = session_events(dir.path())
        .iter()
        .filter_map(|e| match e {
            Event::Observation(o) => match &o.kind {
                ObservationKind::TaskTracking(x) => Some((x.command.clone(), o.content.clone())),
                ObservationKind::Error(_) => Some(("error".to_string(), o.content.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [
            (
                "plan".to_string(),
                format!(
                    "Task list has been updated with 2 items. Stored in session directory: {}",
                    file.display()
                )
            ),
            (
                "error".to_string(),
                "Invalid format for \"task_list\". Expected a list but got <class 'str'>."
                    .to_string()
            ),
            ("view".to_string(), LIST.to_string()),
        ]
    );
    let state = state(dir.path());
    assert_eq!(state["extra_data"]["task_list"][1]["id"], "task-2");
    assert_eq!(state["extra_data"]["task_list"][1]["notes"], "parser.rs");
    // The model read the list as the view's result.
    let requests = fake.requests();
    let last = requests[3]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(text(last), LIST);
}
