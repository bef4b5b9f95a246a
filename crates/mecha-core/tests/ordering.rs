#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Which calls of a turn wait for which: calls that change one resource
//! group, or write one path, run in the model's order; the rest overlap.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mecha_core::{ArgKind, Call, Registry, Slot, Tool, ToolCtx, ToolOutput, run_turn};
use serde_json::{Value, json};

type Log = Arc<Mutex<Vec<String>>>;

/// Records when each call starts and ends, with a pause between, so the log
/// shows which calls overlapped.
struct Probe {
    name: &'static str,
    group: Option<&'static str>,
    read_only: bool,
    log: Log,
}

#[async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "probe"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn resource_group(&self) -> Option<&str> {
        self.group
    }
    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        &[("path", ArgKind::WritePath)]
    }
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let tag = input["tag"].as_str().unwrap_or("?").to_owned();
        self.log.lock().unwrap().push(format!("start {tag}"));
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.log.lock().unwrap().push(format!("end {tag}"));
        Ok(ToolOutput::ok(ctx.call_id.clone()))
    }
}

fn registry(log: &Log) -> Registry {
    let mut registry = Registry::new();
    for (name, group, read_only) in [
        ("write", Some("server"), false),
        ("read", Some("server"), true),
        ("other", Some("elsewhere"), false),
        ("plain", None, false),
    ] {
        registry
            .register(Arc::new(Probe {
                name,
                group,
                read_only,
                log: Arc::clone(log),
            }))
            .unwrap();
    }
    registry
}

/// Runs `calls` (tool, tag, optional path) as one turn; returns the log.
async fn run(calls: &[(&str, &str, Option<&str>)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    std::fs::create_dir(dir.path().join("b")).unwrap();
    let ctx = ToolCtx::new(dir.path(), 64 * 1024).unwrap();
    let log = Log::default();
    let registry = registry(&log);
    let slots = calls
        .iter()
        .enumerate()
        .map(|(i, (name, tag, path))| {
            let mut input = json!({"tag": tag});
            if let Some(path) = path {
                input["path"] = json!(path);
            }
            Slot::Run(Call {
                id: format!("c{i}"),
                name: (*name).to_owned(),
                input,
            })
        })
        .collect();
    let results = run_turn(&registry, &ctx, 1, 64 * 1024, slots).await;
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.as_ref().unwrap().content, format!("c{i}"));
    }
    log.lock().unwrap().clone()
}

fn position(log: &[String], entry: &str) -> usize {
    log.iter()
        .position(|e| e == entry)
        .unwrap_or_else(|| panic!("no `{entry}` in {log:?}"))
}

#[tokio::test]
async fn writes_to_one_group_run_in_the_models_order() {
    let log = run(&[
        ("write", "1", None),
        ("write", "2", None),
        ("write", "3", None),
    ])
    .await;
    assert_eq!(
        log,
        ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]
    );
}

#[tokio::test]
async fn reads_other_groups_and_ungrouped_calls_overlap() {
    let log = run(&[
        ("write", "w", None),
        ("read", "r", None),
        ("other", "o", None),
        ("plain", "p1", None),
        ("plain", "p2", None),
    ])
    .await;
    // Every call started before any ended.
    assert!(log[..5].iter().all(|e| e.starts_with("start")), "{log:?}");
}

#[tokio::test]
async fn writes_to_one_path_however_spelled_run_in_order() {
    let log = run(&[
        ("plain", "1", Some("b/f.txt")),
        ("plain", "2", Some("a/../b/f.txt")),
    ])
    .await;
    assert_eq!(log, ["start 1", "end 1", "start 2", "end 2"]);
}

#[tokio::test]
async fn a_write_inside_a_written_directory_waits_for_it() {
    let log = run(&[
        ("plain", "dir", Some("b")),
        ("plain", "file", Some("./b/inner/f.txt")),
    ])
    .await;
    assert!(
        position(&log, "end dir") < position(&log, "start file"),
        "{log:?}"
    );
}

#[tokio::test]
async fn a_call_waits_only_for_the_calls_it_conflicts_with() {
    let log = run(&[
        ("write", "a", None),
        ("plain", "x", Some("x.txt")),
        ("write", "b", None),
        ("plain", "y", Some("y.txt")),
    ])
    .await;
    // b waits for a; x and y do not wait for anything.
    assert!(
        position(&log, "end a") < position(&log, "start b"),
        "{log:?}"
    );
    assert!(
        position(&log, "start x") < position(&log, "end a"),
        "{log:?}"
    );
    assert!(
        position(&log, "start y") < position(&log, "end a"),
        "{log:?}"
    );
}
