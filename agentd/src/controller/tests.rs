//! Controller runs against an in-memory stream. The "runtime" here is test scaffolding: a task
//! that answers the agent's runnable actions with canned observations (the real runtimes are
//! tested on their own).

use std::sync::Arc;

use protocol::action::{CmdRunArgs, FinishArgs, MessageArgs, ThinkArgs};
use protocol::observation::CmdOutputExtras;
use protocol::{
    Action, ActionKind, AgentState, CmdOutputMetadata, Event, EventSource, Observation,
    ObservationKind, ToolCallMetadata,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::delegate::DELEGATE_INTERRUPTED;
use super::*;
use crate::agent::{AgentError, FatalKind, ReplayAgent, ScriptedAgent, Step};
use crate::llm::ErrorKind;

fn run(command: &str) -> Action {
    Action::from(ActionKind::Run(CmdRunArgs::new(command)))
}

fn think(thought: &str) -> Action {
    Action::from(ActionKind::Think(ThinkArgs {
        thought: thought.into(),
    }))
}

fn message(content: &str, wait_for_response: bool) -> Action {
    Action::from(ActionKind::Message(MessageArgs {
        content: content.into(),
        wait_for_response,
        ..MessageArgs::default()
    }))
}

fn finish() -> Action {
    Action::from(ActionKind::Finish(FinishArgs {
        final_thought: "done".into(),
        ..FinishArgs::default()
    }))
}

fn output(command: &str, content: &str, exit_code: i64) -> Observation {
    Observation {
        success: Some(exit_code == 0),
        ..Observation::new(
            ObservationKind::Run(CmdOutputExtras {
                command: command.into(),
                metadata: CmdOutputMetadata {
                    exit_code,
                    ..CmdOutputMetadata::default()
                },
                hidden: false,
                full_output_path: None,
            }),
            content,
        )
    }
}

/// `echo`s its command.
fn echo(action: &Action) -> Option<Observation> {
    match &action.kind {
        ActionKind::Run(run) => Some(output(&run.command, &run.command, 0)),
        _ => None,
    }
}

/// A stream holding the user's task.
fn stream_with_task() -> EventStream {
    let stream = EventStream::in_memory();
    stream
        .add(message("do the thing", false), EventSource::User)
        .unwrap();
    stream
}

/// Answers the agent's runnable actions with `answer` (none: left unanswered).
fn fake_runtime(
    stream: &EventStream,
    answer: impl Fn(&Action) -> Option<Observation> + Send + 'static,
) -> JoinHandle<()> {
    let mut events = stream.subscribe();
    let stream = stream.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let Event::Action(action) = &*event else {
                continue;
            };
            if action.source != Some(EventSource::Agent) || !action.kind.is_runnable() {
                continue;
            }
            if let Some(mut obs) = answer(action) {
                obs.cause = action.id;
                obs.tool_call_metadata = action.tool_call_metadata.clone();
                stream.add(obs, EventSource::Environment).unwrap();
            }
        }
    })
}

fn config() -> ControllerConfig {
    ControllerConfig::new("test-session")
}

/// An agent whose `n`th step (counted from 1) is `step(n)`.
fn numbered_steps<S: Into<Step>>(mut step: impl FnMut(i32) -> S + Send + 'static) -> ScriptedAgent {
    let mut n = 0;
    ScriptedAgent::from_fn(move |_, _| {
        n += 1;
        step(n)
    })
}

/// Runs `agent` on `stream` with `config` until the controller ends the run.
async fn run_to_end(
    stream: &EventStream,
    agent: Box<dyn crate::agent::Agent>,
    config: ControllerConfig,
) -> State {
    Controller::new(stream.clone(), agent, config)
        .run()
        .await
        .unwrap()
}

/// Asserts that the run ended in `agent_state` after `iteration` steps.
fn assert_ended(state: &State, agent_state: AgentState, iteration: u32) {
    assert_eq!(
        (state.agent_state, state.iteration),
        (agent_state, iteration),
        "the end state and the steps taken"
    );
}

/// `type` or `type:state` for state changes, per event.
fn kinds(stream: &EventStream) -> Vec<String> {
    stream
        .all()
        .iter()
        .map(|e| match &**e {
            Event::Observation(Observation {
                kind: ObservationKind::AgentStateChanged(x),
                ..
            }) => format!("state:{}", x.agent_state),
            other => other.type_name().to_string(),
        })
        .collect()
}

/// The agent states the run went through, in order.
fn states_entered(stream: &EventStream) -> Vec<String> {
    state_changes(stream)
        .into_iter()
        .map(|(state, _)| state)
        .collect()
}

fn state_changes(stream: &EventStream) -> Vec<(String, String)> {
    stream
        .all()
        .iter()
        .filter_map(|e| match &**e {
            Event::Observation(Observation {
                kind: ObservationKind::AgentStateChanged(x),
                ..
            }) => Some((x.agent_state.clone(), x.reason.clone())),
            _ => None,
        })
        .collect()
}

fn observations_of_type(stream: &EventStream, name: &str) -> Vec<Observation> {
    stream
        .all()
        .iter()
        .filter_map(|e| match &**e {
            Event::Observation(o) if o.kind.type_name() == name => Some(o.clone()),
            _ => None,
        })
        .collect()
}

/// Waits on `events` for the first event `pick` accepts.
async fn wait_for(
    events: &mut mpsc::UnboundedReceiver<Arc<Event>>,
    pick: impl Fn(&Event) -> bool,
) -> Arc<Event> {
    loop {
        let event = events.recv().await.unwrap();
        if pick(&event) {
            return event;
        }
    }
}

fn is_state(event: &Event, state: AgentState) -> bool {
    matches!(event, Event::Observation(Observation {
        kind: ObservationKind::AgentStateChanged(x), ..
    }) if x.agent_state == state.as_str())
}

#[tokio::test]
async fn a_scripted_run_goes_to_finished() {
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, echo);
    // Any `Box<dyn Agent + Send>` will do.
    let agent: Box<dyn crate::agent::Agent + Send> = Box::new(ScriptedAgent::new([
        run("ls"),
        think("hmm"),
        message("found it", false),
        finish(),
    ]));
    let state = run_to_end(&stream, agent, config()).await;

    assert_ended(&state, AgentState::Finished, 4);
    assert_eq!(state.last_error, None);
    assert_eq!(state.end_id, stream.latest_id());
    assert_eq!(
        kinds(&stream),
        [
            "message",
            "state:running",
            "run",
            "run",
            "think",
            "think",
            "message",
            "finish",
            "state:finished"
        ]
    );
    let events = stream.all();
    // The runtime's answer and the controller's answer to `think` point at their actions.
    assert_eq!(events[3].cause(), Some(2));
    let Event::Observation(logged) = &*events[5] else {
        panic!()
    };
    assert_eq!(
        (logged.cause, logged.content.as_str()),
        (Some(4), THOUGHT_LOGGED)
    );
    assert_eq!(events[2].source(), Some(EventSource::Agent));
    assert_eq!(events[1].source(), Some(EventSource::Environment));
}

#[tokio::test]
async fn the_iteration_limit_ends_the_run_in_error_with_the_reference_text() {
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, echo);
    let agent = numbered_steps(|n| run(&format!("echo {n}")));
    let config = ControllerConfig {
        max_iterations: 3,
        ..config()
    };
    let state = run_to_end(&stream, Box::new(agent), config).await;

    let text =
        "RuntimeError: Agent reached maximum iteration. Current iteration: 3, max iteration: 3";
    assert_ended(&state, AgentState::Error, 3);
    assert_eq!(state.last_error.as_deref(), Some(text));
    let errors = observations_of_type(&stream, "error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].content, text);
    assert_eq!(
        state_changes(&stream).last().unwrap(),
        &("error".to_string(), text.to_string())
    );
    assert_eq!(kinds(&stream).iter().filter(|k| *k == "run").count(), 6);
}

#[tokio::test]
async fn the_budget_limit_ends_the_run_in_error() {
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, echo);
    let agent = numbered_steps(|n| {
        let cost = 0.4 * f64::from(n);
        let mut action = run(&format!("echo {n}"));
        action.llm_metrics = Some(serde_json::json!({"accumulated_cost": cost}));
        Step {
            action,
            accumulated_cost: Some(cost),
        }
    });
    let config = ControllerConfig {
        max_budget_per_task: Some(1.0),
        ..config()
    };
    let state = run_to_end(&stream, Box::new(agent), config).await;

    assert_ended(&state, AgentState::Error, 3);
    assert_eq!(
        state.last_error.as_deref(),
        Some(
            "RuntimeError: Agent reached maximum budget for conversation.Current budget: 1.20, \
             max budget: 1.00"
        )
    );
    assert!((state.budget.spent - 1.2).abs() < 1e-9);
    assert_eq!(
        state.metrics["accumulated_cost"],
        serde_json::json!(0.4 * 3.0)
    );
}

async fn run_until_stuck(
    agent: ScriptedAgent,
    answer: impl Fn(&Action) -> Option<Observation> + Send + 'static,
) -> (State, EventStream) {
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, answer);
    let config = ControllerConfig {
        max_iterations: 50,
        ..config()
    };
    let state = run_to_end(&stream, Box::new(agent), config).await;
    (state, stream)
}

#[tokio::test]
async fn the_same_action_and_observation_four_times_is_stuck() {
    let (state, stream) = run_until_stuck(ScriptedAgent::from_fn(|_, _| run("ls")), |_| {
        Some(output("ls", "a b", 0))
    })
    .await;
    let reason = "AgentStuckInLoopError: Agent got stuck in a loop (repeating_action_observation)";
    assert_eq!(state.agent_state, AgentState::Error);
    assert_eq!(state.last_error.as_deref(), Some(reason));
    assert_eq!(state.iteration, 4);
    assert_eq!(state_changes(&stream).last().unwrap().1, reason);
}

#[tokio::test]
async fn the_same_action_failing_three_times_is_stuck() {
    let (state, _) = run_until_stuck(ScriptedAgent::from_fn(|_, _| run("make")), |_| {
        let mut error = output("make", "", 0);
        error.kind = ObservationKind::Error(Default::default());
        error.content = "sandbox error".into();
        Some(error)
    })
    .await;
    assert_eq!(
        state.last_error.as_deref(),
        Some("AgentStuckInLoopError: Agent got stuck in a loop (repeating_action_error)")
    );
    assert_eq!(state.iteration, 3);
}

#[tokio::test]
async fn the_same_message_three_times_is_a_monologue_even_headless() {
    let (state, stream) = run_until_stuck(
        ScriptedAgent::from_fn(|_, _| message("Shall I go on?", true)),
        echo,
    )
    .await;
    assert_eq!(
        state.last_error.as_deref(),
        Some("AgentStuckInLoopError: Agent got stuck in a loop (monologue)")
    );
    assert_eq!(state.iteration, 3);
    // Each question got the automatic reply.
    let replies = stream
        .all()
        .iter()
        .filter(|e| e.source() == Some(EventSource::User))
        .count();
    assert_eq!(replies, 1 + 3);
}

#[tokio::test]
async fn two_alternating_steps_are_stuck() {
    let agent = numbered_steps(|n| run(if n % 2 == 0 { "cd .." } else { "cd a" }));
    let (state, _) = run_until_stuck(agent, |_| Some(output("cd", "", 0))).await;
    // Each action also repeats with its observation 4 times ... but never 4 in a row: the
    // alternation is what catches it, after 6 steps.
    assert_eq!(
        state.last_error.as_deref(),
        Some(
            "AgentStuckInLoopError: Agent got stuck in a loop (repeating_action_observation_pattern)"
        )
    );
    assert_eq!(state.iteration, 6);
}

#[tokio::test]
async fn similar_but_different_steps_are_not_stuck() {
    let stream = stream_with_task();
    // Same command, but the output changes every time (a build making progress).
    let _runtime = fake_runtime(&stream, {
        let count = std::sync::atomic::AtomicUsize::new(0);
        move |_| {
            let n = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some(output("make", &format!("{n} files left"), 0))
        }
    });
    let mut script: Vec<Action> = (0..8).map(|_| run("make")).collect();
    script.extend([
        message("still working", false),
        message("still working.", false),
    ]);
    script.push(finish());
    let state = run_to_end(&stream, Box::new(ScriptedAgent::new(script)), config()).await;
    assert_eq!(
        state.agent_state,
        AgentState::Finished,
        "{:?}",
        state.last_error
    );
    assert_eq!(state.iteration, 11);
}

#[tokio::test]
async fn headless_runs_answer_a_waiting_message_and_go_on() {
    let stream = stream_with_task();
    let agent = ScriptedAgent::new([message("Which file?", true), finish()]);
    let state = run_to_end(&stream, Box::new(agent), config()).await;

    assert_eq!(state.agent_state, AgentState::Finished);
    assert_eq!(
        kinds(&stream),
        [
            "message",
            "state:running",
            "message",
            "state:awaiting_user_input",
            "message",
            "state:running",
            "finish",
            "state:finished"
        ]
    );
    let reply = stream.get(4).unwrap();
    let Event::Action(reply) = &*reply else {
        panic!()
    };
    assert_eq!(reply.source, Some(EventSource::User));
    let ActionKind::Message(reply) = &reply.kind else {
        panic!()
    };
    assert_eq!(
        reply.content,
        "Please continue on whatever approach you think is suitable.\nIf you think you have \
         solved the task, please finish the interaction.\nIMPORTANT: YOU SHOULD NEVER ASK FOR \
         HUMAN RESPONSE.\n"
    );
}

#[tokio::test]
async fn an_interactive_run_waits_for_the_user() {
    let stream = stream_with_task();
    let agent = ScriptedAgent::new([message("Which file?", true), finish()]);
    let config = ControllerConfig {
        headless: false,
        ..config()
    };
    let mut events = stream.subscribe();
    let controller = tokio::spawn(Controller::new(stream.clone(), Box::new(agent), config).run());
    wait_for(&mut events, |e| is_state(e, AgentState::AwaitingUserInput)).await;
    let waiting = stream.len();
    stream
        .add(message("main.rs", false), EventSource::User)
        .unwrap();
    let state = controller.await.unwrap().unwrap();
    assert_eq!(state.agent_state, AgentState::Finished);
    assert_eq!(
        kinds(&stream)[waiting..],
        ["message", "state:running", "finish", "state:finished"]
    );
}

#[tokio::test]
async fn a_paused_run_takes_no_step_until_resumed() {
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, echo);
    let (handle_tx, mut handle_rx) = mpsc::unbounded_channel::<ControllerHandle>();
    let mut handle: Option<ControllerHandle> = None;
    let mut script = vec![run("a"), run("b"), run("c"), finish()].into_iter();
    let agent = ScriptedAgent::from_fn(move |state, _| {
        if handle.is_none() {
            handle = handle_rx.try_recv().ok();
        }
        // The request comes while the agent is busy with its second step.
        if state.iteration == 2 {
            handle.as_ref().unwrap().pause();
        }
        script.next().unwrap_or_else(finish)
    });
    let controller = Controller::new(stream.clone(), Box::new(agent), config());
    let handle = controller.handle();
    handle_tx.send(handle.clone()).unwrap();
    let mut events = stream.subscribe();
    let run = tokio::spawn(controller.run());

    wait_for(&mut events, |e| is_state(e, AgentState::Paused)).await;
    // "b" was taken before the pause and still gets its observation; nothing follows it.
    let b = stream
        .all()
        .into_iter()
        .find(|e| matches!(&**e, Event::Action(Action { kind: ActionKind::Run(r), .. }) if r.command == "b"))
        .unwrap();
    let answered = |stream: &EventStream| stream.all().iter().any(|e| e.cause() == b.id());
    while !answered(&stream) {
        events.recv().await.unwrap();
    }
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    let paused_at = stream
        .all()
        .iter()
        .position(|e| is_state(e, AgentState::Paused))
        .unwrap();
    let after: Vec<_> = kinds(&stream)[paused_at + 1..].to_vec();
    assert!(after == ["run"] || after.is_empty(), "{after:?}");
    assert_eq!(kinds(&stream).iter().filter(|k| *k == "run").count(), 4);

    handle.resume();
    let state = run.await.unwrap().unwrap();
    assert_ended(&state, AgentState::Finished, 4);
    assert_eq!(
        states_entered(&stream),
        ["running", "paused", "running", "finished"]
    );
}

#[tokio::test]
async fn stop_is_final_and_answers_the_action_in_flight() {
    let stream = stream_with_task();
    // No runtime: the action is never answered.
    let agent = ScriptedAgent::new([run("sleep 1000"), finish()]);
    let controller = Controller::new(stream.clone(), Box::new(agent), config());
    let handle = controller.handle();
    let mut events = stream.subscribe();
    let run = tokio::spawn(controller.run());
    let action = wait_for(&mut events, |e| e.type_name() == "run").await;
    handle.stop();
    let state = run.await.unwrap().unwrap();
    handle.resume();

    assert_ended(&state, AgentState::Stopped, 1);
    let errors = observations_of_type(&stream, "error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].cause, action.id());
    assert_eq!(errors[0].content, NOT_EXECUTED_STOPPED);
    assert_eq!(
        kinds(&stream),
        ["message", "state:running", "run", "error", "state:stopped"]
    );
}

#[tokio::test]
async fn a_dead_sandbox_reported_through_the_handle_ends_the_run_in_error() {
    let stream = stream_with_task();
    let mut agent_action = run("make");
    agent_action.tool_call_metadata = Some(ToolCallMetadata {
        function_name: "execute_bash".into(),
        tool_call_id: "call_7".into(),
        model_response: serde_json::Value::Null,
        total_calls_in_response: 1,
    });
    let agent = ScriptedAgent::new([agent_action]);
    let controller = Controller::new(stream.clone(), Box::new(agent), config());
    let handle = controller.handle();
    let mut events = stream.subscribe();
    let run = tokio::spawn(controller.run());
    let action = wait_for(&mut events, |e| e.type_name() == "run").await;
    handle.fail("AgentRuntimeDisconnectedError: the sandbox died");
    let state = run.await.unwrap().unwrap();

    assert_eq!(state.agent_state, AgentState::Error);
    assert_eq!(
        state.last_error.as_deref(),
        Some("AgentRuntimeDisconnectedError: the sandbox died")
    );
    let errors = observations_of_type(&stream, "error");
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0].cause, action.id());
    assert_eq!(errors[0].content, NOT_EXECUTED_ERROR);
    assert_eq!(
        errors[0].tool_call_metadata.as_ref().unwrap().tool_call_id,
        "call_7"
    );
    assert_eq!(
        errors[1].content,
        "AgentRuntimeDisconnectedError: the sandbox died"
    );
}

#[tokio::test]
async fn an_error_observation_from_the_runtime_is_just_the_next_thing_to_react_to() {
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, |_| {
        let mut error = output("", "", 0);
        error.kind = ObservationKind::Error(Default::default());
        error.content = "the sandbox is gone".into();
        Some(error)
    });
    let agent = ScriptedAgent::new([run("ls"), finish()]);
    let state = run_to_end(&stream, Box::new(agent), config()).await;
    assert_eq!(state.agent_state, AgentState::Finished);
}

#[tokio::test]
async fn a_malformed_answer_is_shown_to_the_agent_and_a_fatal_one_ends_the_run() {
    let stream = stream_with_task();
    let mut n = 0;
    let agent = ScriptedAgent::from_try_fn(move |_, history| {
        n += 1;
        match n {
            1 => Err(AgentError::Malformed("no tool call".into())),
            2 => {
                let last = history.last(1).pop().unwrap();
                assert_eq!(last.type_name(), "error");
                Err(AgentError::Fatal {
                    kind: FatalKind::Llm(ErrorKind::Connection),
                    message: "connection refused".into(),
                })
            }
            _ => unreachable!(),
        }
    });
    let state = run_to_end(&stream, Box::new(agent), config()).await;
    assert_eq!(state.agent_state, AgentState::Error);
    assert_eq!(
        state.last_error.as_deref(),
        Some("APIConnectionError: connection refused")
    );
    assert_eq!(
        kinds(&stream),
        ["message", "state:running", "error", "error", "state:error"]
    );
}

#[tokio::test]
async fn the_state_is_saved_after_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, echo);
    let path = dir.path().join(STATE_FILE);
    let seen = path.clone();
    let agent = ScriptedAgent::from_fn(move |state, _| {
        if state.iteration > 1 {
            // The previous step is on disk.
            assert_eq!(State::load(&seen).unwrap().iteration, state.iteration - 1);
        }
        if state.iteration == 3 {
            finish()
        } else {
            run(&format!("echo {}", state.iteration))
        }
    });
    let config = ControllerConfig {
        session_dir: Some(dir.path().to_path_buf()),
        ..config()
    };
    let state = Controller::new(stream, Box::new(agent), config)
        .run()
        .await
        .unwrap();
    assert_eq!(State::load(&path).unwrap(), state);
}

#[tokio::test]
async fn a_resumed_run_continues_counting_and_re_executes_the_unanswered_action() {
    let dir = tempfile::tempdir().unwrap();
    let config = ControllerConfig {
        session_dir: Some(dir.path().to_path_buf()),
        ..config()
    };

    // First agentd: "b" is sent but its observation never comes; then the process is killed.
    {
        let stream = EventStream::open(dir.path()).unwrap();
        stream
            .add(message("do the thing", false), EventSource::User)
            .unwrap();
        let runtime = fake_runtime(&stream, |a| match &a.kind {
            ActionKind::Run(r) if r.command == "b" => None,
            _ => echo(a),
        });
        let agent = ScriptedAgent::new([run("a"), run("b")]);
        let mut events = stream.subscribe();
        let controller =
            tokio::spawn(Controller::new(stream.clone(), Box::new(agent), config.clone()).run());
        wait_for(&mut events, |e| {
            matches!(e, Event::Action(Action { kind: ActionKind::Run(r), .. }) if r.command == "b")
        })
        .await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        controller.abort();
        runtime.abort();
        let _ = controller.await;
        let _ = runtime.await;
    }
    let saved = State::load(&dir.path().join(STATE_FILE)).unwrap();
    assert_eq!(
        (saved.iteration, saved.agent_state),
        (2, AgentState::Running)
    );
    let before = EventStream::open(dir.path()).unwrap().all();
    drop(before.clone());

    // Second agentd.
    let stream = EventStream::open(dir.path()).unwrap();
    assert_eq!(stream.len(), before.len());
    let pending = pending_action(&stream).unwrap();
    assert!(
        matches!(&*pending, Event::Action(Action { kind: ActionKind::Run(r), .. }) if r.command == "b")
    );
    let runtime_stream = stream.clone();
    let _runtime = fake_runtime(&stream, echo);
    let agent = ScriptedAgent::new([run("c"), finish()]);
    let controller =
        Controller::resume(dir.path(), stream.clone(), Box::new(agent), config).unwrap();
    assert_eq!(
        controller.pending_action().and_then(|e| e.id()),
        pending.id()
    );
    // The caller hands the pending action to its runtime.
    let Event::Action(action) = &*pending else {
        panic!()
    };
    let mut answer = echo(action).unwrap();
    answer.cause = action.id;
    runtime_stream
        .add(answer, EventSource::Environment)
        .unwrap();
    let state = controller.run().await.unwrap();

    assert_ended(&state, AgentState::Finished, 4);
    assert_eq!(state.resume_count, 1);
    assert_eq!(state.start_id, 0);
    let all = stream.all();
    // Nothing was added twice: the log is the old one plus the new events, numbered on.
    assert_eq!(all[..before.len()], before[..]);
    for (i, event) in all.iter().enumerate() {
        assert_eq!(event.id(), Some(i as i64));
    }
    let commands: Vec<String> = all
        .iter()
        .filter_map(|e| match &**e {
            Event::Action(Action {
                kind: ActionKind::Run(r),
                ..
            }) => Some(r.command.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(commands, ["a", "b", "c"]);
    assert_eq!(
        kinds(&stream)[before.len()..],
        [
            "run",
            "state:running",
            "run",
            "run",
            "finish",
            "state:finished"
        ]
    );
    let reopened = EventStream::open(dir.path()).unwrap();
    assert_eq!(reopened.len(), stream.len());
    assert_eq!(State::load(&dir.path().join(STATE_FILE)).unwrap(), state);

    // A finished run stays finished.
    let again = Controller::resume(
        dir.path(),
        reopened.clone(),
        Box::new(ScriptedAgent::new([run("d")])),
        ControllerConfig::new("x"),
    )
    .unwrap()
    .run()
    .await
    .unwrap();
    assert_eq!(again.agent_state, AgentState::Finished);
    assert_eq!(reopened.len(), stream.len());
}

#[tokio::test]
async fn a_run_in_error_can_be_resumed_with_a_higher_limit() {
    let dir = tempfile::tempdir().unwrap();
    let stream = EventStream::open(dir.path()).unwrap();
    stream
        .add(message("do the thing", false), EventSource::User)
        .unwrap();
    let _runtime = fake_runtime(&stream, echo);
    let config = ControllerConfig {
        session_dir: Some(dir.path().to_path_buf()),
        max_iterations: 2,
        ..config()
    };
    let mut script = vec![run("a"), run("b"), run("c"), finish()].into_iter();
    let agent = ScriptedAgent::from_fn(move |_, _| script.next().unwrap());
    let state = Controller::new(stream.clone(), Box::new(agent), config.clone())
        .run()
        .await
        .unwrap();
    assert_ended(&state, AgentState::Error, 2);

    let agent = ScriptedAgent::new([run("c"), finish()]);
    let config = ControllerConfig {
        max_iterations: 10,
        ..config
    };
    let controller =
        Controller::resume(dir.path(), stream.clone(), Box::new(agent), config).unwrap();
    assert!(controller.pending_action().is_none());
    let state = controller.run().await.unwrap();
    assert_ended(&state, AgentState::Finished, 4);
    assert_eq!(state.last_error, None);
    assert_eq!(
        states_entered(&stream),
        ["running", "error", "running", "finished"]
    );
}

#[test]
fn pending_action_is_the_last_unanswered_runnable_agent_action() {
    let stream = stream_with_task();
    assert!(pending_action(&stream).is_none());
    let a = stream.add(run("a"), EventSource::Agent).unwrap();
    assert_eq!(pending_action(&stream).and_then(|e| e.id()), a.id());
    let mut answer = output("a", "", 0);
    answer.cause = a.id();
    stream.add(answer, EventSource::Environment).unwrap();
    assert!(pending_action(&stream).is_none());
    stream.add(think("x"), EventSource::Agent).unwrap();
    assert!(pending_action(&stream).is_none());
    let b = stream.add(run("b"), EventSource::Agent).unwrap();
    stream
        .add(message("hello?", false), EventSource::User)
        .unwrap();
    assert_eq!(pending_action(&stream).and_then(|e| e.id()), b.id());
}

#[tokio::test]
async fn a_replayed_trajectory_observes_what_the_recording_did() {
    let recorded: Vec<Event> = serde_json::from_str(
        r#"[
        {"id": 0, "source": "user", "action": "message", "args": {"content": "say hi"}},
        {"id": 1, "source": "environment", "observation": "agent_state_changed", "content": "",
         "extras": {"agent_state": "running", "reason": ""}},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": "echo hi"},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c1",
                                "model_response": {}, "total_calls_in_response": 1}},
        {"id": 3, "source": "environment", "cause": 2, "observation": "run", "content": "echo hi",
         "extras": {"command": "echo hi", "metadata": {"exit_code": 0, "pid": 7, "username": "a",
                    "hostname": "h1", "working_dir": "/w", "py_interpreter_path": null,
                    "prefix": "", "suffix": ""}, "hidden": false}},
        {"id": 4, "source": "agent", "action": "finish", "args": {"final_thought": "done"}}
    ]"#,
    )
    .unwrap();
    let stream = EventStream::in_memory();
    let task = crate::trajectory::task(&recorded).unwrap();
    stream
        .add(message(&task, false), EventSource::User)
        .unwrap();
    let _runtime = fake_runtime(&stream, echo);
    let agent = ReplayAgent::from_events(&recorded);
    let state = run_to_end(&stream, Box::new(agent), config()).await;
    assert_eq!(state.agent_state, AgentState::Finished);
    let replayed: Vec<Event> = stream.all().iter().map(|e| (**e).clone()).collect();
    assert_eq!(crate::trajectory::compare(&recorded, &replayed), vec![]);
    let Event::Action(run) = &replayed[2] else {
        panic!()
    };
    assert_eq!(run.tool_call_metadata.as_ref().unwrap().tool_call_id, "c1");
}

/// An agent that takes as long as the test wants: each step waits for the test to send its
/// action.
#[derive(Debug)]
struct SlowAgent {
    actions: mpsc::UnboundedReceiver<Action>,
}

impl crate::agent::Agent for SlowAgent {
    fn name(&self) -> &str {
        "SlowAgent"
    }

    fn step<'a>(&'a mut self, _: &'a State, _: &'a EventStream) -> crate::agent::StepFuture<'a> {
        Box::pin(async move { Ok(self.actions.recv().await.unwrap().into()) })
    }

    fn reset(&mut self) {}
}

#[tokio::test]
async fn a_pause_waits_for_the_step_in_flight_and_a_stop_cancels_it() {
    let stream = stream_with_task();
    let _runtime = fake_runtime(&stream, echo);
    let (actions, rx) = mpsc::unbounded_channel();
    let controller = Controller::new(
        stream.clone(),
        Box::new(SlowAgent { actions: rx }),
        config(),
    );
    let handle = controller.handle();
    let mut events = stream.subscribe();
    let running = tokio::spawn(controller.run());

    // The controller announces `running`, then waits in the agent's first step.
    wait_for(&mut events, |e| is_state(e, AgentState::Running)).await;
    handle.pause();
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
    assert_eq!(kinds(&stream), ["message", "state:running"]);
    actions.send(run("a")).unwrap();
    wait_for(&mut events, |e| is_state(e, AgentState::Paused)).await;
    let a = stream.get(2).unwrap();
    assert!(
        matches!(&*a, Event::Action(Action { kind: ActionKind::Run(r), .. }) if r.command == "a")
    );

    handle.resume();
    wait_for(&mut events, |e| is_state(e, AgentState::Running)).await;
    // The second step waits for an action that never comes.
    handle.stop();
    let state = running.await.unwrap().unwrap();
    assert_ended(&state, AgentState::Stopped, 2);
    assert_eq!(
        states_entered(&stream),
        ["running", "paused", "running", "stopped"]
    );
    assert_eq!(kinds(&stream).iter().filter(|k| *k == "run").count(), 2);
    assert!(observations_of_type(&stream, "error").is_empty());
}

/// Answers `recall` actions as a session's memory does (no microagents beyond the built-in
/// ones, an empty workspace context).
fn fake_memory(stream: &EventStream) -> JoinHandle<()> {
    let mut events = stream.subscribe();
    let stream = stream.clone();
    let memory = crate::recall::Memory::new(Default::default(), Default::default(), true).unwrap();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let Event::Action(action) = &*event else {
                continue;
            };
            if let crate::recall::Recalled::Answer(answer) = memory.recall(action) {
                stream.add(answer, EventSource::Environment).unwrap();
            }
        }
    })
}

fn recall_config() -> ControllerConfig {
    ControllerConfig {
        recall: true,
        ..config()
    }
}

/// `recall_type` of each `recall` action, in order.
fn recall_types(stream: &EventStream) -> Vec<String> {
    stream
        .all()
        .iter()
        .filter_map(|e| match &**e {
            Event::Action(Action {
                kind: ActionKind::Recall(args),
                source: Some(EventSource::User),
                ..
            }) => Some(args.recall_type.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn each_user_message_gets_a_recall_and_the_agent_waits_for_its_answer() {
    let stream = EventStream::in_memory();
    let _memory = fake_memory(&stream);
    let _runtime = fake_runtime(&stream, echo);
    let agent = numbered_steps(|n| match n {
        1 => message("which way?", true),
        2 => run("git status"),
        _ => finish(),
    });
    let controller = Controller::new(stream.clone(), Box::new(agent), recall_config());
    stream
        .add(message("use git please", false), EventSource::User)
        .unwrap();
    let state = controller.run().await.unwrap();
    assert_eq!(state.agent_state, AgentState::Finished);
    assert_eq!(recall_types(&stream), ["workspace_context", "knowledge"]);
    assert_eq!(
        kinds(&stream),
        [
            "message",
            "state:running",
            "recall",
            "recall",
            "message",
            "state:awaiting_user_input",
            "message",
            "recall",
            "state:running",
            "null",
            "run",
            "run",
            "finish",
            "state:finished"
        ]
    );
    // The workspace context answers the first recall (its cause), the auto-reply's recall
    // triggers nothing: a null observation.
    let events = stream.all();
    let Event::Observation(first) = &*events[3] else {
        panic!("{:?}", events[3])
    };
    assert_eq!(first.cause, events[2].id());
    assert!(matches!(&first.kind, ObservationKind::Recall(e)
        if e.recall_type == "workspace_context" && e.microagent_knowledge[0]["name"] == "git"));
    let Event::Observation(null) = &*events[9] else {
        panic!()
    };
    assert_eq!(null.cause, events[7].id());
}

#[tokio::test]
async fn recall_is_off_unless_asked_for() {
    let stream = EventStream::in_memory();
    let controller = Controller::new(
        stream.clone(),
        Box::new(ScriptedAgent::new([finish()])),
        config(),
    );
    stream
        .add(message("git", false), EventSource::User)
        .unwrap();
    controller.run().await.unwrap();
    assert!(recall_types(&stream).is_empty());
}

#[tokio::test]
async fn a_resumed_run_answers_what_recall_still_owed_and_says_it_failed_before() {
    let dir = tempfile::tempdir().unwrap();
    let stream = EventStream::open(dir.path()).unwrap();
    let config = ControllerConfig {
        session_dir: Some(dir.path().to_path_buf()),
        max_iterations: 1,
        ..recall_config()
    };
    // No memory: the first recall stays unanswered; the run is stopped while it waits.
    let controller = Controller::new(
        stream.clone(),
        Box::new(ScriptedAgent::new([finish()])),
        config.clone(),
    );
    let handle = controller.handle();
    stream.add(message("hi", false), EventSource::User).unwrap();
    let waiting = tokio::spawn(controller.run());
    while recall_types(&stream).is_empty() {
        tokio::task::yield_now().await;
    }
    handle.fail("killed");
    let state = waiting.await.unwrap().unwrap();
    assert_eq!(state.agent_state, AgentState::Error);
    // An error ends the run without answering the recall (it is no tool call).
    let recall_id = stream.all()[2].id();
    assert!(
        !stream
            .all()
            .iter()
            .any(|e| matches!(&**e, Event::Observation(o) if o.cause == recall_id)),
        "{:?}",
        kinds(&stream)
    );

    let controller = Controller::resume(
        dir.path(),
        stream.clone(),
        Box::new(ScriptedAgent::new([finish()])),
        ControllerConfig {
            max_iterations: 5,
            ..config
        },
    )
    .unwrap();
    assert!(controller.resumed_after_error());
    let owed = controller.pending_recall().and_then(|e| e.id());
    assert_eq!(owed, recall_id);
    let _memory = fake_memory(&stream);
    // The memory answers the owed recall when it starts (as the session hands it over).
    let memory = crate::recall::Memory::new(Default::default(), Default::default(), true).unwrap();
    let Event::Action(recall) = &*stream.all()[2] else {
        panic!()
    };
    let crate::recall::Recalled::Answer(answer) = memory.recall(recall) else {
        panic!()
    };
    stream.add(answer, EventSource::Environment).unwrap();
    stream
        .add(message(BACK_ON_TRACK, false), EventSource::User)
        .unwrap();
    let state = controller.run().await.unwrap();
    assert_eq!(state.agent_state, AgentState::Finished);
    assert_eq!(recall_types(&stream), ["workspace_context", "knowledge"]);
}

#[tokio::test]
async fn a_user_message_that_never_got_its_recall_gets_it_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let stream = EventStream::open(dir.path()).unwrap();
    let config = ControllerConfig {
        session_dir: Some(dir.path().to_path_buf()),
        ..recall_config()
    };
    // A state saved before the task was seen (killed right after it was recorded).
    State::new("test-session", 10, None)
        .save(&dir.path().join(STATE_FILE), &Default::default())
        .unwrap();
    stream.add(message("hi", false), EventSource::User).unwrap();
    let _memory = fake_memory(&stream);
    let controller = Controller::resume(
        dir.path(),
        stream.clone(),
        Box::new(ScriptedAgent::new([finish()])),
        config,
    )
    .unwrap();
    assert!(!controller.resumed_after_error());
    assert!(controller.pending_recall().is_none());
    let state = controller.run().await.unwrap();
    assert_eq!(state.agent_state, AgentState::Finished);
    assert_eq!(recall_types(&stream), ["workspace_context"]);
}

#[tokio::test]
async fn a_run_killed_while_a_delegate_worked_answers_the_delegation_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let stream = EventStream::open(dir.path()).unwrap();
    stream
        .add(
            Action::from(ActionKind::Message(MessageArgs {
                content: "task".to_string(),
                ..MessageArgs::default()
            })),
            EventSource::User,
        )
        .unwrap();
    let delegate = stream
        .add(
            Action::from(ActionKind::Delegate(protocol::action::DelegateArgs {
                agent: "ReadOnlyAgent".to_string(),
                ..Default::default()
            })),
            EventSource::Agent,
        )
        .unwrap();
    // The delegate's own step, cut off.
    stream.add(think("looking"), EventSource::Agent).unwrap();
    let mut saved = State::new("test-session", 10, None);
    saved.agent_state = AgentState::Running;
    saved.iteration = 2;
    saved
        .save(
            &dir.path().join(STATE_FILE),
            &crate::secrets::SecretMask::default(),
        )
        .unwrap();
    drop(stream);

    let stream = EventStream::open(dir.path()).unwrap();
    let agent = ScriptedAgent::new([finish()]);
    let controller =
        Controller::resume(dir.path(), stream.clone(), Box::new(agent), config()).unwrap();
    let answers: Vec<Observation> = stream
        .all()
        .iter()
        .filter_map(|e| match &**e {
            Event::Observation(o) if o.cause == delegate.id() => Some(o.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].content, DELEGATE_INTERRUPTED);
    let state = controller.run().await.unwrap();
    assert_ended(&state, AgentState::Finished, 3);
}
