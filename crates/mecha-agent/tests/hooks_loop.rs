//! The user's hooks around the loop: a post_tool note goes after the
//! results, marked and within the turn's budget, and changes neither the
//! result nor its external flag; a user_prompt hook refuses a prompt before
//! anything is sent or kept, or adds context; a stop hook sends the model
//! back, at most three times in a row; session_start context goes with the
//! first prompt only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::{
    Event, EventSink, Gate, Hook, HookVerdict, MAX_SEND_BACKS, Outcome, PromptVerdict,
    SessionSource,
};
use mecha_core::{
    Block, Capabilities, Message, ModeApprover, PermissionMode, Registry, Role, Rules, Tool,
    ToolOutput,
};
use serde_json::{Value, json};
use support::*;

/// A hook that answers each event as told and records what it saw.
#[derive(Default)]
struct Scripted {
    note: Option<String>,
    block_prompt: Option<String>,
    prompt_context: Option<String>,
    send_back: Option<String>,
    start_context: Option<String>,
    saw: Mutex<Vec<String>>,
}

#[async_trait]
impl Hook for Scripted {
    async fn pre_tool(&self, _: &dyn Tool, _: &Value, _: &str, _: &dyn EventSink) -> HookVerdict {
        HookVerdict::Pass
    }
    async fn post_tool(
        &self,
        tool: &dyn Tool,
        _: &Value,
        id: &str,
        output: &ToolOutput,
        _: &dyn EventSink,
    ) -> Vec<String> {
        let seen = format!("post_tool {} {id} {}", tool.name(), output.content);
        self.saw.lock().unwrap().push(seen);
        self.note.iter().cloned().collect()
    }
    async fn user_prompt(&self, prompt: &str, _: &dyn EventSink) -> PromptVerdict {
        self.saw.lock().unwrap().push(format!("prompt {prompt}"));
        match &self.block_prompt {
            Some(reason) => PromptVerdict::Block(reason.clone()),
            None => PromptVerdict::Send {
                context: self.prompt_context.iter().cloned().collect(),
            },
        }
    }
    async fn stop(&self, answer: &str, sent_back: bool, _: &dyn EventSink) -> Option<String> {
        self.saw
            .lock()
            .unwrap()
            .push(format!("stop {answer} {sent_back}"));
        self.send_back.clone()
    }
    async fn session_start(&self, source: SessionSource, _: &dyn EventSink) -> Vec<String> {
        self.saw
            .lock()
            .unwrap()
            .push(format!("start {}", source.as_str()));
        self.start_context.iter().cloned().collect()
    }
}

fn gate(hook: &Arc<Scripted>) -> Gate {
    Gate::new(
        PermissionMode::Allow,
        Arc::new(ModeApprover(PermissionMode::Allow)),
        Rules::default(),
        Some(Arc::clone(hook) as Arc<dyn Hook>),
        false,
    )
}

/// `web`, which brings in untrusted content, and `fs_read`.
fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(Stub {
        name: "web",
        caps: Capabilities {
            untrusted_input: true,
            ..Capabilities::NONE
        },
        read_only: true,
        reply: ToolOutput::ok("page text"),
        log: Arc::clone(log),
    }))
    .unwrap();
    r
}

fn texts(message: &Message) -> Vec<String> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_post_tool_note_follows_the_results_marked_and_leaves_the_result_alone() {
    let ws = tempfile::tempdir().unwrap();
    let log = Log::default();
    let hook = Arc::new(Scripted {
        note: Some("lint: 2 warnings".into()),
        ..Scripted::default()
    });
    let queue = Queue::new(vec![vec![call("c1", "web", json!({}))], vec![text("ok")]]);
    let agent = agent(queue.clone(), registry(&log), gate(&hook), ws.path());
    let mut s = session();
    agent
        .send(&mut s, "go", &Recorder::default())
        .await
        .unwrap();
    let seen = queue.seen.lock().unwrap();
    let results = seen[1].last().unwrap();
    assert_eq!(results.role, Role::User);
    // The result first, unchanged but for the external header it earned.
    let Block::ToolResult { content, .. } = &results.content[0] else {
        panic!("the result must come first: {:?}", results.content);
    };
    assert!(content.ends_with("page text"), "{content}");
    assert!(!content.contains("lint"), "{content}");
    let notes = texts(results);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with(
            "[mecha: added by a post_tool hook, about the result of the `web` call c1]\n"
        ),
        "{}",
        notes[0]
    );
    assert!(notes[0].ends_with("lint: 2 warnings"));
    // The result still counts as external: the taint is the tool's.
    assert!(s.taint.untrusted_input);
    let saw = hook.saw.lock().unwrap();
    assert!(
        saw.iter().any(|l| l.starts_with("post_tool web c1 ")),
        "{saw:?}"
    );
}

#[tokio::test]
async fn a_post_tool_note_is_cut_to_what_the_turn_budget_has_left() {
    let ws = tempfile::tempdir().unwrap();
    let log = Log::default();
    let hook = Arc::new(Scripted {
        note: Some("x".repeat(200_000)),
        ..Scripted::default()
    });
    let queue = Queue::new(vec![vec![call("c1", "web", json!({}))], vec![text("ok")]]);
    let agent = agent(queue.clone(), registry(&log), gate(&hook), ws.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    let seen = queue.seen.lock().unwrap();
    let results = seen[1].last().unwrap();
    let total: usize = results
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.len(),
            Block::ToolResult { content, .. } => content.len(),
            _ => 0,
        })
        .sum();
    // The budget (64 KiB) plus the marking line.
    assert!(total <= 64 * 1024 + 200, "{total}");
    assert!(texts(results)[0].ends_with("[cut: the turn's output budget is spent]"));
}

#[tokio::test]
async fn a_refused_prompt_is_never_sent_nor_kept() {
    let ws = tempfile::tempdir().unwrap();
    let hook = Arc::new(Scripted {
        block_prompt: Some("no secrets in prompts".into()),
        ..Scripted::default()
    });
    let queue = Queue::new(vec![vec![text("should not be asked")]]);
    let agent = agent(queue.clone(), Registry::new(), gate(&hook), ws.path())
        .with_loop_hooks(hook.clone() as Arc<dyn Hook>);
    let mut s = session();
    let outcome = agent
        .send(&mut s, "the key is sk-1", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::PromptBlocked {
            reason: "no secrets in prompts".into()
        }
    );
    assert!(queue.seen.lock().unwrap().is_empty());
    assert!(s.messages.is_empty());
}

#[tokio::test]
async fn prompt_and_session_start_context_go_with_the_prompt_marked_and_once() {
    let ws = tempfile::tempdir().unwrap();
    let hook = Arc::new(Scripted {
        prompt_context: Some("branch: main".into()),
        start_context: Some("open issues: 3".into()),
        ..Scripted::default()
    });
    let queue = Queue::new(vec![vec![text("one")], vec![text("two")]]);
    let agent = agent(queue.clone(), Registry::new(), gate(&hook), ws.path())
        .with_loop_hooks(hook.clone() as Arc<dyn Hook>);
    let mut s = session();
    let events = Recorder::default();
    agent
        .start_session(&mut s, SessionSource::Startup, &events)
        .await;
    agent.send(&mut s, "first", &events).await.unwrap();
    agent.send(&mut s, "second", &events).await.unwrap();
    let seen = queue.seen.lock().unwrap();
    assert_eq!(
        texts(&seen[0][0]),
        [
            "first",
            "[mecha: added by a session_start hook]\nopen issues: 3",
            "[mecha: added by a user_prompt hook]\nbranch: main",
        ]
    );
    let second = seen[1].last().unwrap();
    assert_eq!(
        texts(second),
        [
            "second",
            "[mecha: added by a user_prompt hook]\nbranch: main"
        ]
    );
    assert_eq!(hook.saw.lock().unwrap()[0], "start startup");
}

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_three_times_in_a_row_at_most() {
    let ws = tempfile::tempdir().unwrap();
    let hook = Arc::new(Scripted {
        send_back: Some("the tests still fail".into()),
        ..Scripted::default()
    });
    let answers = (1..=6)
        .map(|n| vec![text(&format!("answer {n}"))])
        .collect();
    let queue = Queue::new(answers);
    let agent = agent(queue.clone(), Registry::new(), gate(&hook), ws.path())
        .with_loop_hooks(hook.clone() as Arc<dyn Hook>);
    let mut s = session();
    let events = Recorder::default();
    let outcome = agent.send(&mut s, "fix it", &events).await.unwrap();
    let Outcome::Answered { text, .. } = outcome else {
        panic!("{outcome:?}");
    };
    let limit = usize::try_from(MAX_SEND_BACKS).unwrap();
    // The first answer and one after each send-back.
    assert_eq!(text, format!("answer {}", limit + 1));
    assert_eq!(queue.seen.lock().unwrap().len(), limit + 1);
    let seen = queue.seen.lock().unwrap();
    let back = texts(seen[1].last().unwrap());
    assert_eq!(
        back,
        ["[mecha: a stop hook sends you back to work]\nthe tests still fail"]
    );
    let saw = hook.saw.lock().unwrap();
    assert_eq!(saw[1], "stop answer 1 false");
    assert_eq!(saw[2], "stop answer 2 true");
    let events = events.0.lock().unwrap();
    let sent_back = events
        .iter()
        .filter(|e| matches!(e, Event::SentBack { .. }))
        .count();
    assert_eq!(sent_back, limit);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::SendBackLimit { limit: 3, .. }))
    );
}

#[tokio::test]
async fn without_loop_hooks_the_gate_hook_sees_calls_only() {
    let ws = tempfile::tempdir().unwrap();
    let hook = Arc::new(Scripted {
        block_prompt: Some("would block".into()),
        send_back: Some("would send back".into()),
        ..Scripted::default()
    });
    let queue = Queue::new(vec![vec![text("done")]]);
    // A subagent's child: the parent's hooks at its gate, none around its
    // loop (its prompt was the parent's call, already judged).
    let agent = agent(queue.clone(), Registry::new(), gate(&hook), ws.path());
    let outcome = agent
        .send(&mut session(), "task", &Recorder::default())
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Answered { .. }), "{outcome:?}");
    assert!(hook.saw.lock().unwrap().is_empty());
}
