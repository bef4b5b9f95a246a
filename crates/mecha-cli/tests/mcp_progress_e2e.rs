//! An MCP server's progress reports through the real binary: the call
//! outlives `call_timeout_s`, and each report shows on the activity line
//! (stderr, escaped) or as a `tool_progress` event in stream-json.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};
use serde_json::{Value, json};

fn progress_env() -> common::Env {
    let mut e = env();
    e.extra_config = format!(
        "[[mcp]]\nname = \"fix\"\ncommand = {:?}\ncall_timeout_s = 1\n",
        fixture_mcp().display().to_string()
    );
    e
}

fn progress_turn() -> MockReply {
    tool_turn(&[(
        "fix__progress",
        json!({"every_ms": 200, "report_ms": 1600, "silent_ms": 0}),
    )])
}

#[tokio::test]
async fn progress_shows_on_stderr_and_keeps_the_call_alive() {
    let e = progress_env();
    let mock = MockModel::start(vec![progress_turn(), MockReply::text("ok")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 1);
    assert!(results[0].0.starts_with("finished after"), "{results:?}");
    let err = stderr(&out);
    assert!(err.contains("… fix__progress: step 1\n"), "{err}");
    assert!(err.contains("… fix__progress: step 5\n"), "{err}");
}

#[tokio::test]
async fn a_servers_progress_message_cannot_drive_the_terminal() {
    let e = progress_env();
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2K\rfake";
    let mock = MockModel::start(vec![
        tool_turn(&[(
            "fix__progress",
            json!({"every_ms": 100, "report_ms": 300, "silent_ms": 0, "label": hostile}),
        )]),
        MockReply::text("ok"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("… fix__progress: "), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
}

#[tokio::test]
async fn stream_json_gets_a_progress_event_per_report() {
    let e = progress_env();
    let mock = MockModel::start(vec![progress_turn(), MockReply::text("ok")]).await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--yes", "--output-format", "stream-json", "go"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_progress")
        .collect();
    assert!(progress.len() >= 5, "{events:?}");
    assert_eq!(progress[0]["name"], "fix__progress");
    assert_eq!(progress[0]["message"], "step 1");
    // Reports come before the call's result.
    let first_result = events
        .iter()
        .position(|e| e["type"] == "tool_result")
        .unwrap();
    let last_report = events
        .iter()
        .rposition(|e| e["type"] == "tool_progress")
        .unwrap();
    assert!(last_report < first_result, "{events:?}");
}
