//! Logic that agentd and sandboxd (and their tests) both need and that is not a wire shape, so
//! it has no place in `protocol`, which holds serde types only.
//!
//! Why one crate and not one per helper: each helper is a few dozen lines. Why it is not a grab
//! bag: each module has exactly one job and is named after it, a helper joins only when two
//! crates need it and it has a job of its own, and the crate exposes only the names re-exported
//! here. No async runtime, no HTTP; the only I/O is reading `/proc` and the OS's random source.
//!
//! - `truncate`: the middle cut of over-long observation text, with its limit and its notice.
//!   sandboxd cuts command output with it; agentd cuts observations for the LLM with it and
//!   recognises sandboxd's cut by the notice.
//! - `random`: random hex from the OS (session keys, HMAC keys, markers, ids).
//! - `procstat`: the fields of `/proc/PID/stat` we use (state, parent, process group, session,
//!   terminal foreground group, CPU times, start time), read past the command name's last `)`.
//! - `egress`: domain rules of a sandbox's egress policy (`example.com:443`, `*.pypi.org`):
//!   agentd parses them from settings, sandboxd's filtering proxy matches connections against
//!   them.
//! - `modes`: the first arguments that select sandboxd's hidden modes agentd starts it in
//!   (the local sandbox's keeper, the egress proxy).
//! - `shell`: quoting a string as one bash word (sandboxd's set-up line, agentd's workspace
//!   commands).
//! - `timeout`: the range of durations an action or a setting may ask for; agentd refuses a
//!   model's timeout outside it before sandboxd would.

mod egress;
pub mod modes;
mod procstat;
mod random;
mod shell;
mod timeout;
mod truncate;

pub use egress::{DomainRule, DomainRuleError, normalize_host, split_port};
pub use procstat::ProcStat;
pub use random::{RandomError, random_hex};
pub use shell::shell_quote;
pub use timeout::{MAX_TIMEOUT_SECONDS, TimeoutError, timeout_duration};
pub use truncate::{MAX_OBSERVATION_CHARS, TRUNCATION_NOTICE, truncate_middle};
