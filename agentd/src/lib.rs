//! agentd, the host side of the sandbox runtime: it creates sandboxes and drives agents in them.
//!
//! So far: [`runtime::docker`], hardened sandbox containers through the Docker API, and the
//! sandbox images they run.

pub mod agent;
pub mod controller;
pub mod display;
pub mod events;
pub mod runtime;
pub mod trajectory;
