//! Unit tests of `serve/table.rs`.

use super::*;
use crate::serve::auth::caller_of;

/// The caller holding the key `name`.
fn owner(name: &str) -> Caller {
    caller_of(name)
}

fn entry(runtime_id: &str, session_id: &str, owner: &str, created_at: &str) -> Entry {
    Entry {
        claim: Claim {
            runtime_id: runtime_id.to_string(),
            session_id: session_id.to_string(),
            owner: self::owner(owner).as_str().to_string(),
            image: "img".to_string(),
            session_api_key: format!("key-{runtime_id}"),
            created_at: created_at.to_string(),
            pending_configuration: None,
        },
        container: ServedSandbox {
            id: format!("c-{runtime_id}"),
            local_url: "http://127.0.0.1:1".to_string(),
            port: 1,
            app_ports: BTreeMap::new(),
            image: "sandboxd-runtime:x".to_string(),
        },
        url: "http://public:1".to_string(),
        paused: false,
        ready: false,
        work_hosts: BTreeMap::new(),
    }
}

#[test]
fn a_session_is_started_once_at_a_time() {
    let table = Table::default();
    let first = table.begin_start(&owner("a"), "s").unwrap();
    assert!(matches!(first, Begin::New(_)));
    let again = table.begin_start(&owner("a"), "s").unwrap_err();
    assert_eq!(again.to_string(), "session s is being started");
    assert!(matches!(
        table.begin_start(&owner("a"), "other"),
        Ok(Begin::New(_))
    ));
    drop(first);
    assert!(matches!(
        table.begin_start(&owner("a"), "s"),
        Ok(Begin::New(_))
    ));
}

#[test]
fn starting_a_running_session_answers_with_it_for_its_owner_only() {
    let table = Table::default();
    table.insert(entry("rt-1", "s", "a", "t1"));
    match table.begin_start(&owner("a"), "s").unwrap() {
        Begin::Running(response) => {
            assert_eq!(response.access.runtime_id, "rt-1");
            assert_eq!(response.access.url, "http://public:1");
            assert_eq!(response.access.session_api_key.as_deref(), Some("key-rt-1"));
        }
        Begin::New(_) => panic!("a running session was started again"),
    }
    // Regression (issue 14.10d): another key got 409 "belongs to another API key". Session
    // ids are each key's own: the other key starts a session of its own.
    assert!(matches!(
        table.begin_start(&owner("b"), "s").unwrap(),
        Begin::New(_)
    ));

    table.set_paused("rt-1", true);
    let err = table.begin_start(&owner("a"), "s").unwrap_err();
    assert_eq!(err.to_string(), "session s is paused: resume runtime rt-1");
}

#[test]
fn another_owners_sandboxes_are_not_found() {
    let table = Table::default();
    table.insert(entry("rt-1", "s", "a", "t1"));
    assert!(table.owned(&owner("a"), "rt-1").is_some());
    assert!(table.owned(&owner("b"), "rt-1").is_none());
    assert!(table.of_session(&owner("a"), "s").is_some());
    assert!(table.of_session(&owner("b"), "s").is_none());
    assert!(table.summaries(&owner("b")).is_empty());
    assert!(table.remove("rt-1").is_some());
    assert!(table.remove("rt-1").is_none());
}

/// Caller `a`'s sandboxes: one pending (the oldest), one ready, one paused (the newest);
/// and one of owner `b`.
fn three_states() -> Table {
    let table = Table::default();
    table.insert(entry("rt-new", "s3", "a", "2024-01-03T00:00:00Z"));
    table.insert(entry("rt-old", "s1", "a", "2024-01-01T00:00:00Z"));
    table.insert(entry("rt-mid", "s2", "a", "2024-01-02T00:00:00Z"));
    table.insert(entry("rt-other", "s4", "b", "2024-01-01T00:00:00Z"));
    table.set_ready("rt-mid");
    table.set_ready("rt-new");
    table.set_paused("rt-new", true);
    table
}

#[test]
fn summaries_are_oldest_first_with_the_last_seen_status() {
    let seen: Vec<(String, SessionStatus, PodStatus)> = three_states()
        .summaries(&owner("a"))
        .into_iter()
        .map(|s| (s.runtime_id, s.status, s.pod_status))
        .collect();
    let expected = [
        ("rt-old", SessionStatus::Running, PodStatus::Pending),
        ("rt-mid", SessionStatus::Running, PodStatus::Ready),
        ("rt-new", SessionStatus::Paused, PodStatus::Paused),
    ]
    .map(|(id, status, pod)| (id.to_string(), status, pod));
    assert_eq!(seen, expected);
}

#[test]
fn only_ready_running_sandboxes_are_serving() {
    let serving: Vec<String> = three_states()
        .serving()
        .into_iter()
        .map(|e| e.claim.runtime_id)
        .collect();
    assert_eq!(serving, vec!["rt-mid".to_string()]);
}
