//! Unit tests of `runtime/docker/image.rs`.

use super::*;

#[test]
fn image_names_split_at_the_tag_not_at_a_registry_port() {
    assert_eq!(split_name("repo/rt:1.0"), ("repo/rt", "1.0"));
    assert_eq!(split_name("host:5000/rt"), ("host:5000/rt", "latest"));
    assert_eq!(split_name("host:5000/rt:x"), ("host:5000/rt", "x"));
    assert_eq!(split_name("rt"), ("rt", "latest"));
}

#[test]
fn the_sandbox_layer_adds_the_user_only_where_missing_and_root_only_where_needed() {
    let script = sandbox_script();
    assert!(
        script.starts_with("set -e\nif ! id -u openhands"),
        "{script}"
    );
    assert!(script.contains("useradd -m -u 1000 -U -s /bin/bash openhands"));
    assert!(script.contains("chown 1000:1000 /workspace"));
    assert!(script.ends_with("/opt/sandboxd/bin/sandboxd --version >/dev/null\n"));
    for root in ["", "root", "0", "0:0", "root:root"] {
        assert!(!needs_root(root), "{root}");
    }
    assert!(needs_root("app"));
    assert!(needs_root("1000"));
}

#[test]
fn the_user_layer_renumbers_the_sandbox_user() {
    let text = user_script(SandboxUser {
        uid: 4321,
        gid: 100,
    });
    assert!(text.starts_with("set -e\nhome=$(sed "), "{text}");
    assert!(text.contains(r"\1:4321:100:/' /etc/passwd"), "{text}");
    assert!(text.contains("grep -qx '100'"), "{text}");
    assert!(
        text.contains(r#"chown -R 4321:100 "$home" /workspace"#),
        "{text}"
    );
    assert!(
        text.contains(r#"chown -R 4321:100 "$VIRTUAL_ENV""#),
        "{text}"
    );
}
