//! The accessibility tree as BrowserGym prints it for agents (`flatten_axtree_to_str` with
//! `with_clickable=True`, `skip_generic=False`; docs/protocol.md §14): depth first, one line per
//! printed node, a tab per printed ancestor, `[bid] role 'name'`, then ` value='...'`, then
//! `clickable` and the AX properties.

use std::collections::{HashMap, HashSet};

use sandbox_common::py_repr_str;
use serde_json::Value;

use super::cdp::items;

/// Roles never printed (their children are, one level up).
const IGNORED_ROLES: &[&str] = &["LineBreak", "InlineTextBox"];
/// Properties never printed.
const IGNORED_PROPERTIES: &[&str] = &[
    "editable",
    "readonly",
    "level",
    "settable",
    "multiline",
    "invalid",
    "focusable",
];

/// Adds each node's `browsergym_id` (the bid of its DOM element, from `bids`: backend node id
/// → bid) to the nodes of `Accessibility.getFullAXTree`.
pub(crate) fn attach_bids(nodes: &mut [Value], bids: &HashMap<i64, String>) {
    for node in nodes {
        let bid = node
            .get("backendDOMNodeId")
            .and_then(Value::as_i64)
            .and_then(|id| bids.get(&id));
        if let (Some(bid), Some(obj)) = (bid, node.as_object_mut()) {
            obj.insert("browsergym_id".to_owned(), Value::from(bid.as_str()));
        }
    }
}

/// Renders `nodes` (with `browsergym_id`s), marking the bids in `clickable`.
pub(crate) fn flatten(nodes: &[Value], clickable: &HashSet<String>) -> String {
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| Some((id_of(n)?, i)))
        .collect();
    if nodes.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let mut visited = vec![false; nodes.len()];
    // Explicit stack: (node, depth, parent's name); deep pages must not overflow ours.
    let mut stack: Vec<(usize, usize, String)> = vec![(0, 0, String::new())];
    while let Some((i, depth, parent_name)) = stack.pop() {
        if std::mem::replace(&mut visited[i], true) {
            continue;
        }
        let node = &nodes[i];
        let (line, name) = render(node, &parent_name, clickable);
        let printed = line.is_some();
        if let Some(line) = line {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&"\t".repeat(depth));
            out.push_str(&line);
        }
        let child_depth = if printed { depth + 1 } else { depth };
        let children: Vec<usize> = items(node, "childIds")
            .filter_map(Value::as_str)
            .filter(|c| Some(*c) != id_of(node))
            .filter_map(|c| index.get(c).copied())
            .collect();
        for child in children.into_iter().rev() {
            stack.push((child, child_depth, name.clone()));
        }
    }
    out
}

fn id_of(node: &Value) -> Option<&str> {
    node.get("nodeId").and_then(Value::as_str)
}

fn inner_value(v: Option<&Value>) -> Option<&Value> {
    v.and_then(|v| v.get("value"))
}

/// The node's line (`None`: not printed, its children take its place) and the name its
/// children compare their text with.
fn render(
    node: &Value,
    parent_name: &str,
    clickable: &HashSet<String>,
) -> (Option<String>, String) {
    let role = inner_value(node.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if IGNORED_ROLES.contains(&role) {
        return (None, String::new());
    }
    let Some(name_value) = node.get("name") else {
        return (None, String::new());
    };
    let name = match inner_value(Some(name_value)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => python_str(other),
        None => String::new(),
    };
    let bid = node.get("browsergym_id").and_then(Value::as_str);
    let mut attributes = Vec::new();
    for property in items(node, "properties") {
        let (Some(prop), Some(value)) = (
            property.get("name").and_then(Value::as_str),
            inner_value(property.get("value")),
        ) else {
            continue;
        };
        if IGNORED_PROPERTIES.contains(&prop) {
            continue;
        }
        if matches!(prop, "required" | "focused" | "atomic") {
            if truthy(value) {
                attributes.push(prop.to_owned());
            }
        } else {
            attributes.push(format!("{prop}={}", python_repr(value)));
        }
    }
    if role == "StaticText" {
        if parent_name.contains(name.as_str()) {
            return (None, name);
        }
    } else if bid.is_some_and(|b| clickable.contains(b)) {
        attributes.insert(0, "clickable".to_owned());
    }
    let mut line = String::new();
    if let Some(bid) = bid {
        line.push_str(&format!("[{bid}] "));
    }
    if role == "generic" && name.is_empty() {
        line.push_str(role);
    } else {
        line.push_str(&format!("{role} {}", py_repr_str(name.trim())));
    }
    if let Some(value) = inner_value(node.get("value")) {
        line.push_str(&format!(" value={}", python_repr(value)));
    }
    for attribute in attributes {
        line.push_str(", ");
        line.push_str(&attribute);
    }
    (Some(line), name)
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Null => false,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python's `str` of a JSON value.
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => python_repr(other),
    }
}

/// Python's `repr` of a JSON value (as `json.loads` would have made it).
fn python_repr(v: &Value) -> String {
    match v {
        Value::String(s) => py_repr_str(s),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Null => "None".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), python_repr(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

#[cfg(test)]
mod tests;
