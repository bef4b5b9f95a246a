//! Ordering dependent calls keeps independent ones together: the
//! benchmark's four `sleep 1` shell calls of one turn still take about a
//! second through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Api, env, results_in, stderr, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

#[tokio::test]
async fn four_sleeps_in_one_turn_overlap() {
    let e = env();
    let sleep = ("shell", json!({"command": "sleep 1"}));
    let mock = MockModel::start(vec![
        tool_turn(&[sleep.clone(), sleep.clone(), sleep.clone(), sleep]),
        MockReply::text("ok"),
    ])
    .await;
    let started = Instant::now();
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    let took = started.elapsed();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 1);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(results.iter().all(|(_, is_error)| !is_error), "{results:?}");
    // One after another they take over 4 s; the bound leaves room for a
    // slow, shared machine.
    assert!(took < Duration::from_millis(3000), "took {took:?}");
}
