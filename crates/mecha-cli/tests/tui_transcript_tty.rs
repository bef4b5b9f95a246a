//! What the TUI keeps on screen at a real terminal (a pseudo-terminal with
//! mecha as its session leader): the transcript above an approval box, a
//! resumed session's earlier conversation and its context size, and the
//! context's new size after `/compact`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tui::{READY, ROWS, Tui, cells};

use mecha_provider::script::{ScriptTurn, ScriptUsage};
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

/// An answer whose request reports `input_tokens` read.
fn answer_reading(text: &str, input_tokens: u64) -> MockReply {
    MockReply::Turn(ScriptTurn {
        usage: Some(ScriptUsage {
            input_tokens,
            output_tokens: 10,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }),
        ..ScriptTurn::text(text)
    })
}

/// Enters `line` once the turn before has ended (a line entered during a
/// turn waits in the prompt), until `shown` is on screen.
async fn enter_when_idle(tui: &mut Tui, line: &str, shown: &str) {
    tui.type_keys(format!("{line}\r").as_bytes());
    let start = std::time::Instant::now();
    while !cells(&tui.terminal.screen()).contains(shown) {
        assert!(
            start.elapsed() < common::pty::PATIENCE,
            "{shown:?} never shown"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        tui.type_keys(b"\r");
    }
}

/// `/compact` is one line in the transcript, and the status line shows
/// the size of the rebuilt conversation instead of the size before.
#[tokio::test]
async fn compact_says_it_once_and_the_status_line_shows_the_new_size() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_config = "context_window = 200000\n".to_owned();
    let mock = MockModel::start(vec![
        answer_reading("answer one", 1_000),
        answer_reading("answer two", 2_000),
        answer_reading("answer three", 60_000),
    ])
    .await;
    mock.answer_summaries("[mecha: compaction]");
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    for (prompt, answer) in [
        ("one", "answer one"),
        ("two", "answer two"),
        ("three", "answer three"),
    ] {
        enter_when_idle(&mut tui, prompt, answer).await;
        tui.wait_answered(answer).await;
    }
    tui.wait_for("60.0k/200k tokens").await;
    tui.type_keys(b"/compact\r");
    tui.wait_for("compacted the conversation").await;
    // A short answer, so the compaction's line stays on the screen.
    enter_when_idle(&mut tui, "/cost", "tokens this session").await;
    assert_eq!(mock.summaries(), 1);
    let shown = rows(&tui);
    let screen = shown.join("\n");
    assert_eq!(screen.matches("compacted").count(), 1, "{screen}");
    let after: u64 = screen
        .split_once("→ ~")
        .and_then(|(_, rest)| rest.split_once(' '))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no size after the compaction: {screen}"));
    assert!(after < 60_000, "{screen}");
    let status = &shown[ROWS - 1];
    assert!(
        status.contains(&format!("{}/200k tokens", thousands(after))),
        "the status line kept the old size: {status}"
    );
    tui.quit().await;
}

/// The status line's way with a size: 12.3k.
fn thousands(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        _ => format!("{:.1}k", n as f64 / 1000.0),
    }
}

/// `mecha --continue` shows the conversation it goes on with, as the live
/// screen drew it (the prompt, the call's line, the answer), and the
/// status line shows the context as its last request reported it.
#[tokio::test]
async fn a_resumed_session_shows_its_conversation_and_its_context() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    std::fs::write(e.ws.join("notes.txt"), "a private note\n").unwrap();
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_read", serde_json::json!({"path": "notes.txt"}))]),
        answer_reading("the note is private", 3_000),
        MockReply::text("still here"),
    ])
    .await;
    let out = e
        .run(common::Api::Anthropic, &mock, "k", &["read the notes"])
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let mut tui = Tui::start(&e, &mock, "--continue");
    tui.wait_written(READY).await;
    tui.wait_for("resumed session").await;
    let shown = rows(&tui);
    let screen = shown.join("\n");
    let prompt = row_of(&shown, "› read the notes");
    let call = row_of(&shown, "✓ fs_read notes.txt");
    let answer = row_of(&shown, "the note is private");
    assert!(prompt < call && call < answer, "{screen}");
    assert!(
        shown[ROWS - 1].contains("3.0k"),
        "the context is not the last request's: {}",
        shown[ROWS - 1]
    );
    tui.type_keys(b"and now\r");
    tui.wait_answered("still here").await;
    tui.quit().await;
}

/// `/sessions` lists this workspace's sessions only, and `/resume` without
/// an id opens a list of them; the one picked comes back with its past.
#[tokio::test]
async fn resume_without_an_id_picks_one_of_this_workspaces_sessions() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mut elsewhere = common::env();
    elsewhere.home = e.home.clone();
    for (env, prompt, answer) in [
        (&e, "first task", "done one"),
        (&elsewhere, "elsewhere task", "done there"),
        (&e, "second task", "done two"),
    ] {
        let mock = MockModel::start(vec![MockReply::text(answer)]).await;
        let out = env.run(common::Api::Anthropic, &mock, "k", &[prompt]).await;
        assert!(out.status.success(), "{}", common::stderr(&out));
        // Sessions are ordered by the millisecond they began.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mock = MockModel::start(vec![]).await;
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    tui.type_keys(b"/sessions\r");
    tui.wait_for("/resume ID goes on with one").await;
    let screen = rows(&tui).join("\n");
    assert!(screen.contains("first task") && screen.contains("second task"));
    assert!(!screen.contains("elsewhere task"), "{screen}");
    tui.type_keys(b"/resume\r");
    tui.wait_for("sessions of this workspace").await;
    let shown = rows(&tui);
    // The list's rows, under its title.
    let listed = &shown[row_of(&shown, "sessions of this workspace")..];
    let newest = row_of(listed, "second task");
    assert!(newest < row_of(listed, "first task"), "newest first");
    assert!(
        listed[newest].contains('›'),
        "the newest is under the cursor"
    );
    tui.type_keys(b"\r");
    tui.wait_for("resumed session").await;
    tui.wait_for("done two").await;
    let shown = rows(&tui);
    assert!(
        row_of(&shown, "› second task") < row_of(&shown, "resumed session"),
        "{}",
        shown.join("\n")
    );
    tui.quit().await;
}
