//! Unit tests of `serve/backend/mod.rs`.

use super::*;

#[test]
fn the_port_is_the_urls_last_part() {
    assert_eq!(port_of("http://127.0.0.1:32768"), Some(32768));
    assert_eq!(port_of("http://127.0.0.1:32768/"), Some(32768));
    assert_eq!(port_of("unix:/run/agentd/x/sandboxd.sock"), None);
}
