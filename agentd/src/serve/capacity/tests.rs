use super::*;

fn host() -> HostCapacity {
    HostCapacity {
        cpus: Some(2.0),
        memory_bytes: Some(24 << 30),
    }
}

fn base() -> Limits {
    Limits {
        memory_bytes: Some(4 << 30),
        cpus: Some(1.0),
        pids: Some(1024),
    }
}

#[test]
fn a_factor_the_host_can_meet_passes() {
    assert!(host().check(&base(), 1.0).is_ok());
    assert!(host().check(&base(), 2.0).is_ok());
}

#[test]
fn a_factor_past_the_hosts_cpus_or_memory_says_what_it_can_give() {
    let err = host().check(&base(), 3.0).unwrap_err();
    assert!(matches!(err, ServeError::BadRequest(_)));
    assert_eq!(
        err.to_string(),
        "resource_factor 3 asks for 3 CPUs and 12.0 GiB of memory; this host has 2 CPUs and \
         24.0 GiB: the largest resource_factor it can give is 2"
    );
    let roomy = HostCapacity {
        cpus: Some(64.0),
        ..host()
    };
    let err = roomy.check(&base(), 7.0).unwrap_err().to_string();
    assert!(
        err.ends_with("the largest resource_factor it can give is 6"),
        "{err}"
    );
}

#[test]
fn unlimited_sides_are_never_over() {
    let unlimited = Limits {
        memory_bytes: None,
        cpus: None,
        pids: None,
    };
    assert!(host().check(&unlimited, 100.0).is_ok());
    let unknown = HostCapacity {
        cpus: None,
        memory_bytes: None,
    };
    assert!(unknown.check(&base(), 100.0).is_ok());
}
