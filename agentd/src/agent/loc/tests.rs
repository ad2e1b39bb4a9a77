//! Unit tests of `agent/loc/mod.rs`.

use std::collections::HashSet;
use std::time::Duration;

use protocol::action::{FinishArgs, IPythonRunCellArgs};
use protocol::llm::{FunctionCall, Message, Role, ToolCall};
use protocol::observation::IPythonRunCellExtras;
use protocol::{Observation, ToolCallMetadata};
use serde_json::json;

use super::*;
use crate::agent::AgentError;
use crate::agent::codeact::actions::response_to_actions;
use crate::agent::codeact::tools::{ToolProfile, ToolSet, tools_of};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        kind: "function".to_string(),
        function: FunctionCall {
            name: name.to_string(),
            arguments: arguments.to_string(),
        },
    }
}

fn answer(calls: Vec<ToolCall>) -> Message {
    Message {
        role: Role::Assistant,
        content: Some(protocol::llm::Content::Text("Searching.".to_string())),
        tool_calls: Some(calls),
        tool_call_id: None,
        name: None,
        reasoning_content: None,
    }
}

fn actions_of(calls: Vec<ToolCall>) -> Result<Vec<Action>, AgentError> {
    response_to_actions(
        &answer(calls),
        &json!({"id": "r"}),
        None,
        &HashSet::new(),
        ToolProfile::Loc,
    )
}

fn code(action: &Action) -> &str {
    match &action.kind {
        ActionKind::RunIpython(cell) => &cell.code,
        other => panic!("not a cell: {other:?}"),
    }
}

#[test]
fn each_search_call_is_a_cell_printing_the_function_of_its_arguments_as_a_python_dict() {
    let cases = [
        (
            SEARCH_CODE_SNIPPETS,
            r#"{"search_terms": ["Order", "it's", "say \"hi\"", "a\\b\nc"], "line_nums": [3, 10], "file_path_or_pattern": "src/**/*.py"}"#,
            r#"print(search_code_snippets(**{'search_terms': ['Order', "it's", 'say "hi"', 'a\\b\nc'], 'line_nums': [3, 10], 'file_path_or_pattern': 'src/**/*.py'}))"#,
        ),
        (
            EXPLORE_TREE_STRUCTURE,
            r#"{"start_entities": ["/"], "direction": "both", "traversal_depth": -1, "entity_type_filter": null, "dependency_type_filter": ["contains", "invokes"]}"#,
            "print(explore_tree_structure(**{'start_entities': ['/'], 'direction': 'both', 'traversal_depth': -1, 'entity_type_filter': None, 'dependency_type_filter': ['contains', 'invokes']}))",
        ),
        (
            GET_ENTITY_CONTENTS,
            r#"{"entity_names": ["src/app.py:Server.start"], "extra": {"nested": [[true, false], {"x": 1.5}]}}"#,
            "print(get_entity_contents(**{'entity_names': ['src/app.py:Server.start'], 'extra': {'nested': [[True, False], {'x': 1.5}]}}))",
        ),
        // No arguments at all: the function says what it needs.
        (GET_ENTITY_CONTENTS, "", "print(get_entity_contents(**{}))"),
    ];
    for (function, arguments, expected) in cases {
        let actions = actions_of(vec![call("c1", function, arguments)]).unwrap();
        assert_eq!(code(&actions[0]), expected);
        let metadata = actions[0].tool_call_metadata.as_ref().unwrap();
        assert_eq!(metadata.function_name, function);
        assert_eq!(metadata.tool_call_id, "c1");
    }
}

#[test]
fn a_string_cannot_break_out_of_its_literal() {
    let arguments = r#"{"search_terms": ["'])); import os; os.remove('x'); print(('"]}"#;
    let cell = cell_code(SEARCH_CODE_SNIPPETS, arguments).unwrap();
    assert_eq!(
        cell,
        r#"print(search_code_snippets(**{'search_terms': ["'])); import os; os.remove('x'); print(('"]}))"#
    );
}

#[test]
fn finish_finishes_and_other_tools_are_not_registered() {
    let actions = actions_of(vec![call(
        "c1",
        "finish",
        r#"{"message": "src/app.py:Server.start"}"#,
    )])
    .unwrap();
    let ActionKind::Finish(FinishArgs { final_thought, .. }) = &actions[0].kind else {
        panic!("{:?}", actions[0])
    };
    assert_eq!(final_thought, "src/app.py:Server.start");
    for tool in ["execute_bash", "str_replace_editor", "think", "view"] {
        let Err(AgentError::Malformed(text)) = actions_of(vec![call("c", tool, "{}")]) else {
            panic!("{tool} was accepted")
        };
        assert!(
            text.starts_with(&format!("Tool {tool} is not registered.")),
            "{text}"
        );
    }
    let Err(AgentError::Malformed(text)) = actions_of(vec![call("c", SEARCH_CODE_SNIPPETS, "[1]")])
    else {
        panic!("an array was taken as arguments")
    };
    assert!(text.contains("must be a JSON object"), "{text}");
}

#[test]
fn the_tools_are_finish_and_the_three_searches() {
    let tools = tools_of(ToolProfile::Loc, ToolSet::default());
    let names: Vec<&str> = tools.iter().map(|t| t.function.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "finish",
            SEARCH_CODE_SNIPPETS,
            GET_ENTITY_CONTENTS,
            EXPLORE_TREE_STRUCTURE
        ]
    );
    for tool in &tools {
        let parameters = &tool.function.parameters;
        for required in parameters["required"].as_array().unwrap() {
            assert!(parameters["properties"][required.as_str().unwrap()].is_object());
        }
    }
    let explore = &tools[3].function.parameters["properties"];
    assert_eq!(
        explore["direction"]["enum"],
        json!(["upstream", "downstream", "both"])
    );
    assert_eq!(explore["traversal_depth"]["default"], 2);
}

fn cell_action(code: &str) -> Action {
    Action::from(ActionKind::RunIpython(IPythonRunCellArgs::new(code)))
}

fn recorded(action: &Action) -> Arc<Event> {
    let mut action = action.clone();
    action.source = Some(EventSource::Agent);
    action.tool_call_metadata = Some(ToolCallMetadata {
        function_name: SEARCH_CODE_SNIPPETS.to_string(),
        tool_call_id: "c".to_string(),
        model_response: json!({}),
        total_calls_in_response: 1,
    });
    Arc::new(Event::Action(action))
}

fn cell_output(content: &str) -> Arc<Event> {
    Arc::new(Event::Observation(Observation::new(
        ObservationKind::RunIpython(IPythonRunCellExtras {
            code: String::new(),
            image_urls: None,
        }),
        content.to_string(),
    )))
}

#[test]
fn the_functions_are_defined_in_the_first_cell_and_again_after_a_cell_found_them_missing() {
    let call = "print(search_code_snippets(**{'search_terms': ['x']}))";
    let mut functions = KernelFunctions::default();
    let mut history = Vec::new();

    let mut first = cell_action(call);
    functions.prepare(&mut first, &history);
    let defined = code(&first);
    assert!(defined.starts_with(DEFINITION_MARKER), "{defined}");
    assert!(defined.ends_with(&format!("\n{call}")), "{defined}");
    history.push(recorded(&first));
    history.push(cell_output("## Search term 'x'\nNo matches for 'x'."));

    let mut second = cell_action(call);
    functions.prepare(&mut second, &history);
    assert_eq!(code(&second), call);
    history.push(recorded(&second));
    // The kernel was replaced meanwhile: the call found no function.
    history.push(cell_output(
        "[The IPython kernel died (exit 9) and was restarted: variables, imports and other state from earlier cells are lost.]\n\
         NameError: name 'search_code_snippets' is not defined",
    ));

    let mut third = cell_action(call);
    functions.prepare(&mut third, &history);
    assert!(code(&third).starts_with(DEFINITION_MARKER));
    history.push(recorded(&third));
    history.push(cell_output("## Search term 'x'"));

    let mut fourth = cell_action(call);
    functions.prepare(&mut fourth, &history);
    assert_eq!(code(&fourth), call);

    // Nothing else is touched: other cells, other actions.
    let mut other = cell_action("print(1)");
    KernelFunctions::default().prepare(&mut other, &[]);
    assert_eq!(code(&other), "print(1)");
    let mut finish = Action::from(ActionKind::Finish(FinishArgs::default()));
    KernelFunctions::default().prepare(&mut finish, &[]);
    assert!(matches!(finish.kind, ActionKind::Finish(_)));
}

#[test]
fn the_source_is_sent_as_a_raw_string_as_it_is() {
    assert!(!MODULE_SOURCE.contains("'''") && !MODULE_SOURCE.ends_with('\\'));
    assert!(definition().contains(&format!("r'''{MODULE_SOURCE}'''")));
}

/// Runs `python3` with `args` in `dir` (30 s at most) and answers its stdout.
async fn python(dir: &std::path::Path, args: &[&str]) -> String {
    let run = tokio::process::Command::new("python3")
        .args(args)
        .current_dir(dir)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("python3 ends within 30 s")
        .unwrap();
    assert!(
        output.status.success(),
        "python3 {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The module's own tests (`locagent_test.py`: plain asserts on a fixture repository), with
/// the system Python.
#[tokio::test]
async fn the_python_module_passes_its_tests_on_a_fixture_repository() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agentd_locagent.py"), MODULE_SOURCE).unwrap();
    std::fs::write(
        dir.path().join("locagent_test.py"),
        include_str!("locagent_test.py"),
    )
    .unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let out = python(dir.path(), &["locagent_test.py", scratch.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "ok");
}

/// The definition and a call, as a cell runs them: the functions come from the module the
/// definition makes, and a second definition of the same version leaves it (and its index)
/// alone.
#[tokio::test]
async fn the_definition_makes_the_functions_callable_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app.py"),
        "def serve():\n    return handle()\n\n\ndef handle():\n    return 1\n",
    )
    .unwrap();
    let call = cell_code(
        EXPLORE_TREE_STRUCTURE,
        r#"{"start_entities": ["app.py:handle"], "direction": "upstream"}"#,
    )
    .unwrap();
    let script = format!(
        "{definition}\nimport sys\nfirst = sys.modules['agentd_locagent']\n{call}\n{definition}\nprint(sys.modules['agentd_locagent'] is first)\n",
        definition = definition()
    );
    let out = python(dir.path(), &["-c", &script]).await;
    assert_eq!(
        out,
        "app.py:handle (function, lines 5-6)\n\
         ├── contained in: app.py\n\
         │   └── contained in: /\n\
         └── invoked by: app.py:serve [function]\n    \
             └── contained in: app.py\n\
         True\n"
    );
}

/// The rules analyzer finds nothing risky in the cell that defines the functions, so that
/// confirmation mode with it does not hold a LocAgent's first search.
#[test]
fn the_rules_find_the_definition_cell_low_risk() {
    use crate::security::{AnalyzerKind, Risk, SecurityAnalyzer};
    let mut cell = cell_action("print(get_entity_contents(**{'entity_names': ['/']}))");
    KernelFunctions::default().prepare(&mut cell, &[]);
    let rules = SecurityAnalyzer::new(AnalyzerKind::Rules, &[]).unwrap();
    assert_eq!(rules.analyze(&cell, Some("/workspace")), Risk::Low);
}
