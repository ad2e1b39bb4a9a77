//! Where sandboxes live. Only this module knows: the rest of agentd talks to a sandbox through
//! its URL and key (the `client` crate).

pub mod docker;
