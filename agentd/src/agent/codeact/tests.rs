//! Unit tests of `agent/codeact/mod.rs`.

use super::*;
use crate::llm::LlmConfig;
use protocol::action::CmdRunArgs;
use protocol::{EventSource, ToolCallMetadata};
use serde_json::json;

/// An answer with three bash calls, of which only the first was recorded before the run
/// was killed: the resumed agent plays the other two before asking the model again.
#[tokio::test]
async fn a_resumed_agent_plays_the_unplayed_calls_of_the_last_answer_first() {
    let response = json!({
        "id": "r1", "model": "m", "created": 0,
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "three steps",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "execute_bash", "arguments": "{\"command\": \"echo 1\"}"}},
                {"id": "b", "type": "function", "function": {"name": "execute_bash", "arguments": "{\"command\": \"echo 2\"}"}},
                {"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{\"command\": \"echo 3\"}"}}
            ]}}]
    });
    let history = EventStream::in_memory();
    let mut first = Action::from(ActionKind::Run(CmdRunArgs::new("echo 1")));
    first.tool_call_metadata = Some(ToolCallMetadata {
        function_name: "execute_bash".into(),
        tool_call_id: "a".into(),
        model_response: response,
        total_calls_in_response: 3,
    });
    history.add(first, EventSource::Agent).unwrap();

    // The model is unreachable: a step that asked it would fail.
    let llm = Llm::new(LlmConfig::new("m", "http://127.0.0.1:9/v1")).unwrap();
    let mut agent = CodeActAgent::new(llm, CodeActConfig::default()).unwrap();
    let state = State::new("s", 10, None);
    for (id, command) in [("b", "echo 2"), ("c", "echo 3")] {
        let action = agent.step(&state, &history).await.unwrap().action;
        let ActionKind::Run(run) = &action.kind else {
            panic!("{action:?}")
        };
        assert_eq!(run.command, command);
        assert_eq!(action.tool_call_metadata.as_ref().unwrap().tool_call_id, id);
        history.add(action, EventSource::Agent).unwrap();
    }
}
