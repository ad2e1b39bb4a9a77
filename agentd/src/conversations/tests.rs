use std::collections::BTreeSet;

use protocol::action::MessageArgs;
use protocol::{Action, ActionKind, EventSource};

use super::routes::{OPENAPI, ROUTES};
use super::store::{is_id, title_of};
use crate::events::EventStream;

#[test]
fn the_openapi_document_describes_exactly_the_routes_the_server_answers() {
    let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
    let mut documented = BTreeSet::new();
    for (path, methods) in doc["paths"].as_object().unwrap() {
        for method in methods.as_object().unwrap().keys() {
            documented.insert((method.clone(), path.clone()));
        }
    }
    let served: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_string(), (*p).to_string()))
        .collect();
    assert_eq!(documented, served);
    // Every schema a path refers to exists.
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for reference in OPENAPI.match_indices("#/components/schemas/") {
        let name: String = OPENAPI[reference.0 + reference.1.len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect();
        assert!(schemas.contains_key(&name), "{name}");
    }
}

#[test]
fn a_page_of_events_says_whether_more_follow() {
    let stream = EventStream::in_memory();
    for n in 0..5 {
        let message = Action::from(ActionKind::Message(MessageArgs {
            content: format!("m{n}"),
            ..MessageArgs::default()
        }));
        stream.add(message, EventSource::User).unwrap();
    }
    let ids = |(events, more): (Vec<protocol::Event>, bool)| {
        (
            events
                .iter()
                .filter_map(protocol::Event::id)
                .collect::<Vec<_>>(),
            more,
        )
    };
    assert_eq!(ids(super::page(&stream, -1, 2)), (vec![0, 1], true));
    assert_eq!(ids(super::page(&stream, 1, 3)), (vec![2, 3, 4], false));
    assert_eq!(ids(super::page(&stream, 4, 3)), (vec![], false));
    assert_eq!(ids(super::page(&stream, i64::MAX, 3)), (vec![], false));
    assert_eq!(ids(super::page(&stream, i64::MIN, 1)), (vec![0], true));
}

#[test]
fn ids_and_titles() {
    assert!(is_id("0123456789abcdef0123456789abcdef"));
    for bad in [
        "",
        "0123456789ABCDEF0123456789abcdef",
        "../../../../etc/passwd/aaaaaaaaaa",
        "0123456789abcdef0123456789abcde",
    ] {
        assert!(!is_id(bad), "{bad}");
    }
    assert_eq!(title_of("\n  Fix the bug  \nin detail"), "Fix the bug");
    let long = "é".repeat(70);
    assert_eq!(title_of(&long), format!("{}…", "é".repeat(60)));
}
