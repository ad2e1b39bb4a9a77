//! The claimed sandboxes: runtime id → [`Entry`] (its claim, container, URLs, whether it is
//! paused and ready), and the sessions whose `/start` is under way. Behind a `std` mutex that
//! is held for one lookup or update at a time, never across an `.await`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use protocol::runtime_api::{PodStatus, RuntimeSummary, SessionStatus, StartResponse};

use super::auth::Caller;
use super::store::Claim;
use super::{ServeError, lock};

/// A claimed sandbox.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) claim: Claim,
    pub(super) container_id: String,
    /// sandboxd's URL from this host (published port on loopback).
    pub(super) local_url: String,
    /// sandboxd's URL for callers.
    pub(super) url: String,
    pub(super) paused: bool,
    /// sandboxd answered `/alive` (it stays so: a sandbox is never restarted).
    pub(super) ready: bool,
}

impl Entry {
    fn is_owned_by(&self, owner: &Caller) -> bool {
        self.claim.owner == owner.as_str()
    }

    /// The answer to a `/start` of its session.
    pub(super) fn start_response(&self) -> StartResponse {
        StartResponse {
            runtime_id: self.claim.runtime_id.clone(),
            url: self.url.clone(),
            session_api_key: Some(self.claim.session_api_key.clone()),
            work_hosts: BTreeMap::new(),
        }
    }

    /// Its line in `GET /runtimes`, with its status as last seen (no probe).
    fn summary(&self) -> RuntimeSummary {
        RuntimeSummary {
            runtime_id: self.claim.runtime_id.clone(),
            session_id: self.claim.session_id.clone(),
            status: if self.paused {
                SessionStatus::Paused
            } else {
                SessionStatus::Running
            },
            pod_status: match (self.paused, self.ready) {
                (true, _) => PodStatus::Paused,
                (false, true) => PodStatus::Ready,
                (false, false) => PodStatus::Pending,
            },
            image: self.claim.image.clone(),
            url: self.url.clone(),
            created_at: self.claim.created_at.clone(),
        }
    }
}

#[derive(Debug, Default)]
struct Sandboxes {
    by_runtime: HashMap<String, Entry>,
    /// Sessions whose `/start` is under way.
    starting: HashSet<String>,
}

/// The claimed sandboxes of one service.
#[derive(Debug, Default)]
pub(super) struct Table {
    sandboxes: Mutex<Sandboxes>,
}

/// What [`Table::begin_start`] found for a session.
#[derive(Debug)]
pub(super) enum Begin<'a> {
    /// The session runs already: the answer to its `/start`.
    Running(StartResponse),
    /// The session is the caller's to start; it counts as being started until this is dropped.
    New(Starting<'a>),
}

impl Table {
    /// Adds (or replaces) a claimed sandbox.
    pub(super) fn insert(&self, entry: Entry) {
        lock(&self.sandboxes)
            .by_runtime
            .insert(entry.claim.runtime_id.clone(), entry);
    }

    /// Forgets a sandbox; `None` if it was not (or no longer) in the table.
    pub(super) fn remove(&self, runtime_id: &str) -> Option<Entry> {
        lock(&self.sandboxes).by_runtime.remove(runtime_id)
    }

    /// `owner`'s sandbox `runtime_id` (another owner's is not found).
    pub(super) fn owned(&self, owner: &Caller, runtime_id: &str) -> Option<Entry> {
        lock(&self.sandboxes)
            .by_runtime
            .get(runtime_id)
            .filter(|e| e.is_owned_by(owner))
            .cloned()
    }

    /// `owner`'s sandbox of session `session_id`.
    pub(super) fn of_session(&self, owner: &Caller, session_id: &str) -> Option<Entry> {
        lock(&self.sandboxes)
            .by_runtime
            .values()
            .find(|e| e.claim.session_id == session_id && e.is_owned_by(owner))
            .cloned()
    }

    /// Begins `owner`'s `/start` of session `session_id`: the running session's answer if it
    /// has a sandbox, else the session is held as being started. Conflicts: the session belongs
    /// to another owner, is paused, or is being started.
    pub(super) fn begin_start(
        &self,
        owner: &Caller,
        session_id: &str,
    ) -> Result<Begin<'_>, ServeError> {
        let mut sandboxes = lock(&self.sandboxes);
        let existing = sandboxes
            .by_runtime
            .values()
            .find(|e| e.claim.session_id == session_id);
        if let Some(entry) = existing {
            if !entry.is_owned_by(owner) {
                return Err(ServeError::Conflict(format!(
                    "session {session_id} belongs to another API key"
                )));
            }
            if entry.paused {
                return Err(ServeError::Conflict(format!(
                    "session {session_id} is paused: resume runtime {}",
                    entry.claim.runtime_id
                )));
            }
            // Starting a running session again is answered with that session.
            return Ok(Begin::Running(entry.start_response()));
        }
        if !sandboxes.starting.insert(session_id.to_string()) {
            return Err(ServeError::Conflict(format!(
                "session {session_id} is being started"
            )));
        }
        Ok(Begin::New(Starting {
            table: self,
            session_id: session_id.to_string(),
        }))
    }

    /// Records whether a sandbox is paused.
    pub(super) fn set_paused(&self, runtime_id: &str, paused: bool) {
        if let Some(e) = lock(&self.sandboxes).by_runtime.get_mut(runtime_id) {
            e.paused = paused;
        }
    }

    /// Records that a sandbox's sandboxd answered `/alive`.
    pub(super) fn set_ready(&self, runtime_id: &str) {
        if let Some(e) = lock(&self.sandboxes).by_runtime.get_mut(runtime_id) {
            e.ready = true;
        }
    }

    /// `owner`'s sandboxes for `GET /runtimes`, oldest first.
    pub(super) fn summaries(&self, owner: &Caller) -> Vec<RuntimeSummary> {
        let mut runtimes: Vec<RuntimeSummary> = lock(&self.sandboxes)
            .by_runtime
            .values()
            .filter(|e| e.is_owned_by(owner))
            .map(Entry::summary)
            .collect();
        runtimes.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        runtimes
    }

    /// The sandboxes that serve callers now: ready and not paused.
    pub(super) fn serving(&self) -> Vec<Entry> {
        lock(&self.sandboxes)
            .by_runtime
            .values()
            .filter(|e| !e.paused && e.ready)
            .cloned()
            .collect()
    }
}

/// Holds a session as being started; dropping it ends that, however the `/start` ended.
#[derive(Debug)]
pub(super) struct Starting<'a> {
    table: &'a Table,
    session_id: String,
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        lock(&self.table.sandboxes)
            .starting
            .remove(&self.session_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Caller {
        Caller::from_stored(name.to_string())
    }

    fn entry(runtime_id: &str, session_id: &str, owner: &str, created_at: &str) -> Entry {
        Entry {
            claim: Claim {
                runtime_id: runtime_id.to_string(),
                session_id: session_id.to_string(),
                owner: owner.to_string(),
                image: "img".to_string(),
                session_api_key: format!("key-{runtime_id}"),
                created_at: created_at.to_string(),
                pending_configuration: None,
            },
            container_id: format!("c-{runtime_id}"),
            local_url: "http://127.0.0.1:1".to_string(),
            url: "http://public:1".to_string(),
            paused: false,
            ready: false,
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
                assert_eq!(response.runtime_id, "rt-1");
                assert_eq!(response.url, "http://public:1");
                assert_eq!(response.session_api_key.as_deref(), Some("key-rt-1"));
            }
            Begin::New(_) => panic!("a running session was started again"),
        }
        let err = table.begin_start(&owner("b"), "s").unwrap_err();
        assert_eq!(err.to_string(), "session s belongs to another API key");

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
}
