//! Habits users bring from the other harnesses, in `mecha tui` at a real
//! terminal: saying no with a reason, a message typed during a turn queued
//! for the next, the prompt edited in `$EDITOR`, a notification when the
//! screen needs the user.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tui::{READY, Tui};
use mecha_testkit::{MockModel, MockReply};

fn write(path: &str) -> serde_json::Value {
    serde_json::json!({"path": path, "content": "one\n"})
}

/// `n` asks what to do instead: a reason typed goes to the model with the
/// refusal, an empty line is the plain no of before.
#[tokio::test]
async fn no_with_a_reason_tells_the_model_what_to_do_instead() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write("a.txt"))]),
        common::tool_turn(&[("fs_write", write("b.txt"))]),
        MockReply::text("leaving both alone"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"write it\r");
    tui.wait_for("wants to run `fs_write`").await;
    tui.type_keys(b"n");
    tui.wait_for("What should the model do instead?").await;
    tui.type_keys(b"put it in b.txt\r");
    tui.wait_for("you told the model instead: put it in b.txt")
        .await;
    tui.wait_for("b.txt  waiting for the gate").await;
    tui.type_keys(b"n");
    tui.wait_for("What should the model do instead?").await;
    tui.type_keys(b"\r");
    tui.wait_answered("leaving both alone").await;
    tui.quit().await;
    let results = common::results_in(&mock, 2);
    assert_eq!(
        results[0].0,
        "the user declined this `fs_write` call and said what to do instead: put it in b.txt"
    );
    assert!(
        results[1].0.contains("ask them what they want instead"),
        "an empty reason is the plain no: {results:?}"
    );
    assert!(!e.ws.join("a.txt").exists() && !e.ws.join("b.txt").exists());
}
