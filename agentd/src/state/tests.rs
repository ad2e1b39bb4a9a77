//! Unit tests of `state.rs`.

use super::*;

#[test]
fn save_and_load_round_trip_and_leave_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STATE_FILE);
    let mut state = State::new("s1", 30, Some(2.5));
    state.agent_state = AgentState::Error;
    state.iteration = 7;
    state.budget.record(0.25);
    state.start_id = 3;
    state.end_id = Some(41);
    state.last_error = Some("RuntimeError: boom".to_string());
    state.metrics = serde_json::json!({"accumulated_cost": 0.25});
    state.outputs.insert("answer".into(), 42.into());
    state.extra_data.insert("k".into(), "v".into());
    state.resume_count = 2;
    state.save(&path, &Default::default()).unwrap();
    state.iteration = 8;
    state.save(&path, &Default::default()).unwrap();

    assert_eq!(State::load(&path).unwrap(), state);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from(STATE_FILE)]);
}

#[test]
fn a_minimal_file_loads_with_defaults_and_garbage_is_a_format_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STATE_FILE);
    std::fs::write(
        &path,
        r#"{"session_id": "s", "agent_state": "running", "iteration": 1, "max_iterations": 5}"#,
    )
    .unwrap();
    let state = State::load(&path).unwrap();
    assert_eq!(state.agent_state, AgentState::Running);
    assert_eq!(state.budget, Budget::default());
    assert_eq!(state.end_id, None);

    std::fs::write(&path, "{not json").unwrap();
    assert!(matches!(State::load(&path), Err(StateError::Format { .. })));
    assert!(matches!(
        State::load(&dir.path().join("missing.json")),
        Err(StateError::Io { .. })
    ));
}

#[test]
fn the_budget_adds_only_what_the_running_total_grew_by() {
    let mut budget = Budget {
        max_per_task: Some(1.0),
        ..Budget::default()
    };
    budget.record(0.25);
    budget.record(0.25);
    budget.record(0.5);
    assert_eq!(budget.spent, 0.5);
    assert!(!budget.exhausted());
    // A restarted LLM client counts from zero again.
    budget.record(0.2);
    assert!((budget.spent - 0.7).abs() < 1e-9);
    budget.record(0.5);
    assert!((budget.spent - 1.0).abs() < 1e-9);
    assert!(budget.exhausted());
}

#[test]
fn secret_values_are_masked_in_the_saved_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    let mut state = State::new("s", 5, None);
    state.last_error = Some("RuntimeError: bad token pw-98765".into());
    state
        .outputs
        .insert("list".into(), serde_json::json!(["pw-98765"]));
    let secret = crate::secrets::Secret::new("PW", "pw-98765".into(), "").unwrap();
    state
        .save(&path, &crate::secrets::SecretMask::new(&[secret]))
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("pw-98765"), "{text}");
    let loaded = State::load(&path).unwrap();
    assert_eq!(
        loaded.last_error.as_deref(),
        Some("RuntimeError: bad token <secret_hidden>")
    );
}
