//! Unit tests of `memory/view.rs`.

use protocol::action::{CmdRunArgs, MessageArgs};
use protocol::observation::AgentStateChangedExtras;

use super::*;
use crate::events::EventStream;

fn message(text: &str) -> Action {
    Action::from(ActionKind::Message(MessageArgs {
        content: text.to_string(),
        ..MessageArgs::default()
    }))
}

fn run(command: &str) -> Action {
    Action::from(ActionKind::Run(CmdRunArgs::new(command)))
}

fn condensation(args: CondensationArgs) -> Action {
    Action::from(ActionKind::Condensation(args))
}

/// Adds the agent's condensation with `args` to `stream`.
fn add_condensation(stream: &EventStream, args: CondensationArgs) {
    stream.add(condensation(args), EventSource::Agent).unwrap();
}

/// A condensation that forgets the ids `start..=end` and shows `summary` at offset 1.
fn forget_range(start: i64, end: i64, summary: &str) -> CondensationArgs {
    CondensationArgs {
        forgotten_events_start_id: Some(start),
        forgotten_events_end_id: Some(end),
        summary: Some(summary.into()),
        summary_offset: Some(1),
        ..CondensationArgs::default()
    }
}

/// Ten commands after a user message: ids 0 (message) and 1..=10 (runs).
fn stream() -> EventStream {
    let stream = EventStream::in_memory();
    stream.add(message("task"), EventSource::User).unwrap();
    for i in 1..=10 {
        stream
            .add(run(&format!("echo {i}")), EventSource::Agent)
            .unwrap();
    }
    stream
}

fn ids(view: &View) -> Vec<Option<i64>> {
    view.iter().map(Event::id).collect()
}

/// The view of `stream`, which must show the events `expected_ids` (`None`: the summary) and
/// the summary `summary`.
fn assert_view(stream: &EventStream, expected_ids: &[Option<i64>], summary: &str) -> View {
    let view = View::from_events(&stream.all());
    assert_eq!(ids(&view), expected_ids);
    assert_eq!(view.summary(), Some(summary));
    view
}

#[test]
fn a_history_without_condensations_is_its_own_view_minus_bookkeeping() {
    let stream = stream();
    stream
        .add(
            Observation::new(
                ObservationKind::AgentStateChanged(AgentStateChangedExtras {
                    agent_state: "running".into(),
                    reason: String::new(),
                }),
                "",
            ),
            EventSource::Environment,
        )
        .unwrap();
    let view = View::from_events(&stream.all());
    assert_eq!(view.len(), 11);
    assert!(!view.unhandled_condensation_request());
    assert_eq!(
        view.initial_user_message().map(|a| a.id),
        Some(Some(0)),
        "the first user message"
    );
}

#[test]
fn one_condensation_forgets_a_range_and_shows_its_summary_at_its_offset() {
    let stream = stream();
    add_condensation(&stream, forget_range(2, 6, "ran echo 2 to echo 6"));
    let view = assert_view(
        &stream,
        &[Some(0), None, Some(1), Some(7), Some(8), Some(9), Some(10)],
        "ran echo 2 to echo 6",
    );
    let Event::Observation(summary) = &view.events()[1].as_ref() else {
        panic!("the summary is an observation");
    };
    assert_eq!(summary.kind.type_name(), "condense");
    assert_eq!(summary.cause, Some(11), "caused by the condensation");
}

#[test]
fn two_condensations_forget_both_sets_and_the_newest_summary_wins() {
    let stream = stream();
    add_condensation(&stream, forget_range(1, 3, "first"));
    stream.add(message("more work"), EventSource::User).unwrap();
    add_condensation(
        &stream,
        CondensationArgs {
            forgotten_event_ids: Some(vec![4, 6, 8]),
            summary: Some("second".into()),
            summary_offset: Some(1),
            ..CondensationArgs::default()
        },
    );
    assert_view(
        &stream,
        &[Some(0), None, Some(5), Some(7), Some(9), Some(10), Some(12)],
        "second",
    );
}

#[test]
fn a_condensation_without_summary_only_forgets_and_the_first_message_is_kept_apart() {
    let stream = stream();
    add_condensation(
        &stream,
        CondensationArgs {
            forgotten_event_ids: Some(vec![0, 1, 2]),
            ..CondensationArgs::default()
        },
    );
    let view = View::from_events(&stream.all());
    assert_eq!(view.len(), 8);
    assert_eq!(view.summary(), None);
    assert!(view.initial_user_message().is_some(), "even when forgotten");
}

#[test]
fn a_condensation_request_is_pending_until_a_condensation_follows() {
    let stream = stream();
    stream
        .add(
            Action::from(ActionKind::CondensationRequest(Default::default())),
            EventSource::User,
        )
        .unwrap();
    let view = View::from_events(&stream.all());
    assert!(view.unhandled_condensation_request());
    assert_eq!(view.len(), 11, "the request itself is not shown");
    stream
        .add(
            condensation(CondensationArgs::default()),
            EventSource::Agent,
        )
        .unwrap();
    assert!(!View::from_events(&stream.all()).unhandled_condensation_request());
}

#[test]
fn hidden_commands_and_their_output_are_not_in_the_view() {
    let stream = EventStream::in_memory();
    let mut setup = CmdRunArgs::new("source .openhands/setup.sh");
    setup.hidden = true;
    let setup = stream
        .add(
            Action::from(ActionKind::Run(setup)),
            EventSource::Environment,
        )
        .unwrap();
    let output: Observation = serde_json::from_value(serde_json::json!({
        "observation": "run", "content": "set up", "cause": setup.id(),
        "extras": {"command": "source .openhands/setup.sh", "hidden": true,
                   "metadata": {"exit_code": 0, "pid": -1, "username": null, "hostname": null,
                                "working_dir": null, "py_interpreter_path": null,
                                "prefix": "", "suffix": ""}}
    }))
    .unwrap();
    stream.add(output, EventSource::Environment).unwrap();
    stream.add(message("task"), EventSource::User).unwrap();
    let view = View::from_events(&stream.all());
    let ids: Vec<Option<i64>> = view.iter().map(Event::id).collect();
    assert_eq!(ids, [Some(2)]);
}
