//! `mecha tui` at a real terminal (a pseudo-terminal with mecha as its
//! session leader): a prompt typed and answered on the screen, a call approved
//! in the modal, the model's `ask_user` question answered in its modal,
//! Ctrl-C twice to quit, and the terminal restored after.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::pty::{Ended, Terminal};
use rustix::termios::LocalModes;

use mecha_testkit::{MockModel, MockReply};

/// What the TUI writes once the terminal is in its modes (the alternate
/// screen, then bracketed paste): keys typed before it could be lost.
const READY: &str = "\u{1b}[?1049h\u{1b}[?2004h";
/// What it writes last: bracketed paste off, the shell's screen back, the
/// cursor shown.
const RESTORED: &str = "\u{1b}[?2004l\u{1b}[?1049l\u{1b}[?25h";

const CTRL_C: &[u8] = b"\x03";

/// A TUI under a pseudo-terminal of 100x30.
struct Tui {
    terminal: Terminal,
}

impl Tui {
    fn start(e: &common::Env, mock: &MockModel, args: &str) -> Self {
        std::fs::write(
            e.home.join("config.toml"),
            format!("[provider]\nkind = \"anthropic\"\n{}", e.extra_config),
        )
        .unwrap();
        let mut mecha = Command::new(assert_cmd::cargo::cargo_bin("mecha"));
        mecha
            .arg("-C")
            .arg(&e.ws)
            .args(args.split_whitespace())
            .env("MECHA_HOME", &e.home)
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", mock.anthropic_url())
            .env("TERM", "xterm")
            .env_remove("OPENAI_API_KEY");
        Self {
            terminal: Terminal::start(&mecha, ROWS as u16, COLS as u16),
        }
    }

    fn pid(&self) -> u32 {
        self.terminal.pid()
    }

    /// Waits until what was written holds `bytes`.
    async fn wait_written(&self, bytes: &str) {
        let what = format!("{bytes:?} written");
        self.terminal
            .wait_until(&what, |screen| screen.contains(bytes))
            .await;
    }

    /// Waits until the screen, as a terminal would show it, holds `text`
    /// on one row (async: the mock model answers on this same runtime
    /// meanwhile).
    async fn wait_for(&self, text: &str) {
        let what = format!("{text:?} shown");
        self.terminal
            .wait_until(&what, |screen| cells(screen).contains(text))
            .await;
    }

    /// Resizes the terminal and waits until the screen is drawn again at
    /// its new size (ratatui clears it first).
    async fn resize_and_wait(&self, rows: u16, cols: u16) {
        let before = self.terminal.screen().len();
        self.terminal.resize(rows, cols);
        self.terminal
            .wait_until("a frame at the new size", |written| {
                written
                    .get(before..)
                    .is_some_and(|after| after.contains("\u{1b}[2J"))
            })
            .await;
    }

    /// Waits until `text` is shown as a finished answer: while one streams
    /// an ellipsis follows it, and the turn is over once that goes.
    async fn wait_answered(&self, text: &str) {
        let what = format!("{text:?} answered");
        self.terminal
            .wait_until(&what, |screen| {
                cells(screen)
                    .split_once(text)
                    .is_some_and(|(_, after)| !after.contains('…'))
            })
            .await;
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.terminal.type_keys(keys);
    }

    /// Waits for mecha to end.
    async fn end(self) -> Ended {
        self.terminal.end().await
    }

    /// Ctrl-C twice at an empty prompt: mecha ends well and the terminal
    /// is as it was.
    async fn quit(mut self) -> Ended {
        self.type_keys(CTRL_C);
        self.wait_for("again to quit").await;
        self.type_keys(CTRL_C);
        let ended = self.end().await;
        assert!(
            ended.status.success(),
            "{:?}: {}",
            ended.status,
            ended.screen
        );
        assert_restored(&ended);
        ended
    }
}

const ROWS: usize = 30;
const COLS: usize = 100;

/// What a terminal shows after `written`, row by row: ratatui writes only
/// the cells that changed, moving the cursor (`CSI row;col H`) over the
/// rest, so the bytes alone do not hold the screen's words. Styles and
/// modes are ignored.
fn cells(written: &str) -> String {
    let mut grid = vec![vec![' '; COLS]; ROWS];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = written.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut params = String::new();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        last = c;
                        break;
                    }
                    params.push(c);
                }
                let numbers: Vec<usize> =
                    params.split(';').map(|n| n.parse().unwrap_or(1)).collect();
                match last {
                    'H' => {
                        row = numbers[0].max(1) - 1;
                        col = numbers.get(1).copied().unwrap_or(1).max(1) - 1;
                    }
                    'J' if params == "2" => grid = vec![vec![' '; COLS]; ROWS],
                    _ => {}
                }
            }
            '\r' => col = 0,
            '\n' => row += 1,
            c if c.is_control() => {}
            c => {
                if row < ROWS && col < COLS {
                    grid[row][col] = c;
                }
                col += 1;
            }
        }
    }
    grid.iter()
        .map(|r| r.iter().collect::<String>().trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks that mecha's last output restored the terminal: after its modes'
/// sequences it wrote only plain text (the conversation, left in the
/// scrollback), and the line discipline is canonical with echo again.
fn assert_restored(ended: &Ended) {
    let after = left_in_scrollback(ended);
    assert!(
        !after.contains('\u{1b}'),
        "an escape after the terminal was restored: {after:?}"
    );
    let modes = ended.modes.local_modes;
    assert!(modes.contains(LocalModes::ICANON), "raw mode was left on");
    assert!(modes.contains(LocalModes::ECHO), "echo was left off");
}

/// What mecha wrote after it restored the terminal.
fn left_in_scrollback(ended: &Ended) -> &str {
    let Some(at) = ended.screen.rfind(RESTORED) else {
        panic!("the terminal was not restored: {:?}", ended.screen);
    };
    &ended.screen[at + RESTORED.len()..]
}

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
    tui.wait_for("mecha asks you").await;
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

/// The live processes whose parent is `pid` (a zombie has ended, and
/// waits only to be reaped).
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's name in parentheses: state, then the parent.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let parent = fields.next().and_then(|p| p.parse().ok());
        if parent == Some(pid) && state != Some("Z") {
            found.extend(
                entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok()),
            );
        }
    }
    found
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
