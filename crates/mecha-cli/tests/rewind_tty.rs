//! `/rewind` in the TUI under a real terminal: two prompts whose model
//! writes files, then turn 2 undone, files and conversation, from the list
//! (the file back byte for byte, the cut journaled, the prompt back in the
//! editor); and a file edited by hand since, shown and left alone on a no,
//! overwritten only on a yes, the list opened with Esc twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;

use common::tui::{CTRL_C, ROWS, Tui, cells};
use common::{Api, Env, only_session, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

const ENTER: &[u8] = b"\r";
const DOWN: &[u8] = b"\x1b[B";
const ESC: &[u8] = b"\x1b";

/// Turn 1 writes notes.md; turn 2 rewrites a.txt (which held binary
/// bytes), adds new.txt and reads notes.md.
fn script() -> Vec<MockReply> {
    vec![
        tool_turn(&[(
            "fs_write",
            json!({"path": "notes.md", "content": "turn one\n"}),
        )]),
        MockReply::text("wrote the notes"),
        tool_turn(&[
            (
                "fs_write",
                json!({"path": "a.txt", "content": "changed in turn 2\n"}),
            ),
            ("fs_write", json!({"path": "new.txt", "content": "new\n"})),
            // Private data read in turn 2: its taint outlives the cut.
            ("fs_read", json!({"path": "notes.md"})),
        ]),
        MockReply::text("changed a"),
        MockReply::text("resumed"),
    ]
}

const ORIGINAL: &[u8] = b"original a\n\xff\x00 bytes\n";

/// A TUI that has run both prompts.
async fn two_prompts(e: &Env, mock: &MockModel) -> Tui {
    fs::write(e.ws.join("a.txt"), ORIGINAL).unwrap();
    let mut tui = Tui::start(e, mock, "--yes");
    tui.wait_written(common::tui::READY).await;
    tui.type_keys(b"write the notes\r");
    tui.wait_answered("wrote the notes").await;
    tui.type_keys(b"change a\r");
    tui.wait_answered("changed a").await;
    assert_eq!(
        fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "changed in turn 2\n"
    );
    tui
}

/// The session's journal, one JSON record a line.
fn journal(e: &Env) -> Vec<serde_json::Value> {
    let id = only_session(e);
    fs::read_to_string(e.home.join("sessions").join(format!("{id}.jsonl")))
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// What each conversation rewind in the journal kept.
fn rewinds(e: &Env) -> Vec<u64> {
    journal(e)
        .into_iter()
        .filter(|r| r["type"] == "rewind")
        .filter_map(|r| r["keep"].as_u64())
        .collect()
}

/// The prompt editor's row: the one above the status line.
fn editor_row(tui: &Tui) -> String {
    let screen = cells(&tui.terminal.screen());
    let rows: Vec<&str> = screen.lines().collect();
    assert_eq!(rows.len(), ROWS);
    rows[ROWS - 2].to_owned()
}

#[tokio::test]
async fn turn_two_is_undone_files_and_conversation_from_the_list() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(script()).await;
    let mut tui = two_prompts(&e, &mock).await;

    // Tab completes the command.
    tui.type_keys(b"/rew\t");
    tui.wait_for("› /rewind").await;
    tui.type_keys(ENTER);
    tui.wait_for("rewind to before which prompt?").await;
    tui.wait_for("2  change a  a.txt, new.txt").await;
    tui.wait_for("1  write the notes  notes.md").await;
    // The newest is first, under the cursor.
    tui.type_keys(ENTER);
    tui.wait_for("rewind to before turn 2").await;
    tui.wait_for("files it changed: a.txt, new.txt").await;
    // Files and conversation is the default.
    tui.type_keys(ENTER);
    tui.wait_for("the conversation is back to before turn 2: cut to 4 messages")
        .await;

    assert_eq!(fs::read(e.ws.join("a.txt")).unwrap(), ORIGINAL);
    assert!(!e.ws.join("new.txt").exists(), "turn 2's new file is gone");
    assert_eq!(
        fs::read_to_string(e.ws.join("notes.md")).unwrap(),
        "turn one\n",
        "turn 1's file stays"
    );
    let screen = cells(&tui.terminal.screen());
    assert!(screen.contains("removed new.txt"), "{screen}");
    assert!(screen.contains("restored a.txt"), "{screen}");
    // The transcript shows the conversation as it now stands.
    assert!(screen.contains("wrote the notes"), "{screen}");
    assert!(!screen.contains("changed a"), "turn 2 is gone: {screen}");
    assert!(
        editor_row(&tui).contains("change a"),
        "the prompt is back in the editor: {screen}"
    );
    let status = screen.lines().last().unwrap();
    assert!(
        status.contains("private data held"),
        "the taint stays: {status}"
    );
    assert_eq!(rewinds(&e), vec![4], "the cut is journaled");
    // The prompt put back is cleared first: Ctrl-C twice quits from an
    // empty one.
    tui.type_keys(CTRL_C);
    tui.quit().await;

    // What `mecha rewind` reads of the session sees the files put back.
    let id = only_session(&e);
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "rewind",
            &[&id, "--to", "2", "--files"],
            "",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("(0 files changed)"),
        "nothing left to undo: {}",
        stdout(&out)
    );
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "rewind", &[&id, "--list"], "")
        .await;
    let listed = stdout(&out);
    assert!(
        listed.contains("2  change a  [cut from the conversation]"),
        "{listed}"
    );
    assert!(
        listed.contains("1  write the notes\n"),
        "turn 1 stays: {listed}"
    );
    assert_eq!(mock.requests().len(), 4, "nothing was sent for the rewind");

    // A resumed session goes on from the cut: turn 1's four messages and
    // the new prompt.
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "chat",
            &["--resume", &id],
            "go on\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = &mock.requests()[4].body["messages"];
    assert_eq!(sent.as_array().unwrap().len(), 5, "{sent}");
    assert!(!sent.to_string().contains("change a"), "{sent}");
}

#[tokio::test]
async fn a_file_edited_by_hand_is_shown_and_a_no_leaves_it() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(script()).await;
    let mut tui = two_prompts(&e, &mock).await;
    fs::write(e.ws.join("a.txt"), "my own work\n").unwrap();

    tui.type_keys(ESC);
    tui.wait_for("press Esc again to rewind").await;
    tui.type_keys(ESC);
    tui.wait_for("rewind to before which prompt?").await;
    tui.type_keys(ENTER);
    tui.wait_for("rewind to before turn 2").await;
    tui.type_keys(ENTER);
    tui.wait_for("overwrite files changed since?").await;
    tui.wait_for("this file changed since mecha last saw it")
        .await;
    tui.wait_for("│   a.txt").await;
    // No is the default, and writes nothing.
    tui.type_keys(ENTER);
    tui.wait_for("nothing was rewound").await;
    assert_eq!(
        fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "my own work\n"
    );
    assert!(e.ws.join("new.txt").exists(), "nothing else moved");
    assert!(rewinds(&e).is_empty(), "the conversation was not cut");

    // Asked again, a yes overwrites it.
    tui.type_keys(b"/rewind 2 files\r");
    tui.wait_for("overwrite files changed since?").await;
    tui.type_keys(DOWN);
    tui.type_keys(ENTER);
    tui.wait_for("the workspace is back to before turn 2").await;
    assert_eq!(fs::read(e.ws.join("a.txt")).unwrap(), ORIGINAL);
    assert!(!e.ws.join("new.txt").exists());
    assert!(rewinds(&e).is_empty(), "files only: the conversation stays");
    tui.quit().await;
}

#[tokio::test]
async fn a_session_without_prompts_says_there_is_nothing_to_rewind() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(Vec::new()).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(common::tui::READY).await;
    tui.type_keys(b"/rewind\r");
    tui.wait_for("no prompts in this session yet, so there is nothing to rewind")
        .await;
    tui.quit().await;
}
