//! The approval box on a narrow terminal: every line wrapped at its
//! border (never cut), continuation rows indented, and a yes taken only
//! once every character of the call has been on screen.

#![allow(clippy::unwrap_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mecha_core::{FreshReason, Offer};
use mecha_tui::queue::PromptQueue;
use mecha_tui::{Answer, Approval, Editor, Modal, RunInfo, Theme, Transcript, View, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

fn frame(width: u16, height: u16, modal: &mut Approval) -> Terminal<TestBackend> {
    let info = RunInfo {
        model: "m".into(),
        window: None,
        session: "s".into(),
        sandbox: "none".into(),
        servers: String::new(),
        strict_sends: false,
        mode: None,
    };
    let transcript = Transcript::new();
    let editor = Editor::new();
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| {
            draw(
                f,
                View {
                    transcript: &transcript,
                    editor: &editor,
                    queued: &PromptQueue::default(),
                    info: &info,
                    modal: Some(Modal::Approval(modal)),
                    picker: None,
                    scroll_back: 0,
                    theme: Theme::new(false),
                    hint: None,
                },
            );
        })
        .unwrap();
    terminal
}

/// The screen's text, row by row.
fn text(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// The one-call trifecta's fresh decision on a command whose tail hides
/// behind 400 spaces: the tail is drawn on rows of its own, and `y` is
/// refused until the frame that drew it.
#[test]
fn a_tail_behind_spaces_is_shown_before_yes_is_taken() {
    let command = format!("echo ok{}; curl http://127.0.0.1:1/x", " ".repeat(400));
    let body = format!("  $ {command}\n");
    let offer = Offer::for_call(
        "shell",
        &json!({ "command": command }),
        Some(FreshReason::OneCallTrifecta),
    );
    let mut modal = Approval::new(None, "shell", &body, offer);
    // At 62 columns the tail lands whole on one row, so one frame shows
    // it as one piece of text.
    let first = frame(62, 14, &mut modal);
    insta::assert_snapshot!(first.backend());
    let (mut tail, mut refused) = (false, 0);
    for _ in 0..40 {
        let shown = text(&frame(62, 14, &mut modal));
        tail |= shown.contains("; curl http://127.0.0.1:1/x");
        match modal.key(key(KeyCode::Char('y'))) {
            Some(answer) => {
                assert_eq!(answer, Answer::Yes);
                assert!(tail, "a yes before the tail was on screen");
                assert!(refused > 0, "the first frame did not show it all");
                return;
            }
            None => refused += 1,
        }
        modal.key(key(KeyCode::Down));
    }
    panic!("yes was never taken");
}

/// A diff's long line wraps under the box's indentation, and so does an
/// MCP call's JSON.
#[test]
fn long_lines_of_a_diff_and_of_json_wrap_indented() {
    let diff = format!(
        "--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-make\n+make && {}rm -rf ~\n",
        " ".repeat(30)
    );
    let offer = Offer::for_call("fs_write", &json!({"path": "run.sh"}), None);
    let mut modal = Approval::new(None, "fs_write", &diff, offer);
    insta::assert_snapshot!("diff", frame(36, 14, &mut modal).backend());
    let input = json!({"query": format!("select * from t;{}drop table t;", " ".repeat(40))});
    let json = serde_json::to_string_pretty(&input).unwrap();
    let offer = Offer::for_call("db__query", &input, None);
    let mut modal = Approval::new(None, "db__query", &json, offer);
    insta::assert_snapshot!("json", frame(36, 14, &mut modal).backend());
}
