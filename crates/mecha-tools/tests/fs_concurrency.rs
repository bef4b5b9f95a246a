//! The file tools do their I/O off the async thread, so one turn's calls
//! (and whatever else the loop awaits) are not queued behind a slow disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::pin::pin;
use std::sync::Arc;

use mecha_core::{Call, Registry, Slot, Tool, ToolCtx, run_turn};
use mecha_tools::{FsEdit, FsList, FsRead, FsWrite};
use serde_json::{Value, json};

fn cases() -> Vec<(Arc<dyn Tool>, Value)> {
    vec![
        (Arc::new(FsRead), json!({"path": "a.txt"})),
        (Arc::new(FsList), json!({})),
        (
            Arc::new(FsWrite),
            json!({"path": "b.txt", "content": "new"}),
        ),
        (
            Arc::new(FsEdit),
            json!({"path": "a.txt", "old": "hello", "new": "there"}),
        ),
    ]
}

/// A runtime with one async thread and one blocking thread, which the test
/// occupies. A tool that does its work inside `call` finishes on the first
/// poll; one that hands it to the blocking pool cannot, because the pool's
/// only thread is taken, and finishes once the test lets go. No timing.
#[test]
fn each_file_tool_does_its_io_on_the_blocking_pool() {
    for (tool, input) in cases() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let ctx = ToolCtx::new(dir.path(), 64 * 1024).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(1)
            .build()
            .unwrap();
        rt.block_on(async {
            let (release, held) = std::sync::mpsc::channel::<()>();
            let holder = tokio::task::spawn_blocking(move || held.recv());
            let mut call = pin!(tool.call(input, &ctx));
            assert!(
                futures::poll!(call.as_mut()).is_pending(),
                "{} did its I/O on the async thread",
                tool.name()
            );
            release.send(()).unwrap();
            holder.await.unwrap().unwrap();
            let out = call.await.unwrap();
            assert!(!out.is_error, "{}: {}", tool.name(), out.content);
        });
    }
}

/// The same through the batch runner the loop uses: all of a turn's file
/// calls are handed off before any of them has run, and each still gets its
/// own result.
#[test]
fn a_turns_file_calls_are_all_handed_off_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    std::fs::write(dir.path().join("c.txt"), "see\n").unwrap();
    let ctx = ToolCtx::new(dir.path(), 64 * 1024).unwrap();
    let mut registry = Registry::new();
    registry.register(Arc::new(FsRead)).unwrap();
    let calls: Vec<Slot> = ["a.txt", "c.txt"]
        .iter()
        .enumerate()
        .map(|(i, path)| {
            Slot::Run(Call {
                id: format!("c{i}"),
                name: "fs_read".into(),
                input: json!({ "path": path }),
            })
        })
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    rt.block_on(async {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let holder = tokio::task::spawn_blocking(move || held.recv());
        let mut batch = pin!(run_turn(&registry, &ctx, 1, 64 * 1024, calls));
        assert!(
            futures::poll!(batch.as_mut()).is_pending(),
            "a file call ran on the async thread, holding up the rest of the turn"
        );
        release.send(()).unwrap();
        holder.await.unwrap().unwrap();
        let results = batch.await;
        assert!(results[0].as_ref().unwrap().content.contains("hello"));
        assert!(results[1].as_ref().unwrap().content.contains("see"));
    });
}
