//! What waits for the owner, at a real terminal: the TUI opens with the
//! questions parked and the sends staged in this workspace, and
//! `/questions` and `/outbox` list them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tui::{READY, Tui};
use common::{Api, tool_turn};
use mecha_testkit::MockModel;
use serde_json::json;

#[tokio::test]
async fn the_screen_opens_with_what_waits_and_lists_it() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_config = "[[outbox]]\nname = \"post\"\ndescription = \"Post a note.\"\n\
                      command = [\"true\"]\ninput = { type = \"object\" }\n"
        .into();
    let mock = MockModel::start(vec![
        tool_turn(&[("post", json!({"text": "hello"}))]),
        tool_turn(&[("ask_user", json!({"question": "Which team channel?"}))]),
    ])
    .await;
    let parked = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "run",
            &["--delegate", "post it"],
            "",
        )
        .await;
    assert_eq!(parked.status.code(), Some(5), "{}", common::stderr(&parked));
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    tui.wait_for("1 question from delegated tasks waits for your answer: /questions")
        .await;
    tui.wait_for("1 staged send waits for your review: /outbox")
        .await;
    tui.type_keys(b"/questions\r");
    tui.wait_for("Which team channel?").await;
    tui.type_keys(b"/outbox\r");
    tui.wait_for("staged by a conversation holding neither")
        .await;
    tui.quit().await;
}
