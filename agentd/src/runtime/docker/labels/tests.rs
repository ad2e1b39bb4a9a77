//! Unit tests of `runtime/docker/labels.rs`.

use super::*;

#[test]
fn this_process_is_alive_and_round_trips() {
    let me = Owner::current().expect("/proc is readable");
    assert!(me.is_alive());
    assert_eq!(Owner::parse(&me.label()), Some(me));
}

#[test]
fn a_recycled_pid_or_another_boot_is_not_the_owner() {
    let me = Owner::current().unwrap();
    let recycled = Owner {
        start: me.start + 1,
        ..me.clone()
    };
    assert!(!recycled.is_alive());
    let rebooted = Owner {
        boot_id: "another-boot".to_string(),
        ..me
    };
    assert!(!rebooted.is_alive());
}

#[test]
fn malformed_labels_are_not_owners() {
    assert_eq!(Owner::parse("12"), None);
    assert_eq!(Owner::parse("x:1:b"), None);
}
