#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A turn's calls to one MCP server that change its state run in the
//! model's order; its read-only calls still overlap.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use mecha_core::{Call, Registry, Slot, ToolOutput, run_turn};
use mecha_mcp::McpHub;
use serde_json::{Value, json};

fn registry(hub: &McpHub) -> Registry {
    let mut registry = Registry::new();
    hub.register_into(&mut registry).unwrap();
    registry
}

async fn turn(registry: &Registry, workspace: &Path, calls: &[(&str, Value)]) -> Vec<ToolOutput> {
    let slots = calls
        .iter()
        .enumerate()
        .map(|(i, (name, input))| {
            Slot::Run(Call {
                id: format!("c{i}"),
                name: (*name).to_owned(),
                input: input.clone(),
            })
        })
        .collect();
    run_turn(registry, &ctx(workspace), 1, 1 << 20, slots)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test]
async fn a_write_after_a_slow_write_to_the_same_server_waits_for_it() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let registry = registry(&hub);
    let results = turn(
        &registry,
        ws.path(),
        &[
            ("fx__make", json!({"ms": 300})),
            ("fx__use_made", json!({})),
        ],
    )
    .await;
    assert_eq!(results[0].content, "made");
    assert!(!results[1].is_error, "{}", results[1].content);
    assert_eq!(results[1].content, "used what was made");
    hub.shutdown();
}

#[tokio::test]
async fn read_only_calls_to_one_server_still_overlap() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let registry = registry(&hub);
    let naps: Vec<(&str, Value)> = (0..4).map(|_| ("fx__nap", json!({"ms": 1000}))).collect();
    let started = Instant::now();
    let results = turn(&registry, ws.path(), &naps).await;
    let took = started.elapsed();
    assert!(results.iter().all(|r| r.content == "napped"), "{results:?}");
    // One after another they take 4 s; together, about 1.
    assert!(
        took < Duration::from_millis(2500),
        "four 1 s naps took {took:?}"
    );
    hub.shutdown();
}

#[tokio::test]
async fn filesystem_server_creates_a_directory_then_writes_into_it() {
    let Some(bin) = npm_servers() else { return };
    // Each run races afresh; one lucky pass proves little.
    for round in 0..3 {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        let mut config = fixture_config("fs", &[]);
        config.command = bin
            .join("mcp-server-filesystem")
            .to_string_lossy()
            .into_owned();
        config.args = vec![root.to_string_lossy().into_owned()];
        let hub = McpHub::start([config], &opts(&root)).await;
        let registry = registry(&hub);
        let dir = root.join("deep/er/dir");
        let file = dir.join("note.txt");
        let results = turn(
            &registry,
            &root,
            &[
                ("fs__create_directory", json!({"path": dir})),
                ("fs__write_file", json!({"path": file, "content": "hello"})),
            ],
        )
        .await;
        for r in &results {
            assert!(!r.is_error, "round {round}: {}", r.content);
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
        hub.shutdown();
    }
}
