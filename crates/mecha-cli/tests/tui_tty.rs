//! `mecha tui` at a real terminal (a pseudo-terminal with mecha as its
//! session leader): a prompt typed and answered on the screen, a call approved
//! in the modal, the model's `ask_user` question answered in its modal,
//! Ctrl-C twice to quit, and the terminal restored after.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::tui::{CTRL_C, READY, Tui, assert_restored, children, left_in_scrollback};

use mecha_testkit::{MockModel, MockReply};

#[tokio::test]
async fn a_prompt_is_answered_on_the_screen_and_ctrl_c_twice_quits() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("the answer is forty-two")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"what is it\r");
    tui.wait_answered("forty-two").await;
    let ended = tui.quit().await;
    // The conversation is left on the shell's screen, in its scrollback.
    let left = left_in_scrollback(&ended);
    assert!(
        left.contains("› what is it\r\n\r\nthe answer is forty-two"),
        "{left:?}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0].body["messages"].as_array().unwrap();
    assert!(
        messages.last().unwrap().to_string().contains("what is it"),
        "{messages:?}"
    );
}

#[tokio::test]
async fn mecha_alone_at_a_terminal_opens_the_tui_and_a_call_is_approved_in_the_modal() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let write = serde_json::json!({"path": "a.txt", "content": "one\n"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("written it"),
    ])
    .await;
    // No subcommand: the TUI, not the help.
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    tui.type_keys(b"write it\r");
    tui.wait_for("wants to run `fs_write`").await;
    assert!(!e.ws.join("a.txt").exists(), "written before the yes");
    tui.type_keys(b"y");
    tui.wait_answered("written it").await;
    assert_eq!(
        std::fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    tui.quit().await;
    assert_eq!(mock.requests().len(), 2);
}

/// A command padded with 400 spaces hides nothing: on a short screen the
/// box wraps it, says rows are left to see, refuses the first `y`, and
/// takes one only after the tail has been scrolled onto the screen.
#[tokio::test]
async fn a_tail_behind_400_spaces_is_on_screen_before_yes_is_taken() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let command = format!("echo ok{}; curl http://127.0.0.1:1/x", " ".repeat(400));
    let mock = MockModel::start(vec![
        common::tool_turn(&[("shell", serde_json::json!({ "command": command }))]),
        MockReply::text("ran it"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.wait_for("interlock clear").await;
    tui.resize_and_wait(8, 100).await;
    tui.type_keys(b"go\r");
    tui.wait_for("not on screen yet").await;
    let tail = "; curl http://127.0.0.1:1/x";
    assert!(
        !common::tui::cells(&tui.terminal.screen()).contains(tail),
        "the first frame already shows the tail"
    );
    // The `y` comes before the scrolling: had it been taken, the box would
    // be gone and the `j`s typed into the prompt.
    tui.type_keys(b"yjjjjjj");
    tui.wait_for(tail).await;
    assert_eq!(mock.requests().len(), 1, "ran before the tail was shown");
    tui.type_keys(b"y");
    tui.wait_answered("ran it").await;
    tui.quit().await;
    let result = mock.requests()[1].body["messages"].to_string();
    assert!(result.contains("ok"), "{result}");
}

/// The names of the tools offered in a request (Anthropic's shape).
fn offered(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_model_asks_in_a_modal_and_the_typed_answer_is_the_result() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![
        common::tool_turn(&[("ask_user", serde_json::json!({"question": "which colour?"}))]),
        MockReply::text("blue it is"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"paint it\r");
    // The modal's title: the call's own line shows the question too.
    tui.wait_for("the model asks you").await;
    tui.wait_for("which colour?").await;
    tui.type_keys(b"blue\r");
    tui.wait_answered("blue it is").await;
    tui.quit().await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        offered(&requests[0].body).contains(&"ask_user".to_owned()),
        "{:?}",
        offered(&requests[0].body)
    );
    assert_eq!(
        common::results_in(&mock, 1),
        [("blue".to_owned(), false)],
        "the answer is the call's result"
    );
}

#[tokio::test]
async fn sigterm_restores_the_terminal() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"half a prompt");
    tui.wait_for("half a prompt").await;
    let pid = tui.pid();
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let ended = tui.end().await;
    assert_eq!(ended.status.code(), Some(130), "{}", ended.screen);
    assert_restored(&ended);
}

#[tokio::test]
async fn ctrl_c_stops_a_running_sleep_and_the_conversation_goes_on() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let marker = e.ws.join("started");
    let command = format!("touch {}; sleep 1000", marker.display());
    let mock = MockModel::start(vec![
        common::tool_turn(&[("shell", serde_json::json!({ "command": command }))]),
        MockReply::text("after the interrupt"),
        MockReply::text("resumed"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"sleep\r");
    tui.wait_for("wants to run `shell`").await;
    tui.type_keys(b"y");
    let start = Instant::now();
    while !marker.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mecha = tui.pid();
    assert!(!children(mecha).is_empty(), "the shell call is running");
    tui.type_keys(CTRL_C);
    tui.wait_for("interrupted").await;
    // The call's process group was killed with the turn.
    let start = Instant::now();
    while !children(mecha).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "left running: {:?}",
            children(mecha)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tui.type_keys(b"go on\r");
    tui.wait_answered("after the interrupt").await;
    tui.quit().await;
    // The interrupted exchange was kept: the next request holds the call,
    // closed with a result that says the user stopped it, then the prompt.
    assert_eq!(mock.requests().len(), 2);
    common::assert_interrupt_kept(&mock, 1, "go on");
    // The stored session holds the same: resumed, it goes on from there.
    let out = e
        .run(
            common::Api::Anthropic,
            &mock,
            "k",
            &["--continue", "and now"],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    common::assert_interrupt_kept(&mock, 2, "and now");
}

#[tokio::test]
async fn a_resumed_session_shows_what_it_holds_before_anything_is_sent() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    std::fs::write(e.ws.join("notes.txt"), "a private note\n").unwrap();
    let read = serde_json::json!({"path": "notes.txt"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_read", read)]),
        MockReply::text("read it"),
    ])
    .await;
    let out = e
        .run(common::Api::Anthropic, &mock, "k", &["read the notes"])
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let tui = Tui::start(&e, &mock, "tui --continue");
    tui.wait_written(READY).await;
    tui.wait_for("private data held").await;
    tui.quit().await;
}

fn skill(home: &std::path::Path, name: &str, description: &str, body: &str) {
    let folder = home.join("skills").join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let text = format!("---\nname: {name}\ndescription: {description}\n---\n{body}");
    std::fs::write(folder.join("SKILL.md"), text).unwrap();
}

#[tokio::test]
async fn slash_commands_list_tools_pick_a_skill_and_switch_session_and_model() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    skill(
        &e.home,
        "alpha-letter",
        "Answer a letter.",
        "1. Check the deadline.\n",
    );
    skill(&e.home, "zeta-report", "Write the report.", "Summarise.\n");
    e.extra_config = "[skills]\ndisabled = [\"zeta-report\"]\n".to_owned();
    let mock = MockModel::start(vec![MockReply::text("hello"), MockReply::text("again")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"/tools\r");
    tui.wait_for("tools this run offers").await;
    tui.wait_for("reads private data").await;
    tui.type_keys(b"/skills\r");
    tui.wait_for("[withheld: [skills] disabled in").await;
    // The carried skill is first; Enter shows its body.
    tui.type_keys(b"\r");
    tui.wait_for("Check the deadline").await;
    tui.type_keys(b"/nope\r");
    tui.wait_for("/nope is not a command here").await;
    tui.type_keys(b"/sessions\r");
    tui.wait_for("/resume ID goes on with one").await;
    let first_session = std::fs::read_dir(e.home.join("sessions")).unwrap().count();
    tui.type_keys(b"/clear\r");
    tui.wait_for("a new session").await;
    tui.type_keys(b"hi\r");
    tui.wait_answered("hello").await;
    tui.type_keys(b"/model other-model\r");
    tui.wait_for("the model is other-model").await;
    tui.type_keys(b"more\r");
    tui.wait_answered("again").await;
    tui.quit().await;
    // Commands never reached the model; the prompts did, the second on the
    // new model with the first still in its history.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_ne!(requests[0].body["model"], "other-model");
    assert_eq!(requests[1].body["model"], "other-model");
    let history = requests[1].body["messages"].to_string();
    assert!(
        history.contains("hi") && history.contains("hello"),
        "{history}"
    );
    assert!(!history.contains("/tools"), "{history}");
    let sessions = std::fs::read_dir(e.home.join("sessions")).unwrap().count();
    assert!(sessions > first_session, "/clear made no new session");
}

/// The furthest row and column the cursor is sent to in `written`
/// (`CSI row;col H`), 1-based.
fn furthest_cell(written: &str) -> (usize, usize) {
    let mut furthest = (0, 0);
    for part in written.split("\u{1b}[").skip(1) {
        let Some(end) = part.find(|c: char| !(c.is_ascii_digit() || c == ';')) else {
            continue;
        };
        if !part[end..].starts_with('H') {
            continue;
        }
        let mut numbers = part[..end].split(';').map(|n| n.parse().unwrap_or(1));
        let row = numbers.next().unwrap_or(1);
        let col = numbers.next().unwrap_or(1);
        furthest = (furthest.0.max(row), furthest.1.max(col));
    }
    furthest
}

#[tokio::test]
async fn a_resized_narrow_terminal_is_drawn_within_its_new_size() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let long = "a long answer that will not fit on one narrow line, ".repeat(4);
    let mock = MockModel::start(vec![MockReply::text(long.clone())]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    // The first whole frame: the screen listens for keys and resizes by
    // then.
    tui.wait_for("interlock clear").await;
    let before = tui.terminal.screen().len();
    tui.resize_and_wait(8, 30).await;
    // Typed once the new size was drawn: crossterm drops the readiness of
    // input that arrives together with a resize, until the next key.
    tui.type_keys(b"go\r");
    let since_clear = |written: &str| -> Option<String> {
        let after = written.get(before..)?;
        Some(after[after.find("\u{1b}[2J")?..].to_owned())
    };
    tui.terminal
        .wait_until("the answer, wrapped at the new size", |written| {
            since_clear(written).is_some_and(|after| after.matches("narrow").count() >= 3)
        })
        .await;
    let after = since_clear(&tui.terminal.screen()).unwrap_or_default();
    let (row, col) = furthest_cell(&after);
    assert!(row <= 8 && col <= 30, "drawn at row {row}, column {col}");
    tui.resize_and_wait(30, 100).await;
    tui.quit().await;
}

/// Whether process `pid` is still running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.starts_with(" Z"))
    })
}

/// Waits a little for process `pid` to end: a killed process may take a
/// moment to be gone.
async fn ends(pid: u32) -> bool {
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > Duration::from_secs(5) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// The ids of the MCP server processes started so far, in order.
fn started(file: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn a_switch_keeps_the_mcp_servers_until_their_config_changes() {
    if !common::have_setsid() {
        return;
    }
    let mut e = common::env();
    let starts = e.home.join("starts");
    let server = format!(
        "[[mcp]]\nname = \"fx\"\ncommand = {:?}\nargs = [\"--starts\", {:?}]\n",
        mecha_testkit::fixture_mcp().display().to_string(),
        starts.display().to_string()
    );
    e.extra_config = server.clone();
    let mock = MockModel::start(vec![]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"/clear\r");
    tui.wait_for("a new session").await;
    tui.type_keys(b"/tools\r");
    tui.wait_for("fx__fail").await;
    let first = started(&starts);
    assert_eq!(first.len(), 1, "/clear started the server again");
    assert!(alive(first[0]));
    // Another timezone is another start: the old server goes.
    std::fs::write(
        e.home.join("config.toml"),
        format!("[provider]\nkind = \"anthropic\"\n[agent]\ntimezone = \"UTC\"\n{server}"),
    )
    .unwrap();
    tui.type_keys(b"/clear\r");
    tui.terminal
        .wait_until("a second start", |_| started(&starts).len() == 2)
        .await;
    let second = started(&starts)[1];
    assert!(ends(first[0]).await, "the replaced server was left running");
    // A config without servers stops the kept ones, mecha still running.
    std::fs::write(
        e.home.join("config.toml"),
        "[provider]\nkind = \"anthropic\"\n",
    )
    .unwrap();
    tui.type_keys(b"/clear\r");
    assert!(ends(second).await, "the server outlived its config");
    tui.quit().await;
}

/// As `claude "…"` and `codex "…"`: a prompt on the bare command line is
/// sent as the screen opens, and shown as the user's.
#[tokio::test]
async fn a_prompt_on_the_bare_command_line_is_sent_as_the_screen_opens() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("the test passes now")]).await;
    let tui = Tui::start_with(&e, &mock, &["fix the failing test"]);
    tui.wait_answered("the test passes now").await;
    let ended = tui.quit().await;
    let left = left_in_scrollback(&ended);
    assert!(left.contains("› fix the failing test"), "{left:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0].body["messages"].as_array().unwrap();
    assert!(
        messages[0].to_string().contains("fix the failing test"),
        "{messages:?}"
    );
}

/// The bare command takes the screen's options: `--yes` allows the write
/// without a box, and `--continue` goes on with the session it made.
#[tokio::test]
async fn the_bare_command_takes_yes_and_continue() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let write = serde_json::json!({"path": "a.txt", "content": "one\n"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("written it"),
        MockReply::text("still here"),
    ])
    .await;
    let tui = Tui::start_with(&e, &mock, &["--yes", "write it"]);
    tui.wait_answered("written it").await;
    assert_eq!(
        std::fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    tui.quit().await;
    let mut tui = Tui::start_with(&e, &mock, &["--continue"]);
    tui.wait_written(READY).await;
    tui.wait_for("resumed session").await;
    tui.type_keys(b"and now\r");
    tui.wait_answered("still here").await;
    tui.quit().await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let history = requests[2].body["messages"].to_string();
    assert!(history.contains("write it"), "not continued: {history}");
}

/// A path the jail refuses says why on its line, in a few words, without
/// Ctrl-O: not "a malformed call".
#[tokio::test]
async fn a_path_outside_the_workspace_says_so_on_its_line() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let write = serde_json::json!({"path": "../elsewhere.txt", "content": "x"});
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_write", write)]),
        MockReply::text("could not"),
    ])
    .await;
    let mut tui = Tui::start(&e, &mock, "--yes");
    tui.wait_written(READY).await;
    tui.type_keys(b"write it\r");
    tui.wait_answered("could not").await;
    tui.wait_for("refused: outside the workspace").await;
    let ended = tui.quit().await;
    assert!(
        !left_in_scrollback(&ended).contains("malformed"),
        "the line still blames the call's form"
    );
}

/// `/skills` with no skill says so in one line, with where one goes, and
/// the next line typed is a prompt again (no empty list swallows it).
#[tokio::test]
async fn skills_with_none_to_list_say_where_one_goes() {
    if !common::have_setsid() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("plain answer")]).await;
    let mut tui = Tui::start(&e, &mock, "");
    tui.wait_written(READY).await;
    tui.type_keys(b"/skills\r");
    tui.wait_for("no skills: a skill is a folder holding a SKILL.md")
        .await;
    tui.wait_for("skills (`mecha skills`").await;
    tui.type_keys(b"hello there\r");
    tui.wait_answered("plain answer").await;
    tui.quit().await;
    assert_eq!(mock.requests().len(), 1, "the line after /skills was lost");
}
