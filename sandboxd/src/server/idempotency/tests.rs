//! The key store: replays, mismatches, forgetting a failed request, eviction.

use super::*;

fn answer(body: &str) -> Answer {
    Answer {
        status: 200,
        etag: None,
        body: Bytes::from(body.to_owned()),
    }
}

#[tokio::test]
async fn a_key_runs_once_and_replays_its_answer() {
    let store = Arc::new(Idempotency::default());
    let fp = fingerprint("/x", &[b"body"]);
    let Claim::Run(pending) = store.claim("k".into(), fp) else {
        panic!("a new key runs")
    };
    let Claim::Replay(waiting) = store.claim("k".into(), fp) else {
        panic!("a key in flight is waited for")
    };
    assert!(matches!(
        store.claim("k".into(), fingerprint("/x", &[b"other"])),
        Claim::Mismatch
    ));
    pending.finish(answer("first"));
    assert_eq!(wait(waiting).await.unwrap().body, "first");
    let Claim::Replay(done) = store.claim("k".into(), fp) else {
        panic!("a finished key replays")
    };
    assert_eq!(wait(done).await.unwrap().body, "first");
}

#[tokio::test]
async fn a_request_that_failed_without_an_answer_frees_its_key() {
    let store = Arc::new(Idempotency::default());
    let fp = fingerprint("/x", &[]);
    let Claim::Run(pending) = store.claim("k".into(), fp) else {
        panic!()
    };
    let Claim::Replay(waiting) = store.claim("k".into(), fp) else {
        panic!()
    };
    drop(pending);
    assert!(wait(waiting).await.is_none());
    assert!(matches!(store.claim("k".into(), fp), Claim::Run(_)));
}

#[test]
fn the_oldest_finished_keys_go_first() {
    let store = Arc::new(Idempotency::default());
    let fp = fingerprint("/x", &[]);
    let Claim::Run(in_flight) = store.claim("kept".into(), fp) else {
        panic!()
    };
    for i in 0..MAX_KEYS + 10 {
        let Claim::Run(p) = store.claim(format!("k{i}"), fp) else {
            panic!()
        };
        p.finish(answer("x"));
    }
    assert!(store.lock().by_key.len() <= MAX_KEYS);
    assert!(matches!(store.claim("kept".into(), fp), Claim::Replay(_)));
    assert!(matches!(store.claim("k0".into(), fp), Claim::Run(_)));
    drop(in_flight);
}

#[test]
fn keys_are_checked() {
    assert_eq!(check_key(b"retry-1").unwrap(), "retry-1");
    for bad in [&b""[..], b"a\nb", &[b'a'; 256][..], "é".as_bytes()] {
        assert!(check_key(bad).is_err());
    }
}
