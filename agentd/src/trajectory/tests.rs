//! Unit tests of `trajectory.rs`.

use super::*;

fn events(json: &str) -> Vec<Event> {
    serde_json::from_str(json).unwrap()
}

const RECORDED: &str = r#"[
        {"id": 0, "source": "user", "action": "message", "args": {"content": "say hi"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "echo hi"}},
        {"id": 2, "source": "environment", "cause": 1, "observation": "run", "content": "hi",
         "extras": {"command": "echo hi", "metadata": {"exit_code": 0, "pid": 7, "username": "a",
                    "hostname": "h1", "working_dir": "/w", "py_interpreter_path": null,
                    "prefix": "", "suffix": ""}, "hidden": false}},
        {"id": 3, "source": "agent", "action": "finish", "args": {"final_thought": "done"}}
    ]"#;

/// [`RECORDED`] with each `(from, to)` of `changes` replaced.
fn recorded_with(changes: &[(&str, &str)]) -> Vec<Event> {
    let json = changes
        .iter()
        .fold(RECORDED.to_owned(), |json, (from, to)| {
            json.replace(from, to)
        });
    events(&json)
}

#[test]
fn the_same_outcome_on_another_host_is_no_difference() {
    let recorded = events(RECORDED);
    let replayed = recorded_with(&[("\"pid\": 7", "\"pid\": 9"), ("h1", "h2")]);
    assert_eq!(compare(&recorded, &replayed), vec![]);
    assert_eq!(task(&recorded).as_deref(), Some("say hi"));
    assert_eq!(agent_actions(&recorded).len(), 2);
}

#[test]
fn the_same_cell_output_from_another_interpreter_is_no_difference() {
    let cell = |python: &str, out: &str| {
        events(&format!(
            r#"[{{"id": 1, "source": "agent", "action": "run_ipython", "args": {{"code": "print(1)"}}}},
               {{"id": 2, "source": "environment", "cause": 1, "observation": "run_ipython",
                 "content": "{out}\n[Jupyter current working directory: /w]\n[Jupyter Python interpreter: {python}]",
                 "extras": {{"code": "print(1)", "image_urls": null}}}}]"#
        ))
    };
    let local = cell("/usr/bin/python3", "1");
    assert_eq!(compare(&local, &cell("/opt/venv/bin/python3", "1")), vec![]);
    assert_eq!(compare(&local, &cell("/usr/bin/python3", "2")).len(), 1);
}

#[test]
fn other_content_or_exit_code_is_reported() {
    let recorded = events(RECORDED);
    let replayed = recorded_with(&[
        ("\"content\": \"hi\"", "\"content\": \"ho\""),
        ("\"exit_code\": 0", "\"exit_code\": 1"),
    ]);
    let diffs = compare(&recorded, &replayed);
    assert_eq!(diffs.len(), 1);
    assert_eq!(diffs[0].step, 0);
    assert_eq!(diffs[0].action, "run echo hi");
    assert_eq!(diffs[0].recorded, "run (exit 0): hi");
    assert_eq!(diffs[0].replayed, "run (exit 1): ho");
}

#[test]
fn save_and_load_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let recorded: Vec<Arc<Event>> = events(RECORDED).into_iter().map(Arc::new).collect();
    save(&path, &recorded, &Default::default()).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.len(), 4);
    assert_eq!(loaded[1], *recorded[1]);
}

#[test]
fn secret_values_are_masked_in_a_saved_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let recorded: Vec<Arc<Event>> = events(RECORDED).into_iter().map(Arc::new).collect();
    let secret = crate::secrets::Secret::new("X", "echo hi".into(), "").unwrap();
    save(
        &path,
        &recorded,
        &crate::secrets::SecretMask::new(&[secret]),
    )
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("echo hi"), "{text}");
    assert!(text.contains("<secret_hidden>"));
    assert_eq!(load(&path).unwrap().len(), 4);
}
