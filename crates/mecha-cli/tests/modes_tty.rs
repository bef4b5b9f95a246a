//! Permission modes on the TUI: Shift-Tab cycles ask → accept-edits →
//! plan with the mode on the status line; accept-edits lets workspace
//! edits run unasked and still asks for the rest; plan mode offers only
//! the read-only tools (and refuses a writer the model names anyway),
//! ends with the plan to approve, and the same conversation then goes on
//! with every tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tui::{READY, Tui, cells};

use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

const SHIFT_TAB: &[u8] = b"\x1b[Z";

/// The names of the tools offered in a request (Anthropic's shape).
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The status line: the screen's last row.
fn status_line(tui: &Tui) -> String {
    cells(&tui.terminal.screen())
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn shift_tab_cycles_the_mode_and_accept_edits_writes_unasked_but_asks_for_a_command() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let write = json!({"path": "a.txt", "content": "one\n"});
    let shell = json!({"command": "echo from-the-model"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write)]),
        common::tool_turn(&[("shell", shell)]),
        MockReply::text("done both"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.wait_for("interlock clear").await;
    assert!(!status_line(&tui).contains("mode "), "ask is not named");
    tui.type_keys(SHIFT_TAB);
    tui.wait_for("mode accept-edits · ").await;
    tui.type_keys(SHIFT_TAB);
    tui.wait_for("mode plan · ").await;
    tui.type_keys(SHIFT_TAB);
    tui.terminal
        .wait_until("the mode back to ask", |s| {
            let screen = cells(s);
            let last = screen.lines().last().unwrap_or_default();
            last.contains("interlock clear") && !last.contains("mode ")
        })
        .await;
    tui.type_keys(SHIFT_TAB);
    tui.wait_for("mode accept-edits · ").await;
    tui.type_keys(b"write then run\r");
    // The write ran without a question; the command asks.
    tui.wait_for("wants to run `shell`").await;
    assert_eq!(
        std::fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(
        !tui.terminal.screen().contains("wants to run `fs_write`"),
        "the edit was asked about"
    );
    tui.type_keys(b"y");
    tui.wait_answered("done both").await;
    tui.quit().await;
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn plan_mode_offers_read_only_tools_ends_with_the_plan_and_goes_on_once_approved() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    std::fs::write(e.ws.join("notes.txt"), "what to do\n").unwrap();
    let read = json!({"path": "notes.txt"});
    // A model that names a writer it was not offered.
    let write = json!({"path": "a.txt", "content": "too soon\n"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_read", read), ("fs_write", write.clone())]),
        MockReply::text("the plan: 1. write a.txt"),
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("carried out"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(SHIFT_TAB);
    tui.type_keys(SHIFT_TAB);
    tui.wait_for("mode plan · ").await;
    tui.type_keys(b"plan the change\r");
    tui.wait_for("carry out this plan?").await;
    tui.wait_for("the plan: 1. write a.txt").await;
    assert!(!e.ws.join("a.txt").exists(), "plan mode wrote a file");
    // Enter on the first item: yes, asking before each change.
    tui.type_keys(b"\r");
    tui.wait_for("wants to run `fs_write`").await;
    assert!(!status_line(&tui).contains("mode plan"));
    tui.type_keys(b"y");
    tui.wait_answered("carried out").await;
    tui.quit().await;
    assert_eq!(
        std::fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "too soon\n"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let planning = offered(&requests[0].body);
    assert!(planning.contains(&"fs_read".to_owned()), "{planning:?}");
    for writer in ["fs_write", "fs_edit", "shell"] {
        assert!(!planning.contains(&writer.to_owned()), "{planning:?}");
    }
    let first = requests[0].body["messages"].to_string();
    assert!(first.contains("[mecha: plan mode]"), "{first}");
    // The writer the model named anyway was refused, its read ran.
    let results = common::results_in(&mock, 1);
    assert!(results[0].0.contains("what to do"), "{results:?}");
    assert!(results[1].0.contains("plan mode"), "{results:?}");
    // The same conversation, now with every tool.
    let going_on = &requests[2].body;
    assert!(offered(going_on).contains(&"fs_write".to_owned()));
    assert!(offered(going_on).contains(&"shell".to_owned()));
    let messages = going_on["messages"].to_string();
    assert!(messages.contains("the plan: 1. write a.txt"), "{messages}");
    assert!(
        messages.contains("The plan is approved: carry it out."),
        "{messages}"
    );
}
