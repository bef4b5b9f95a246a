//! Deferred schemas in the loop: above the threshold the deferrable tools
//! leave the list and `tool_search` joins it; a first call is answered
//! with the schema and never runs; a load puts the tool back at its sorted
//! place from the next request on; the loaded set is journaled and a new
//! agent given it back sends the same list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use async_trait::async_trait;
use mecha_agent::{Lineage, Runtime, SubagentTool};
use mecha_core::{Record, Registry, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};
use support::*;

/// A deferrable tool (an MCP server's, as far as the loop can tell).
struct Remote {
    name: &'static str,
    log: Log,
}

#[async_trait]
impl Tool for Remote {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Does a remote thing. With many words after the first sentence."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"what": {"type": "string"}}})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn deferrable(&self) -> bool {
        true
    }
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        self.log
            .lock()
            .unwrap()
            .push((ctx.turn, self.name.to_owned(), input));
        Ok(ToolOutput::ok("remote ran"))
    }
}

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    for name in ["a_remote", "m_remote", "z_remote"] {
        r.register(Arc::new(Remote {
            name,
            log: Arc::clone(log),
        }))
        .unwrap();
    }
    r.register(Arc::new(Stub {
        name: "fs_read",
        caps: mecha_core::Capabilities::NONE,
        read_only: true,
        reply: ToolOutput::ok("read"),
        log: Arc::clone(log),
    }))
    .unwrap();
    r
}

#[tokio::test]
async fn a_first_call_gets_the_schema_and_a_load_joins_the_sorted_list() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![call("1", "m_remote", json!({"what": "guess"}))],
        vec![call("2", "tool_search", json!({"query": "z_remote"}))],
        vec![call("3", "m_remote", json!({"what": "known"}))],
        vec![text("done")],
    ]);
    let journal = Arc::new(Recording::default());
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path())
        .with_deferred_schemas(0)
        .with_journal(journal.clone());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();

    let offered = queue.offered.lock().unwrap().clone();
    assert_eq!(offered[0], ["fs_read", "tool_search"]);
    assert_eq!(offered[1], ["fs_read", "m_remote", "tool_search"]);
    assert_eq!(
        offered[2],
        ["fs_read", "m_remote", "tool_search", "z_remote"]
    );
    assert_eq!(offered[3], offered[2]);

    let (answer, is_error) = result_of(&queue, "1");
    assert!(is_error, "{answer}");
    assert!(answer.contains("`m_remote` did not run"), "{answer}");
    assert!(answer.contains(r#""properties":{"what""#), "{answer}");
    let (found, is_error) = result_of(&queue, "2");
    assert!(
        !is_error && found.contains(r#""name":"z_remote""#),
        "{found}"
    );
    let ran: Vec<Value> = log
        .lock()
        .unwrap()
        .iter()
        .map(|(_, _, i)| i.clone())
        .collect();
    assert_eq!(ran, [json!({"what": "known"})], "the guess never ran");

    // The loaded set is journaled as tool_search's state, once per change.
    let saved: Vec<Value> = journal
        .records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Record::ToolState { tool, state } if tool == "tool_search" => Some(state.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        saved,
        [json!(["m_remote"]), json!(["m_remote", "z_remote"])]
    );

    // A new agent handed that state back sends the same list at once.
    let queue = Queue::new(vec![vec![text("again")]]);
    let resumed = agent_with_state(queue.clone(), &log, dir.path(), saved[1].clone());
    resumed
        .send(&mut session(), "more", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(queue.offered.lock().unwrap()[0], offered[3]);
}

fn agent_with_state(
    queue: std::sync::Arc<Queue>,
    log: &Log,
    dir: &std::path::Path,
    state: Value,
) -> mecha_agent::Agent {
    let resumed = agent(queue, registry(log), allow_all_gate(), dir).with_deferred_schemas(0);
    resumed
        .registry()
        .get("tool_search")
        .unwrap()
        .restore_state(state)
        .unwrap();
    resumed
}

#[tokio::test]
async fn under_the_threshold_nothing_is_deferred() {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![vec![text("done")]]);
    let agent = agent(queue.clone(), registry(&log), allow_all_gate(), dir.path())
        .with_deferred_schemas(100_000);
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    assert_eq!(
        queue.offered.lock().unwrap()[0],
        ["a_remote", "fs_read", "m_remote", "z_remote"]
    );
}

#[test]
fn the_first_list_is_what_tools_schema_prints() {
    let log = Log::default();
    let sent = mecha_agent::first_definitions(&registry(&log), Some(0));
    let names: Vec<&str> = sent.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["fs_read", "tool_search"]);
    let catalogue = &sent[1].description;
    assert!(
        catalogue.ends_with(
            "\na_remote: Does a remote thing.\nm_remote: Does a remote thing.\nz_remote: Does a \
             remote thing.\n"
        ),
        "{catalogue}"
    );
    let deferred = mecha_agent::deferred(&registry(&log), 0).unwrap();
    assert_eq!(deferred.names, ["a_remote", "m_remote", "z_remote"]);
    assert!(mecha_agent::deferred(&registry(&log), deferred.bytes).is_none());
    assert_eq!(
        mecha_agent::first_definitions(&registry(&log), None).len(),
        4
    );
}

/// The tools a subagent's child is offered, with the parent's threshold
/// `defer_over`: the parent delegates, the child answers at once.
async fn child_offered(defer_over: Option<usize>) -> Vec<String> {
    let log = Log::default();
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::new(vec![
        vec![call("1", "helper", json!({"task": "look around"}))],
        vec![text("the child's answer")],
        vec![text("done")],
    ]);
    let lineage = Arc::new(Lineage {
        defer_over,
        ..Arc::into_inner(lineage(allow())).unwrap()
    });
    let profile = profile("helper");
    let runtime = Runtime {
        provider: queue.clone(),
        lineage,
    };
    let mut parent = Registry::new();
    parent
        .register(Arc::new(SubagentTool::new(
            profile,
            registry(&log),
            Some(runtime),
        )))
        .unwrap();
    let agent = agent(queue.clone(), parent, allow_all_gate(), dir.path());
    agent
        .send(&mut session(), "go", &Recorder::default())
        .await
        .unwrap();
    let offered = queue.offered.lock().unwrap().clone();
    assert_eq!(offered.len(), 3, "{offered:?}");
    offered[1].clone()
}

#[tokio::test]
async fn a_subagents_large_surface_waits_for_tool_search_as_the_parents_does() {
    assert_eq!(child_offered(Some(0)).await, ["fs_read", "tool_search"]);
    assert_eq!(
        child_offered(None).await,
        ["a_remote", "fs_read", "m_remote", "z_remote"]
    );
}
