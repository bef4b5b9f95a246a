//! The todo list closes every tool result of the run, after any external
//! content, and a list too long to repeat is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use mecha_core::{Capabilities, Registry, ToolOutput};
use mecha_tools::Todo;
use serde_json::json;
use support::*;

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(Todo::default())).unwrap();
    r.register(Arc::new(Stub {
        name: "fetch",
        caps: Capabilities {
            untrusted_input: true,
            ..Capabilities::NONE
        },
        read_only: true,
        reply: ToolOutput::external("a stranger's page"),
        log: Arc::clone(log),
    }))
    .unwrap();
    r
}

const LIST: &str = "Current todo list:\n[x] read the code\n[>] fix the bug\n[ ] run the tests";

#[tokio::test]
async fn the_todo_list_ends_every_result_outside_external_content() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let items = json!({"items": [
        {"content": "read the code", "status": "done"},
        {"content": "fix the bug", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"}
    ]});
    let queue = Queue::new(vec![
        vec![call("t", "todo", items)],
        vec![call("f", "fetch", json!({})), call("x", "nope", json!({}))],
    ]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    let seen = queue.seen.lock().unwrap().clone();
    let first = &seen[1].last().unwrap().content;
    let mecha_core::Block::ToolResult { content, .. } = &first[0] else {
        panic!()
    };
    assert!(
        content.starts_with("todo list saved: 1 of 3 done"),
        "{content}"
    );
    assert!(content.ends_with(LIST), "{content}");
    for (id, content, _) in results_sent(&queue) {
        assert!(content.ends_with(LIST), "{id}: {content}");
        if id == "f" {
            let external = content.find("a stranger's page").unwrap();
            assert!(content.starts_with("[external content"), "{content}");
            assert!(content.find(LIST).unwrap() > external, "{content}");
        }
    }
}

#[tokio::test]
async fn a_todo_list_too_long_to_repeat_is_refused() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let long: Vec<_> = (0..100)
        .map(|i| json!({"content": format!("step {i} of a very long plan"), "status": "pending"}))
        .collect();
    let queue = Queue::new(vec![vec![call("t", "todo", json!({"items": long}))]]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    let (_, content, is_error) = results_sent(&queue).remove(0);
    assert!(is_error && content.contains("keep it under"), "{content}");
    assert!(!content.contains("Current todo list"), "{content}");
}
