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

/// The text of the last user message of request `n`.
fn prompt_in(mock: &MockModel, n: usize) -> String {
    let messages = mock.requests()[n].body["messages"].clone();
    let content = &messages.as_array().unwrap().last().unwrap()["content"];
    match content.as_str() {
        Some(text) => text.to_owned(),
        None => content[0]["text"].as_str().unwrap().to_owned(),
    }
}

async fn wait_for_file(path: &std::path::Path) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < common::pty::PATIENCE,
            "{path:?} never came"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Two prompts entered while a call runs wait in a list above the prompt;
/// Up takes the last back to fix it; each is sent, in order, as a turn of
/// its own once the running one ends.
#[tokio::test]
async fn prompts_typed_during_a_turn_are_queued_and_sent_in_order_after_it() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let shell =
        serde_json::json!({"command": "touch started; while [ ! -e go ]; do sleep 0.05; done"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("shell", shell)]),
        MockReply::text("first done"),
        MockReply::text("second done"),
        MockReply::text("third done"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "--yes");
    tui.wait_written(READY).await;
    tui.type_keys(b"first\r");
    wait_for_file(&e.ws.join("started")).await;
    tui.type_keys(b"second\r");
    tui.type_keys(b"thrid\r");
    tui.wait_for("queued, sent when the turn ends").await;
    tui.wait_for("  › thrid").await;
    // Up at the empty prompt: the last one is back there, out of the list.
    tui.type_keys(b"\x1b[A");
    tui.terminal
        .wait_until("thrid back in the prompt", |s| {
            let cells = common::tui::cells(s);
            cells.contains("\n› thrid") && !cells.contains("  › thrid")
        })
        .await;
    tui.type_keys(b"\x15third\r");
    tui.wait_for("  › third").await;
    assert_eq!(
        mock.requests().len(),
        1,
        "nothing sent before the turn ended"
    );
    std::fs::write(e.ws.join("go"), "").unwrap();
    tui.wait_answered("third done").await;
    tui.quit().await;
    assert_eq!(mock.requests().len(), 4);
    assert_eq!(prompt_in(&mock, 2), "second");
    assert_eq!(prompt_in(&mock, 3), "third");
}

/// A queued `/resume` opens its list when the turn ends, and the prompt
/// queued behind it waits for the list to close instead of going to the
/// conversation the user is about to leave.
#[tokio::test]
async fn a_prompt_queued_behind_a_list_waits_until_the_list_closes() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let shell =
        serde_json::json!({"command": "touch started; while [ ! -e go ]; do sleep 0.05; done"});
    let mock = MockModel::start(vec![
        MockReply::text("an earlier session"),
        common::tool_turn(&[("shell", shell)]),
        MockReply::text("first done"),
        MockReply::text("after the list"),
    ])
    .await;
    // A session of this workspace for `/resume` to list.
    let earlier = e
        .run(common::Api::Anthropic, &mock, "k", &["earlier"])
        .await;
    assert!(earlier.status.success(), "{}", common::stderr(&earlier));
    let mut tui = Tui::start(&e, &mock, "--yes");
    tui.wait_written(READY).await;
    tui.type_keys(b"first\r");
    wait_for_file(&e.ws.join("started")).await;
    tui.type_keys(b"/resume\r");
    tui.type_keys(b"later\r");
    tui.wait_for("  › later").await;
    std::fs::write(e.ws.join("go"), "").unwrap();
    tui.wait_answered("first done").await;
    tui.wait_for("first").await;
    tui.terminal
        .wait_until("the list of sessions", |s| {
            common::tui::cells(s).contains("Esc closes")
        })
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        mock.requests().len(),
        3,
        "nothing sent while the list is open"
    );
    tui.type_keys(b"\x1b");
    tui.wait_answered("after the list").await;
    assert_eq!(prompt_in(&mock, 3), "later");
    tui.quit().await;
}

/// Ctrl-G writes the prompt in `$VISUAL`: what the file holds after is
/// the prompt; an editor that fails says so and the prompt stays.
#[tokio::test]
async fn ctrl_g_edits_the_prompt_in_the_users_editor() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    let editor = e.ws.join("..").join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\ngrep -q fail \"$1\" && exit 3\nprintf ' and more from the editor\\n' >> \"$1\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&editor)
        .status()
        .unwrap();
    e.extra_env
        .push(("VISUAL".into(), editor.display().to_string()));
    let mock = MockModel::start(vec![MockReply::text("got it")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"fail\x07");
    tui.wait_for("failed (exit status: 3)").await;
    tui.wait_for("› fail").await;
    tui.type_keys(b"\x15draft\x07");
    tui.wait_for("› draft and more from the editor").await;
    tui.type_keys(b"\r");
    tui.wait_answered("got it").await;
    tui.quit().await;
    assert_eq!(prompt_in(&mock, 0), "draft and more from the editor");
}

const BEL: char = '\u{7}';

/// By default a bell rings when a call waits for approval, and when a
/// turn ends while the terminal is out of focus (as its focus reports
/// say), not while it is in focus.
#[tokio::test]
async fn a_bell_rings_when_the_screen_needs_the_user() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write("a.txt"))]),
        MockReply::text("first answer"),
        MockReply::text("second answer"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    // Focus reports are asked for with the screen's other modes.
    tui.wait_written("\u{1b}[?1004h").await;
    tui.type_keys(b"write it\r");
    tui.wait_for("wants to run `fs_write`").await;
    tui.terminal
        .wait_until("a bell for the approval", |s| s.contains(BEL))
        .await;
    tui.type_keys(b"y");
    tui.wait_answered("first answer").await;
    tui.type_keys(b"x");
    tui.wait_for("› x").await;
    let screen = tui.terminal.screen();
    assert_eq!(
        screen.matches(BEL).count(),
        1,
        "in focus, a turn's end rings nothing"
    );
    // Focus out: the next turn's end rings.
    tui.type_keys(b"\x1b[O\x15again\r");
    tui.wait_answered("second answer").await;
    tui.terminal
        .wait_until("a bell for the turn's end", |s| s.matches(BEL).count() == 2)
        .await;
    let ended = tui.quit().await;
    assert!(
        ended.screen.contains("\u{1b}[?1004l"),
        "focus reports off again"
    );
}

/// `[tui] notify = "osc9"` sends a desktop notification that says why;
/// a misspelt key in `[tui]` is refused naming the right one.
#[tokio::test]
async fn osc9_notifications_say_why_and_tui_keys_are_checked() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_config = "[tui]\nnotify = \"osc9\"\n".into();
    let mock = MockModel::start(vec![
        common::tool_turn(&[("ask_user", serde_json::json!({"question": "which one?"}))]),
        MockReply::text("fine"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"ask me\r");
    tui.wait_written("\u{1b}]9;mecha: the model asks you something\u{7}")
        .await;
    tui.type_keys(b"this one\r");
    tui.wait_answered("fine").await;
    tui.quit().await;
    std::fs::write(e.home.join("config.toml"), "[tui]\nnotfy = \"bel\"\n").unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .arg("-C")
        .arg(&e.ws)
        .arg("config")
        .env("MECHA_HOME", &e.home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown field `notfy`, expected `notify`"),
        "{err}"
    );
}
