//! Unit tests of `serve/pool.rs`.

use super::*;
use crate::serve::backend::ServedSandbox;

fn warm(runtime_id: &str) -> Warm {
    Warm {
        runtime_id: runtime_id.to_string(),
        container: ServedSandbox {
            id: format!("c-{runtime_id}"),
            local_url: "http://127.0.0.1:1".to_string(),
            port: 1,
            app_ports: BTreeMap::from([(12000, 40000)]),
            image: "img".to_string(),
        },
        configure_key: "k".to_string(),
    }
}

fn pools(targets: &[(&str, usize)]) -> WarmPools {
    WarmPools::new(
        targets
            .iter()
            .map(|&(tag, size)| (tag.to_string(), size))
            .collect(),
    )
}

#[test]
fn a_clean_stop_drains_every_pool() {
    let pools = pools(&[("a", 1), ("b", 1)]);
    pools.push("a", warm("rt-1"));
    pools.push("b", warm("rt-2"));
    let mut drained: Vec<String> = pools.drain().into_iter().map(|w| w.runtime_id).collect();
    drained.sort();
    assert_eq!(drained, ["rt-1", "rt-2"]);
    assert!(pools.take("a").is_none() && pools.take("b").is_none());
}

#[test]
fn sandboxes_are_taken_oldest_first() {
    let pools = pools(&[("img", 2)]);
    assert!(pools.take("img").is_none());
    pools.push("img", warm("rt-1"));
    pools.push("img", warm("rt-2"));
    assert_eq!(
        pools.take("img").map(|w| w.runtime_id).as_deref(),
        Some("rt-1")
    );
    assert_eq!(
        pools.take("img").map(|w| w.runtime_id).as_deref(),
        Some("rt-2")
    );
    assert!(pools.take("img").is_none());
    assert!(pools.take("other").is_none());
}

#[test]
fn a_pool_is_short_until_it_has_its_size() {
    let pools = pools(&[("img", 2), ("none", 0)]);
    assert!(pools.is_short("img"));
    pools.push("img", warm("rt-1"));
    assert!(pools.is_short("img"));
    pools.push("img", warm("rt-2"));
    assert!(!pools.is_short("img"));
    assert!(!pools.is_short("none"));
    assert!(!pools.is_short("unknown"));
}

#[test]
fn recovery_adopts_only_what_a_pool_is_short_of() {
    let pools = pools(&[("img", 1)]);
    assert!(pools.adopt("img".to_string(), warm("rt-1")));
    assert!(!pools.adopt("img".to_string(), warm("rt-2")));
    // An image without a pool keeps none, but is listed (empty) once one was found.
    assert!(!pools.adopt("gone".to_string(), warm("rt-3")));
    assert_eq!(
        pools.sizes(),
        BTreeMap::from([("gone".to_string(), 0), ("img".to_string(), 1)])
    );
}
