//! How the loop treats turns that do not end in a whole answer: an empty
//! turn, a call or an answer cut by the output limit, a refusal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::{CONTINUE_PROMPT, CUT_CALL, Event, Gate, Outcome};
use mecha_core::{
    Approver, Block, Capabilities, Decision, Message, PermissionMode, Registry, Role, Rules,
    StopReason, Tool, ToolOutput,
};
use serde_json::{Value, json};
use support::*;

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(Stub {
        name: "write",
        caps: Capabilities::NONE,
        read_only: false,
        reply: ToolOutput::ok("written"),
        log: Arc::clone(log),
    }))
    .unwrap();
    r
}

/// Allows everything and remembers what it was asked.
#[derive(Default)]
struct Asked(Mutex<Vec<Value>>);

#[async_trait]
impl Approver for Asked {
    async fn approve(&self, _tool: &dyn Tool, input: &Value) -> Decision {
        self.0.lock().unwrap().push(input.clone());
        Decision::Allow
    }
}

fn asking_gate(approver: Arc<Asked>) -> Gate {
    Gate::new(PermissionMode::Ask, approver, Rules::default(), None, false)
}

/// No request ever carries an assistant message without content.
fn assert_no_empty_assistant(seen: &[Vec<Message>]) {
    for (n, request) in seen.iter().enumerate() {
        for m in request {
            if m.role == Role::Assistant {
                assert!(
                    !m.is_empty_answer(),
                    "request {n} holds an empty turn: {m:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn an_empty_turn_after_tool_results_is_dropped_and_the_model_asked_to_continue() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::replies(vec![
        reply(vec![call("a", "write", json!({}))], StopReason::ToolUse),
        reply(vec![], StopReason::EndTurn),
        reply(vec![text("All written.")], StopReason::EndTurn),
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    let events = Recorder::default();
    let mut session = session();
    let outcome = agent.send(&mut session, "write it", &events).await.unwrap();
    assert_eq!(
        outcome,
        Outcome::Answered {
            text: "All written.".into(),
            stop_reason: StopReason::EndTurn
        }
    );
    let seen = queue.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_no_empty_assistant(&seen);
    assert_eq!(
        seen[2].last().unwrap(),
        &Message::user_text(CONTINUE_PROMPT),
        "the nudge is a new user message after the tool results"
    );
    assert!(session.messages.iter().all(|m| !m.is_empty_answer()));
    let nudges = events.0.lock().unwrap();
    assert!(
        nudges
            .iter()
            .any(|e| matches!(e, Event::EmptyTurn { turn: 2 }))
    );
}

#[tokio::test]
async fn a_model_that_stays_silent_ends_the_prompt_and_the_session_goes_on() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::replies(vec![
        reply(vec![], StopReason::EndTurn),
        reply(vec![text("  ")], StopReason::EndTurn),
        reply(vec![text("Hello again.")], StopReason::EndTurn),
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    let mut session = session();
    let outcome = agent
        .send(&mut session, "hi", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Silent {
            stop_reason: StopReason::EndTurn
        }
    );
    // The next prompt of a chat still works: nothing empty was kept.
    let outcome = agent
        .send(&mut session, "are you there?", &Recorder::default())
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Answered { .. }), "{outcome:?}");
    assert_no_empty_assistant(&queue.seen.lock().unwrap());
}

#[tokio::test]
async fn thinking_that_uses_up_the_limit_is_silent_without_a_nudge() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let thinking = Block::Thinking {
        thinking: "long thoughts".into(),
        signature: Some("sig".into()),
    };
    let queue = Queue::replies(vec![reply(vec![thinking], StopReason::MaxTokens)]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    let mut session = session();
    let outcome = agent
        .send(&mut session, "hi", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Silent {
            stop_reason: StopReason::MaxTokens
        }
    );
    assert_eq!(queue.seen.lock().unwrap().len(), 1, "no nudge for a limit");
    assert_eq!(session.messages, vec![Message::user_text("hi")]);
}

#[tokio::test]
async fn a_call_cut_by_the_output_limit_is_not_run_nor_asked_about() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let mut cut = call("b", "write", json!({}));
    if let Block::ToolUse(c) = &mut cut {
        c.input_error = Some("the arguments were not valid JSON: {\"content\": \"abc".into());
    }
    let queue = Queue::replies(vec![
        reply(
            vec![
                text("Writing both."),
                call("a", "write", json!({"n": 1})),
                cut,
            ],
            StopReason::MaxTokens,
        ),
        reply(vec![text("Done in pieces.")], StopReason::EndTurn),
    ]);
    let approver = Arc::new(Asked::default());
    let agent = agent(
        queue.clone(),
        registry(&log),
        asking_gate(Arc::clone(&approver)),
        dir.path(),
    );
    let events = Recorder::default();
    let outcome = agent
        .send(&mut session(), "write two files", &events)
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Answered { .. }), "{outcome:?}");
    // The whole call before it ran; the cut one neither ran nor was asked.
    let ran: Vec<Value> = log.lock().unwrap().iter().map(|e| e.2.clone()).collect();
    assert_eq!(ran, vec![json!({"n": 1})]);
    assert_eq!(*approver.0.lock().unwrap(), vec![json!({"n": 1})]);
    let results = results_sent(&queue);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "a");
    assert_eq!(results[1], ("b".to_owned(), CUT_CALL.to_owned(), true));
    assert!(!results[1].1.contains("not valid JSON"), "{}", results[1].1);
    let events = events.0.lock().unwrap();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::OutputLimit { turn: 1, tool: Some(t) } if t == "write"
        )),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_answer_cut_by_the_output_limit_says_so() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::replies(vec![reply(
        vec![text("The first half of")],
        StopReason::MaxTokens,
    )]);
    let agent = agent(queue, registry(&log), allow_all_gate(), dir.path());
    let events = Recorder::default();
    let outcome = agent
        .send(&mut session(), "explain", &events)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Answered {
            text: "The first half of".into(),
            stop_reason: StopReason::MaxTokens
        }
    );
    let events = events.0.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::OutputLimit { tool: None, .. }))
    );
}

#[tokio::test]
async fn a_refusal_drops_the_whole_exchange_and_the_next_prompt_goes_without_it() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let mut refusal = reply(vec![text("I can start by")], StopReason::Refusal);
    refusal.stop_detail = Some("This request was declined.".into());
    let queue = Queue::replies(vec![
        reply(vec![text("Hi.")], StopReason::EndTurn),
        reply(vec![call("a", "write", json!({}))], StopReason::ToolUse),
        refusal,
        reply(vec![text("Sure.")], StopReason::EndTurn),
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    let mut session = session();
    let events = Recorder::default();
    agent.send(&mut session, "hello", &events).await.unwrap();
    let kept = session.messages.clone();
    let outcome = agent
        .send(&mut session, "the refused task", &events)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Refused {
            text: "I can start by".into(),
            detail: Some("This request was declined.".into())
        }
    );
    assert_eq!(session.messages, kept, "the refused exchange is gone");
    agent
        .send(&mut session, "something else", &events)
        .await
        .unwrap();
    let seen = queue.seen.lock().unwrap().clone();
    let last = seen.last().unwrap();
    assert_eq!(last.len(), 3, "{last:?}");
    assert_eq!(last[2], Message::user_text("something else"));
    assert!(
        !format!("{last:?}").contains("refused task"),
        "the refused prompt was sent again"
    );
}
