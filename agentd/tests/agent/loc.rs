//! LocAgent end to end: `agentd run --agent LocAgent` on a small Python workspace in a local
//! sandbox, its searches running in the sandbox's real IPython kernel; and the CodeAct agent
//! delegating to it.

use std::collections::BTreeMap;
use std::path::Path;

use protocol::{ActionKind, Event, EventSource, ObservationKind};
use serde_json::json;
use testkit::Reply;

use super::{
    actions, assert_finished_after_delegating, delegate_to, delegation, observations, run_scripted,
    session_events, state, system_message, text, tool_names, tool_results, write_files,
};

/// A small repository: an order total computed in one module, rounded in another, called by
/// a script.
fn write_workspace(workspace: &Path) {
    let files = [
        ("shop/__init__.py", ""),
        (
            "shop/billing.py",
            "from .util import round_cents\n\n\ndef compute_bill(order):\n    \"\"\"The bill of an order, taxes included.\"\"\"\n    return round_cents(order.total() * 1.2)\n",
        ),
        (
            "shop/util.py",
            "def round_cents(value):\n    return round(value, 2)\n",
        ),
        (
            "scripts/report.py",
            "from shop.billing import compute_bill\n\n\ndef main(order):\n    print(compute_bill(order))\n",
        ),
    ];
    write_files(workspace, &files);
}

/// Every file under `dir` with its content.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(next) = todo.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// The agent's cells, in order.
fn cells(events: &[Event]) -> Vec<&str> {
    actions(events)
        .filter(|a| a.source == Some(EventSource::Agent))
        .filter_map(|a| match &a.kind {
            ActionKind::RunIpython(cell) => Some(cell.code.as_str()),
            _ => None,
        })
        .collect()
}

/// What the kernel printed for each cell, in order.
fn cell_outputs(events: &[Event]) -> Vec<&str> {
    observations(events)
        .filter(|o| matches!(o.kind, ObservationKind::RunIpython(_)))
        .map(|o| o.content.as_str())
        .collect()
}

/// Checks that each of `wanted` (the index of a kernel output in `outputs`, a text) is in
/// that output.
fn assert_outputs_contain(outputs: &[&str], wanted: &[(usize, &str)]) {
    for &(i, text) in wanted {
        assert!(outputs[i].contains(text), "{}", outputs[i]);
    }
}

/// The tools LocAgent is offered, in order.
const LOC_TOOLS: [&str; 4] = [
    "finish",
    "search_code_snippets",
    "get_entity_contents",
    "explore_tree_structure",
];

const LOCATIONS: &str = "shop/billing.py:compute_bill (lines 4-6): computes the bill\nshop/util.py:round_cents (lines 1-2): rounds it";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loc_agent_searches_the_workspace_in_the_kernel_and_finishes_with_the_locations() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    write_workspace(&workspace);
    let before = snapshot(&workspace);
    let replies = [
        Reply::tool_calls([(
            "search_code_snippets",
            json!({"search_terms": ["compute_bill", "round"], "file_path_or_pattern": "shop/**/*.py"}),
        )]),
        Reply::tool_calls([(
            "explore_tree_structure",
            json!({"start_entities": ["shop/util.py:round_cents"], "direction": "upstream", "traversal_depth": 2, "dependency_type_filter": ["invokes"]}),
        )]),
        Reply::tool_calls([(
            "get_entity_contents",
            json!({"entity_names": ["shop/billing.py:compute_bill"]}),
        )]),
        Reply::finish(LOCATIONS),
    ];
    let fake = run_scripted(
        dir.path(),
        &workspace,
        replies,
        "Where is the bill rounded?",
        "",
        &["--agent", "LocAgent"],
    )
    .await;

    let events = session_events(dir.path());
    assert_eq!(
        system_message(&events).agent_class.as_deref(),
        Some("LocAgent")
    );

    // The calls as the reference writes them; the first one defines the functions first.
    let cells = cells(&events);
    assert_eq!(cells.len(), 3, "{cells:?}");
    assert!(
        cells[0].starts_with("# agentd: LocAgent's search functions"),
        "{}",
        cells[0]
    );
    assert!(cells[0].ends_with(
        "\nprint(search_code_snippets(**{'file_path_or_pattern': 'shop/**/*.py', 'search_terms': ['compute_bill', 'round']}))"
    ));
    assert_eq!(
        cells[1],
        "print(explore_tree_structure(**{'dependency_type_filter': ['invokes'], 'direction': 'upstream', 'start_entities': ['shop/util.py:round_cents'], 'traversal_depth': 2}))"
    );
    assert_eq!(
        cells[2],
        "print(get_entity_contents(**{'entity_names': ['shop/billing.py:compute_bill']}))"
    );

    // Real answers from the kernel.
    let outputs = cell_outputs(&events);
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert!(
        outputs[0].contains("## Search term 'compute_bill'\nEntity")
            || outputs[0].contains("1 entity named 'compute_bill':"),
        "{}",
        outputs[0]
    );
    assert_outputs_contain(
        &outputs,
        &[
            (0, "### shop/billing.py:compute_bill (function, lines 4-6)"),
            (0, "shop/util.py:round_cents (function, lines 1-2)"),
            (
                2,
                "## shop/billing.py:compute_bill (function, lines 4-6)\n      4\tdef compute_bill(order):\n      5\t    \"\"\"The bill of an order, taxes included.\"\"\"\n      6\t    return round_cents(order.total() * 1.2)",
            ),
        ],
    );
    assert!(
        outputs[1].starts_with(
            "shop/util.py:round_cents (function, lines 1-2)\n\
             └── invoked by: shop/billing.py:compute_bill [function]\n    \
             └── invoked by: scripts/report.py:main [function]"
        ),
        "{}",
        outputs[1]
    );

    // The model saw them as its calls' results, with its own tools and prompt.
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(tool_names(&requests[0]), LOC_TOOLS);
    assert!(text(&requests[0]["messages"][0]).starts_with("You are a code localisation agent."));
    let results = tool_results(&requests[3]);
    assert_eq!(results.len(), 3);
    assert!(
        results[1].contains("invoked by: scripts/report.py:main"),
        "{results:?}"
    );

    let state = state(dir.path());
    assert_eq!(state["agent_state"], "finished");
    assert_eq!(state["outputs"]["content"], LOCATIONS);
    // It wrote nothing.
    assert_eq!(snapshot(&workspace), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codeact_delegates_to_loc_agent_and_gets_its_locations_with_the_counts_rolled_up() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    write_workspace(&workspace);
    let fake = run_scripted(
        dir.path(),
        &workspace,
        [
            // The CodeAct agent delegates.
            delegate_to("LocAgent", "Where is the bill rounded?"),
            // LocAgent searches, then answers.
            Reply::tool_calls([(
                "search_code_snippets",
                json!({"search_terms": ["round_cents"]}),
            )]),
            Reply::tool_calls([(
                "explore_tree_structure",
                json!({"start_entities": ["shop/util.py:round_cents"], "direction": "upstream"}),
            )]),
            Reply::finish(LOCATIONS),
            // The CodeAct agent reads the answer and finishes.
            Reply::finish("found it"),
        ],
        "Find where the bill is rounded.",
        "[agent]\ndelegation = true\n",
        &[],
    )
    .await;

    let events = session_events(dir.path());
    // The delegate's searches ran in the kernel.
    let outputs = cell_outputs(&events);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert_outputs_contain(
        &outputs,
        &[
            (
                0,
                "1 entity named 'round_cents':\n### shop/util.py:round_cents (function, lines 1-2)",
            ),
            (1, "invoked by: shop/billing.py:compute_bill [function]"),
        ],
    );
    let (_, answer, extras) = delegation(&events);
    assert_eq!(extras.outputs["content"], LOCATIONS);
    assert_eq!(
        answer.content,
        format!(
            "Delegated agent finished with result:\n\nLocAgent finishes task with content: {LOCATIONS}"
        )
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(tool_names(&requests[1]), LOC_TOOLS);
    // The CodeAct agent's last request: its call, answered by the delegate's locations.
    assert_eq!(tool_results(&requests[4]), [LOCATIONS]);

    // Iterations: 1 delegating step + 3 of the delegate + the final step, one global count.
    assert_finished_after_delegating(dir.path(), 5);
}
