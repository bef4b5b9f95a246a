//! The plain-text transcript of a session, record by record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assistant, call, result, tmp, turn, user, write_all};
use mecha_core::{Block, Message, Record, Role, Taint};
use mecha_session::transcript;
use serde_json::json;

#[test]
fn every_record_is_shown_in_order() {
    let t = tmp();
    let writer = t.create();
    write_all(
        &writer,
        &[
            user("Fix the build\nit fails on main"),
            Record::Message {
                message: Message {
                    role: Role::Assistant,
                    content: vec![Block::Thinking {
                        thinking: "look first".into(),
                        signature: None,
                    }],
                },
                external: vec![],
            },
            call("t1", "shell", json!({"command": "make"})),
            Record::Message {
                message: Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        tool_use_id: "t1".into(),
                        content: "make: *** [all] Error 2".into(),
                        is_error: true,
                        images: vec![],
                    }],
                },
                external: vec![],
            },
            call("t2", "http_fetch", json!({"url": "https://example.com"})),
            result("t2", "a page", true),
            turn(1),
            Record::Taint {
                taint: Taint {
                    private_data: true,
                    untrusted_input: true,
                },
            },
            Record::Surface {
                by: vec!["deploy".into()],
                tools: vec!["shell".into(), "skill".into()],
            },
            Record::ToolState {
                tool: "todo".into(),
                state: json!(["a"]),
            },
            assistant("a refused answer"),
            Record::Rewind { keep: 6 },
            Record::Compaction {
                messages: vec![
                    Message::user_text("Fix the build"),
                    Message::user_text("Summary: make fails"),
                ],
                tokens_before: 12_000,
                tokens_after: 900,
            },
            assistant("Fixed."),
            turn(2),
        ],
    );
    let loaded = t.store.load(writer.id()).unwrap();
    let text = transcript(&loaded);
    let expected = format!(
        "session {id} (mecha {v}, `run`, model test-model, started {started})\n\
         workspace: {ws}\n\
         \n\
         user: Fix the build\n    it fails on main\n\
         --- turn 1 (input 10, output 2 tokens) ---\n\
         thinking: look first\n\
         assistant calls shell: {{\"command\":\"make\"}}\n\
         result of shell (call t1, error): make: *** [all] Error 2\n\
         assistant calls http_fetch: {{\"url\":\"https://example.com\"}}\n\
         result of http_fetch (call t2, external: came from outside the machine): a page\n\
         --- taint: private data, untrusted input ---\n\
         --- tools narrowed by deploy to: shell, skill ---\n\
         --- todo saved its state: [\"a\"] ---\n\
         --- turn 2 (input 10, output 2 tokens) ---\n\
         assistant: a refused answer\n\
         --- rewound to the first 6 messages ---\n\
         --- compacted (12000 -> 900 tokens); the history is now: ---\n\
         \x20 user: Fix the build\n\
         \x20 user: Summary: make fails\n\
         --- end of the compacted history ---\n\
         assistant: Fixed.\n",
        id = loaded.header.id,
        v = loaded.header.mecha,
        started = loaded.header.started,
        ws = t.ws.display(),
    );
    assert_eq!(text, expected);
}
