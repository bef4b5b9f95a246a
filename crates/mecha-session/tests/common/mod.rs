//! Sessions written through the real writer, in a temporary store.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use mecha_core::{Block, Journal, Message, Record, Role, ToolCall, Usage};
use mecha_session::{NewSession, Store, Writer};
use serde_json::{Value, json};

pub struct Tmp {
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub ws: PathBuf,
}

pub fn tmp() -> Tmp {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let store = Store::new(dir.path().join("home").join("sessions"));
    Tmp { dir, store, ws }
}

impl Tmp {
    pub fn create(&self) -> Writer {
        self.create_in(&self.ws.clone())
    }

    pub fn create_in(&self, ws: &Path) -> Writer {
        self.store
            .create(NewSession {
                workspace: ws,
                model: "test-model",
                command: "run",
                parent: None,
            })
            .unwrap()
    }
}

pub fn write_all(writer: &Writer, records: &[Record]) {
    for r in records {
        writer.append(r);
    }
    writer.sync();
}

pub fn user(text: &str) -> Record {
    Record::Message {
        message: Message::user_text(text),
        external: vec![],
    }
}

pub fn assistant(text: &str) -> Record {
    Record::Message {
        message: Message {
            role: Role::Assistant,
            content: vec![Block::Text { text: text.into() }],
        },
        external: vec![],
    }
}

pub fn call(id: &str, name: &str, input: Value) -> Record {
    Record::Message {
        message: Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse(ToolCall {
                id: id.into(),
                name: name.into(),
                input,
                input_error: None,
            })],
        },
        external: vec![],
    }
}

pub fn result(id: &str, content: &str, external: bool) -> Record {
    Record::Message {
        message: Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: content.into(),
                is_error: false,
                images: vec![],
            }],
        },
        external: if external { vec![id.into()] } else { vec![] },
    }
}

pub fn turn(n: u32) -> Record {
    Record::Turn {
        turn: n,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 2,
            ..Usage::default()
        },
    }
}

pub fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn fetch_input() -> Value {
    json!({"url": "https://example.com/page"})
}
