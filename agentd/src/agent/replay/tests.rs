//! Unit tests of `agent/replay.rs`.

use super::*;
use protocol::action::MessageArgs;

const RECORDED: &str = r#"[
        {"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "user", "action": "message",
         "args": {"content": "list files"}},
        {"id": 1, "timestamp": "2025-01-01T00:00:01", "source": "agent", "action": "run",
         "cause": 0, "llm_metrics": {"accumulated_cost": 0.5},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "call_1",
                                "model_response": {}, "total_calls_in_response": 1},
         "args": {"command": "ls", "thought": "look first"}},
        {"id": 2, "source": "environment", "cause": 1, "observation": "run", "content": "a",
         "extras": {"command": "ls", "metadata": {"exit_code": 0, "pid": 7, "username": null,
                    "hostname": null, "working_dir": null, "py_interpreter_path": null,
                    "prefix": "", "suffix": ""}, "hidden": false}},
        {"id": 3, "source": "agent", "action": "null", "args": {}},
        {"id": 4, "source": "agent", "action": "finish", "args": {"final_thought": "done"}}
    ]"#;

#[tokio::test]
async fn replays_agent_actions_stripped_of_their_envelope_then_finishes() {
    let events: Vec<Event> = serde_json::from_str(RECORDED).unwrap();
    let mut agent = ReplayAgent::from_events(&events);
    assert_eq!(agent.remaining(), 2);
    let state = State::new("s", 10, None);
    let history = EventStream::in_memory();

    let run = agent.step(&state, &history).await.unwrap().action;
    assert_eq!(
        (run.id, run.timestamp.as_deref(), run.source, run.cause),
        (None, None, None, None)
    );
    assert_eq!(run.llm_metrics, None);
    assert_eq!(run.tool_call_metadata.unwrap().tool_call_id, "call_1");
    let ActionKind::Run(args) = run.kind else {
        panic!()
    };
    assert_eq!(
        (args.command.as_str(), args.thought.as_str()),
        ("ls", "look first")
    );

    let finish = agent.step(&state, &history).await.unwrap().action;
    let ActionKind::Finish(args) = finish.kind else {
        panic!()
    };
    assert_eq!(args.final_thought, "done");
    let after = agent.step(&state, &history).await.unwrap().action;
    assert!(matches!(after.kind, ActionKind::Finish(_)));
    assert_eq!(agent.remaining(), 0);
}

#[tokio::test]
async fn the_recorded_system_message_is_recorded_again_not_replayed_as_a_step() {
    use protocol::action::{CmdRunArgs, SystemMessageArgs};
    let system = Action::from(ActionKind::System(SystemMessageArgs {
        content: "You are an agent.".into(),
        ..SystemMessageArgs::default()
    }));
    let run = Action::from(ActionKind::Run(CmdRunArgs::new("ls")));
    let mut agent = ReplayAgent::new([system.clone(), run]);
    assert_eq!(agent.system_message(), Some(system.clone()));
    assert_eq!(agent.remaining(), 1);

    // On resume, the recorded system message in the history is not a replayed step.
    let history = EventStream::in_memory();
    history.add(system, EventSource::Agent).unwrap();
    let state = State::new("s", 10, None);
    let first = agent.step(&state, &history).await.unwrap().action;
    assert!(matches!(first.kind, ActionKind::Run(_)), "{first:?}");
}

#[tokio::test]
async fn a_resumed_replay_continues_after_the_actions_already_in_the_history() {
    let events: Vec<Event> = serde_json::from_str(RECORDED).unwrap();
    let history = EventStream::in_memory();
    let task = Action::from(ActionKind::Message(MessageArgs {
        content: "list files".into(),
        ..MessageArgs::default()
    }));
    history.add(task, EventSource::User).unwrap();
    let Event::Action(first) = &events[1] else {
        panic!()
    };
    history
        .add(fresh(first.clone()), EventSource::Agent)
        .unwrap();

    let mut agent = ReplayAgent::from_events(&events);
    let state = State::new("s", 10, None);
    let next = agent.step(&state, &history).await.unwrap().action;
    assert!(matches!(next.kind, ActionKind::Finish(ref f) if f.final_thought == "done"));
}
