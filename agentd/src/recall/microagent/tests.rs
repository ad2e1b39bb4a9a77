//! Unit tests of `recall/microagent.rs`.

use super::{Input, Kind, Microagent, TASK_INPUTS_PROMPT, third_party_name};

fn parse(text: &str) -> Microagent {
    Microagent::parse("/ws/.openhands/microagents/x.md", None, text).unwrap()
}

/// `text` as the file `NAME.md` of the workspace's microagents directory, named after it.
fn parse_named(name: &str, text: &str) -> Microagent {
    let path = format!("/ws/.openhands/microagents/{name}.md");
    Microagent::parse(&path, Some(name), text).unwrap()
}

fn problem(text: &str) -> String {
    Microagent::parse("/ws/.openhands/microagents/bad.md", Some("bad"), text)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_file_without_front_matter_is_a_repo_microagent_with_its_trimmed_text() {
    let agent = parse_named("repo", "\n  Use cargo.\n\n");
    assert_eq!(agent.name, "repo");
    assert_eq!(agent.kind, Kind::Repo);
    assert_eq!(agent.content, "Use cargo.");
    assert!(agent.triggers.is_empty());
}

#[test]
fn triggers_make_a_knowledge_microagent_and_the_type_key_does_not_decide() {
    let agent = parse(
        "---\nname: npm-tips\ntype: repo\nversion: 1.0\nagent: CodeActAgent\ntriggers:\n- npm\n- yarn\nunknown: ignored\n---\n\nUse npm ci.\n",
    );
    assert_eq!(agent.name, "npm-tips");
    assert_eq!(agent.kind, Kind::Knowledge);
    assert_eq!(agent.triggers, ["npm", "yarn"]);
    assert_eq!(agent.content, "Use npm ci.");
    // A derived name (the path below the microagents directory) wins over the front matter's.
    let named = parse_named("sub/tool", "---\nname: other\ntriggers: [x]\n---\nbody");
    assert_eq!(named.name, "sub/tool");
}

#[test]
fn inputs_make_a_task_microagent_triggered_by_its_slash_name() {
    let agent = parse(
        "---\nname: deploy\ntriggers: [ship it]\ninputs:\n  - name: ENV\n    description: where to deploy\n---\nDeploy to ${ENV}.",
    );
    assert_eq!(agent.kind, Kind::Task);
    assert_eq!(agent.triggers, ["ship it", "/deploy"]);
    assert_eq!(
        agent.inputs,
        [Input {
            name: "ENV".into(),
            description: "where to deploy".into()
        }]
    );
    assert_eq!(
        agent.content,
        format!("Deploy to ${{ENV}}.{TASK_INPUTS_PROMPT}")
    );
    // Already there: not added twice.
    let again = parse("---\nname: d\ntriggers: [/d]\ninputs: [{name: A, description: a}]\n---\nx");
    assert_eq!(again.triggers, ["/d"]);
}

#[test]
fn empty_or_unclosed_front_matter_is_no_front_matter() {
    let empty = parse("---\n---\nbody");
    assert_eq!(
        (empty.name.as_str(), empty.kind, empty.content.as_str()),
        ("default", Kind::Repo, "body")
    );
    let unclosed = parse("---\ntriggers: [a]\nno end");
    assert_eq!(unclosed.kind, Kind::Repo);
    assert_eq!(unclosed.content, "---\ntriggers: [a]\nno end");
    let longer = parse("-----  \ntriggers: [a]\n----\nbody");
    assert_eq!(longer.kind, Kind::Knowledge);
    let not_a_boundary = parse("--- x\ntriggers: [a]\n---\nbody");
    assert_eq!(not_a_boundary.kind, Kind::Repo);
}

#[test]
fn malformed_front_matter_is_an_error_that_names_the_file() {
    let cases = [
        ("---\ntriggers: [unclosed\n---\nbody", "is not valid YAML"),
        ("---\n- a list\n---\nbody", "not a mapping"),
        (
            "---\ntriggers: git\n---\nbody",
            "`triggers` must be a list of strings",
        ),
        (
            "---\ntriggers: [1, {a: b}]\n---\nbody",
            "`triggers` must be a list of strings",
        ),
        ("---\nname: [x]\n---\nbody", "`name` must be a string"),
        ("---\ninputs: [{name: A}]\n---\nbody", "`inputs` must have"),
        (
            "---\ntype: skill\n---\nbody",
            "Invalid \"type\" value: \"skill\". Valid types are: \"knowledge\", \"repo\", \"task\"",
        ),
        (
            "---\nname: m\nmcp_tools:\n  sse_servers: [http://x]\n---\nbody",
            "Microagent m has MCP tools configuration but no stdio servers.",
        ),
        ("---\na: &x [1, 2]\nb: *x\n---\nbody", "aliases"),
    ];
    for (text, expected) in cases {
        let message = problem(text);
        assert!(
            message.starts_with(
                "Error loading microagent from /ws/.openhands/microagents/bad.md: Error validating microagent metadata in bad.md: "
            ),
            "{message}"
        );
        assert!(message.contains(expected), "{text:?}: {message}");
    }
    let huge = "x".repeat(super::MAX_FILE_BYTES + 1);
    assert!(problem(&huge).contains("larger than"));
}

#[test]
fn a_billion_laughs_front_matter_is_refused_before_it_is_expanded() {
    let mut text = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..30 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    text.push_str("---\nbody");
    assert!(problem(&text).contains("aliases"));
}

#[test]
fn third_party_instruction_files_are_recognised_by_name_in_any_case() {
    assert_eq!(third_party_name(".cursorrules"), Some("cursorrules"));
    assert_eq!(third_party_name("AGENTS.md"), Some("agents"));
    assert_eq!(third_party_name("Agent.MD"), Some("agents"));
    assert_eq!(third_party_name("README.md"), None);
    let agents = Microagent::whole_file(
        "agents",
        "/ws/AGENTS.md",
        "---\nnot: front matter\n---\n# Rules\n",
    );
    assert_eq!(agents.kind, Kind::Repo);
    assert_eq!(agents.content, "---\nnot: front matter\n---\n# Rules\n");
}
