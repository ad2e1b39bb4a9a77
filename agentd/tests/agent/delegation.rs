//! Delegation end to end: the CodeAct agent hands a question to ReadOnlyAgent, which explores
//! the workspace on the same model (the fake server), cannot write, and answers.

use protocol::{ActionKind, Event, EventSource, ObservationKind};
use serde_json::json;
use testkit::Reply;

use super::{
    assert_finished_after_delegating, delegate_to, delegation, dir_with_workspace, error_contents,
    run_scripted, session_events, tool_names, tool_results,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codeact_delegates_to_read_only_agent_which_cannot_write_and_answers_with_the_counts_rolled_up()
 {
    let (dir, workspace) = dir_with_workspace();
    std::fs::write(workspace.join("notes.txt"), "the answer is 42\n").unwrap();
    let notes = workspace.join("notes.txt").display().to_string();
    let intruder = workspace.join("intruder.txt").display().to_string();
    let fake = run_scripted(
        dir.path(),
        &workspace,
        [
            // The CodeAct agent delegates.
            delegate_to("ReadOnlyAgent", "What is the answer in notes.txt?"),
            // ReadOnlyAgent tries to write (it has no such tool), then explores.
            Reply::tool_calls([(
                "str_replace_editor",
                json!({"command": "create", "path": intruder, "file_text": "x"}),
            )]),
            Reply::tool_calls([("execute_bash", json!({"command": "touch intruder.txt"}))]),
            Reply::tool_calls([("grep", json!({"pattern": "answer", "include": "*.txt"}))]),
            Reply::tool_calls([("view", json!({"path": notes}))]),
            Reply::finish("notes.txt says the answer is 42"),
            // The CodeAct agent reads the answer and finishes.
            Reply::finish("42"),
        ],
        "Find the answer.",
        "[agent]\ndelegation = true\n",
        &[],
    )
    .await;
    assert!(
        !workspace.join("intruder.txt").exists(),
        "the read-only agent wrote"
    );

    let events = session_events(dir.path());
    let (delegate, answer, extras) = delegation(&events);
    let ActionKind::Delegate(args) = &delegate.kind else {
        unreachable!()
    };
    assert_eq!(args.agent, "ReadOnlyAgent");
    // The delegate's task, as the reference gives it.
    assert!(events.iter().any(|e| matches!(e, Event::Action(a)
        if a.source == Some(EventSource::User)
            && matches!(&a.kind, ActionKind::Message(m) if m.content == "TASK: What is the answer in notes.txt?"))));
    // Both write attempts were refused as tools it does not have.
    let refused = error_contents(&events);
    assert_eq!(refused.len(), 2, "{refused:?}");
    for (error, tool) in refused.iter().zip(["str_replace_editor", "execute_bash"]) {
        assert!(
            error.starts_with(&format!(
                "Function '{tool}' not found in available tools: [think, finish, grep, glob, view]"
            )),
            "{refused:?}"
        );
    }
    // The grep found the file; the view read it.
    assert!(events.iter().any(|e| matches!(e, Event::Observation(o)
        if matches!(o.kind, ObservationKind::Run(_))
            && o.content.contains("Below are the execution results of the search command")
            && o.content.contains("notes.txt"))));
    // The answer came back to the CodeAct agent's tool call.
    assert_eq!(extras.outputs["content"], "notes.txt says the answer is 42");
    assert_eq!(
        answer.content,
        "Delegated agent finished with result:\n\nReadOnlyAgent finishes task with content: notes.txt says the answer is 42"
    );
    assert_eq!(
        answer.tool_call_metadata.as_ref().unwrap().tool_call_id,
        delegate.tool_call_metadata.as_ref().unwrap().tool_call_id
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 7);
    // The delegate's model saw its own prompt and tools, none that write.
    assert_eq!(
        tool_names(&requests[1]),
        ["think", "finish", "grep", "glob", "view"]
    );
    // The CodeAct agent's last request: its call, answered by the delegate's content, and
    // none of the delegate's steps.
    assert_eq!(
        tool_results(&requests[6]),
        ["notes.txt says the answer is 42"]
    );

    // Iterations: 1 delegating step + 5 of the delegate + the final step, one global count.
    assert_finished_after_delegating(dir.path(), 7);
}
