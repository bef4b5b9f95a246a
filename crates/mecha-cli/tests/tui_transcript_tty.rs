//! What the TUI keeps on screen at a real terminal (a pseudo-terminal with
//! mecha as its session leader): the transcript above an approval box, a
//! resumed session's earlier conversation and its context size, and the
//! context's new size after `/compact`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tui::{READY, ROWS, Tui, cells};

use mecha_testkit::{MockModel, MockReply};

/// The screen's rows as a terminal shows them now.
fn rows(tui: &Tui) -> Vec<String> {
    let mut rows: Vec<String> = cells(&tui.terminal.screen())
        .lines()
        .map(str::to_owned)
        .collect();
    rows.resize(ROWS, String::new());
    rows
}

/// The first row that holds `text`.
fn row_of(rows: &[String], text: &str) -> usize {
    rows.iter()
        .position(|row| row.contains(text))
        .unwrap_or_else(|| panic!("{text:?} is not on screen:\n{}", rows.join("\n")))
}

/// The box asking about a call sits right above the prompt, and the
/// transcript shrinks to make room for it: the user's prompt and the
/// call's own line stay in view above the box. (A box in the middle of the
/// screen covered both whenever the transcript reached that far.)
#[tokio::test]
async fn the_approval_box_sits_above_the_prompt_and_the_call_stays_in_view() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let list: String = (1..=10).map(|i| format!("- point {i}\n")).collect();
    let write = serde_json::json!({"path": "a.txt", "content": "one\n"});
    let mock = MockModel::start(vec![
        MockReply::text(list),
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("written it"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    tui.type_keys(b"first\r");
    tui.wait_answered("point 10").await;
    tui.type_keys(b"write it\r");
    tui.wait_for("wants to run `fs_write`").await;
    tui.wait_for("always allow").await;
    let shown = rows(&tui);
    let top = row_of(&shown, "wants to run `fs_write`");
    let bottom = row_of(&shown, "└");
    let prompt = row_of(&shown, "› write it");
    let call = row_of(&shown, "fs_write a.txt");
    let screen = shown.join("\n");
    assert!(prompt < top && call < top, "covered by the box:\n{screen}");
    // The editor's row, then the status line: the box ends right above.
    assert_eq!(
        bottom,
        ROWS - 3,
        "the box is not above the prompt:\n{screen}"
    );
    assert!(shown[ROWS - 2].starts_with('›'), "{screen}");
    tui.type_keys(b"y");
    tui.wait_answered("written it").await;
    tui.quit().await;
}
