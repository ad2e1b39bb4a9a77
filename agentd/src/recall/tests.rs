//! Unit tests of `recall/mod.rs`: the workspace context, triggered knowledge, task inputs.

use std::collections::BTreeMap;

use protocol::observation::RecallExtras;
use protocol::{Action, EventSource, ObservationKind};
use serde_json::json;

use super::microagent::Microagent;
use super::{KNOWLEDGE, Memory, Recalled, WORKSPACE_CONTEXT, WorkspaceContext, recall_action};

fn memory(headless: bool, inputs: &[(&str, &str)]) -> Memory {
    let context = WorkspaceContext {
        repo_name: "owner/repo".into(),
        repo_directory: "repo".into(),
        date: "2026-01-02".into(),
        working_dir: "/workspace".into(),
        secrets: BTreeMap::from([("API_TOKEN".into(), "the staging token".into())]),
        ..WorkspaceContext::default()
    };
    let inputs = inputs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let mut memory = Memory::new(context, inputs, headless).unwrap();
    memory.add(Microagent::whole_file(
        "agents",
        "/w/AGENTS.md",
        "Run make test.",
    ));
    memory.add(
        Microagent::parse(
            "/w/.openhands/microagents/repo.md",
            Some("repo"),
            "Use cargo.",
        )
        .unwrap(),
    );
    memory.add(
        Microagent::parse(
            "/w/.openhands/microagents/flake.md",
            Some("flake"),
            "---\ntriggers: [flaky]\n---\nRerun flaky tests once.",
        )
        .unwrap(),
    );
    memory.add(
        Microagent::parse(
            "/w/.openhands/microagents/deploy.md",
            Some("deploy"),
            "---\nname: deploy\ninputs: [{name: ENV, description: the target}]\n---\nDeploy to ${ENV}.",
        )
        .unwrap(),
    );
    memory
}

fn recall(memory: &Memory, recall_type: &str, query: &str, source: EventSource) -> Recalled {
    let mut action: Action = recall_action(recall_type, query);
    action.id = Some(7);
    action.source = Some(source);
    memory.recall(&action)
}

fn answer(recalled: Recalled) -> protocol::Observation {
    match recalled {
        Recalled::Answer(observation) => observation,
        other => panic!("not an answer: {other:?}"),
    }
}

/// The answer to a recall of the user's message `query`.
fn user_answer(memory: &Memory, recall_type: &str, query: &str) -> protocol::Observation {
    answer(recall(memory, recall_type, query, EventSource::User))
}

/// The extras of a `recall` observation.
fn recall_extras(observation: &protocol::Observation) -> &RecallExtras {
    match &observation.kind {
        ObservationKind::Recall(extras) => extras,
        _ => panic!("{observation:?}"),
    }
}

#[test]
fn the_recall_action_is_the_references() {
    let action = recall_action(WORKSPACE_CONTEXT, &"x".repeat(60));
    let json = serde_json::to_value(&action).unwrap();
    assert_eq!(
        json,
        json!({"action": "recall", "message": format!("Retrieving content for: {}", "x".repeat(50)),
               "args": {"recall_type": "workspace_context", "query": "x".repeat(60), "thought": ""}})
    );
}

#[test]
fn the_first_message_gets_the_workspace_context_with_every_repo_microagent() {
    let memory = memory(true, &[]);
    let observation = user_answer(&memory, WORKSPACE_CONTEXT, "Fix the flaky test");
    assert_eq!(observation.cause, Some(7));
    assert_eq!(observation.message, "Added workspace context");
    let json = serde_json::to_value(&observation).unwrap();
    assert_eq!(
        json,
        json!({
            "message": "Added workspace context",
            "cause": 7,
            "observation": "recall",
            "content": "Added workspace context",
            "extras": {
                "recall_type": "workspace_context",
                "repo_name": "owner/repo",
                "repo_directory": "repo",
                "repo_branch": "",
                "repo_instructions": "Run make test.\n\nUse cargo.",
                "runtime_hosts": {},
                "additional_agent_instructions": "",
                "date": "2026-01-02",
                "custom_secrets_descriptions": {"API_TOKEN": "the staging token"},
                "conversation_instructions": "",
                "working_dir": "/workspace",
                "microagent_knowledge": [
                    {"name": "flake", "trigger": "flaky", "content": "Rerun flaky tests once."}
                ]
            }
        })
    );
}

#[test]
fn later_messages_get_triggered_knowledge_or_a_null_observation() {
    let memory = memory(true, &[]);
    let observation = user_answer(&memory, KNOWLEDGE, "it is FLAKY again");
    assert_eq!(observation.message, "Added microagent knowledge");
    assert_eq!(observation.content, "Retrieved knowledge from microagents");
    let extras = recall_extras(&observation);
    assert_eq!(extras.recall_type, "knowledge");
    assert_eq!(extras.repo_instructions, "");
    assert_eq!(
        extras.microagent_knowledge,
        [json!({"name": "flake", "trigger": "flaky", "content": "Rerun flaky tests once."})]
    );
    // Built-in microagents fire too; whole words only.
    let git = answer(recall(
        &memory,
        KNOWLEDGE,
        "commit with git",
        EventSource::Agent,
    ));
    assert!(
        matches!(&git.kind, ObservationKind::Recall(e) if e.microagent_knowledge[0]["name"] == "git")
    );
    let nothing = user_answer(&memory, KNOWLEDGE, "count every digit");
    assert_eq!(
        serde_json::to_value(&nothing).unwrap(),
        json!({"message": "No observation", "cause": 7, "observation": "null", "content": "", "extras": {}})
    );
    // Only the user's first message gets the workspace context; the environment's recalls are
    // not answered.
    assert!(matches!(
        answer(recall(&memory, WORKSPACE_CONTEXT, "x", EventSource::Agent)).kind,
        ObservationKind::Null(_)
    ));
    assert_eq!(
        recall(&memory, KNOWLEDGE, "flaky", EventSource::Environment),
        Recalled::Ignored
    );
}

#[test]
fn later_microagents_replace_earlier_ones_of_the_same_kind_and_name() {
    let mut memory = memory(true, &[]);
    memory.add(
        Microagent::parse(
            "/w/x/git.md",
            Some("git"),
            "---\ntriggers: [git]\n---\nOurs.",
        )
        .unwrap(),
    );
    let observation = user_answer(&memory, KNOWLEDGE, "git");
    let extras = recall_extras(&observation);
    assert_eq!(
        extras.microagent_knowledge,
        [json!({"name": "git", "trigger": "git", "content": "Ours."})]
    );
    memory.disable(&["git".to_string(), "agents".to_string()]);
    assert!(!memory.names().contains(&"git"));
    let context = user_answer(&memory, WORKSPACE_CONTEXT, "hello");
    let extras = recall_extras(&context);
    assert_eq!(extras.repo_instructions, "Use cargo.");
}

#[test]
fn a_task_microagent_gets_its_inputs_or_asks_for_them_or_fails_a_headless_run() {
    let given = memory(true, &[("ENV", "staging")]);
    let observation = user_answer(&given, KNOWLEDGE, "please /deploy");
    let extras = recall_extras(&observation);
    assert_eq!(
        extras.microagent_knowledge,
        [json!({"name": "deploy", "trigger": "/deploy", "content": "Deploy to staging."})]
    );

    let interactive = memory(false, &[]);
    let observation = user_answer(&interactive, KNOWLEDGE, "/deploy");
    let extras = recall_extras(&observation);
    assert!(
        extras.microagent_knowledge[0]["content"]
            .as_str()
            .unwrap()
            .ends_with(
                "ask the user to provide them first before the agent can proceed with the task."
            )
    );

    let headless = memory(true, &[]);
    match recall(
        &headless,
        WORKSPACE_CONTEXT,
        "/deploy now",
        EventSource::User,
    ) {
        Recalled::Fail(reason) => assert_eq!(
            reason,
            "the task microagent /deploy needs inputs that were not given: ENV (the target); \
             agentd runs headless and cannot ask for them: give each with --input NAME=VALUE"
        ),
        other => panic!("{other:?}"),
    }
}
