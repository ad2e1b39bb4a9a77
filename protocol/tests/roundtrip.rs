//! The wire types decode what OpenHands' client sends and encode what it reads.

use protocol::action::{ActionKind, CmdRunArgs, ThinkArgs};
use protocol::observation::{CmdOutputExtras, CmdOutputMetadata};
use protocol::runtime_api::{RuntimeAccess, SessionResponse, SessionStatus, StartResponse};
use protocol::{Action, ActionType, Observation, ObservationKind};

#[test]
fn decodes_the_clients_run_action_and_ignores_unknown_keys() {
    let json = r#"{"message": "Running command: ls -l", "action": "run",
      "args": {"command": "ls -l", "is_input": false, "thought": "", "blocking": false, "is_static": false,
               "cwd": null, "hidden": false, "confirmation_state": "confirmed", "security_risk": -1,
               "some_future_arg": 3},
      "timeout": 120.0, "whatever": 1}"#;
    let action: Action = serde_json::from_str(json).unwrap();
    assert_eq!(action.timeout, Some(120.0));
    assert_eq!(action.kind, ActionKind::Run(CmdRunArgs::new("ls -l")));
}

#[test]
fn integer_timeout_and_defaults() {
    let action: Action =
        serde_json::from_str(r#"{"action": "read", "args": {"path": "x"}, "timeout": 2}"#).unwrap();
    assert_eq!(action.timeout, Some(2.0));
    let ActionKind::Read(args) = action.kind else {
        panic!("not a read")
    };
    assert_eq!((args.start, args.end), (0, -1));
}

#[test]
fn run_observation_has_the_reference_shape() {
    let obs = Observation {
        id: None,
        timestamp: None,
        source: None,
        message: "Command `true` executed with exit code 0.".into(),
        cause: Some(7),
        kind: ObservationKind::Run(CmdOutputExtras {
            command: "true".into(),
            metadata: CmdOutputMetadata::default(),
            hidden: false,
            full_output_path: None,
        }),
        tool_call_metadata: None,
        llm_metrics: None,
        content: String::new(),
        success: Some(true),
    };
    let value = serde_json::to_value(&obs).unwrap();
    assert_eq!(
        value,
        serde_json::json!({
            "message": "Command `true` executed with exit code 0.",
            "cause": 7,
            "observation": "run",
            "content": "",
            "extras": {"command": "true", "metadata": {"exit_code": -1, "pid": -1, "username": null,
                "hostname": null, "working_dir": null, "py_interpreter_path": null, "prefix": "",
                "suffix": ""}, "hidden": false},
            "success": true
        })
    );
    let back: Observation = serde_json::from_value(value).unwrap();
    assert_eq!(back, obs);
}

#[test]
fn events_are_told_apart_by_their_type_key() {
    use protocol::{AgentState, Event};
    let action: protocol::Event = serde_json::from_str(
        r#"{"id": 3, "source": "agent", "action": "finish", "args": {"final_thought": "done"}}"#,
    )
    .unwrap();
    assert!(matches!(action, Event::Action(_)));
    assert_eq!((action.id(), action.type_name()), (Some(3), "finish"));
    let obs: Event = serde_json::from_str(
        r#"{"id": 4, "cause": 3, "source": "environment", "observation": "agent_state_changed",
            "content": "", "extras": {"agent_state": "finished", "reason": ""}}"#,
    )
    .unwrap();
    assert_eq!(
        (obs.cause(), obs.type_name()),
        (Some(3), "agent_state_changed")
    );
    let back: protocol::Event =
        serde_json::from_str(&serde_json::to_string(&obs).unwrap()).unwrap();
    assert_eq!(back, obs);
    assert_eq!(
        AgentState::parse("awaiting_user_input"),
        Some(AgentState::AwaitingUserInput)
    );
    assert_eq!(AgentState::RateLimited.as_str(), "rate_limited");
    let recall: Event = serde_json::from_str(
        r#"{"observation": "recall", "content": "", "extras": {"recall_type": "knowledge",
            "microagent_knowledge": [{"name": "git", "trigger": "git", "content": "..."}]}}"#,
    )
    .unwrap();
    assert_eq!(recall.type_name(), "recall");
    let summary: Event = serde_json::from_str(
        r#"{"observation": "condense", "content": "the summary", "extras": {}}"#,
    )
    .unwrap();
    assert_eq!(summary.type_name(), "condense");
}

#[test]
fn runnable_actions_are_the_sandbox_ones() {
    let runnable: Vec<&str> = ActionType::ALL
        .into_iter()
        .filter(|t| t.is_runnable())
        .map(ActionType::as_str)
        .collect();
    assert_eq!(
        runnable,
        [
            "run",
            "run_ipython",
            "browse",
            "browse_interactive",
            "read",
            "write",
            "edit",
            "call_tool_mcp"
        ]
    );
    assert!(ActionKind::Run(CmdRunArgs::new("ls")).is_runnable());
    assert!(!ActionKind::Think(ThinkArgs::default()).is_runnable());
}

#[test]
fn mcp_actions_and_observations_have_the_reference_s_shape() {
    let action: protocol::Event = serde_json::from_str(
        r#"{"id": 5, "action": "call_tool_mcp", "args": {"name": "fetch", "arguments": {"url": "http://x"}}}"#,
    )
    .unwrap();
    let protocol::Event::Action(action) = &action else {
        panic!()
    };
    let ActionKind::Mcp(args) = &action.kind else {
        panic!()
    };
    assert_eq!(args.security_risk, -1, "unknown unless said");
    let json = serde_json::to_value(action).unwrap();
    assert_eq!(
        json["args"],
        serde_json::json!({"name": "fetch", "arguments": {"url": "http://x"}, "thought": "", "security_risk": -1})
    );
    let observation: protocol::Event = serde_json::from_str(
        r#"{"cause": 5, "observation": "mcp", "content": "{}", "extras": {"name": "fetch", "arguments": {"url": "http://x"}}}"#,
    )
    .unwrap();
    assert_eq!(observation.type_name(), "mcp");
    let back: protocol::Event =
        serde_json::from_value(serde_json::to_value(&observation).unwrap()).unwrap();
    assert_eq!(back, observation);
}

/// `/start` and `/sessions/{sid}` share their sandbox's keys ([`RuntimeAccess`], flattened):
/// the keys stay at the top level, in the order OpenHands' runtime API writes them.
#[test]
fn runtime_api_answers_keep_their_flat_keys_in_order() {
    let access = RuntimeAccess {
        runtime_id: "rt-1".to_string(),
        url: "http://127.0.0.1:32768".to_string(),
        session_api_key: Some("k".to_string()),
        work_hosts: [("http://127.0.0.1:32769".to_string(), 12000)].into(),
    };
    let start = StartResponse {
        access: access.clone(),
        image: Some("img".to_string()),
    };
    let start_json = r#"{"runtime_id":"rt-1","url":"http://127.0.0.1:32768","session_api_key":"k","work_hosts":{"http://127.0.0.1:32769":12000},"image":"img"}"#;
    assert_eq!(serde_json::to_string(&start).unwrap(), start_json);
    assert_eq!(
        serde_json::from_str::<StartResponse>(start_json).unwrap(),
        start
    );
    let session = SessionResponse {
        status: SessionStatus::Paused,
        access: RuntimeAccess {
            session_api_key: None,
            work_hosts: Default::default(),
            ..access
        },
    };
    let session_json =
        r#"{"status":"paused","runtime_id":"rt-1","url":"http://127.0.0.1:32768","work_hosts":{}}"#;
    assert_eq!(serde_json::to_string(&session).unwrap(), session_json);
    assert_eq!(
        serde_json::from_str::<SessionResponse>(session_json).unwrap(),
        session
    );
    // Missing optional keys decode to their defaults, unknown ones are ignored.
    let minimal: SessionResponse =
        serde_json::from_str(r#"{"status":"running","runtime_id":"r","url":"u","extra":1}"#)
            .unwrap();
    assert_eq!(minimal.access.session_api_key, None);
    assert!(minimal.access.work_hosts.is_empty());
}
