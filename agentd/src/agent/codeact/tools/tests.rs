//! Unit tests of `agent/codeact/tools.rs`.

use super::*;
use sandbox_common::{EXECUTE_BASH, STR_REPLACE_EDITOR};

#[test]
fn the_tool_schemas_are_stable() {
    insta::assert_json_snapshot!("tools", tools(ToolSet::default()));
}

#[test]
fn ipython_and_think_can_be_left_out() {
    let names: Vec<String> = tools(ToolSet {
        ipython: false,
        think: false,
        browser: false,
        delegate: false,
        task_tracker: false,
        condensation_request: false,
    })
    .into_iter()
    .map(|t| t.function.name)
    .collect();
    assert_eq!(names, [EXECUTE_BASH, STR_REPLACE_EDITOR, FINISH]);
}

#[test]
fn every_required_parameter_is_a_property() {
    for tool in tools(ToolSet::default()) {
        let params = &tool.function.parameters;
        assert_eq!(params["type"], "object", "{}", tool.function.name);
        for required in params["required"].as_array().unwrap() {
            let name = required.as_str().unwrap();
            assert!(
                params["properties"].get(name).is_some(),
                "{}: {name}",
                tool.function.name
            );
        }
    }
}

#[test]
fn the_browser_tool_comes_last_when_enabled() {
    let set = ToolSet {
        browser: true,
        ..ToolSet::default()
    };
    let all = tools(set);
    let browser = all.last().unwrap();
    assert_eq!(browser.function.name, BROWSER);
    let code = browser.function.parameters["properties"]["code"]["description"]
        .as_str()
        .unwrap();
    assert!(code.starts_with("The Python code that interacts with the browser.\nThe following 15 functions are available. Nothing else is supported.\n"));
    assert_eq!(code.matches("    Description: ").count(), 15);
    assert!(
        !tools(ToolSet::default())
            .iter()
            .any(|t| t.function.name == BROWSER)
    );
}

#[test]
fn security_risk_is_required_of_the_sandbox_tools_and_the_browser_and_of_no_other() {
    let all = tools(ToolSet {
        browser: true,
        delegate: true,
        task_tracker: true,
        condensation_request: true,
        ..ToolSet::default()
    });
    for tool in &all {
        let name = tool.function.name.as_str();
        let parameters = &tool.function.parameters;
        let required = parameters["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!(SECURITY_RISK)));
        let wanted = [
            EXECUTE_BASH,
            "execute_ipython_cell",
            STR_REPLACE_EDITOR,
            BROWSER,
        ]
        .contains(&name);
        assert_eq!(required, wanted, "{name}");
        if wanted {
            assert_eq!(
                parameters["properties"][SECURITY_RISK]["enum"],
                json!(["LOW", "MEDIUM", "HIGH"]),
                "{name}"
            );
        }
    }
}

/// The agents the tool names are those a run can start: a prompted call of another is
/// refused by the parser (BrowsingAgent was missing from the `enum`).
#[test]
fn the_delegate_tool_names_every_agent_a_run_can_start() {
    let all = tools(ToolSet {
        delegate: true,
        ..ToolSet::default()
    });
    let delegate = all.iter().find(|t| t.function.name == DELEGATE).unwrap();
    assert_eq!(
        delegate.function.parameters["properties"]["agent"]["enum"],
        json!(crate::agent::DELEGATE_AGENTS)
    );
    assert!(crate::agent::DELEGATE_AGENTS.contains(&"BrowsingAgent"));
}
