//! Unit tests of `agent/scripted.rs`.

use super::*;
use protocol::action::CmdRunArgs;

#[tokio::test]
async fn a_list_plays_in_order_then_finishes_and_a_closure_is_asked_each_time() {
    let state = State::new("s", 10, None);
    let history = EventStream::in_memory();
    let mut ls = Action::from(ActionKind::Run(CmdRunArgs::new("ls")));
    ls.id = Some(9);
    let mut agent = ScriptedAgent::new([ls]);
    let first = agent.step(&state, &history).await.unwrap().action;
    assert_eq!(first.id, None);
    assert!(matches!(first.kind, ActionKind::Run(_)));
    let second = agent.step(&state, &history).await.unwrap().action;
    assert!(matches!(second.kind, ActionKind::Finish(_)));

    let mut calls = 0;
    let mut agent = ScriptedAgent::from_fn(move |state, _| {
        calls += 1;
        Action::from(ActionKind::Run(CmdRunArgs::new(format!(
            "echo {calls} {}",
            state.iteration
        ))))
    })
    .named("Echo");
    assert_eq!(agent.name(), "Echo");
    let ActionKind::Run(run) = agent.step(&state, &history).await.unwrap().action.kind else {
        panic!()
    };
    assert_eq!(run.command, "echo 1 0");
}
