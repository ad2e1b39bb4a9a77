//! Unit tests of `user.rs`.

use super::*;

const PASSWD: &str = "\
root:x:0:0:root:/root:/bin/bash
# a comment:x:1:1::/:/bin/sh
   # an indented comment

daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
broken:x:1001
badid:x:10x1:1001::/home/badid:/bin/sh
negative:x:-5:1001::/home/negative:/bin/sh
toobig:x:4294967296:1001::/home/toobig:/bin/sh
extra:x:1002:1002::/home/extra:/bin/sh:more
+nis:x:1003:1003::/home/nis:/bin/sh
:x:1004:1004::/home/noname:/bin/sh
openhands:x:1000:1000:OpenHands,,,:/home/openhands:/bin/bash\r
noshell:x:1005:1005::/home/noshell:
openhands:x:2000:2000::/elsewhere:/bin/sh
";

fn user(name: &str, uid: u32, gid: u32, home: &str, shell: &str) -> RunAs {
    RunAs {
        name: name.into(),
        uid,
        gid,
        home: home.into(),
        shell: shell.into(),
    }
}

#[test]
fn finds_the_first_entry_with_the_name() {
    assert_eq!(
        find_user(PASSWD.as_bytes(), "openhands"),
        Some(user(
            "openhands",
            1000,
            1000,
            "/home/openhands",
            "/bin/bash"
        ))
    );
    assert_eq!(
        find_user(PASSWD.as_bytes(), "root"),
        Some(user("root", 0, 0, "/root", "/bin/bash"))
    );
    assert_eq!(
        find_user(PASSWD.as_bytes(), "noshell"),
        Some(user("noshell", 1005, 1005, "/home/noshell", ""))
    );
}

#[test]
fn skips_comments_blank_and_malformed_lines() {
    for name in [
        "# a comment",
        "broken",
        "badid",
        "negative",
        "toobig",
        "extra",
        "+nis",
        "nis",
        "",
        "nobody",
        "OpenHands",
    ] {
        assert_eq!(find_user(PASSWD.as_bytes(), name), None, "{name:?}");
    }
    assert_eq!(find_user(b"", "root"), None);
}

#[test]
fn a_malformed_line_before_a_good_one_does_not_hide_it() {
    let passwd = b"app:x:oops:1::/:/bin/sh\napp:x:7:8::/home/app:/bin/sh\n";
    assert_eq!(
        find_user(passwd, "app"),
        Some(user("app", 7, 8, "/home/app", "/bin/sh"))
    );
}

#[test]
fn keeps_non_utf8_paths() {
    let passwd = b"u:x:5:5::/home/\xff:/bin/sh";
    let found = find_user(passwd, "u").map(|u| u.home.into_os_string().into_vec());
    assert_eq!(found, Some(b"/home/\xff".to_vec()));
}

#[test]
fn lookup_errors_keep_their_messages() {
    let dir = tempfile::tempdir().unwrap();
    let passwd = dir.path().join("passwd");
    std::fs::write(&passwd, PASSWD).unwrap();
    assert_eq!(
        lookup(&passwd, "openhands", 1000).unwrap(),
        user("openhands", 1000, 1000, "/home/openhands", "/bin/bash")
    );
    let missing = lookup(&passwd, "no-such-user-here", 1000).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "user \"no-such-user-here\" (uid 1000) does not exist; the sandbox image must provide \
             it, or pass --username root to keep root"
    );
    let unreadable = lookup(&dir.path().join("absent"), "openhands", 1000).unwrap_err();
    assert!(matches!(unreadable, UserError::Lookup(ref name, _) if name == "openhands"));
    let message = unreadable.to_string();
    assert!(
        message.starts_with("cannot look up user \"openhands\": ") && message.contains("absent"),
        "{message}"
    );
}

#[test]
fn supplementary_groups_are_the_primary_group_and_memberships() {
    let group = b"\
root:x:0:
sudo:x:27:openhands
# comment:x:99:openhands
users:x:100:alice, openhands ,bob
openhands:x:1000:openhands
docker:x:999:alice
bad:x:nope:openhands
short:x:5
";
    assert_eq!(
        supplementary_groups(group, "openhands", 1000),
        vec![1000, 27, 100]
    );
    assert_eq!(
        supplementary_groups(group, "alice", 1001),
        vec![1001, 100, 999]
    );
    assert_eq!(supplementary_groups(b"", "alice", 1001), vec![1001]);
}

#[test]
fn a_missing_group_file_means_no_extra_groups() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        read_groups(&dir.path().join("group"), "openhands", 1000),
        Ok(vec![1000])
    );
    assert!(
        read_groups(dir.path(), "openhands", 1000).is_err(),
        "a directory"
    );
}

#[test]
fn agrees_with_getpwnam_on_this_host() {
    // Every user of the host's /etc/passwd resolves as NSS resolves it (this test binary is
    // dynamically linked, so getpwnam works here).
    let data = std::fs::read(PASSWD_FILE).unwrap();
    let names: Vec<String> = records::<7>(&data)
        .filter_map(parse_passwd_entry)
        .map(|user| user.name)
        .collect();
    assert!(names.iter().any(|name| name == "root"), "{names:?}");
    for name in names {
        let ours = find_user(&data, &name).unwrap();
        let theirs = nix::unistd::User::from_name(&name).unwrap().unwrap();
        assert_eq!(
            ours,
            user(
                &theirs.name,
                theirs.uid.as_raw(),
                theirs.gid.as_raw(),
                theirs.dir.to_str().unwrap(),
                theirs.shell.to_str().unwrap()
            ),
        );
    }
}
