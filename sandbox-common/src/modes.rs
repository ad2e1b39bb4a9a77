//! The hidden modes of the `sandboxd` binary that agentd starts it in: the first argument that
//! selects each. sandboxd's `main` dispatches on them; agentd writes them on command lines.

/// `sandboxd --internal-keeper ARGS...`: the subreaper parent of a local sandboxd, which kills
/// whatever sandboxd leaves behind when it ends (agentd's local runtime).
pub const KEEPER: &str = "--internal-keeper";

/// `sandboxd --egress-proxy ...`: the egress filtering proxy agentd runs once per Docker engine.
pub const EGRESS_PROXY: &str = "--egress-proxy";
