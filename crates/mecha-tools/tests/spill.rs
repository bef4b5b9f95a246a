//! Output budgets and spilling, end to end through a batch: the marker's
//! numbers are right, fs_read follows it to exactly the rest, and a batch
//! shares one budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use mecha_core::{
    Call, Capabilities, EXTERNAL_HEADER, Registry, Slot, Tool, ToolCtx, ToolOutput, run_turn,
};
use mecha_tools::{FsRead, Todo};
use serde_json::{Value, json};

/// A tool that prints `lines` numbered lines.
struct Numbers;

#[async_trait]
impl Tool for Numbers {
    fn name(&self) -> &str {
        "numbers"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let n = input["lines"].as_u64().unwrap();
        Ok(ToolOutput::ok(
            (1..=n)
                .map(|i| format!("row number {i}\n"))
                .collect::<String>(),
        ))
    }
}

/// A tool whose numbered lines came from outside the machine (a fetched
/// page, a remote API).
struct Fetched;

#[async_trait]
impl Tool for Fetched {
    fn name(&self) -> &str {
        "fetched"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let mut local = Numbers.call(input, ctx).await?;
        local.external = true;
        Ok(local)
    }
}

/// An untrusted source that streams part of a page to its spill file, then
/// gives up in the harness's words, as a fetch that times out does.
struct Stalled;

#[async_trait]
impl Tool for Stalled {
    fn name(&self) -> &str {
        "stalled"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            untrusted_input: true,
            ..Capabilities::default()
        }
    }
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let page = Numbers.call(input, ctx).await?.content;
        let mut sink = ctx.sink("stalled", ctx.call_budget_bytes);
        sink.push(page.as_bytes());
        Ok(ToolOutput::refusal(format!(
            "timed out; what arrived:\n{}",
            sink.finish()
        )))
    }
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(Numbers)).unwrap();
    r.register(Arc::new(Fetched)).unwrap();
    r.register(Arc::new(Stalled)).unwrap();
    r.register(Arc::new(FsRead)).unwrap();
    r.register(Arc::new(Todo::default())).unwrap();
    r
}

fn call(id: &str, name: &str, input: Value) -> Slot {
    Slot::Run(Call {
        id: id.into(),
        name: name.into(),
        input,
    })
}

/// Pulls `(path, offset)` out of the marker's fs_read suggestion.
fn marker_recovery(text: &str) -> (String, u64) {
    let start = text.find("continue with fs_read ").unwrap() + "continue with fs_read ".len();
    let end = start + text[start..].find('}').unwrap() + 1;
    let args: Value = serde_json::from_str(&text[start..end]).unwrap();
    (
        args["path"].as_str().unwrap().to_owned(),
        args["offset"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn marker_names_the_right_line_and_fs_read_returns_exactly_the_rest() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
    let reg = registry();
    let out = run_turn(
        &reg,
        &ctx,
        1,
        4096,
        vec![call("c1", "numbers", json!({"lines": 5000}))],
    )
    .await
    .remove(0)
    .unwrap();
    let full: String = (1..=5000).map(|i| format!("row number {i}\n")).collect();
    assert!(
        out.content.len() <= 4096,
        "result is {} bytes",
        out.content.len()
    );
    assert!(
        out.content.contains(&format!("of {} bytes", full.len())),
        "{}",
        out.content
    );
    let (path, offset) = marker_recovery(&out.content);
    assert!(
        out.content
            .contains(&format!("the rest begins on line {offset}."))
    );
    assert!(path.contains("numbers-t1-"), "{path}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        full,
        "the spill holds everything"
    );

    let shown_lines = out
        .content
        .lines()
        .take_while(|l| l.starts_with("row"))
        .count() as u64;
    assert_eq!(
        offset,
        shown_lines + 1,
        "the rest begins right after the last line shown"
    );

    // The model follows the marker, with a budget big enough for the rest.
    let read = run_turn(
        &reg,
        &ctx,
        2,
        1 << 20,
        vec![call(
            "c2",
            "fs_read",
            json!({"path": path, "offset": offset, "limit": 100000}),
        )],
    )
    .await
    .remove(0)
    .unwrap();
    assert!(!read.is_error, "{}", read.content);
    let rest: String = read
        .content
        .lines()
        .map(|l| format!("{}\n", l.split_once('\t').unwrap().1))
        .collect();
    let shown: String = out
        .content
        .lines()
        .take(shown_lines as usize)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        format!("{shown}{rest}"),
        full,
        "shown + rest is the whole output"
    );
}

#[tokio::test]
async fn a_batch_divides_the_turn_budget_between_its_calls() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 1 << 20).unwrap();
    let reg = registry();
    let turn_budget = 40_000;
    let calls: Vec<Slot> = (0..4)
        .map(|i| call(&format!("c{i}"), "numbers", json!({"lines": 10_000})))
        .collect();
    let results = run_turn(&reg, &ctx, 1, turn_budget, calls).await;
    // No result is external here, so the header's room goes unused.
    let share = turn_budget / 4 - EXTERNAL_HEADER.len();
    let mut paths = Vec::new();
    for r in results {
        let out = r.unwrap();
        assert!(
            out.content.len() <= share,
            "{} > {share}",
            out.content.len()
        );
        paths.push(marker_recovery(&out.content).0);
    }
    paths.dedup();
    assert_eq!(paths.len(), 4, "each call spills to its own file");
    // A small result in a big batch is untouched.
    let small = run_turn(
        &reg,
        &ctx,
        2,
        turn_budget,
        vec![call("s", "numbers", json!({"lines": 3}))],
    )
    .await
    .remove(0)
    .unwrap();
    assert_eq!(small.content, "row number 1\nrow number 2\nrow number 3\n");
}

#[tokio::test]
async fn a_failed_spill_admits_the_loss_and_names_no_path() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
    // Make the spill directory unwritable.
    let spill = ctx.spill().path().unwrap().to_path_buf();
    std::fs::remove_dir(&spill).unwrap();
    std::fs::write(&spill, "not a directory").unwrap();
    let out = run_turn(
        &registry(),
        &ctx,
        1,
        4096,
        vec![call("c", "numbers", json!({"lines": 5000}))],
    )
    .await
    .remove(0)
    .unwrap();
    std::fs::remove_file(&spill).unwrap();
    std::fs::create_dir(&spill).unwrap();
    assert!(
        out.content.contains("could not be saved"),
        "{}",
        out.content
    );
    assert!(out.content.contains("Re-run the tool"), "{}", out.content);
    assert!(
        !out.content.contains("mecha-spill"),
        "promised a path: {}",
        out.content
    );
    assert!(!out.content.contains("fs_read"), "{}", out.content);
}

#[tokio::test]
async fn an_unknown_tool_is_a_result_naming_the_real_ones() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
    let out = run_turn(
        &registry(),
        &ctx,
        1,
        4096,
        vec![call("c", "fs_raed", json!({}))],
    )
    .await
    .remove(0)
    .unwrap();
    assert!(out.is_error);
    assert!(out.content.contains("no tool named `fs_raed`"));
    assert!(
        out.content
            .contains("fetched, fs_read, numbers, stalled, todo"),
        "{}",
        out.content
    );
}

/// Runs `tool` big enough to spill, then follows its marker with fs_read.
async fn spill_and_read_back(ctx: &ToolCtx, tool: &str) -> (ToolOutput, ToolOutput) {
    let reg = registry();
    let spilled = run_turn(
        &reg,
        ctx,
        1,
        4096,
        vec![call("c1", tool, json!({"lines": 5000}))],
    )
    .await
    .remove(0)
    .unwrap();
    let (path, offset) = marker_recovery(&spilled.content);
    let read = run_turn(
        &reg,
        ctx,
        2,
        4096,
        vec![call(
            "c2",
            "fs_read",
            json!({"path": path, "offset": offset}),
        )],
    )
    .await
    .remove(0)
    .unwrap();
    assert!(!read.is_error, "{}", read.content);
    assert!(read.content.contains("row number"), "{}", read.content);
    (spilled, read)
}

#[tokio::test]
async fn the_rest_of_a_spilled_external_result_is_still_external() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
    let (spilled, read) = spill_and_read_back(&ctx, "fetched").await;
    assert!(spilled.external);
    assert!(read.external, "read back as local content");
    // The label belongs to that file alone: a local spill reads as local,
    // and so does the workspace.
    let (_, local) = spill_and_read_back(&ctx, "numbers").await;
    assert!(!local.external);
    std::fs::write(ws.path().join("notes.txt"), "mine\n").unwrap();
    let notes = run_turn(
        &registry(),
        &ctx,
        3,
        4096,
        vec![call("c3", "fs_read", json!({"path": "notes.txt"}))],
    )
    .await
    .remove(0)
    .unwrap();
    assert!(!notes.external);
}

#[tokio::test]
async fn a_spill_an_untrusted_source_left_behind_a_refusal_is_still_external() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
    let (spilled, read) = spill_and_read_back(&ctx, "stalled").await;
    assert!(spilled.harness, "{}", spilled.content);
    assert!(read.external, "a partial page read back as local content");
}

#[tokio::test]
async fn the_configured_spill_cap_bounds_the_file_and_the_marker_says_so() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 4096)
        .unwrap()
        .with_spill_max_bytes(20_000);
    let out = run_turn(
        &registry(),
        &ctx,
        1,
        4096,
        vec![call("c", "numbers", json!({"lines": 50_000}))],
    )
    .await
    .remove(0)
    .unwrap();
    let (path, _) = marker_recovery(&out.content);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 20_000);
    assert!(
        out.content
            .contains("holds only the first 20000 bytes (the spill cap)"),
        "{}",
        out.content
    );
    // A context re-rooted for another case keeps the cap in its fresh dir.
    let other = tempfile::tempdir().unwrap();
    let rerooted = ctx.rerooted(other.path()).unwrap();
    assert_ne!(
        rerooted.spill().path().unwrap(),
        ctx.spill().path().unwrap()
    );
    assert_eq!(rerooted.spill().max_file_bytes(), 20_000);
}
