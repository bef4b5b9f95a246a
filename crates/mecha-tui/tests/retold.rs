//! A resumed session's past, told again from its journal, drawn as the
//! live screen drew it: the prompt, the call's line with its result, the
//! answer, and the context its last request reported.

#![allow(clippy::unwrap_used)]

use mecha_core::{Block, Message, Record, Role, ToolCall, Usage};
use mecha_tui::queue::PromptQueue;
use mecha_tui::{Editor, RunInfo, Theme, Transcript, View, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

fn message(role: Role, content: Vec<Block>) -> Record {
    Record::Message {
        message: Message { role, content },
        external: Vec::new(),
    }
}

#[test]
fn a_resumed_session() {
    let records = [
        message(
            Role::User,
            vec![Block::Text {
                text: "what is in src".into(),
            }],
        ),
        message(
            Role::Assistant,
            vec![Block::ToolUse(ToolCall {
                id: "c1".into(),
                name: "fs_list".into(),
                input: json!({"path": "src"}),
                input_error: None,
            })],
        ),
        message(
            Role::User,
            vec![Block::ToolResult {
                tool_use_id: "c1".into(),
                content: "lib.rs\nmain.rs\n".into(),
                is_error: false,
                images: Vec::new(),
            }],
        ),
        message(
            Role::Assistant,
            vec![Block::Text {
                text: "Two files: `lib.rs` and `main.rs`.".into(),
            }],
        ),
        Record::Turn {
            turn: 2,
            usage: Usage {
                input_tokens: 12_000,
                output_tokens: 300,
                ..Usage::default()
            },
        },
    ];
    let mut transcript = Transcript::new();
    transcript.retold(mecha_agent::retell(&records));
    let info = RunInfo {
        model: "claude-sonnet-4-5".into(),
        window: Some(200_000),
        session: "20261201-a1b2".into(),
        sandbox: "none".into(),
        servers: String::new(),
        strict_sends: false,
        mode: None,
    };
    let editor = Editor::new();
    let mut terminal = Terminal::new(TestBackend::new(70, 8)).unwrap();
    terminal
        .draw(|frame| {
            draw(
                frame,
                View {
                    transcript: &transcript,
                    editor: &editor,
                    queued: &PromptQueue::default(),
                    info: &info,
                    modal: None,
                    picker: None,
                    scroll_back: 0,
                    theme: Theme::new(false),
                    hint: None,
                },
            );
        })
        .unwrap();
    insta::assert_snapshot!(terminal.backend());
}
