//! Unit tests of `runtime/sandbox.rs`.

use protocol::action::{CmdRunArgs, ThinkArgs};

use super::*;

/// The controller shares a runtime between tasks and spawns its futures.
#[test]
fn runtime_and_its_futures_are_send() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<Runtime>();
    let config = RuntimeConfig::default();
    send(&Runtime::start(&config));
    #[allow(dead_code, reason = "only type-checked")]
    fn futures(runtime: &Runtime, action: &Action) {
        send(&runtime.execute(action));
        send(&runtime.health());
        send(&runtime.died());
    }
}

#[test]
fn runnable_actions_are_the_sandbox_ones() {
    assert!(ActionKind::Run(CmdRunArgs::new("ls")).is_runnable());
    assert!(!ActionKind::Think(ThinkArgs::default()).is_runnable());
}

#[test]
fn sandboxd_is_sent_the_action_without_its_host_records() {
    let mut action = Action::from(ActionKind::Run(CmdRunArgs::new("ls")));
    action.id = Some(4);
    action.tool_call_metadata = Some(protocol::ToolCallMetadata {
        function_name: "execute_bash".into(),
        tool_call_id: "call_4".into(),
        model_response: serde_json::json!({"id": "resp", "choices": []}),
        total_calls_in_response: 1,
    });
    action.llm_metrics = Some(serde_json::json!({"accumulated_cost": 0.5}));
    let sent = request(&action, Some(120.0));
    assert_eq!(sent.tool_call_metadata, None);
    assert_eq!(sent.llm_metrics, None);
    assert_eq!(sent.timeout, Some(120.0));
    assert_eq!(
        sent,
        Action {
            tool_call_metadata: None,
            llm_metrics: None,
            timeout: Some(120.0),
            ..action.clone()
        }
    );
    action.timeout = Some(5.0);
    assert_eq!(request(&action, Some(120.0)).timeout, Some(5.0));
    assert_eq!(request(&action, None).timeout, Some(5.0));
    action.timeout = None;
    assert_eq!(request(&action, None).timeout, None);
}

#[test]
fn died_observations_say_so() {
    let obs = died(&SandboxDeath {
        summary: "sandboxd was killed by SIGKILL".into(),
        detail: "log".into(),
    });
    let ObservationKind::Error(extras) = &obs.kind else {
        panic!("not an error: {obs:?}");
    };
    assert_eq!(extras.error_id, error_id::SANDBOX_DIED);
    assert!(
        obs.content
            .contains("The sandbox died (sandboxd was killed by SIGKILL)")
    );
    assert!(!obs.content.contains("log"));
}
