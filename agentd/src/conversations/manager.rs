//! The conversations of one server: creating them, their runs (at most one at a time each),
//! what users ask of them, the release of idle sandboxes, and the recovery at start.
//!
//! A run is started by a creation, by a message or a resume to a conversation without one, and
//! at start for a conversation that was running. Whoever starts it does so under the
//! conversation's run lock, which also tells whether one is active, so two requests never start
//! two runs. A run that ends by itself (not detached) is followed by another when a user message
//! came that it never saw (sent while it was ending).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use protocol::action::{ActionKind, ChangeAgentStateArgs, MessageArgs};
use protocol::conversation::{ConversationInfo, ConversationStatus, CreateConversation};
use protocol::{Action, AgentState, Event, EventSource, ObservationKind};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::store::{self, META_FILE, Meta, WORKSPACE_DIR};
use super::{AgentRequest, MadeAgent, ServerConfig, ServerError};
use crate::controller::has_unseen_user_message;
use crate::events::{EventFilter, EventStream};
use crate::runtime::{RuntimeConfig, RuntimeKind};
use crate::secrets::SecretMask;
use crate::session::{self, RunSpec};
use crate::state::{STATE_FILE, State};
use crate::workspace::{Repository, WorkspaceSpec};

/// The agents a conversation may ask for.
const AGENTS: &[&str] = &["CodeActAgent"];
/// The longest task or message accepted (characters).
const MAX_MESSAGE_CHARS: usize = 100_000;

/// Why a request about a conversation cannot be served. Each variant is one HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    /// No such conversation for this key (404).
    #[error("no conversation {0}")]
    NotFound(String),
    /// The request cannot work (400); the message says why.
    #[error("{0}")]
    BadRequest(String),
    /// The request's body or query cannot be decoded (422); the message says where.
    #[error("{0}")]
    Unprocessable(String),
    /// The conversation is in a state that forbids this (409); the message says which.
    #[error("{0}")]
    Conflict(String),
    /// The answer would be larger than the server gives (413).
    #[error("{0}")]
    TooLarge(String),
    /// As many conversations as the server allows hold a sandbox (429); retrying after one
    /// ended, was stopped or was released can help.
    #[error("{0}")]
    Busy(String),
    /// The data directory failed (500).
    #[error(transparent)]
    Server(#[from] ServerError),
    /// The event log failed (500).
    #[error(transparent)]
    EventLog(#[from] crate::events::EventLogError),
}

/// A conversation's run, while one is active.
struct ActiveRun {
    detach: CancellationToken,
    task: JoinHandle<()>,
    /// The id the run's first event gets: a state change below it is an earlier run's.
    first_event: i64,
}

#[derive(Default)]
struct RunSlot {
    active: Option<ActiveRun>,
    /// Why the last run could not start or go on (a run that ended in `error` says so in its
    /// state instead).
    last_error: Option<String>,
}

/// One conversation; see the module documentation of [`super`].
pub(super) struct Conversation {
    pub(super) meta: Meta,
    pub(super) dir: PathBuf,
    pub(super) stream: EventStream,
    run: Mutex<RunSlot>,
    /// When the conversation last did something: an event, or a run started. Reading it (a
    /// page that watches) is not doing something.
    touched: Arc<Mutex<Instant>>,
    deleted: AtomicBool,
}

impl Conversation {
    fn slot(&self) -> MutexGuard<'_, RunSlot> {
        self.run
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self) {
        *self
            .touched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.touched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }

    fn is_running(&self) -> bool {
        self.slot().active.is_some()
    }

    /// The controller's state, from the newest `agent_state_changed` event.
    pub(super) fn agent_state(&self) -> Option<AgentState> {
        self.latest_state().map(|(_, state)| state)
    }

    /// The newest `agent_state_changed` event's id and state.
    fn latest_state(&self) -> Option<(i64, AgentState)> {
        let found = self.stream.search(&EventFilter {
            types: vec!["agent_state_changed".to_string()],
            reverse: true,
            limit: Some(1),
            ..EventFilter::default()
        });
        let event = found.first()?;
        match &**event {
            Event::Observation(o) => match &o.kind {
                ObservationKind::AgentStateChanged(extras) => {
                    Some((o.id?, AgentState::parse(&extras.agent_state)?))
                }
                _ => None,
            },
            Event::Action(_) => None,
        }
    }

    /// Whether the active run itself waits for its user (or is paused), as opposed to a
    /// run that is still starting after an earlier one had waited.
    fn run_waits(&self) -> bool {
        let Some(first_event) = self.slot().active.as_ref().map(|run| run.first_event) else {
            return false;
        };
        matches!(
            self.latest_state(),
            Some((id, AgentState::AwaitingUserInput | AgentState::Paused)) if id >= first_event
        )
    }

    /// What lists and gets show.
    pub(super) fn info(&self) -> ConversationInfo {
        let state = State::load(&self.dir.join(STATE_FILE)).ok();
        let agent_state = self.agent_state();
        let running = self.is_running();
        let status = match (running, agent_state) {
            (true, None | Some(AgentState::Loading)) => ConversationStatus::Starting,
            (true, _) => ConversationStatus::Running,
            (false, Some(AgentState::Error)) => ConversationStatus::Error,
            (false, _) if self.slot().last_error.is_some() => ConversationStatus::Error,
            (false, _) => ConversationStatus::Stopped,
        };
        let last_error = state
            .as_ref()
            .and_then(|s| s.last_error.clone())
            .or_else(|| self.slot().last_error.clone());
        let latest = self.stream.latest_id();
        let last_updated_at = latest
            .and_then(|id| self.stream.get(id))
            .and_then(|e| e.timestamp().map(str::to_string))
            .unwrap_or_else(|| self.meta.created_at.clone());
        ConversationInfo {
            conversation_id: self.meta.id.clone(),
            title: self.meta.title.clone(),
            status,
            agent_state: agent_state
                .unwrap_or(AgentState::Loading)
                .as_str()
                .to_string(),
            last_error,
            iteration: state.as_ref().map_or(0, |s| s.iteration),
            max_iterations: self.meta.max_iterations,
            accumulated_cost: state.as_ref().map_or(0.0, |s| s.budget.spent),
            latest_event_id: latest.unwrap_or(-1),
            agent: self.meta.agent.clone(),
            runtime: self.meta.runtime.clone(),
            repository: self.meta.repository.clone(),
            confirmation_mode: self.meta.confirmation_mode,
            created_at: self.meta.created_at.clone(),
            last_updated_at,
        }
    }

    /// Adds a user request to change the controller's state (OpenHands' clients do the same).
    fn request_state(&self, state: AgentState) -> Result<(), ConversationError> {
        self.stream.add(
            Action::from(ActionKind::ChangeAgentState(ChangeAgentStateArgs {
                agent_state: state.as_str().to_string(),
                thought: String::new(),
            })),
            EventSource::User,
        )?;
        Ok(())
    }
}

/// Every conversation of the server.
pub(super) struct Conversations {
    root: PathBuf,
    config: ServerConfig,
    map: Mutex<BTreeMap<String, Arc<Conversation>>>,
    /// Runs active now (each holds a sandbox), at most `config.max_running`.
    running: std::sync::atomic::AtomicUsize,
}

impl Conversations {
    /// Reads the conversations under `config.data_dir` and resumes those that were running
    /// (or have a message no run saw). A conversation that cannot be read is reported and left
    /// out, never fatal.
    pub(super) async fn open(config: ServerConfig) -> Result<Arc<Conversations>, ServerError> {
        let root = config.data_dir.join("conversations");
        std::fs::create_dir_all(&root).map_err(|source| ServerError::Io {
            path: root.display().to_string(),
            source,
        })?;
        let manager = Arc::new(Conversations {
            root: root.clone(),
            config,
            map: Mutex::new(BTreeMap::new()),
            running: std::sync::atomic::AtomicUsize::new(0),
        });
        for dir in store::list(&root)? {
            match manager.load(&dir) {
                Ok(conversation) => {
                    let interrupted = matches!(
                        conversation.agent_state(),
                        Some(
                            AgentState::Loading
                                | AgentState::Running
                                | AgentState::AwaitingUserConfirmation
                                | AgentState::UserConfirmed
                                | AgentState::UserRejected
                                | AgentState::RateLimited
                        )
                    ) || has_unseen_user_message(&conversation.stream);
                    manager.insert(conversation.clone());
                    if interrupted {
                        tracing::info!(conversation = %conversation.meta.id, "resuming");
                        if let Err(e) = manager.start(&conversation, None) {
                            tracing::warn!(conversation = %conversation.meta.id, error = %e, "cannot resume");
                        }
                    }
                }
                Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "conversation left out"),
            }
        }
        Ok(manager)
    }

    fn load(&self, dir: &Path) -> Result<Arc<Conversation>, ConversationError> {
        let meta = Meta::load(dir)?;
        if !store::is_id(&meta.id) || dir.file_name() != Some(meta.id.as_ref()) {
            return Err(ConversationError::BadRequest(format!(
                "{} does not belong to its directory",
                META_FILE
            )));
        }
        let workspace = workspace_spec(&meta)?;
        let stream = EventStream::open_masked(dir, SecretMask::new(&workspace.all_secrets()))?;
        Ok(Arc::new(Conversation {
            meta,
            dir: dir.to_path_buf(),
            stream,
            run: Mutex::new(RunSlot::default()),
            touched: Arc::new(Mutex::new(Instant::now())),
            deleted: AtomicBool::new(false),
        }))
    }

    /// The server's keys.
    pub(super) fn api_keys(&self) -> impl Iterator<Item = &str> {
        self.config.api_keys.iter().map(String::as_str)
    }

    /// The largest workspace download.
    pub(super) fn max_zip_bytes(&self) -> u64 {
        self.config.max_zip_bytes
    }

    /// Whether another run may start now.
    fn has_room(&self) -> Result<(), ConversationError> {
        if self.running.load(Ordering::SeqCst) < self.config.max_running {
            Ok(())
        } else {
            Err(self.busy())
        }
    }

    fn busy(&self) -> ConversationError {
        ConversationError::Busy(format!(
            "{} conversations hold a sandbox, as many as this server runs at once; stop one, \
             or retry when one has ended or been released",
            self.config.max_running
        ))
    }

    fn map(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Conversation>>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn insert(&self, conversation: Arc<Conversation>) {
        self.map()
            .insert(conversation.meta.id.clone(), conversation);
    }

    /// The conversation `id` of `owner`.
    pub(super) fn get(
        &self,
        owner: &str,
        id: &str,
    ) -> Result<Arc<Conversation>, ConversationError> {
        let not_found = || ConversationError::NotFound(id.chars().take(64).collect());
        if !store::is_id(id) {
            return Err(not_found());
        }
        let conversation = self.map().get(id).cloned().ok_or_else(not_found)?;
        if conversation.meta.owner != owner {
            return Err(not_found());
        }
        Ok(conversation)
    }

    /// The conversations of `owner`, newest first.
    pub(super) fn list(&self, owner: &str) -> Vec<Arc<Conversation>> {
        let mut list: Vec<_> = self
            .map()
            .values()
            .filter(|c| c.meta.owner == owner)
            .cloned()
            .collect();
        list.sort_by(|a, b| b.meta.created_at.cmp(&a.meta.created_at));
        list
    }

    /// Creates a conversation of `owner` and starts its first run.
    pub(super) fn create(
        self: &Arc<Self>,
        owner: &str,
        request: CreateConversation,
    ) -> Result<Arc<Conversation>, ConversationError> {
        let bad = ConversationError::BadRequest;
        let task = request.task.trim();
        if task.is_empty() {
            return Err(bad("a conversation needs a task".to_string()));
        }
        if request.task.chars().count() > MAX_MESSAGE_CHARS {
            return Err(bad(format!(
                "the task is longer than {MAX_MESSAGE_CHARS} characters"
            )));
        }
        let agent = request.agent.unwrap_or_else(|| AGENTS[0].to_string());
        if !AGENTS.contains(&agent.as_str()) {
            return Err(bad(format!(
                "unknown agent {agent:?}; this server offers {}",
                AGENTS.join(", ")
            )));
        }
        let runtime = match request.runtime.as_deref() {
            None => self.config.runtime.kind,
            Some("local") => RuntimeKind::Local,
            Some("docker") => RuntimeKind::Docker,
            Some("remote") => RuntimeKind::Remote,
            Some(other) => {
                return Err(bad(format!(
                    "unknown runtime {other:?}; give local, docker or remote"
                )));
            }
        };
        if runtime == RuntimeKind::Remote && self.config.runtime.remote_api.is_none() {
            return Err(bad(
                "this server has no runtime API service for remote sandboxes (agentd server --remote-api-url)"
                    .to_string(),
            ));
        }
        let max_iterations = match request.max_iterations {
            Some(0) => return Err(bad("max_iterations must be at least 1".to_string())),
            Some(n) if n > self.config.max_iterations => {
                return Err(bad(format!(
                    "max_iterations {n} is above this server's limit of {}",
                    self.config.max_iterations
                )));
            }
            Some(n) => n,
            None => self.config.max_iterations,
        };
        let max_budget = match (request.max_budget, self.config.max_budget) {
            (Some(b), _) if !(b.is_finite() && b > 0.0) => {
                return Err(bad(
                    "max_budget must be a positive number of USD".to_string()
                ));
            }
            (Some(b), Some(limit)) if b > limit => {
                return Err(bad(format!(
                    "max_budget {b} is above this server's limit of {limit}"
                )));
            }
            (asked, limit) => asked.or(limit),
        };
        self.has_room()?;
        let id = sandbox_common::random_hex(16)
            .map_err(|e| ConversationError::Server(ServerError::Config(e.to_string())))?;
        let meta = Meta {
            id: id.clone(),
            title: request
                .title
                .map(|t| store::title_of(&t))
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| store::title_of(task)),
            owner: owner.to_string(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            task: request.task.clone(),
            agent,
            llm: request.llm,
            runtime: runtime.as_str().to_string(),
            repository: request.repository,
            branch: request.branch,
            confirmation_mode: request
                .confirmation_mode
                .unwrap_or(self.config.security.confirmation_mode),
            max_iterations,
            max_budget,
            conversation_instructions: request.conversation_instructions.unwrap_or_default(),
        };
        // Checked before anything is written: a repository or model that cannot work is the
        // caller's 400, not a conversation in error.
        let workspace = workspace_spec(&meta)?;
        let agent = self.make_agent(&meta, &workspace)?;
        let dir = self.root.join(&id);
        let io = |source| ServerError::Io {
            path: dir.display().to_string(),
            source,
        };
        let workspace_dir = dir.join(WORKSPACE_DIR);
        std::fs::create_dir_all(&workspace_dir).map_err(io)?;
        if runtime == RuntimeKind::Docker && nix::unistd::geteuid().is_root() {
            // A Docker sandbox runs as its workspace's owner (as for `agentd run`), and never
            // as root unless allowed: a server running as root gives a new workspace to the
            // configured sandbox user (by default the image's, 1000).
            let user = self.config.runtime.docker.user.unwrap_or_default();
            nix::unistd::chown(
                &workspace_dir,
                Some(nix::unistd::Uid::from_raw(user.uid)),
                Some(nix::unistd::Gid::from_raw(user.gid)),
            )
            .map_err(|e| io(std::io::Error::from(e)))?;
        }
        meta.save(&dir)?;
        let conversation = self.load(&dir)?;
        self.insert(conversation.clone());
        self.start(&conversation, Some(agent))?;
        Ok(conversation)
    }

    fn make_agent(
        &self,
        meta: &Meta,
        workspace: &WorkspaceSpec,
    ) -> Result<MadeAgent, ConversationError> {
        (self.config.make_agent)(&AgentRequest {
            agent: meta.agent.clone(),
            llm: meta.llm.clone(),
            mask: SecretMask::new(&workspace.all_secrets()),
        })
        .map_err(ConversationError::BadRequest)
    }

    /// Starts a run of `conversation` unless one is active: a new one the first time (with
    /// `agent` if given), else a resumed one.
    fn start(
        self: &Arc<Self>,
        conversation: &Arc<Conversation>,
        agent: Option<MadeAgent>,
    ) -> Result<bool, ConversationError> {
        let mut slot = conversation.slot();
        if slot.active.is_some() || conversation.deleted.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let meta = &conversation.meta;
        let workspace = workspace_spec(meta)?;
        let max = self.config.max_running;
        self.running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| self.busy())?;
        let made = match agent {
            Some(made) => Ok(made),
            None => self.make_agent(meta, &workspace),
        };
        let made = match made {
            Ok(made) => made,
            Err(e) => {
                self.running.fetch_sub(1, Ordering::SeqCst);
                return Err(e);
            }
        };
        let MadeAgent {
            agent,
            delegates,
            llms,
        } = made;
        let mut security = self.config.security.clone();
        security.confirmation_mode = meta.confirmation_mode;
        let resume = conversation.dir.join(STATE_FILE).is_file();
        let spec = RunSpec {
            session_id: meta.id.clone(),
            sessions_dir: self.root.clone(),
            task: (!resume).then(|| meta.task.clone()),
            resume,
            agent,
            runtime: self.runtime_for(conversation),
            max_iterations: meta.max_iterations,
            max_budget: meta.max_budget,
            stop_on_signals: false,
            mcp: self.config.mcp.clone(),
            workspace,
            security,
            // Not headless: the run waits for its user's replies (see `run_attached`).
            interactive: false,
            delegates,
            llms,
            // The user's requests are added to the conversation's stream directly.
            user_actions: None,
        };
        let detach = CancellationToken::new();
        let first_event = conversation.stream.latest_id().map_or(0, |id| id + 1);
        slot.last_error = None;
        conversation.touch();
        let task = tokio::spawn(
            self.clone()
                .drive(conversation.clone(), spec, detach.clone()),
        );
        slot.active = Some(ActiveRun {
            detach,
            task,
            first_event,
        });
        Ok(true)
    }

    /// One run of `conversation`, and what follows it.
    async fn drive(
        self: Arc<Self>,
        conversation: Arc<Conversation>,
        spec: RunSpec,
        detach: CancellationToken,
    ) {
        let touched = conversation.touched.clone();
        let result = session::run_attached(
            spec,
            conversation.stream.clone(),
            detach.clone(),
            move |_| {
                *touched
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
            },
        )
        .await;
        let id = &conversation.meta.id;
        let ok = match result {
            Ok(outcome) => {
                tracing::info!(conversation = %id, state = outcome.state.agent_state.as_str(), "run ended");
                true
            }
            Err(e) => {
                tracing::warn!(conversation = %id, error = %e, "run failed");
                conversation.slot().last_error = Some(e.to_string());
                false
            }
        };
        conversation.slot().active = None;
        self.running.fetch_sub(1, Ordering::SeqCst);
        // A message that came while the run was ending: the next run takes it up.
        if ok
            && !detach.is_cancelled()
            && has_unseen_user_message(&conversation.stream)
            && let Err(e) = self.start(&conversation, None)
        {
            conversation.slot().last_error = Some(e.to_string());
        }
    }

    fn runtime_for(&self, conversation: &Conversation) -> RuntimeConfig {
        let mut runtime = self.config.runtime.clone();
        runtime.kind = match conversation.meta.runtime.as_str() {
            "docker" => RuntimeKind::Docker,
            "remote" => RuntimeKind::Remote,
            _ => RuntimeKind::Local,
        };
        runtime.workspace = Some(conversation.dir.join(WORKSPACE_DIR));
        if let Some(api) = &mut runtime.remote_api {
            api.session_id = conversation.meta.id.clone();
        }
        runtime
    }

    /// Adds the user's message; starts a run if none is active.
    pub(super) fn message(
        self: &Arc<Self>,
        conversation: &Arc<Conversation>,
        text: &str,
    ) -> Result<String, ConversationError> {
        if text.trim().is_empty() {
            return Err(ConversationError::BadRequest(
                "the message is empty".to_string(),
            ));
        }
        if text.chars().count() > MAX_MESSAGE_CHARS {
            return Err(ConversationError::BadRequest(format!(
                "the message is longer than {MAX_MESSAGE_CHARS} characters"
            )));
        }
        if !conversation.dir.join(STATE_FILE).is_file() && !conversation.is_running() {
            return Err(ConversationError::Conflict(
                "the conversation's first run never started; resume it first".to_string(),
            ));
        }
        if !conversation.is_running() {
            // Refused before the message is added: a message no run will take up is lost.
            self.has_room()?;
        }
        conversation.stream.add(
            Action::from(ActionKind::Message(MessageArgs {
                content: text.to_string(),
                ..MessageArgs::default()
            })),
            EventSource::User,
        )?;
        Ok(if self.start(conversation, None)? {
            "the message was added; the conversation starts again".to_string()
        } else {
            "the message was added".to_string()
        })
    }

    /// Pauses the agent of a running conversation.
    pub(super) fn pause(&self, conversation: &Conversation) -> Result<String, ConversationError> {
        match self.running_state(conversation, "paused")? {
            AgentState::Paused => Ok("the conversation is paused already".to_string()),
            _ => {
                conversation.request_state(AgentState::Paused)?;
                Ok("pause requested".to_string())
            }
        }
    }

    /// Resumes a paused conversation, or starts a run of one that holds no sandbox and has not
    /// ended (paused, interrupted, or in error).
    pub(super) fn resume(
        self: &Arc<Self>,
        conversation: &Arc<Conversation>,
    ) -> Result<String, ConversationError> {
        let state = conversation.agent_state();
        if conversation.is_running() {
            return match state {
                Some(AgentState::Paused) => {
                    conversation.request_state(AgentState::Running)?;
                    Ok("resume requested".to_string())
                }
                _ => Ok("the conversation is running already".to_string()),
            };
        }
        if let Some(
            state @ (AgentState::Finished
            | AgentState::Rejected
            | AgentState::Stopped
            | AgentState::AwaitingUserInput),
        ) = state
        {
            return Err(ConversationError::Conflict(format!(
                "the conversation is {}; send a message to go on",
                state.as_str()
            )));
        }
        // A saved `paused` (or interrupted, or failed) run goes on `running` when resumed.
        self.start(conversation, None)?;
        Ok("the conversation starts again".to_string())
    }

    /// Stops a running conversation (`stopped`; a message starts it again).
    pub(super) fn stop(&self, conversation: &Conversation) -> Result<String, ConversationError> {
        self.running_state(conversation, "stopped")?;
        conversation.request_state(AgentState::Stopped)?;
        Ok("stop requested".to_string())
    }

    /// Confirms (or rejects) the action that waits for the user's confirmation.
    pub(super) fn confirm(
        &self,
        conversation: &Conversation,
        confirmed: bool,
    ) -> Result<String, ConversationError> {
        let state = self.running_state(conversation, "confirmed")?;
        if state != AgentState::AwaitingUserConfirmation {
            return Err(ConversationError::Conflict(format!(
                "no action waits for confirmation (the conversation is {})",
                state.as_str()
            )));
        }
        let (answer, said) = if confirmed {
            (AgentState::UserConfirmed, "confirmed")
        } else {
            (AgentState::UserRejected, "rejected")
        };
        conversation.request_state(answer)?;
        Ok(format!("the action was {said}"))
    }

    /// The agent state of a conversation that has an active run, or 409.
    fn running_state(
        &self,
        conversation: &Conversation,
        wanted: &str,
    ) -> Result<AgentState, ConversationError> {
        if !conversation.is_running() {
            return Err(ConversationError::Conflict(format!(
                "the conversation is not running, so it cannot be {wanted}"
            )));
        }
        Ok(conversation.agent_state().unwrap_or(AgentState::Loading))
    }

    /// Ends the conversation's run (its sandbox closed) and deletes everything of it.
    pub(super) async fn delete(
        &self,
        conversation: &Arc<Conversation>,
    ) -> Result<(), ConversationError> {
        conversation.deleted.store(true, Ordering::SeqCst);
        Self::detach(conversation).await;
        self.map().remove(&conversation.meta.id);
        let dir = conversation.dir.clone();
        tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir))
            .await
            .map_err(|e| ServerError::Config(e.to_string()))?
            .map_err(|source| ServerError::Io {
                path: conversation.dir.display().to_string(),
                source,
            })?;
        Ok(())
    }

    async fn detach(conversation: &Conversation) {
        let active = conversation.slot().active.take();
        if let Some(run) = active {
            run.detach.cancel();
            if let Err(e) = run.task.await {
                tracing::warn!(conversation = %conversation.meta.id, error = %e, "the run's task failed");
            }
        }
    }

    /// Detaches every run (at shutdown): their sandboxes are closed and their state is saved.
    pub(super) async fn detach_all(&self) {
        let all: Vec<_> = self.map().values().cloned().collect();
        futures_util::future::join_all(all.iter().map(|c| Self::detach(c))).await;
    }

    /// Releases the sandboxes of conversations that have waited for the user (or stayed paused)
    /// longer than `idle_release`. Runs until aborted.
    pub(super) async fn release_idle(self: Arc<Self>) {
        let idle = self.config.idle_release;
        let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        loop {
            tokio::time::sleep(every).await;
            let all: Vec<_> = self.map().values().cloned().collect();
            for conversation in all {
                if conversation.run_waits() && conversation.idle_for() >= idle {
                    tracing::info!(conversation = %conversation.meta.id, "idle: releasing its sandbox");
                    Self::detach(&conversation).await;
                }
            }
        }
    }
}

/// The workspace a conversation's runs make ready: its repository (a clone's token comes from
/// the server's environment: GITHUB_TOKEN, GITLAB_TOKEN or BITBUCKET_TOKEN by host) and
/// instructions.
fn workspace_spec(meta: &Meta) -> Result<WorkspaceSpec, ConversationError> {
    let repository = match &meta.repository {
        Some(spec) => Some(
            Repository::clone_of(spec, None, meta.branch.clone(), None, |name| {
                std::env::var(name).ok()
            })
            .map_err(|e| ConversationError::BadRequest(e.to_string()))?,
        ),
        None => None,
    };
    Ok(WorkspaceSpec {
        repository,
        conversation_instructions: meta.conversation_instructions.clone(),
        ..WorkspaceSpec::default()
    })
}
