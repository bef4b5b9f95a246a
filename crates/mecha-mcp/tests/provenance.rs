#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Whose words a failed call carries. Only text mecha wrote may come back
//! as a refusal (which adds no taint); a failure that quotes the server is
//! the server's writing and taints like its results.

mod common;

use common::*;
use mecha_core::{Taint, Tool, ToolOutput};
use mecha_mcp::McpHub;
use serde_json::json;

fn taint_of(tool: &dyn Tool, out: &ToolOutput) -> Taint {
    let mut taint = Taint::default();
    taint.record(tool.capabilities(), out);
    taint
}

#[tokio::test]
async fn a_restart_the_server_refuses_in_its_own_words_taints() {
    let ws = tempfile::tempdir().unwrap();
    let marker = ws.path().join("started-once");
    let hub = McpHub::start(
        [fixture_config(
            "re",
            &["--bad-reinit", marker.to_str().unwrap()],
        )],
        &opts(ws.path()),
    )
    .await;
    let echo = tool(&hub, "re__echo");
    let crash = tool(&hub, "re__crash");
    let ctx = ctx(ws.path());

    // The crash report is mecha's own: exit status, the advice to retry.
    let crashed = crash.call(json!({}), &ctx).await.unwrap();
    assert!(crashed.is_error && crashed.harness, "{crashed:?}");
    assert_eq!(taint_of(crash.as_ref(), &crashed), Taint::default());

    // The restart's handshake fails with the server's text, first as the
    // attempt's own answer, then from the back-off that remembers it.
    for attempt in ["restart", "back-off"] {
        let out = echo.call(json!({"text": "hi"}), &ctx).await.unwrap();
        assert!(out.is_error, "{attempt}: {out:?}");
        assert!(
            out.content.contains("SERVER-WRITTEN"),
            "{attempt}: the server's text is shown: {}",
            out.content
        );
        assert!(
            !out.harness,
            "{attempt}: a result quoting the server is not mecha's words: {out:?}"
        );
        assert!(
            taint_of(echo.as_ref(), &out).private_data,
            "{attempt}: the server's words taint like its results"
        );
    }
}
