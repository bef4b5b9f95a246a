//! When the journal is made durable: between a turn's results and the next
//! request the sync runs behind (the request does not wait for the disk),
//! and however a prompt ends, everything it recorded is durable before
//! `send` returns.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::{Limits, Outcome};
use mecha_core::{Capabilities, Journal, Record, Registry, StopReason, ToolOutput};
use mecha_provider::{Provider, ProviderError, Request, Response, StreamSink};
use serde_json::json;
use support::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Append,
    Sync,
    Behind,
}

/// The journal calls, in order.
#[derive(Default)]
struct Ledger(Mutex<Vec<Step>>);

impl Journal for Ledger {
    fn append(&self, _record: &Record) {
        self.0.lock().unwrap().push(Step::Append);
    }
    fn sync(&self) {
        self.0.lock().unwrap().push(Step::Sync);
    }
    fn sync_behind(&self) {
        self.0.lock().unwrap().push(Step::Behind);
    }
}

impl Ledger {
    fn steps(&self) -> Vec<Step> {
        self.0.lock().unwrap().clone()
    }
}

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(Stub {
        name: "look",
        caps: Capabilities::NONE,
        read_only: true,
        reply: ToolOutput::ok("fine"),
        log: Arc::clone(log),
    }))
    .unwrap();
    r
}

/// Whether nothing was appended after the last blocking sync.
fn ends_durable(steps: &[Step]) -> bool {
    let last_sync = steps.iter().rposition(|s| *s == Step::Sync);
    let last_append = steps.iter().rposition(|s| *s == Step::Append);
    matches!((last_sync, last_append), (Some(s), Some(a)) if s > a)
}

#[tokio::test]
async fn rounds_sync_behind_and_the_answer_ends_durable() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![call("a", "look", json!({}))],
        vec![call("b", "look", json!({}))],
        vec![text("done")],
    ]);
    let ledger = Arc::new(Ledger::default());
    let agent =
        agent(queue, registry(&log), allow_all_gate(), dir.path()).with_journal(ledger.clone());
    let outcome = agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Answered { .. }), "{outcome:?}");
    let steps = ledger.steps();
    // The prompt, then each round's results: a sync behind each, before
    // the next request; no blocking sync until the answer.
    let behind = steps.iter().filter(|s| **s == Step::Behind).count();
    assert_eq!(behind, 3, "{steps:?}");
    let first_sync = steps.iter().position(|s| *s == Step::Sync).unwrap();
    let last_behind = steps.iter().rposition(|s| *s == Step::Behind).unwrap();
    assert!(first_sync > last_behind, "{steps:?}");
    assert!(ends_durable(&steps), "{steps:?}");
}

#[tokio::test]
async fn a_prompt_stopped_by_the_turn_limit_ends_durable() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![call("a", "look", json!({}))],
        vec![call("b", "look", json!({}))],
    ]);
    let ledger = Arc::new(Ledger::default());
    let agent = mecha_agent::Agent::new(
        queue,
        registry(&log),
        "system".into(),
        allow_all_gate(),
        mecha_core::ToolCtx::new(dir.path(), 64 * 1024).unwrap(),
        Limits {
            max_turns: 2,
            turn_budget: 64 * 1024,
        },
    )
    .with_journal(ledger.clone());
    let outcome = agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    assert!(
        matches!(outcome, Outcome::TurnLimit { turns: 2 }),
        "{outcome:?}"
    );
    assert!(ends_durable(&ledger.steps()), "{:?}", ledger.steps());
}

/// Calls `look` once, then fails as a provider that gave up retrying.
struct GivesUp(Mutex<usize>);

#[async_trait]
impl Provider for GivesUp {
    fn describe(&self) -> String {
        "gives up".into()
    }
    fn context_window(&self) -> Option<u64> {
        None
    }
    async fn complete(
        &self,
        _request: Request<'_>,
        _on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        let mut asked = self.0.lock().unwrap();
        *asked += 1;
        if *asked == 1 {
            return Ok(reply(
                vec![call("a", "look", json!({}))],
                StopReason::ToolUse,
            ));
        }
        Err(ProviderError::Api("overloaded, 5 attempts".into()))
    }
}

#[tokio::test]
async fn a_prompt_the_provider_gave_up_on_ends_durable() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::default());
    let provider = Arc::new(GivesUp(Mutex::new(0)));
    let agent =
        agent(provider, registry(&log), allow_all_gate(), dir.path()).with_journal(ledger.clone());
    let ended = agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap_err();
    assert!(ended.to_string().contains("overloaded"), "{ended}");
    assert!(ends_durable(&ledger.steps()), "{:?}", ledger.steps());
}
