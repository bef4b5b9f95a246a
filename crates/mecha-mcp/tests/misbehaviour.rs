#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Servers that fail to start. Each case runs beside a good server: the hub
//! goes on, the good server's tools work, and the broken one's status names
//! it and the reason.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mecha_mcp::{McpHub, McpServerConfig, ServerState};
use serde_json::json;

/// Starts `bad` beside a good server and checks the good one still works.
async fn beside_a_good_one(bad: McpServerConfig) -> (String, Vec<String>) {
    let ws = tempfile::tempdir().unwrap();
    let name = bad.name.clone();
    let hub = McpHub::start([fixture_config("good", &[]), bad], &opts(ws.path())).await;
    let out = call(&hub, "good__echo", json!({"text": "still here"}), ws.path()).await;
    assert_eq!(out.content, "still here");
    assert!(
        tool_names(&hub)
            .iter()
            .all(|n| !n.starts_with(&format!("{name}__"))),
        "a failed server's tools are absent"
    );
    let statuses = hub.statuses();
    assert_eq!(statuses.len(), 2);
    assert!(matches!(
        status(&statuses, "good").state,
        ServerState::Ready { .. }
    ));
    let rendered = status(&statuses, &name).to_string();
    assert!(rendered.contains(&format!("`{name}`")), "{rendered}");
    failure(&statuses, &name)
}

#[tokio::test]
async fn missing_binary() {
    let (reason, _) =
        beside_a_good_one(McpServerConfig::new("gone", "mecha-no-such-mcp-server")).await;
    assert!(
        reason.starts_with("command `mecha-no-such-mcp-server` not found on PATH"),
        "{reason}"
    );
}

#[tokio::test]
async fn exits_at_start_with_its_stderr() {
    let (reason, tail) =
        beside_a_good_one(fixture_config("quitter", &["--exit-at-start", "7"])).await;
    assert_eq!(reason, "it exited during start-up (exit status 7)");
    assert_eq!(tail, ["fixture: exiting at start with code 7, as asked"]);
}

#[tokio::test]
async fn garbage_on_stdout_times_out() {
    let mut bad = fixture_config("noisy", &["--garbage"]);
    bad.startup_timeout_s = 1;
    let (reason, tail) = beside_a_good_one(bad).await;
    assert!(
        reason.contains("did not finish starting") && reason.contains("within 1 s"),
        "{reason}"
    );
    assert_eq!(tail, ["fixture: serving on stdio"]);
}

#[tokio::test]
async fn refused_handshake() {
    let (reason, tail) = beside_a_good_one(fixture_config("rude", &["--bad-init"])).await;
    assert!(reason.starts_with("the MCP handshake failed"), "{reason}");
    assert!(reason.contains("refuses to initialize"), "{reason}");
    assert_eq!(
        tail.last().unwrap(),
        "fixture: refusing initialize, as asked"
    );
}

#[tokio::test]
async fn slow_start_past_the_timeout() {
    let mut bad = fixture_config("slow", &["--slow-start", "30"]);
    bad.startup_timeout_s = 1;
    let started = Instant::now();
    let (reason, _) = beside_a_good_one(bad).await;
    assert!(reason.contains("within 1 s"), "{reason}");
    assert!(
        reason.contains("startup_timeout_s"),
        "names the fix: {reason}"
    );
    // Not the 30 s the server would have taken.
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn slow_start_within_the_timeout_is_fine() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start(
        [fixture_config("slowish", &["--slow-start", "0.5"])],
        &opts(ws.path()),
    )
    .await;
    let out = call(&hub, "slowish__echo", json!({"text": "ok"}), ws.path()).await;
    assert_eq!(out.content, "ok");
}

#[tokio::test]
async fn servers_start_concurrently() {
    // Sequential start-up would take 3 x 4 s; concurrent takes ~4 s. The
    // bound is loose on purpose: it tells the two apart, nothing finer, and
    // leaves a loaded machine 6 s to spawn three servers.
    let ws = tempfile::tempdir().unwrap();
    let configs = ["a", "b", "c"].map(|n| fixture_config(n, &["--slow-start", "4"]));
    let started = Instant::now();
    let hub = McpHub::start(configs, &opts(ws.path())).await;
    let took = started.elapsed();
    assert_eq!(
        tool_names(&hub)
            .iter()
            .filter(|n| n.ends_with("__echo"))
            .count(),
        3
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[tokio::test]
async fn a_flood_on_stderr_is_drained() {
    // 200,000 lines (~17 MB): with nobody reading, the server would block on
    // its first 64 KB and never answer.
    let mut flood = fixture_config("chatty", &["--flood-stderr", "200000"]);
    flood.startup_timeout_s = 20;
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([flood], &opts(ws.path())).await;
    let out = call(&hub, "chatty__echo", json!({"text": "heard"}), ws.path()).await;
    assert_eq!(out.content, "heard");
}

#[tokio::test]
async fn a_flood_then_exit_keeps_only_the_tail() {
    let (reason, tail) = beside_a_good_one(fixture_config(
        "chatty",
        &["--flood-stderr", "5000", "--exit-at-start", "1"],
    ))
    .await;
    assert!(reason.contains("exit status 1"), "{reason}");
    assert_eq!(tail.len(), 20, "{tail:?}");
    assert!(
        tail[0].starts_with("fixture flood line 00004981"),
        "{tail:?}"
    );
    assert_eq!(tail[19], "fixture: exiting at start with code 1, as asked");
}

#[tokio::test]
async fn sandbox_true_is_refused_with_the_specs_words() {
    let mut bad = fixture_config("graph", &[]);
    bad.sandbox = true;
    let (reason, tail) = beside_a_good_one(bad).await;
    assert_eq!(
        reason,
        "MCP server `graph` is configured with `sandbox = true`, but no sandbox backend\nis set. \
         Set [sandbox] kind = \"bwrap\" or \"docker\", or drop `sandbox = true` to\naccept that \
         it runs unconfined."
    );
    assert!(tail.is_empty());
}

#[tokio::test]
async fn invalid_and_duplicate_configs_are_statuses_too() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start(
        [
            fixture_config("good", &[]),
            fixture_config("good", &[]),
            fixture_config("bad.name", &[]),
        ],
        &opts(ws.path()),
    )
    .await;
    let statuses = hub.statuses();
    assert_eq!(statuses.len(), 3);
    assert!(matches!(statuses[0].state, ServerState::Ready { .. }));
    let ServerState::Failed { reason, .. } = &statuses[1].state else {
        panic!("{:?}", statuses[1]);
    };
    assert!(
        reason.contains("two MCP servers are named `good`"),
        "{reason}"
    );
    let ServerState::Failed { reason, .. } = &statuses[2].state else {
        panic!("{:?}", statuses[2]);
    };
    assert!(
        reason.contains("`bad.name`") && reason.contains("`bad_name`"),
        "{reason}"
    );
    assert_eq!(
        tool_names(&hub)
            .iter()
            .filter(|n| n.ends_with("__echo"))
            .count(),
        1
    );
}
