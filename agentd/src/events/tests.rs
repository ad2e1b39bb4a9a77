//! Unit tests of `events/mod.rs`.

use super::*;
use protocol::action::{ActionKind, MessageArgs};
use protocol::{Action, Observation};

/// A user message with `text` (also used by the store's tests).
pub(super) fn message(text: &str) -> Action {
    Action::from(ActionKind::Message(MessageArgs {
        content: text.to_string(),
        ..MessageArgs::default()
    }))
}

#[test]
fn events_are_numbered_stamped_and_attributed() {
    let stream = EventStream::in_memory();
    let first = stream.add(message("hi"), EventSource::User).unwrap();
    let second = stream.add(message("ho"), EventSource::Agent).unwrap();
    assert_eq!((first.id(), second.id()), (Some(0), Some(1)));
    assert_eq!(second.source(), Some(EventSource::Agent));
    let Event::Action(a) = &*second else { panic!() };
    assert_eq!(a.timestamp.as_ref().unwrap().len(), 26, "{:?}", a.timestamp);
    assert_eq!(stream.latest_id(), Some(1));
}

#[tokio::test]
async fn subscribers_get_every_event_in_order_and_a_gone_one_hurts_nobody() {
    let stream = EventStream::in_memory();
    let mut a = stream.subscribe();
    let b = stream.subscribe();
    drop(b);
    for i in 0..100 {
        stream
            .add(message(&i.to_string()), EventSource::User)
            .unwrap();
    }
    for i in 0..100 {
        assert_eq!(a.recv().await.unwrap().id(), Some(i));
    }
}

#[test]
fn search_filters_by_range_type_and_source() {
    let stream = EventStream::in_memory();
    for i in 0..10 {
        stream
            .add(message(&i.to_string()), EventSource::User)
            .unwrap();
        let obs: Observation =
            serde_json::from_str(r#"{"observation": "null", "content": "", "extras": {}}"#)
                .unwrap();
        stream.add(obs, EventSource::Environment).unwrap();
    }
    let ids =
        |events: Vec<Arc<Event>>| -> Vec<i64> { events.iter().filter_map(|e| e.id()).collect() };
    assert_eq!(ids(stream.range(3, Some(5))), vec![3, 4, 5]);
    assert_eq!(ids(stream.last(2)), vec![18, 19]);
    let filter = EventFilter {
        types: vec!["null".to_string()],
        reverse: true,
        limit: Some(3),
        start_id: Some(4),
        ..EventFilter::default()
    };
    assert_eq!(ids(stream.search(&filter)), vec![19, 17, 15]);
    let filter = EventFilter {
        source: Some(EventSource::User),
        end_id: Some(4),
        ..EventFilter::default()
    };
    assert_eq!(ids(stream.search(&filter)), vec![0, 2, 4]);
    assert!(stream.range(50, None).is_empty());
    assert!(stream.get(-1).is_none());
}

#[tokio::test]
async fn secret_values_never_reach_the_log_or_a_subscriber() {
    let dir = tempfile::tempdir().unwrap();
    let secret = crate::secrets::Secret::new("TOKEN", "tok-12345".into(), "").unwrap();
    let mask = crate::secrets::SecretMask::new(&[secret]);
    let stream = EventStream::open_masked(dir.path(), mask).unwrap();
    let mut subscriber = stream.subscribe();
    let mut output = serde_json::from_value::<Observation>(serde_json::json!({
        "observation": "run", "content": "TOKEN=tok-12345",
        "extras": {"command": "env", "metadata": {"exit_code": 0, "pid": -1, "username": null,
                   "hostname": null, "working_dir": "/tok-12345", "py_interpreter_path": null,
                   "prefix": "", "suffix": ""}, "hidden": false}
    }))
    .unwrap();
    output.cause = Some(0);
    let stored = stream.add(output, EventSource::Environment).unwrap();
    let delivered = subscriber.recv().await.unwrap();
    let text = std::fs::read_to_string(dir.path().join(store::FILE_NAME)).unwrap();
    for json in [
        serde_json::to_string(&*stored).unwrap(),
        serde_json::to_string(&*delivered).unwrap(),
        serde_json::to_string(&*stream.all()[0]).unwrap(),
        text,
    ] {
        assert!(!json.contains("tok-12345"), "{json}");
        assert!(json.contains("TOKEN=<secret_hidden>"), "{json}");
        assert!(
            json.contains("\"working_dir\":\"/<secret_hidden>\""),
            "{json}"
        );
        assert!(json.contains("\"cause\":0"), "{json}");
    }
    assert_eq!(stream.mask().mask("tok-12345"), "<secret_hidden>");
}

/// Regression: a run stopped just as its action completed recorded two answers to it (the
/// runtime's observation and the controller's "not executed"). The first answer wins; the
/// rule holds for answers read back from disk too.
#[test]
fn an_action_gets_one_answer_whoever_answers_first() {
    let dir = tempfile::tempdir().unwrap();
    let answer = |cause: i64, text: &str| {
        let mut obs = Observation::new(
            protocol::ObservationKind::Error(protocol::observation::ErrorExtras::default()),
            text.to_string(),
        );
        obs.cause = Some(cause);
        obs
    };
    {
        let stream = EventStream::open(dir.path()).unwrap();
        stream.add(message("run it"), EventSource::Agent).unwrap();
        let first = stream.answer(answer(0, "first"), EventSource::Environment);
        assert_eq!(first.unwrap().unwrap().id(), Some(1));
        let second = stream.answer(answer(0, "second"), EventSource::Agent);
        assert!(second.unwrap().is_none());
        assert_eq!(stream.len(), 2);
    }
    let stream = EventStream::open(dir.path()).unwrap();
    assert!(
        stream
            .answer(answer(0, "after a restart"), EventSource::Agent)
            .unwrap()
            .is_none()
    );
    // Another action's answer is added as usual.
    stream.add(message("and this"), EventSource::Agent).unwrap();
    assert!(
        stream
            .answer(answer(2, "its own"), EventSource::Environment)
            .unwrap()
            .is_some()
    );
}
