//! Tools announced between turns (an MCP server's list_changed) are sent
//! from the next request on, and can be called.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use mecha_agent::ToolRefresh;
use mecha_core::{Capabilities, Registry, ToolOutput};
use serde_json::json;
use support::*;

/// Adds `late` the second time it is asked, and never again.
struct AddsLate {
    asked: AtomicUsize,
    log: Log,
}

#[async_trait]
impl ToolRefresh for AddsLate {
    async fn refresh(&self, current: &Registry) -> Option<Registry> {
        if self.asked.fetch_add(1, Ordering::SeqCst) != 1 {
            return None;
        }
        let mut next = current.clone();
        next.register(Arc::new(Stub {
            name: "late",
            caps: Capabilities::NONE,
            read_only: true,
            reply: ToolOutput::ok("late ran"),
            log: Arc::clone(&self.log),
        }))
        .unwrap();
        Some(next)
    }
}

#[tokio::test]
async fn a_tool_added_between_turns_is_offered_and_callable() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![call("a", "late", json!({}))],
        vec![call("b", "late", json!({}))],
    ]);
    let refresh = Arc::new(AddsLate {
        asked: AtomicUsize::new(0),
        log: Arc::clone(&log),
    });
    let agent =
        agent(queue.clone(), Registry::new(), allow_all_gate(), dir.path()).with_refresh(refresh);
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    let seen = queue.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    // Turn 1: `late` did not exist yet, so the call was a fixable result.
    let executions: Vec<u32> = log.lock().unwrap().iter().map(|(t, _, _)| *t).collect();
    assert_eq!(executions, [2], "only the call after the refresh ran");
}
