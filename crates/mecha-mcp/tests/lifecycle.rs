#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A server's life after start-up: crashes and respawns, hangs and
//! timeouts, tools/list_changed, requests mecha declines, and the process
//! group dying with mecha's handle.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use mecha_mcp::{McpHub, ServerState};
use serde_json::json;

fn recorded(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_crash_mid_call_is_a_result_and_the_next_call_respawns() {
    let ws = tempfile::tempdir().unwrap();
    let record = ws.path().join("calls.log");
    let record_arg = record.to_str().unwrap();
    let hub = McpHub::start(
        [
            fixture_config("fx", &["--record", record_arg]),
            fixture_config("other", &[]),
        ],
        &opts(ws.path()),
    )
    .await;
    let first_pid = call(&hub, "fx__pid", json!({}), ws.path()).await.content;

    let crashed = call(&hub, "fx__crash", json!({}), ws.path()).await;
    assert!(crashed.is_error && !crashed.external);
    assert!(
        crashed
            .content
            .starts_with("MCP call failed: server `fx` stopped during `fx__crash`"),
        "{}",
        crashed.content
    );
    assert!(
        crashed.content.contains("exit status 3"),
        "{}",
        crashed.content
    );
    assert!(
        crashed.content.contains("not retried"),
        "{}",
        crashed.content
    );
    // The model is not shown the server's stderr; people are, in statuses.
    assert!(!crashed.content.contains("crashing mid-call"));
    let (reason, tail) = failure(&hub.statuses(), "fx");
    assert!(reason.contains("exit status 3"), "{reason}");
    assert_eq!(tail.last().unwrap(), "fixture: crashing mid-call, as asked");

    // The other server never noticed.
    let other = call(&hub, "other__echo", json!({"text": "fine"}), ws.path()).await;
    assert_eq!(other.content, "fine");

    // The next call restarts the server and goes through.
    let echoed = call(&hub, "fx__echo", json!({"text": "back"}), ws.path()).await;
    assert_eq!(echoed.content, "back");
    let second_pid = call(&hub, "fx__pid", json!({}), ws.path()).await.content;
    assert_ne!(first_pid, second_pid, "a new process");
    assert!(matches!(
        status(&hub.statuses(), "fx").state,
        ServerState::Ready { .. }
    ));
    // The crashing call arrived once and was never retried.
    let calls = recorded(&record);
    assert_eq!(
        calls.iter().filter(|l| l.starts_with("call crash")).count(),
        1,
        "{calls:?}"
    );
}

#[tokio::test]
async fn repeated_crashes_back_off() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let first = call(&hub, "fx__crash", json!({}), ws.path()).await;
    assert!(first.content.contains("stopped during"));
    // The first restart is immediate; the server dies again at once.
    let second = call(&hub, "fx__crash", json!({}), ws.path()).await;
    assert!(
        second.content.contains("stopped during"),
        "{}",
        second.content
    );
    // Now a restart waits: the call fails at once, saying when.
    let third = call(&hub, "fx__echo", json!({"text": "x"}), ws.path()).await;
    assert!(third.is_error);
    assert!(
        third
            .content
            .contains("mecha will try to restart it in 1 s"),
        "{}",
        third.content
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let fourth = call(&hub, "fx__echo", json!({"text": "x"}), ws.path()).await;
    assert_eq!(fourth.content, "x");
}

#[tokio::test]
async fn a_hung_call_times_out_is_cancelled_and_the_server_lives_on() {
    let ws = tempfile::tempdir().unwrap();
    let record = ws.path().join("calls.log");
    let mut config = fixture_config("fx", &["--record", record.to_str().unwrap()]);
    config.call_timeout_s = 1;
    let hub = McpHub::start([config], &opts(ws.path())).await;

    let hung = call(&hub, "fx__hang", json!({}), ws.path()).await;
    assert!(hung.is_error && !hung.external);
    assert!(
        hung.content
            .starts_with("MCP call failed: server `fx` did not answer `fx__hang` within 1 s"),
        "{}",
        hung.content
    );
    assert!(
        eventually(|| recorded(&record)
            .iter()
            .any(|l| l.starts_with("cancelled ")))
        .await,
        "notifications/cancelled reached the server: {:?}",
        recorded(&record)
    );
    let after = call(&hub, "fx__echo", json!({"text": "alive"}), ws.path()).await;
    assert_eq!(after.content, "alive");
}

#[tokio::test]
async fn a_dropped_call_is_cancelled() {
    let ws = tempfile::tempdir().unwrap();
    let record = ws.path().join("calls.log");
    let hub = McpHub::start(
        [fixture_config(
            "fx",
            &["--record", record.to_str().unwrap()],
        )],
        &opts(ws.path()),
    )
    .await;
    let hang = tool(&hub, "fx__hang");
    let ctx = ctx(ws.path());
    // Dropped once the server has the call: a cancellation for a request
    // never sent would prove nothing.
    let has_it = eventually(|| recorded(&record).iter().any(|l| l.starts_with("call hang")));
    tokio::select! {
        _ = hang.call(json!({}), &ctx) => panic!("the hang never answers"),
        got = has_it => assert!(got, "the call never reached the server"),
    }
    assert!(
        eventually(|| recorded(&record)
            .iter()
            .any(|l| l.starts_with("cancelled ")))
        .await,
        "{:?}",
        recorded(&record)
    );
}

#[tokio::test]
async fn list_changed_reaches_the_loop_at_take_changed() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let before = tool_names(&hub);
    assert!(hub.take_changed().await.is_none(), "nothing changed yet");

    let out = call(&hub, "fx__notify", json!({}), ws.path()).await;
    assert_eq!(out.content, "notified");
    let tools = hub.take_changed().await.expect("the new list");
    let after: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(after.len(), before.len() + 1);
    assert!(after.contains(&"fx__added".to_owned()));
    // Handed out once.
    assert!(hub.take_changed().await.is_none());
}

/// The notification comes before the call's result on the wire, so it must
/// be seen at the very next turn boundary, whatever the scheduler does.
/// rmcp runs each notification handler on a task of its own; with the log
/// messages sent ahead, dozens of those are queued in front of the
/// list_changed handler when the result wakes the caller, so leaving the
/// ordering to the scheduler misses it within a few rounds.
#[tokio::test]
async fn list_changed_before_a_result_is_seen_at_the_next_boundary_every_time() {
    let ws = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
        call(&hub, "fx__notify", json!({"noise": 500}), ws.path()).await;
        assert!(
            hub.take_changed().await.is_some(),
            "round {round}: the list_changed sent before the result was missed"
        );
        hub.shutdown();
    }
}

#[tokio::test]
async fn list_changed_without_a_change_keeps_the_registry() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    call(&hub, "fx__notify", json!({}), ws.path()).await;
    assert!(hub.take_changed().await.is_some());
    // A second notify re-sends list_changed, but the list is the same.
    call(&hub, "fx__notify", json!({}), ws.path()).await;
    assert!(hub.take_changed().await.is_none());
}

#[tokio::test]
async fn server_requests_are_declined_not_left_hanging() {
    let ws = tempfile::tempdir().unwrap();
    let mut config = fixture_config("fx", &[]);
    config.call_timeout_s = 10;
    let hub = McpHub::start([config], &opts(ws.path())).await;
    for (tool, method) in [
        ("fx__sample", "sampling/createMessage"),
        ("fx__elicit", "elicitation/create"),
        ("fx__roots", "roots/list"),
    ] {
        let out = call(&hub, tool, json!({}), ws.path()).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .starts_with(&format!("client answered {method} with error")),
            "{}",
            out.content
        );
        assert!(out.content.contains("-32601"), "{}", out.content);
        assert!(
            out.content
                .contains(&format!("mecha does not serve {method} requests")),
            "{}",
            out.content
        );
    }
}

#[tokio::test]
async fn the_process_group_dies_with_the_hub() {
    let ws = tempfile::tempdir().unwrap();
    let pidfile = ws.path().join("child.pid");
    // A launcher that leaves a grandchild in the group, as npx does.
    let script = format!(
        "sleep 600 & echo $! > {}; exec {}",
        pidfile.display(),
        fixture_mcp().display()
    );
    let mut config = mecha_mcp::McpServerConfig::new("fx", "/bin/sh");
    config.args = vec!["-c".into(), script];
    let hub = McpHub::start([config], &opts(ws.path())).await;
    let server_pid: u32 = call(&hub, "fx__pid", json!({}), ws.path())
        .await
        .content
        .parse()
        .unwrap();
    let grandchild: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(server_pid) && alive(grandchild));
    drop(hub);
    assert!(eventually(|| !alive(server_pid) && !alive(grandchild)).await);
}

#[tokio::test]
async fn shutdown_kills_and_calls_then_fail() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let echo = tool(&hub, "fx__echo");
    let pid: u32 = call(&hub, "fx__pid", json!({}), ws.path())
        .await
        .content
        .parse()
        .unwrap();
    hub.shutdown();
    assert!(eventually(|| !alive(pid)).await);
    let out = echo
        .call(json!({"text": "x"}), &ctx(ws.path()))
        .await
        .unwrap();
    assert!(out.is_error);
    assert_eq!(
        out.content,
        "MCP call failed: server `fx` has been shut down"
    );
}

#[tokio::test]
async fn check_starts_lists_and_stops() {
    let ws = tempfile::tempdir().unwrap();
    let status = mecha_mcp::check(fixture_config("fx", &[]), &opts(ws.path())).await;
    let ServerState::Ready { tools, .. } = &status.state else {
        panic!("{status}");
    };
    let echo = tools.iter().find(|t| t.raw_name == "echo").unwrap();
    assert_eq!(echo.name, "fx__echo");
    let read = tools.iter().find(|t| t.raw_name == "read").unwrap();
    assert!(read.read_only);
    assert!(status.to_string().starts_with("MCP server `fx`: ready"));

    let status = mecha_mcp::check(
        fixture_config("fx", &["--exit-at-start", "2"]),
        &opts(ws.path()),
    )
    .await;
    let text = status.to_string();
    assert!(
        text.starts_with(
            "MCP server `fx` is unavailable: it exited during start-up (exit status 2)"
        ),
        "{text}"
    );
    // Its stderr is a log, never part of what is printed.
    assert!(!text.contains("fixture: exiting at start"), "{text}");
    assert!(!text.contains('\n'), "{text}");
}
