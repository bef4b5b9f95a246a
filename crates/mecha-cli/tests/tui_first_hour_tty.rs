//! What a new user meets first in `mecha tui`, at a real terminal: the
//! first screen says what to type, leaving says how to come back (and a
//! double Ctrl-C is an interrupt's 130, as in chat), the status line at 60
//! columns, boxes that wrap inside their padding, and a running call that
//! says for how long it has run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tui::{READY, Tui, cells, left_in_scrollback};
use mecha_testkit::{MockModel, MockReply};

/// The rows of the screen as a terminal shows it now.
fn rows(tui: &Tui) -> Vec<String> {
    cells(&tui.terminal.screen())
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_first_screen_says_what_to_type_and_leaving_says_how_to_resume() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("hello there")]).await;
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    tui.wait_for("mecha: type a task and press Enter").await;
    tui.wait_for("/help lists the commands and keys").await;
    tui.type_keys(b"hi\r");
    tui.wait_answered("hello there").await;
    // `quit` checks the exit status is 130.
    let ended = tui.quit().await;
    let left = left_in_scrollback(&ended);
    let id = common::only_session(&e);
    assert!(
        left.contains(&format!(
            "mecha: to go on with this session: `mecha --resume {id}` (or `mecha --continue`"
        )),
        "{left:?}"
    );
}

#[tokio::test]
async fn at_60_columns_the_status_line_keeps_the_interlock_and_boxes_wrap_inside_padding() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_config = "context_window = 1000000\n".into();
    let question = "Which of the two configuration files should I change, the one in the \
                    workspace or the one in your home directory?";
    let mock = MockModel::start(vec![
        common::tool_turn(&[("ask_user", serde_json::json!({ "question": question }))]),
        MockReply::text("the workspace one"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.wait_for("0/1M tokens").await;
    tui.resize_and_wait(30, 60).await;
    tui.wait_for("0/1M tokens · interlock clear").await;
    let status = rows(&tui)
        .into_iter()
        .rfind(|r| r.contains("tokens"))
        .unwrap();
    assert_eq!(
        status.trim_end(),
        "claude-sonnet-4-5 · 0/1M tokens · interlock clear",
        "no session or sandbox at 60 columns, and no leading separator"
    );
    tui.type_keys(b"change it\r");
    tui.wait_for("┌ the model asks you").await;
    // The question wraps at a cell inside the border; no row is cut.
    tui.wait_for("│ Which of the two configuration files should I change,")
        .await;
    tui.wait_for("│ the one in the workspace or the one in your home")
        .await;
    tui.type_keys(b"the workspace\r");
    tui.wait_answered("the workspace one").await;
    tui.quit().await;
}

#[tokio::test]
async fn a_running_call_says_how_long_it_has_run() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let shell = serde_json::json!({"command": "while [ ! -e go ]; do sleep 0.05; done"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("shell", shell)]),
        MockReply::text("it went"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "--yes");
    tui.wait_written(READY).await;
    tui.type_keys(b"wait for it\r");
    tui.wait_for("running 2s").await;
    std::fs::write(e.ws.join("go"), "").unwrap();
    tui.wait_answered("it went").await;
    tui.quit().await;
}

/// An approval box at 60 columns: the choice line wraps under its first
/// choice's text.
#[tokio::test]
async fn a_wrapped_choice_line_keeps_its_indentation() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let write = serde_json::json!({"path": "a.txt", "content": "one\n"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("written"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.resize_and_wait(30, 60).await;
    tui.type_keys(b"write it\r");
    tui.wait_for("│  y  yes    n  no    a  always allow every `fs_write`")
        .await;
    let shown = rows(&tui);
    let at = shown
        .iter()
        .position(|r| r.contains("always allow every"))
        .unwrap();
    assert!(
        shown[at + 1].starts_with("│     call in this session"),
        "{shown:#?}"
    );
    tui.type_keys(b"y");
    tui.wait_answered("written").await;
    tui.quit().await;
}

/// The configuration's warnings are on the screen (not written behind it),
/// and a new conversation in the same screen (`/clear`) does not say them
/// again.
#[tokio::test]
async fn warnings_are_shown_on_the_screen_once_for_all_its_conversations() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    e.extra_config = "\n[tools]\ndisabled = [\"htp_fetch\"]\n".into();
    std::fs::write(e.ws.join("mecha.toml"), "[provider]\nmodel = \"x\"\n").unwrap();
    let mock = MockModel::start(vec![MockReply::text("first"), MockReply::text("second")]).await;
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    let typo = "[tools] names `htp_fetch`, which is no tool";
    let project = "[provider] model = \"x\" has no effect";
    tui.wait_for(typo).await;
    tui.wait_for(project).await;
    tui.type_keys(b"hi\r");
    tui.wait_answered("first").await;
    tui.type_keys(b"/clear\r");
    tui.wait_for("a new session").await;
    tui.type_keys(b"again\r");
    tui.wait_answered("second").await;
    let screen = cells(&tui.terminal.screen());
    for warning in [typo, project] {
        assert_eq!(screen.matches(warning).count(), 1, "{warning}:\n{screen}");
    }
    tui.quit().await;
}

#[tokio::test]
async fn the_box_and_the_status_line_say_how_many_hosts_a_confined_call_reaches() {
    if !common::have_setsid() || !common::have("bwrap", "this test", "bubblewrap") {
        return;
    }
    let mut e = common::env();
    e.extra_config =
        "[sandbox]\nkind = \"bwrap\"\nallow_hosts = [\"crates.example\", \"*.npm.example\"]\n"
            .into();
    let mock = MockModel::start(vec![
        common::tool_turn(&[("shell", serde_json::json!({ "command": "echo built" }))]),
        MockReply::text("built it"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.wait_for("sandbox bwrap (network: 2 hosts)").await;
    tui.type_keys(b"build\r");
    tui.wait_for("mecha wants to run `shell`").await;
    tui.wait_for("confined: bwrap, network: 2 hosts").await;
    tui.type_keys(b"y");
    tui.wait_answered("built it").await;
    tui.quit().await;
}
