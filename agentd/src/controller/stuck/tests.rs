//! Unit tests of `controller/stuck.rs`.

use super::*;
use protocol::action::{CmdRunArgs, IPythonRunCellArgs, MessageArgs};
use protocol::observation::{CmdOutputExtras, ErrorExtras, IPythonRunCellExtras};
use protocol::{CmdOutputMetadata, ToolCallMetadata};

fn run(command: &str) -> Event {
    let mut a = Action::from(ActionKind::Run(CmdRunArgs::new(command)));
    a.source = Some(EventSource::Agent);
    Event::Action(a)
}

fn obs(kind: ObservationKind, content: &str) -> Observation {
    Observation {
        source: Some(EventSource::Environment),
        ..Observation::new(kind, content)
    }
}

fn output(command: &str, content: &str, exit_code: i64, pid: i64) -> Event {
    Event::Observation(obs(
        ObservationKind::Run(CmdOutputExtras {
            command: command.to_string(),
            metadata: CmdOutputMetadata {
                exit_code,
                pid,
                ..CmdOutputMetadata::default()
            },
            hidden: false,
            full_output_path: None,
        }),
        content,
    ))
}

fn error(content: &str) -> Event {
    Event::Observation(obs(ObservationKind::Error(ErrorExtras::default()), content))
}

fn message(source: EventSource, content: &str) -> Event {
    let mut a = Action::from(ActionKind::Message(MessageArgs {
        content: content.to_string(),
        ..MessageArgs::default()
    }));
    a.source = Some(source);
    Event::Action(a)
}

fn ipython(code: &str) -> Event {
    let mut a = Action::from(ActionKind::RunIpython(IPythonRunCellArgs::new(code)));
    a.source = Some(EventSource::Agent);
    Event::Action(a)
}

fn cell_output(content: &str) -> Event {
    Event::Observation(obs(
        ObservationKind::RunIpython(IPythonRunCellExtras {
            code: String::new(),
            image_urls: None,
        }),
        content,
    ))
}

/// Numbers the events (and gives each a fresh tool call), as a stream would.
fn history(events: Vec<Event>) -> Vec<Arc<Event>> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            let meta = ToolCallMetadata {
                function_name: "f".into(),
                tool_call_id: format!("call_{i}"),
                model_response: serde_json::Value::Null,
                total_calls_in_response: 1,
            };
            match &mut e {
                Event::Action(a) => {
                    a.id = Some(i as i64);
                    a.tool_call_metadata = Some(meta);
                }
                Event::Observation(o) => {
                    o.id = Some(i as i64);
                    o.cause = Some(i as i64 - 1);
                    o.tool_call_metadata = Some(meta);
                }
            }
            Arc::new(e)
        })
        .collect()
}

fn repeat(times: usize, pair: impl Fn(usize) -> Vec<Event>) -> Vec<Event> {
    (0..times).flat_map(pair).collect()
}

#[test]
fn the_same_action_and_observation_four_times_is_a_loop_whatever_the_pid() {
    let events = repeat(4, |i| vec![run("ls"), output("ls", "a b", 0, i as i64)]);
    assert_eq!(
        detect(&history(events)),
        Some(LoopKind::RepeatingActionObservation)
    );
    let three = repeat(3, |_| vec![run("ls"), output("ls", "a b", 0, 1)]);
    assert_eq!(detect(&history(three)), None);
}

#[test]
fn other_output_or_exit_code_or_command_is_no_loop() {
    let content = repeat(4, |i| vec![run("ls"), output("ls", &format!("{i}"), 0, 1)]);
    assert_eq!(detect(&history(content)), None);
    let exit = repeat(4, |i| vec![run("ls"), output("ls", "a", i as i64 % 2, 1)]);
    assert_eq!(detect(&history(exit)), None);
    let command = repeat(4, |i| {
        let c = format!("ls {}", i % 3);
        vec![run(&c), output(&c, "a", 0, 1)]
    });
    assert_eq!(detect(&history(command)), None);
}

#[test]
fn the_same_action_failing_three_times_is_a_loop() {
    let events = repeat(3, |i| vec![run("make"), error(&format!("failed {i}"))]);
    assert_eq!(
        detect(&history(events)),
        Some(LoopKind::RepeatingActionError)
    );
    let different = repeat(3, |i| vec![run(&format!("make {i}")), error("failed")]);
    assert_eq!(detect(&history(different)), None);
}

#[test]
fn the_same_ipython_syntax_error_three_times_is_a_loop() {
    let unterminated = "  Cell In[1], line 1\n    print('a)\n          ^\n\
             SyntaxError: unterminated string literal (detected at line 1)\n\
             [Jupyter current working directory: /w]\n[Jupyter Python interpreter: /py]";
    let events = repeat(3, |_| vec![ipython("print('a)"), cell_output(unterminated)]);
    assert_eq!(
        detect(&history(events)),
        Some(LoopKind::RepeatingActionError)
    );

    let comma = "Cell In[1], line 3\n    f(a b)\n      ^\nline\nmore\n\
             SyntaxError: invalid syntax. Perhaps you forgot a comma?\n\
             [Jupyter current working directory: /w]\n[Jupyter Python interpreter: /py]";
    let events = repeat(3, |_| vec![ipython("f(a b)"), cell_output(comma)]);
    assert_eq!(
        detect(&history(events)),
        Some(LoopKind::RepeatingActionError)
    );

    let fine = "1\n[Jupyter current working directory: /w]\n[Jupyter Python interpreter: /py]";
    let events = repeat(3, |_| vec![ipython("print(1)"), cell_output(fine)]);
    assert_eq!(detect(&history(events)), None);
}

#[test]
fn repeating_edits_compare_their_first_three_lines() {
    let edit = |tail: &str| ipython(&format!("edit_file_by_replace(\n'f.py',\n'old',\n{tail}"));
    let events = repeat(3, |i| vec![edit(&format!("'new {i}')")), error("no match")]);
    assert_eq!(
        detect(&history(events)),
        Some(LoopKind::RepeatingActionError)
    );
}

#[test]
fn the_same_agent_message_three_times_without_an_observation_is_a_monologue() {
    let events = vec![
        message(EventSource::User, "task"),
        message(EventSource::Agent, "thinking..."),
        message(EventSource::User, "go on"),
        message(EventSource::Agent, "thinking..."),
        message(EventSource::Agent, "thinking..."),
    ];
    assert_eq!(detect(&history(events)), Some(LoopKind::Monologue));

    let observed = vec![
        message(EventSource::Agent, "thinking..."),
        message(EventSource::Agent, "thinking..."),
        run("ls"),
        output("ls", "a", 0, 1),
        message(EventSource::Agent, "thinking..."),
    ];
    assert_eq!(detect(&history(observed)), None);

    let varied = vec![
        message(EventSource::Agent, "thinking..."),
        message(EventSource::Agent, "thinking more..."),
        message(EventSource::Agent, "thinking..."),
    ];
    assert_eq!(detect(&history(varied)), None);
}

#[test]
fn two_pairs_alternating_three_times_is_a_loop() {
    let events = repeat(3, |_| {
        vec![
            run("cd a"),
            output("cd a", "", 0, 1),
            run("cd .."),
            output("cd ..", "", 0, 1),
        ]
    });
    let mut broken = events.clone();
    assert_eq!(
        detect(&history(events)),
        Some(LoopKind::ActionObservationPattern)
    );

    broken[8] = run("cd b");
    broken[9] = output("cd b", "", 0, 1);
    assert_eq!(detect(&history(broken)), None);
}

#[test]
fn empty_agent_messages_in_a_row_are_a_loop() {
    let events = vec![
        run("ls"),
        output("ls", "a", 0, 1),
        message(EventSource::Agent, ""),
        message(EventSource::User, "Please use a tool to proceed"),
        message(EventSource::Agent, " "),
        message(EventSource::User, "Please use a tool to proceed"),
        message(EventSource::Agent, "\n"),
    ];
    assert_eq!(detect(&history(events)), Some(LoopKind::EmptyResponse));
}

#[test]
fn a_check_reads_only_the_newest_window_of_the_runs_history() {
    let stream = EventStream::in_memory();
    for (i, event) in repeat(4, |_| vec![run("ls"), output("ls", "a", 0, 1)])
        .into_iter()
        .enumerate()
    {
        stream
            .add(
                event,
                if i % 2 == 0 {
                    EventSource::Agent
                } else {
                    EventSource::Environment
                },
            )
            .unwrap();
    }
    assert_eq!(
        check(&stream, 0),
        Some(LoopKind::RepeatingActionObservation)
    );
    // The loop is before this run's history.
    assert_eq!(check(&stream, 4), None);
    // ... or older than the window.
    for i in 0..WINDOW {
        stream
            .add(run(&format!("echo {i}")), EventSource::Agent)
            .unwrap();
        stream
            .add(
                output(&format!("echo {i}"), "", 0, 1),
                EventSource::Environment,
            )
            .unwrap();
    }
    assert_eq!(check(&stream, 0), None);
    assert_eq!(check(&EventStream::in_memory(), 0), None);
}
