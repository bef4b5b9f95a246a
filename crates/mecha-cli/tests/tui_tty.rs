//! `mecha tui` at a real terminal (a pseudo-terminal made by util-linux
//! `script`): a prompt typed and answered on the screen, a call approved
//! in the modal, Ctrl-C twice to quit, and the terminal restored after.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mecha_testkit::{MockModel, MockReply};

/// What the TUI writes once the terminal is in its modes (the alternate
/// screen, then bracketed paste): keys typed before it could be lost.
const READY: &str = "\u{1b}[?1049h\u{1b}[?2004h";
/// What it writes last: bracketed paste off, the shell's screen back, the
/// cursor shown.
const RESTORED: &str = "\u{1b}[?2004l\u{1b}[?1049l\u{1b}[?25h";
/// Printed by the shell after mecha ends, with the terminal's line
/// discipline: `icanon` is back on only if raw mode was left.
const AFTER: &str = "AFTER:";

const CTRL_C: &[u8] = b"\x03";

/// A TUI under a pseudo-terminal of 100x30.
struct Tui {
    child: Child,
    keyboard: ChildStdin,
    screen: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Tui {
    fn start(e: &common::Env, mock: &MockModel, args: &str) -> Self {
        std::fs::write(
            e.home.join("config.toml"),
            format!("[provider]\nkind = \"anthropic\"\n{}", e.extra_config),
        )
        .unwrap();
        let command = format!(
            "stty rows 30 cols 100; {} -C {} {args}; code=$?; echo {AFTER}; stty -a; exit $code",
            assert_cmd::cargo::cargo_bin("mecha").display(),
            e.ws.display()
        );
        let mut child = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("MECHA_HOME", &e.home)
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", mock.anthropic_url())
            .env("TERM", "xterm")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let keyboard = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self {
            child,
            keyboard,
            screen,
            reader: Some(reader),
        }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits until what was written holds `bytes`.
    async fn wait_written(&self, bytes: &str) {
        let start = Instant::now();
        while !self.screen().contains(bytes) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "never written: {bytes:?} in {:?}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the screen, as a terminal would show it, holds `text`
    /// on one row (async: the mock model answers on this same runtime
    /// meanwhile).
    async fn wait_for(&self, text: &str) {
        self.wait_until(text, |shown| shown.contains(text)).await;
    }

    /// Waits until `text` is shown as a finished answer: while one streams
    /// an ellipsis follows it, and the turn is over once that goes.
    async fn wait_answered(&self, text: &str) {
        self.wait_until(text, |shown| {
            shown
                .split_once(text)
                .is_some_and(|(_, after)| !after.contains('…'))
        })
        .await;
    }

    async fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        while !done(&cells(&self.screen())) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "never shown: {what:?} in\n{}",
                cells(&self.screen())
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.keyboard.write_all(keys).unwrap();
        self.keyboard.flush().unwrap();
    }

    /// Waits for mecha and the shell to end; the exit status and
    /// everything written.
    async fn end(mut self) -> (ExitStatus, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "mecha never ended:\n{}",
                cells(&self.screen())
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let screen = Arc::clone(&self.screen);
        let reader = self.reader.take();
        tokio::task::spawn_blocking(move || {
            // script has exited and closed its output: the reader is done.
            if let Some(reader) = reader {
                reader.join().unwrap();
            }
            let screen = String::from_utf8_lossy(&screen.lock().unwrap()).into_owned();
            (status, screen)
        })
        .await
        .unwrap()
    }
}

impl Drop for Tui {
    /// A failed test leaves nothing running: with script gone the
    /// pseudo-terminal closes and mecha gets SIGHUP.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

/// Checks that mecha's last output restored the terminal: its modes'
/// sequences are the last thing before the shell's line, and the line
/// discipline is canonical with echo again.
fn assert_restored(screen: &str) {
    let (mecha, after) = screen.split_once(AFTER).expect("the shell went on");
    assert!(
        mecha.trim_end_matches(['\r', '\n']).ends_with(RESTORED),
        "the terminal was not restored last: {:?}",
        mecha.chars().rev().take(200).collect::<String>()
    );
    let words: Vec<&str> = after.split_whitespace().collect();
    assert!(words.contains(&"icanon"), "raw mode was left on: {after}");
    assert!(words.contains(&"echo"), "echo was left off: {after}");
}

#[tokio::test]
async fn a_prompt_is_answered_on_the_screen_and_ctrl_c_twice_quits() {
    if !common::have_script() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("the answer is forty-two")]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"what is it\r");
    tui.wait_answered("forty-two").await;
    tui.type_keys(CTRL_C);
    tui.wait_for("again to quit").await;
    tui.type_keys(CTRL_C);
    let (status, screen) = tui.end().await;
    assert!(status.success(), "{status:?}: {screen}");
    assert_restored(&screen);
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
    if !common::have_script() {
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
    tui.type_keys(CTRL_C);
    tui.type_keys(CTRL_C);
    let (status, screen) = tui.end().await;
    assert!(status.success(), "{status:?}: {screen}");
    assert_restored(&screen);
    assert_eq!(mock.requests().len(), 2);
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

/// The `mecha` under `script`'s shell.
fn mecha_pid(script: u32) -> u32 {
    let mut todo = children(script);
    while let Some(pid) = todo.pop() {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "mecha" {
            return pid;
        }
        todo.extend(children(pid));
    }
    panic!("no mecha under script {script}");
}

#[tokio::test]
async fn sigterm_restores_the_terminal() {
    if !common::have_script() {
        return;
    }
    let e = common::env();
    let mock = MockModel::start(vec![]).await;
    let mut tui = Tui::start(&e, &mock, "tui");
    tui.wait_written(READY).await;
    tui.type_keys(b"half a prompt");
    tui.wait_for("half a prompt").await;
    let pid = mecha_pid(tui.child.id());
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let (status, screen) = tui.end().await;
    assert_eq!(status.code(), Some(130), "{screen}");
    assert_restored(&screen);
}

#[tokio::test]
async fn ctrl_c_stops_a_running_sleep_and_the_conversation_goes_on() {
    if !common::have_script() {
        return;
    }
    let e = common::env();
    let marker = e.ws.join("started");
    let command = format!("touch {}; sleep 1000", marker.display());
    let mock = MockModel::start(vec![
        common::tool_turn(&[("shell", serde_json::json!({ "command": command }))]),
        MockReply::text("after the interrupt"),
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
    let mecha = mecha_pid(tui.child.id());
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
    tui.type_keys(CTRL_C);
    tui.wait_for("again to quit").await;
    tui.type_keys(CTRL_C);
    let (status, screen) = tui.end().await;
    assert!(status.success(), "{status:?}: {screen}");
    assert_restored(&screen);
    // The interrupted exchange was forgotten: the next request holds the
    // new prompt and no call without a result.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body["messages"].to_string();
    assert!(sent.contains("go on"), "{sent}");
    assert!(!sent.contains("sleep 1000"), "{sent}");
}
