#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Memory and disk stay bounded whatever a command prints. Alone in its binary so
//! no other test moves this process's peak RSS.

use std::path::PathBuf;

use mecha_core::{DEFAULT_SPILL_MAX_BYTES, Tool, ToolCtx};
use mecha_tools::{Shell, ShellConfig};
use serde_json::json;

const OUTPUT_BYTES: u64 = 300_000_000;

/// Peak resident set size of this process so far, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[tokio::test]
async fn huge_output_costs_one_budget_of_memory() {
    let budget = 16 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), budget)
        .unwrap()
        .for_call("t1", 1, budget);
    let shell = Shell::new(ShellConfig::default());

    let before = peak_rss();
    let out = shell
        .call(
            json!({"command": format!("head -c {OUTPUT_BYTES} /dev/zero | tr '\\0' a")}),
            &ctx,
        )
        .await
        .unwrap();
    let grew = peak_rss().saturating_sub(before);

    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.len() <= budget, "{} bytes", out.content.len());
    assert!(
        out.content.contains(&format!("of {OUTPUT_BYTES} bytes")),
        "{}",
        out.content
    );
    // The disk is bounded too: the saved copy stops at the spill cap, and
    // the marker says so rather than promising the whole output.
    let path = out.content.split_once("The saved copy at ").unwrap().1;
    let path = PathBuf::from(path.split_once(" holds only").unwrap().0);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        DEFAULT_SPILL_MAX_BYTES
    );
    assert!(
        out.content.contains(&format!(
            "holds only the first {DEFAULT_SPILL_MAX_BYTES} bytes"
        )),
        "{}",
        out.content
    );
    assert!(
        grew < 64 * 1024 * 1024,
        "peak RSS grew by {grew} bytes for {OUTPUT_BYTES} bytes of output"
    );
}
