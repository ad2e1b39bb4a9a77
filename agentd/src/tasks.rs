//! The agent's task list (OpenHands' `task_tracker` tool): a `task_tracking` action is answered
//! on the host, never in the sandbox. `plan` replaces the list and writes it as `TASKS.md` in
//! the session directory (and the controller keeps it in the state, `extra_data.task_list`);
//! `view` reads the file back. The texts are the reference's.

use std::path::Path;

use protocol::action::TaskTrackingArgs;
use protocol::observation::{ErrorExtras, TaskTrackingExtras};
use protocol::{Observation, ObservationKind};
use serde_json::Value;

/// The file a `plan` writes in the session directory.
pub(crate) const TASKS_FILE: &str = "TASKS.md";

/// A task list as `TASKS.md` holds it.
fn markdown(tasks: &[Value]) -> String {
    let mut text = String::from("# Task List\n\n");
    for (i, task) in tasks.iter().enumerate() {
        let field = |key: &str| task.get(key).and_then(Value::as_str).unwrap_or_default();
        let icon = match field("status") {
            "in_progress" => "🔄",
            "done" => "✅",
            _ => "⏳",
        };
        text.push_str(&format!(
            "{}. {icon} {}\n{}\n",
            i + 1,
            field("title"),
            field("notes")
        ));
    }
    text
}

fn answer(kind: ObservationKind, content: String) -> Observation {
    let mut observation = Observation::new(kind, content.clone());
    observation.message = content;
    observation
}

/// The answer to `args`, with `dir` the session directory (`None`: nothing is written, and
/// there is no list to view).
pub(crate) fn track(args: &TaskTrackingArgs, dir: Option<&Path>) -> Observation {
    let extras = |task_list: Vec<Value>| {
        ObservationKind::TaskTracking(TaskTrackingExtras {
            command: args.command.clone(),
            task_list,
        })
    };
    let path = dir.map(|d| d.join(TASKS_FILE));
    let shown = path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    match args.command.as_str() {
        "plan" => {
            if let Some(path) = &path
                && let Err(e) = std::fs::write(path, markdown(&args.task_list))
            {
                return answer(
                    ObservationKind::Error(ErrorExtras::default()),
                    format!("Failed to write task list to session directory {shown}: {e}"),
                );
            }
            answer(
                extras(args.task_list.clone()),
                format!(
                    "Task list has been updated with {} items. Stored in session directory: {shown}",
                    args.task_list.len()
                ),
            )
        }
        "view" => {
            let text = match path.as_ref().map(std::fs::read_to_string) {
                Some(Ok(text)) => text,
                Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => format!(
                    "Failed to read the task list from session directory {shown}. Error: {e}"
                ),
                _ => "No task list found. Use the \"plan\" command to create one.".to_string(),
            };
            answer(extras(Vec::new()), text)
        }
        other => answer(extras(Vec::new()), format!("Unknown command: {other}")),
    }
}

/// The tasks of a `plan` call as the reference normalises them (`id` `task-{i}` from 1,
/// `title` `Untitled task`, `status` `todo`, `notes` `""`), or the reference's error text.
pub(crate) fn normalize(task_list: Option<&Value>) -> Result<Vec<Value>, String> {
    let Some(list) = task_list else {
        return Err(
            "Missing required argument \"task_list\" for \"plan\" command in tool call task_tracker"
                .to_string(),
        );
    };
    let Value::Array(items) = list else {
        return Err(format!(
            "Invalid format for \"task_list\". Expected a list but got {}.",
            type_name(list)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let Value::Object(task) = item else {
                return Err(format!(
                    "Unexpected task format in task_list: {}. Each task should be a dictionary.",
                    type_name(item)
                ));
            };
            let text = |key: &str, default: String| {
                task.get(key)
                    .and_then(Value::as_str)
                    .map_or(default, str::to_string)
            };
            Ok(serde_json::json!({
                "id": text("id", format!("task-{}", i + 1)),
                "title": text("title", "Untitled task".to_string()),
                "status": text("status", "todo".to_string()),
                "notes": text("notes", String::new()),
            }))
        })
        .collect()
}

/// Python's name of a JSON value's type, as the reference's messages say it.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<class 'NoneType'>",
        Value::Bool(_) => "<class 'bool'>",
        Value::Number(n) if n.is_f64() => "<class 'float'>",
        Value::Number(_) => "<class 'int'>",
        Value::String(_) => "<class 'str'>",
        Value::Array(_) => "<class 'list'>",
        Value::Object(_) => "<class 'dict'>",
    }
}

/// The action's message (the reference's).
pub(crate) fn message(tasks: usize) -> String {
    match tasks {
        0 => "Clearing the task list.".to_string(),
        1 => "Managing 1 task item.".to_string(),
        n => format!("Managing {n} task items."),
    }
}

#[cfg(test)]
mod tests;
