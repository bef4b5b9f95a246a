//! Workspace checkpoints around a prompt: one before its first call that
//! can change the workspace (however many model requests the prompt takes),
//! one when it ends, none for a prompt that only read, and a checkpoint
//! that cannot be taken stops the call rather than let it run unrecorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mecha_agent::AgentError;
use mecha_core::{Capabilities, Checkpoint, Checkpointer, Record, Registry, ToolOutput};
use serde_json::json;
use support::*;

#[derive(Default)]
struct Counting {
    taken: AtomicUsize,
    fails: bool,
}

impl Checkpointer for Counting {
    fn checkpoint(&self) -> Result<Checkpoint, String> {
        if self.fails {
            return Err("the disk is full".into());
        }
        let n = self.taken.fetch_add(1, Ordering::SeqCst);
        Ok(Checkpoint {
            id: format!("c{n}"),
            changed: Vec::new(),
        })
    }
}

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    for (name, read_only) in [("look", true), ("write", false)] {
        r.register(Arc::new(Stub {
            name,
            caps: Capabilities::NONE,
            read_only,
            reply: ToolOutput::ok("fine"),
            log: Arc::clone(log),
        }))
        .unwrap();
    }
    r
}

fn checkpoints(journal: &Recording) -> Vec<(u32, String, bool)> {
    journal
        .records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Record::Checkpoint {
                turn, id, after, ..
            } => Some((*turn, id.clone(), *after)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn one_checkpoint_before_a_prompt_changes_things_and_one_when_it_ends() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![call("a", "look", json!({}))],
        vec![call("b", "write", json!({}))],
        vec![call("c", "write", json!({})), call("d", "look", json!({}))],
        vec![text("done")],
        vec![call("e", "look", json!({}))],
        vec![text("only looked")],
        vec![call("f", "write", json!({}))],
        vec![text("wrote again")],
    ]);
    let journal = Arc::new(Recording::default());
    let counting = Arc::new(Counting::default());
    let agent = agent(queue, registry(&log), allow_all_gate(), dir.path())
        .with_journal(journal.clone())
        .with_checkpoints(counting.clone());
    let mut session = session();
    for prompt in ["first", "second", "third"] {
        agent
            .send(&mut session, prompt, &Recorder::default())
            .await
            .unwrap();
    }
    assert_eq!(
        checkpoints(&journal),
        [
            (1, "c0".into(), false),
            (1, "c1".into(), true),
            (3, "c2".into(), false),
            (3, "c3".into(), true),
        ]
    );
    let prompts: Vec<u32> = journal
        .records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Record::Prompt { turn } => Some(*turn),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, [1, 2, 3]);
}

#[tokio::test]
async fn a_checkpoint_that_fails_stops_the_call_before_it_runs() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![vec![call("b", "write", json!({}))], vec![text("x")]]);
    let failing = Arc::new(Counting {
        fails: true,
        ..Counting::default()
    });
    let agent =
        agent(queue, registry(&log), allow_all_gate(), dir.path()).with_checkpoints(failing);
    let ended = agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap_err();
    assert!(matches!(ended, AgentError::Checkpoint { .. }), "{ended}");
    assert!(ended.to_string().contains("the disk is full"), "{ended}");
    assert!(log.lock().unwrap().is_empty(), "the write ran unrecorded");
}

/// Says it started, then runs until it is dropped; it can change the
/// workspace.
struct Hangs(Arc<tokio::sync::Notify>);

#[async_trait::async_trait]
impl mecha_core::Tool for Hangs {
    fn name(&self) -> &str {
        "hangs"
    }
    fn description(&self) -> &str {
        "never returns"
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    async fn call(
        &self,
        _input: serde_json::Value,
        _ctx: &mecha_core::ToolCtx,
    ) -> anyhow::Result<ToolOutput> {
        self.0.notify_one();
        std::future::pending().await
    }
}

#[tokio::test]
async fn an_interrupted_prompt_still_gets_its_closing_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let started = Arc::new(tokio::sync::Notify::new());
    let mut registry = Registry::new();
    registry
        .register(Arc::new(Hangs(Arc::clone(&started))))
        .unwrap();
    let queue = Queue::new(vec![vec![call("h", "hangs", json!({}))]]);
    let journal = Arc::new(Recording::default());
    let agent = agent(queue, registry, allow_all_gate(), dir.path())
        .with_journal(journal.clone())
        .with_checkpoints(Arc::new(Counting::default()));
    let mut session = session();
    {
        let events = Recorder::default();
        let send = agent.send(&mut session, "go", &events);
        tokio::select! {
            _ = send => panic!("the hanging call returned"),
            () = started.notified() => {}
        }
    }
    agent.keep_interrupted(&mut session);
    agent.keep_interrupted(&mut session);
    assert_eq!(
        checkpoints(&journal),
        [(1, "c0".into(), false), (1, "c1".into(), true)],
        "one before the call, one for what the stopped prompt left"
    );
}
