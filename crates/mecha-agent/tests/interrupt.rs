//! A turn the user interrupts: what it did stays in the session (and the
//! journal), its running calls are closed with results that say they were
//! stopped, and the model is told before the next prompt.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::Session;
use mecha_core::{
    Block, Capabilities, INTERRUPTED_RESULT, INTERRUPTED_TURN, Message, NOT_RUN_RESULT, Record,
    Registry, Role, Tool, ToolCtx, ToolOutput,
};
use mecha_provider::{Provider, ProviderError, Request, Response, StreamSink, Streamed};
use serde_json::{Value, json};
use support::*;
use tokio::sync::Notify;

/// Streams half an answer on its first request and then never finishes;
/// answers "done" after that. Records what each request was sent.
struct Stalls {
    streamed: Notify,
    seen: Mutex<Vec<Vec<Message>>>,
}

#[async_trait]
impl Provider for Stalls {
    fn describe(&self) -> String {
        "stalls".into()
    }
    fn context_window(&self) -> Option<u64> {
        None
    }
    async fn complete(
        &self,
        request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        let first = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(request.messages.to_vec());
            seen.len() == 1
        };
        if first {
            on_stream(Streamed::Text("lost at first, "));
            on_stream(Streamed::Retrying("the connection dropped; again in 1 s"));
            on_stream(Streamed::Text("half an ans"));
            self.streamed.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(reply(vec![text("done")], mecha_core::StopReason::EndTurn))
    }
}

/// Says it started, then runs until it is dropped.
struct Hangs(Arc<Notify>);

#[async_trait]
impl Tool for Hangs {
    fn name(&self) -> &str {
        "hangs"
    }
    fn description(&self) -> &str {
        "never returns"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            private_data: true,
            ..Capabilities::default()
        }
    }
    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        self.0.notify_one();
        std::future::pending().await
    }
}

fn texts(message: &Message) -> Vec<&str> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The messages the journal recorded, in order.
fn journaled(journal: &Recording) -> Vec<Message> {
    journal
        .records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Record::Message { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_answer_cut_mid_stream_keeps_its_text_and_the_model_is_told() {
    let ws = tempfile::tempdir().unwrap();
    let provider = Arc::new(Stalls {
        streamed: Notify::new(),
        seen: Mutex::new(Vec::new()),
    });
    let journal = Arc::new(Recording::default());
    let agent = agent(
        provider.clone(),
        Registry::new(),
        allow_all_gate(),
        ws.path(),
    )
    .with_journal(journal.clone());
    let mut session = session();
    let events = Recorder::default();
    tokio::select! {
        _ = agent.send(&mut session, "tell me", &events) => panic!("the stalled turn ended"),
        () = provider.streamed.notified() => {}
    }
    agent.keep_interrupted(&mut session);
    let roles: Vec<Role> = session.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    // What streamed before the retry was streamed again: only the rest.
    assert_eq!(texts(&session.messages[1]), ["half an ans"]);
    assert_eq!(texts(&session.messages[2]), [INTERRUPTED_TURN]);
    assert_eq!(journaled(&journal), session.messages, "journaled as kept");
    assert!(session.unfinished.is_empty());

    let outcome = agent.send(&mut session, "go on", &events).await.unwrap();
    assert!(matches!(outcome, mecha_agent::Outcome::Answered { .. }));
    let seen = provider.seen.lock().unwrap();
    assert_eq!(seen[1].len(), 4, "the kept turn and the new prompt");
    assert_eq!(texts(&seen[1][3]), ["go on"]);
}

#[tokio::test]
async fn a_running_call_is_closed_with_a_result_that_says_the_user_stopped_it() {
    let ws = tempfile::tempdir().unwrap();
    let started = Arc::new(Notify::new());
    let mut registry = Registry::new();
    registry.register(Arc::new(Hangs(started.clone()))).unwrap();
    let provider = Queue::new(vec![vec![text("looking"), call("c1", "hangs", json!({}))]]);
    let journal = Arc::new(Recording::default());
    let agent =
        agent(provider, registry, allow_all_gate(), ws.path()).with_journal(journal.clone());
    let mut session = Session::default();
    let events = Recorder::default();
    tokio::select! {
        _ = agent.send(&mut session, "look", &events) => panic!("the hanging call ended"),
        () = started.notified() => {}
    }
    agent.keep_interrupted(&mut session);
    assert_eq!(session.messages.len(), 3);
    assert_eq!(texts(&session.messages[1]), ["looking"], "the text is kept");
    let closing = &session.messages[2];
    assert_eq!(closing.role, Role::User);
    match &closing.content[..] {
        [
            Block::ToolResult {
                tool_use_id,
                content,
                is_error: true,
                ..
            },
            Block::Text { text },
        ] => {
            assert_eq!(tool_use_id, "c1");
            assert_eq!(content, INTERRUPTED_RESULT);
            assert_eq!(text, INTERRUPTED_TURN);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(journaled(&journal), session.messages);
    // Nothing of the stopped call entered the conversation.
    assert!(!session.taint.private_data);
}

#[tokio::test]
async fn a_prompt_that_never_entered_the_history_leaves_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let journal = Arc::new(Recording::default());
    let agent = agent(
        Queue::new(vec![]),
        Registry::new(),
        allow_all_gate(),
        ws.path(),
    )
    .with_journal(journal.clone());
    let mut session = session();
    session.messages.push(Message::user_text("old"));
    session.messages.push(Message {
        role: Role::Assistant,
        content: vec![text("old answer")],
    });
    // What a dropped send leaves when its prompt hook had not answered.
    session.unfinished = "stale".into();
    agent.keep_interrupted(&mut session);
    assert_eq!(session.messages.len(), 2);
    assert!(journal.records.lock().unwrap().is_empty());
    assert!(session.unfinished.is_empty());
}

fn closes(message: &Message, id: &str, said: &str) -> bool {
    message.role == Role::User
        && message.content.iter().any(|b| {
            matches!(b, Block::ToolResult { tool_use_id, content, is_error: true, .. }
                if tool_use_id == id && content == said)
        })
}

/// Says it was asked, then never answers.
struct NeverAnswers(Arc<Notify>);

#[async_trait]
impl mecha_core::Approver for NeverAnswers {
    async fn approve(&self, _tool: &dyn Tool, _input: &Value) -> mecha_core::Decision {
        self.0.notify_one();
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_call_stopped_at_its_approval_is_told_it_never_ran() {
    let ws = tempfile::tempdir().unwrap();
    let asked = Arc::new(Notify::new());
    let mut registry = Registry::new();
    registry
        .register(Arc::new(Hangs(Arc::new(Notify::new()))))
        .unwrap();
    let gate = mecha_agent::Gate::new(
        mecha_core::PermissionMode::Ask,
        Arc::new(NeverAnswers(asked.clone())),
        mecha_core::Rules::default(),
        None,
        false,
    );
    let provider = Queue::new(vec![vec![call("c1", "hangs", json!({}))]]);
    let agent = agent(provider, registry, gate, ws.path());
    let mut session = session();
    let events = Recorder::default();
    tokio::select! {
        _ = agent.send(&mut session, "go", &events) => panic!("nobody answered"),
        () = asked.notified() => {}
    }
    agent.keep_interrupted(&mut session);
    assert!(closes(&session.messages[2], "c1", NOT_RUN_RESULT));
}

#[tokio::test]
async fn a_finished_call_of_an_interrupted_batch_brings_nothing_in() {
    let ws = tempfile::tempdir().unwrap();
    let started = Arc::new(Notify::new());
    let log: Log = Arc::default();
    let mut registry = Registry::new();
    registry
        .register(Arc::new(Stub {
            name: "secret",
            caps: Capabilities {
                private_data: true,
                ..Capabilities::default()
            },
            read_only: true,
            reply: ToolOutput::ok("THE-SECRET-VALUE"),
            log: log.clone(),
        }))
        .unwrap();
    registry.register(Arc::new(Hangs(started.clone()))).unwrap();
    let provider = Queue::new(vec![vec![
        call("c1", "secret", json!({})),
        call("c2", "hangs", json!({})),
    ]]);
    let agent = agent(provider, registry, allow_all_gate(), ws.path());
    let mut session = session();
    let events = Recorder::default();
    tokio::select! {
        _ = agent.send(&mut session, "go", &events) => panic!("the hanging call ended"),
        () = started.notified() => {}
    }
    assert_eq!(log.lock().unwrap().len(), 1, "the secret call ran");
    agent.keep_interrupted(&mut session);
    assert!(closes(&session.messages[2], "c1", INTERRUPTED_RESULT));
    assert!(closes(&session.messages[2], "c2", INTERRUPTED_RESULT));
    let kept = serde_json::to_string(&*session.messages).unwrap();
    assert!(!kept.contains("THE-SECRET-VALUE"), "{kept}");
    assert!(!session.taint.private_data, "nothing private entered");
}

#[tokio::test]
async fn an_open_call_is_closed_and_a_rewind_closes_what_it_cannot_remove() {
    let ws = tempfile::tempdir().unwrap();
    let agent = agent(
        Queue::new(vec![]),
        Registry::new(),
        allow_all_gate(),
        ws.path(),
    );
    // What a compaction during the turn leaves: shorter than the history
    // was when the prompt came, ending in calls without results.
    let open = || {
        let mut session = session();
        session.messages.push(Message::user_text("first"));
        session.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                call("c8", "hangs", json!({})),
                call("c9", "hangs", json!({})),
            ],
        });
        session
    };
    let mut session = open();
    session.running = vec!["c9".into()];
    agent.keep_interrupted(&mut session);
    assert_eq!(session.messages.len(), 3);
    assert!(closes(&session.messages[2], "c8", NOT_RUN_RESULT));
    assert!(closes(&session.messages[2], "c9", INTERRUPTED_RESULT));

    let mut session = open();
    agent.rewind(&mut session, 10);
    assert_eq!(session.messages.len(), 3);
    assert!(closes(&session.messages[2], "c9", mecha_core::LOST_RESULT));
}
