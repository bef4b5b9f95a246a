#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `notifications/progress` keeps a call alive past `call_timeout_s`, up to
//! a hard cap, and its words reach the context's progress sink.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use mecha_core::{ProgressSink, ToolOutput};
use mecha_mcp::McpHub;
use serde_json::{Value, json};

/// Calls the fixture's `progress` tool with `call_timeout_s = 1`; returns
/// the result, how long it took, and every `(call_id, message)` reported.
async fn progress(args: Value) -> (ToolOutput, Duration, Vec<(String, String)>) {
    let ws = tempfile::tempdir().unwrap();
    let mut config = fixture_config("fx", &[]);
    config.call_timeout_s = 1;
    let hub = McpHub::start([config], &opts(ws.path())).await;
    let reports: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let seen = Arc::clone(&reports);
    let sink = ProgressSink::new(move |id: &str, message: &str| {
        seen.lock()
            .unwrap()
            .push((id.to_owned(), message.to_owned()));
    });
    let ctx = ctx(ws.path())
        .with_progress(sink)
        .for_call("call-7", 1, 1 << 20);
    let started = Instant::now();
    let out = tool(&hub, "fx__progress").call(args, &ctx).await.unwrap();
    let took = started.elapsed();
    hub.shutdown();
    let reports = reports.lock().unwrap().clone();
    (out, took, reports)
}

#[tokio::test]
async fn a_call_that_reports_progress_outlives_call_timeout() {
    let (out, took, reports) =
        progress(json!({"every_ms": 200, "report_ms": 2500, "silent_ms": 0})).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.starts_with("finished after"), "{}", out.content);
    assert!(took > Duration::from_millis(2400), "{took:?}");
    assert!(reports.len() >= 5, "{reports:?}");
    assert!(reports.iter().all(|(id, _)| id == "call-7"), "{reports:?}");
    assert_eq!(reports[0].1, "step 1");
}

#[tokio::test]
async fn a_call_that_stops_reporting_is_still_cancelled() {
    let (out, took, _) =
        progress(json!({"every_ms": 200, "report_ms": 600, "silent_ms": 5000})).await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("did not answer `fx__progress` within 1 s, nor report progress"),
        "{}",
        out.content
    );
    // Cancelled about a second after the last report, not at the answer.
    assert!(took < Duration::from_millis(3000), "{took:?}");
}

#[tokio::test]
async fn progress_cannot_extend_a_call_past_the_cap() {
    let (out, took, reports) =
        progress(json!({"every_ms": 200, "report_ms": 60_000, "silent_ms": 0})).await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains(
            "kept reporting progress on `fx__progress` but did not finish within 10 s (10 times \
             its call_timeout_s)"
        ),
        "{}",
        out.content
    );
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(13),
        "{took:?}"
    );
    assert!(reports.len() >= 30, "{}", reports.len());
}
