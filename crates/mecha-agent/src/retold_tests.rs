#![allow(clippy::unwrap_used)]

use mecha_core::{ToolCall, Usage};
use serde_json::json;

use super::*;

fn message(message: Message) -> Record {
    Record::Message {
        message,
        external: Vec::new(),
    }
}

fn said(text: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![Block::Text { text: text.into() }],
    }
}

fn calling(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            Block::Text {
                text: "looking".into(),
            },
            Block::ToolUse(ToolCall {
                id: id.into(),
                name: "shell".into(),
                input: json!({"command": "ls"}),
                input_error: None,
            }),
        ],
    }
}

fn result(id: &str, content: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![
            Block::ToolResult {
                tool_use_id: id.into(),
                content: content.into(),
                is_error: false,
                images: Vec::new(),
            },
            Block::Text {
                text: "[mecha: a note beside the results]".into(),
            },
        ],
    }
}

fn prompts(told: &[Retold]) -> Vec<&str> {
    told.iter()
        .filter_map(|t| match t {
            Retold::Prompt(p) => Some(p.as_str()),
            Retold::Event(_) | Retold::Attached(_) => None,
        })
        .collect()
}

#[test]
fn a_conversation_is_told_as_its_prompts_and_the_events_the_loop_emitted() {
    let turn = Record::Turn {
        turn: 1,
        usage: Usage {
            input_tokens: 900,
            ..Usage::default()
        },
    };
    let records = [
        message(Message::user_text("list it")),
        message(calling("c1")),
        turn.clone(),
        message(result("c1", &format!("{EXTERNAL_HEADER}a.txt\nb.txt\n"))),
        message(said("two files")),
    ];
    let told = retell(&records);
    assert_eq!(told.len(), 6, "{told:?}");
    assert!(matches!(&told[0], Retold::Prompt(p) if p == "list it"));
    assert!(matches!(&told[1], Retold::Event(Event::Text { text }) if text == "looking"));
    assert!(matches!(&told[2], Retold::Event(Event::ToolCall { id, .. }) if id == "c1"));
    assert!(matches!(&told[3], Retold::Event(Event::Usage { .. })));
    let Retold::Event(Event::ToolResult {
        name,
        summary,
        excerpt,
        bytes,
        ..
    }) = &told[4]
    else {
        panic!("{:?}", told[4]);
    };
    assert_eq!((name.as_str(), summary.as_str()), ("shell", "a.txt"));
    assert_eq!(excerpt.head, "a.txt\nb.txt\n", "told without the label");
    assert_eq!(*bytes, EXTERNAL_HEADER.len() + 12);
}

#[test]
fn the_loops_own_messages_are_not_prompts() {
    let hooked = Message {
        role: Role::User,
        content: vec![
            Block::Text {
                text: "typed".into(),
            },
            Block::Text {
                text: "[mecha: added by a user_prompt hook]\nmore".into(),
            },
        ],
    };
    let records = [
        message(hooked),
        message(Message::user_text(CONTINUE_PROMPT)),
        message(Message::user_text(INTERRUPTED_TURN)),
        message(Message::user_text(format!("{SENT_BACK}\nnot done"))),
        message(Message::user_text(format!("{SUMMARY_HEADER}so far"))),
    ];
    assert_eq!(prompts(&retell(&records)), ["typed"]);
}

#[test]
fn a_rewind_takes_back_what_it_dropped_and_a_compaction_is_its_event() {
    let records = [
        message(Message::user_text("first")),
        message(said("one")),
        Record::Compaction {
            messages: vec![Message::user_text("first"), said("summary")],
            tokens_before: 5000,
            tokens_after: 800,
        },
        message(Message::user_text("failed")),
        Record::Rewind { keep: 2 },
        message(Message::user_text("again")),
    ];
    let told = retell(&records);
    assert_eq!(prompts(&told), ["first", "again"]);
    assert!(told.iter().any(|t| matches!(
        t,
        Retold::Event(Event::Compacted {
            tokens_after: 800,
            messages_before: 2,
            ..
        })
    )));
    // A rewind past the compaction keeps what came before it.
    let records = [
        message(Message::user_text("first")),
        Record::Compaction {
            messages: vec![Message::user_text("first")],
            tokens_before: 5000,
            tokens_after: 800,
        },
        Record::Rewind { keep: 0 },
    ];
    assert_eq!(retell(&records).len(), 2);
}

/// A resumed screen shows what the live one did: a skill's narrowing as
/// its line, and the interlock's state as it was.
#[test]
fn narrowing_and_taint_are_told() {
    let taint = mecha_core::Taint {
        private_data: true,
        untrusted_input: false,
    };
    let records = [
        message(Message::user_text("deploy")),
        Record::Surface {
            by: vec!["deploy".into()],
            tools: vec!["shell".into()],
        },
        Record::Taint { taint },
    ];
    let told = retell(&records);
    assert!(matches!(
        &told[1],
        Retold::Event(Event::Narrowed { by, tools }) if by == "deploy" && tools == &["shell"]
    ));
    assert!(matches!(&told[2], Retold::Event(Event::Tainted { taint: t }) if *t == taint));
}

#[test]
fn what_waits_for_the_next_prompt_is_told_as_it_last_stood() {
    let attached = |blocks: &[&str]| Record::Attached {
        attached: blocks.iter().map(|b| (*b).to_owned()).collect(),
    };
    let records = [
        attached(&["one"]),
        message(Message::user_text("a prompt")),
        message(said("ok")),
        attached(&["two"]),
        Record::Taint {
            taint: mecha_core::Taint::default(),
        },
        attached(&["two", "three"]),
    ];
    let told: Vec<Vec<String>> = retell(&records)
        .into_iter()
        .filter_map(|t| match t {
            Retold::Attached(blocks) => Some(blocks),
            _ => None,
        })
        .collect();
    // What went with the prompt stays told before it; after it, only the
    // list as it now stands.
    assert_eq!(told, [vec!["one"], vec!["two", "three"]]);
}
