//! Tests of the condensers: budgets, tool pairing, masking, the summarising prompt, settings.

use std::collections::{HashMap, HashSet};

use protocol::llm::{Content, Message, Role};
use protocol::{Event, EventSource};

use super::*;
use crate::events::EventStream;
use crate::memory::conversation::tests::{message, metadata, response, run, run_output, system};
use crate::memory::tokens::estimate_tokens;

/// System prompt, task, then `steps` model responses of `calls` `run` calls each, every call
/// answered with `output_len` characters: `2 + steps * calls * 2` events.
fn history(steps: usize, calls: usize, output_len: usize) -> EventStream {
    let stream = EventStream::in_memory();
    stream.add(system(), EventSource::Agent).unwrap();
    stream
        .add(message("Fix the build."), EventSource::User)
        .unwrap();
    for step in 0..steps {
        let ids: Vec<String> = (0..calls).map(|c| format!("call-{step}-{c}")).collect();
        let specs: Vec<(&str, &str, &str)> = ids
            .iter()
            .map(|id| (id.as_str(), "execute_bash", r#"{"command": "make"}"#))
            .collect();
        let r = response(&format!("resp-{step}"), Some("Trying again."), &specs);
        let actions: Vec<_> = ids
            .iter()
            .map(|id| {
                stream
                    .add(
                        run("make", Some(metadata(&r, id, "execute_bash"))),
                        EventSource::Agent,
                    )
                    .unwrap()
            })
            .collect();
        for (id, action) in ids.iter().zip(&actions) {
            let output = format!("step {step}: {}", "x".repeat(output_len));
            stream
                .add(
                    run_output(
                        "make",
                        &output,
                        Some(metadata(&r, id, "execute_bash")),
                        action.id(),
                    ),
                    EventSource::Environment,
                )
                .unwrap();
        }
    }
    stream
}

fn view_of(stream: &EventStream) -> View {
    View::from_events(&stream.all())
}

/// Every assistant message with tool calls is followed by exactly its results, in call order,
/// and every result follows its call.
fn assert_paired(messages: &[Message]) {
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        assert_ne!(
            m.role,
            Role::Tool,
            "a result without its call at {i}: {m:?}"
        );
        i += 1;
        if m.role == Role::Assistant {
            for call in m.tool_calls.iter().flatten() {
                let result = &messages[i];
                assert_eq!(result.role, Role::Tool, "call {} has no result", call.id);
                assert_eq!(result.tool_call_id.as_deref(), Some(call.id.as_str()));
                i += 1;
            }
        }
    }
}

/// Each model response's events are all in the view or none is.
fn assert_whole_responses(full: &View, condensed: &View) {
    let groups = |view: &View| {
        let mut groups: HashMap<String, usize> = HashMap::new();
        for event in view.iter() {
            let meta = match event {
                Event::Action(a) => a.tool_call_metadata.as_ref(),
                Event::Observation(o) => o.tool_call_metadata.as_ref(),
            };
            if let Some(meta) = meta {
                *groups.entry(response_key(meta)).or_default() += 1;
            }
        }
        groups
    };
    let all = groups(full);
    for (key, count) in groups(condensed) {
        assert_eq!(Some(&count), all.get(&key), "response {key} was split");
    }
}

fn condensation_of(condensed: Condensed) -> Action {
    match condensed {
        Condensed::Condensation(action) => *action,
        Condensed::View(view) => panic!("no condensation: a view of {} events", view.len()),
    }
}

/// Records `action` as the agent would and returns the next view.
fn apply(stream: &EventStream, action: Action) -> View {
    stream.add(action, EventSource::Agent).unwrap();
    view_of(stream)
}

const BUDGET: usize = 20_000;

#[tokio::test]
async fn recent_events_bring_a_500_event_history_under_a_token_budget() {
    let stream = history(249, 1, 1_000);
    let full = view_of(&stream);
    assert_eq!(stream.len(), 500);
    let memory = ConversationMemory::default();
    assert!(
        memory.view_tokens(&full) > 3 * BUDGET,
        "{}",
        memory.view_tokens(&full)
    );

    let mut condenser = CondenserConfig::Recent {
        keep_first: 2,
        max_events: 1_000,
        max_tokens: Some(BUDGET),
    }
    .build(None)
    .unwrap();
    let action = condensation_of(condenser.condense(full.clone()).await.unwrap());
    let view = apply(&stream, action);

    let messages = memory.process_events(&view);
    assert!(
        estimate_tokens(&messages) <= BUDGET,
        "{}",
        estimate_tokens(&messages)
    );
    assert!(
        estimate_tokens(&messages) > BUDGET / 4,
        "not needlessly small"
    );
    assert_paired(&messages);
    assert_whole_responses(&full, &view);
    assert_eq!(view.events()[0].id(), Some(0), "the system prompt is kept");
    assert_eq!(view.events()[1].id(), Some(1), "the task is kept");
    assert_eq!(
        view.events().last().unwrap().id(),
        Some(499),
        "the newest event is kept"
    );
    // Under the budget now: the next step prompts with the view.
    assert!(matches!(
        condenser.condense(view).await.unwrap(),
        Condensed::View(_)
    ));
}

#[tokio::test]
async fn recent_events_keep_half_the_event_limit() {
    let stream = history(249, 1, 10);
    let full = view_of(&stream);
    let mut condenser = RecentEvents {
        keep_first: 2,
        max_events: 100,
        max_tokens: None,
        memory: ConversationMemory::default(),
    };
    let view = apply(
        &stream,
        condensation_of(condenser.condense(full.clone()).await.unwrap()),
    );
    assert_eq!(view.len(), 50);
    assert_paired(&ConversationMemory::default().process_events(&view));
    assert!(matches!(
        condenser.condense(view).await.unwrap(),
        Condensed::View(_)
    ));
}

#[tokio::test]
async fn cuts_never_split_a_response_from_its_results() {
    // Responses of three calls: six events each, so most limits fall inside one.
    for max_events in 10..40 {
        let stream = history(12, 3, 10);
        let full = view_of(&stream);
        let mut condenser = RecentEvents {
            keep_first: 3, // inside the first response: the head grows to its end
            max_events,
            max_tokens: None,
            memory: ConversationMemory::default(),
        };
        let action = condensation_of(condenser.condense(full.clone()).await.unwrap());
        let view = apply(&stream, action);
        assert_whole_responses(&full, &view);
        let messages = ConversationMemory::default().process_events(&view);
        assert_paired(&messages);
        let results = messages.iter().filter(|m| m.role == Role::Tool).count();
        let runs = view
            .iter()
            .filter(|e| matches!(e, Event::Action(a) if a.tool_call_metadata.is_some()))
            .count();
        assert_eq!(
            results, runs,
            "max_events {max_events}: every kept call is answered"
        );
    }
}

fn summarizer(keep_first: usize, max_size: usize, max_tokens: Option<usize>) -> LlmSummarizing {
    let config = serde_json::from_value(serde_json::json!({
        "model": "test-model",
        "base_url": "http://127.0.0.1:9/v1",
    }))
    .unwrap();
    LlmSummarizing {
        llm: Llm::new(config).unwrap(),
        keep_first,
        max_size,
        max_tokens,
        max_event_length: 10_000,
        memory: ConversationMemory::default(),
    }
}

#[test]
fn llm_summarizing_brings_a_500_event_history_under_a_token_budget() {
    let stream = history(249, 1, 1_000);
    let full = view_of(&stream);
    let condenser = summarizer(2, 1_000, Some(BUDGET));
    let cut = condenser.plan(&full).expect("over the budget");
    assert_eq!(cut.head, 2);
    let prompt = condenser.prompt(&full, cut);
    assert!(prompt.contains("<EVENT id=2>\nagent action run:\n$ make\n</EVENT>"));
    assert!(prompt.contains(&format!("<EVENT id={}>", cut.tail - 1)));
    assert!(
        !prompt.contains(&format!("<EVENT id={}>", cut.tail)),
        "kept events are not summarised"
    );

    // The model's answer, as long as it may be.
    let summary = "S".repeat(100_000);
    let action = condenser.condensation(&full, cut, &summary);
    let view = apply(&stream, action);
    let memory = ConversationMemory::default();
    let messages = memory.process_events(&view);
    assert!(
        estimate_tokens(&messages) <= BUDGET,
        "{}",
        estimate_tokens(&messages)
    );
    assert_paired(&messages);
    assert_whole_responses(&full, &view);
    assert_eq!(view.events()[2].id(), None, "the summary follows the head");
    assert!(view.summary().unwrap().starts_with("SSSS"));
    assert!(condenser.plan(&view).is_none(), "nothing more to do");
}

#[test]
fn llm_summarizing_prompt_and_condensation() {
    let stream = history(4, 1, 20);
    let condenser = summarizer(2, 8, None);
    let full = view_of(&stream);
    assert_eq!(full.len(), 10);
    let cut = condenser.plan(&full).expect("over max_size");
    // Half of max_size: the head (2), the summary (1) and one event, which would split the
    // last response from its result; forgetting that response too would leave no tail, so the
    // cut moves back and keeps it whole.
    assert_eq!(cut, Cut { head: 2, tail: 8 });
    insta::assert_snapshot!(condenser.prompt(&full, cut));

    let action = condenser.condensation(&full, cut, "  Ran make four times; it fails.\n");
    let ActionKind::Condensation(args) = &action.kind else {
        panic!("a condensation: {action:?}");
    };
    assert_eq!(
        (
            args.forgotten_events_start_id,
            args.forgotten_events_end_id,
            args.summary_offset
        ),
        (Some(2), Some(7), Some(2))
    );
    assert_eq!(
        args.summary.as_deref(),
        Some("Ran make four times; it fails.")
    );

    // The next condensation folds in the previous summary.
    let view = apply(&stream, action);
    assert_eq!(view.len(), 5);
    for step in 0..3 {
        stream
            .add(message(&format!("more {step}")), EventSource::User)
            .unwrap();
        stream
            .add(message(&format!("ok {step}")), EventSource::Agent)
            .unwrap();
    }
    let view = view_of(&stream);
    let cut = condenser.plan(&view).expect("over max_size again");
    let prompt = condenser.prompt(&view, cut);
    assert!(
        prompt.contains("<PREVIOUS SUMMARY>\nRan make four times; it fails.\n</PREVIOUS SUMMARY>")
    );
    let view = apply(
        &stream,
        condenser.condensation(&view, cut, "Second summary."),
    );
    assert_eq!(view.summary(), Some("Second summary."));
    assert_eq!(
        view.iter().filter(|e| e.type_name() == "condense").count(),
        1,
        "one summary at a time"
    );
}

#[tokio::test]
async fn a_requested_condensation_happens_whatever_the_size() {
    let stream = history(10, 1, 10);
    stream
        .add(
            Action::from(ActionKind::CondensationRequest(Default::default())),
            EventSource::User,
        )
        .unwrap();
    let mut condenser = RecentEvents {
        keep_first: 2,
        max_events: 1_000,
        max_tokens: None,
        memory: ConversationMemory::default(),
    };
    let view = view_of(&stream);
    assert!(view.unhandled_condensation_request());
    let view = apply(
        &stream,
        condensation_of(condenser.condense(view).await.unwrap()),
    );
    assert!(!view.unhandled_condensation_request());
    assert!(view.len() < 22);
}

#[tokio::test]
async fn masking_replaces_old_outputs_only() {
    let stream = history(10, 1, 10);
    let full = view_of(&stream);
    let mut condenser = CondenserConfig::ObservationMasking {
        attention_window: 4,
    }
    .build(None)
    .unwrap();
    let Condensed::View(view) = condenser.condense(full.clone()).await.unwrap() else {
        panic!("masking is a view transform");
    };
    assert_eq!(view.len(), full.len());
    let keep_from = full.len() - 4;
    for (i, (before, after)) in full.iter().zip(view.iter()).enumerate() {
        match (before, after) {
            (Event::Observation(b), Event::Observation(a)) if i < keep_from => {
                assert_eq!(a.content, MASKED);
                assert_eq!(
                    a.tool_call_metadata, b.tool_call_metadata,
                    "still a tool result"
                );
                assert_eq!((a.id, a.cause), (b.id, b.cause));
            }
            _ => assert_eq!(before, after, "event {i} is untouched"),
        }
    }
    let messages = ConversationMemory::default().process_events(&view);
    assert_paired(&messages);
    let tool_texts: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| match &m.content {
            Some(Content::Text(t)) => t.as_str(),
            _ => "",
        })
        .collect();
    assert_eq!(tool_texts.len(), 10);
    assert!(tool_texts[..8].iter().all(|t| *t == MASKED));
    assert!(tool_texts[8..].iter().all(|t| t.starts_with("step")));
}

#[tokio::test]
async fn noop_keeps_the_view() {
    let stream = history(3, 2, 10);
    let full = view_of(&stream);
    let mut condenser = CondenserConfig::default().build(None).unwrap();
    let Condensed::View(view) = condenser.condense(full.clone()).await.unwrap() else {
        panic!("a view");
    };
    let ids = |v: &View| v.iter().map(Event::id).collect::<Vec<_>>();
    assert_eq!(ids(&view), ids(&full));
}

#[test]
fn settings_select_and_check_the_condenser() {
    #[derive(Debug, serde::Deserialize)]
    struct Settings {
        condenser: CondenserConfig,
    }
    let parse = |text: &str| toml::from_str::<Settings>(text).map(|s| s.condenser);
    assert_eq!(
        parse("[condenser]\ntype = \"recent\"\nkeep_first = 1\nmax_events = 100").unwrap(),
        CondenserConfig::Recent {
            keep_first: 1,
            max_events: 100,
            max_tokens: None
        }
    );
    assert_eq!(
        parse("[condenser]\ntype = \"llm\"\nmax_tokens = 60000").unwrap(),
        CondenserConfig::Llm {
            keep_first: 1,
            max_size: 100,
            max_tokens: Some(60_000),
            max_event_length: 10_000
        }
    );
    assert_eq!(
        parse("[condenser]\ntype = \"observation_masking\"").unwrap(),
        CondenserConfig::ObservationMasking {
            attention_window: 100
        }
    );
    assert_eq!(
        parse("[condenser]\ntype = \"noop\"").unwrap(),
        CondenserConfig::NoOp
    );
    assert!(
        parse("[condenser]\ntype = \"recent\"\nmax_event = 3").is_err(),
        "typo"
    );
    assert!(parse("[condenser]\ntype = \"amortized\"").is_err());

    let llm = CondenserConfig::Llm {
        keep_first: 1,
        max_size: 100,
        max_tokens: None,
        max_event_length: 10_000,
    };
    assert!(matches!(llm.build(None), Err(CondenserError::Config(_))));
    assert!(llm.build(Some(summarizer(1, 100, None).llm)).is_ok());
    let too_much_head = CondenserConfig::Recent {
        keep_first: 50,
        max_events: 100,
        max_tokens: None,
    };
    assert!(matches!(
        too_much_head.build(None),
        Err(CondenserError::Config(_))
    ));
}

#[test]
fn message_pairing_survives_any_view_of_a_multi_call_history() {
    // Leaving out any single event (not through a condenser) still yields a valid
    // conversation: the memory drops what lost its counterpart.
    let stream = history(4, 2, 5);
    let all = stream.all();
    for skip in 2..all.len() {
        let events: Vec<_> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, e)| e.clone())
            .collect();
        let messages = ConversationMemory::default().process_events(&View::from_events(&events));
        assert_paired(&messages);
        let calls: HashSet<&str> = messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().flatten().map(|c| c.id.as_str()))
            .collect();
        // A missing result holds its response back; a missing action does not: its sibling
        // carries the whole response.
        let expected = if matches!(all[skip].as_ref(), Event::Observation(_)) {
            6
        } else {
            8
        };
        assert_eq!(calls.len(), expected, "skipped {skip}");
    }
}
