use serde_json::json;

use super::*;

#[test]
fn renders_as_browsergym() {
    let nodes = vec![
        json!({"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Example Domain"},
               "properties": [{"name": "focusable", "value": {"value": true}}, {"name": "focused", "value": {"value": true}}],
               "childIds": ["2", "3", "9"]}),
        json!({"nodeId": "2", "role": {"value": "heading"}, "name": {"value": "Example Domain"}, "browsergym_id": "8",
               "properties": [{"name": "level", "value": {"value": 1}}], "childIds": ["4"]}),
        json!({"nodeId": "4", "role": {"value": "StaticText"}, "name": {"value": "Example"}, "childIds": []}),
        json!({"nodeId": "3", "role": {"value": "generic"}, "name": {"value": ""}, "browsergym_id": "9", "childIds": ["5", "6"]}),
        json!({"nodeId": "5", "role": {"value": "none"}, "ignored": true, "childIds": ["7"]}),
        json!({"nodeId": "7", "role": {"value": "link"}, "name": {"value": "Next "}, "browsergym_id": "12", "childIds": ["8"]}),
        json!({"nodeId": "8", "role": {"value": "StaticText"}, "name": {"value": "Next"}, "childIds": []}),
        json!({"nodeId": "6", "role": {"value": "LineBreak"}, "name": {"value": "\n"}, "childIds": []}),
        json!({"nodeId": "9", "role": {"value": "textbox"}, "name": {"value": "Search"}, "browsergym_id": "a13",
               "value": {"type": "string", "value": "abc"},
               "properties": [{"name": "required", "value": {"value": true}}, {"name": "expanded", "value": {"value": false}},
                              {"name": "atomic", "value": {"value": false}}, {"name": "editable", "value": {"value": "plaintext"}}],
               "childIds": []}),
    ];
    let clickable: HashSet<String> = ["12", "a13"].into_iter().map(String::from).collect();
    assert_eq!(
        flatten(&nodes, &clickable),
        "RootWebArea 'Example Domain', focused\n\t[8] heading 'Example Domain'\n\t[9] generic\n\t\t[12] link 'Next', clickable\n\t[a13] textbox 'Search' value='abc', clickable, required, expanded=False"
    );
}

#[test]
fn attaches_bids_by_backend_node() {
    let mut nodes = vec![
        json!({"nodeId": "1", "backendDOMNodeId": 7}),
        json!({"nodeId": "2"}),
    ];
    attach_bids(&mut nodes, &HashMap::from([(7, "3".to_owned())]));
    assert_eq!(nodes[0]["browsergym_id"], "3");
    assert!(nodes[1].get("browsergym_id").is_none());
    assert_eq!(flatten(&[], &HashSet::new()), "");
}
