//! Unit tests of `runtime/mod.rs`.

use super::*;

#[test]
fn kinds_have_lowercase_names() {
    for kind in [RuntimeKind::Local, RuntimeKind::Docker, RuntimeKind::Remote] {
        let json = serde_json::to_string(&kind).unwrap();
        assert_eq!(json, format!("\"{kind}\""));
        let back: RuntimeKind = serde_json::from_str(&json).unwrap();
        assert_eq!(back, kind);
        let parsed = <RuntimeKind as clap::ValueEnum>::from_str(kind.as_str(), false).unwrap();
        assert_eq!(parsed, kind);
    }
}
