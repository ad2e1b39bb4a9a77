//! The claimed sandboxes: runtime id → [`Entry`] (its claim, container, URLs, whether it is
//! paused and ready), and the sessions whose `/start` is under way. Behind a `std` mutex that
//! is held for one lookup or update at a time, never across an `.await`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use protocol::runtime_api::{
    PodStatus, RuntimeAccess, RuntimeSummary, SessionStatus, StartResponse,
};

use super::auth::Caller;
use super::backend::ServedSandbox;
use super::store::Claim;
use super::{ServeConfig, ServeError, lock};

/// A claimed sandbox.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) claim: Claim,
    pub(super) container: ServedSandbox,
    /// sandboxd's URL for callers.
    pub(super) url: String,
    pub(super) paused: bool,
    /// sandboxd answered `/alive` (it stays so: a sandbox is never restarted).
    pub(super) ready: bool,
    /// The agent's app ports: URL for callers → port inside.
    pub(super) work_hosts: BTreeMap<String, u16>,
}

impl Entry {
    /// `container`, claimed by `claim`, as `config`'s callers reach it; not yet seen ready.
    pub(super) fn new(
        claim: Claim,
        container: ServedSandbox,
        paused: bool,
        config: &ServeConfig,
    ) -> Entry {
        Entry {
            url: config.sandbox_url(&claim.runtime_id, container.port),
            claim,
            work_hosts: config.work_hosts(&container.app_ports),
            container,
            paused,
            ready: false,
        }
    }

    fn is_owned_by(&self, owner: &Caller) -> bool {
        self.claim.owner == owner.as_str()
    }

    /// How its caller reaches it (part of the answers to `/start` and `/sessions/{sid}`).
    pub(super) fn access(&self) -> RuntimeAccess {
        RuntimeAccess {
            runtime_id: self.claim.runtime_id.clone(),
            url: self.url.clone(),
            session_api_key: Some(self.claim.session_api_key.clone()),
            work_hosts: self.work_hosts.clone(),
        }
    }

    /// The answer to a `/start` of its session.
    pub(super) fn start_response(&self) -> StartResponse {
        StartResponse {
            access: self.access(),
            image: Some(self.container.image.clone()),
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
    /// Sessions whose `/start` is under way, by owner and session id.
    starting: HashSet<(String, String)>,
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

    /// Sandbox `runtime_id`, whoever owns it (the front door: its session key is the check).
    pub(super) fn get(&self, runtime_id: &str) -> Option<Entry> {
        lock(&self.sandboxes).by_runtime.get(runtime_id).cloned()
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
    /// has a sandbox, else the session is held as being started. Session ids are each owner's
    /// own: another owner's session of the same id is not seen (and its existence not told).
    /// Conflicts: the session is paused, or is being started.
    pub(super) fn begin_start(
        &self,
        owner: &Caller,
        session_id: &str,
    ) -> Result<Begin<'_>, ServeError> {
        let mut sandboxes = lock(&self.sandboxes);
        let existing = sandboxes
            .by_runtime
            .values()
            .find(|e| e.claim.session_id == session_id && e.is_owned_by(owner));
        if let Some(entry) = existing {
            if entry.paused {
                return Err(ServeError::Conflict(format!(
                    "session {session_id} is paused: resume runtime {}",
                    entry.claim.runtime_id
                )));
            }
            // Starting a running session again is answered with that session.
            return Ok(Begin::Running(entry.start_response()));
        }
        let key = (owner.as_str().to_string(), session_id.to_string());
        if !sandboxes.starting.insert(key.clone()) {
            return Err(ServeError::Conflict(format!(
                "session {session_id} is being started"
            )));
        }
        Ok(Begin::New(Starting { table: self, key }))
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
    /// Owner and session id.
    key: (String, String),
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        lock(&self.table.sandboxes).starting.remove(&self.key);
    }
}

#[cfg(test)]
mod tests;
