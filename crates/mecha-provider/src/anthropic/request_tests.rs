use super::*;
use mecha_core::{History, ToolCall};

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("{name} does things"),
        input_schema: json!({"type": "object", "properties": {}}),
    }
}

#[test]
fn system_tools_and_cache_breakpoints() {
    let tools = [tool("fs_list"), tool("fs_read")];
    let messages = [Message::user_text("hi")];
    let request = Request {
        system: "be brief",
        tools: &tools,
        messages: &messages,
        era: None,
    };
    let body = body("claude-x", 1024, None, false, &request);
    assert_eq!(
        body,
        json!({
            "model": "claude-x",
            "max_tokens": 1024,
            "stream": true,
            "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
            "tools": [
                {"name": "fs_list", "description": "fs_list does things",
                 "input_schema": {"type": "object", "properties": {}}},
                {"name": "fs_read", "description": "fs_read does things",
                 "input_schema": {"type": "object", "properties": {}},
                 "cache_control": {"type": "ephemeral"}},
            ],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
            ]}],
        })
    );
}

#[test]
fn an_hour_cache_holds_the_prefix_and_the_newest_message_keeps_five_minutes() {
    let tools = [tool("fs_read")];
    let messages = [Message::user_text("hi")];
    let request = Request {
        system: "be brief",
        tools: &tools,
        messages: &messages,
        era: None,
    };
    let body = body("m", 1, None, true, &request);
    let hour = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(body["system"][0]["cache_control"], hour);
    assert_eq!(body["tools"][0]["cache_control"], hour);
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[test]
fn a_message_with_nothing_to_send_is_left_out() {
    let messages = [
        Message::user_text("hi"),
        Message {
            role: Role::Assistant,
            content: vec![Block::Text {
                text: String::new(),
            }],
        },
        Message::user_text("still there?"),
    ];
    let request = Request {
        system: "",
        tools: &[],
        messages: &messages,
        era: None,
    };
    let sent = &body("m", 1, None, false, &request)["messages"];
    assert_eq!(sent.as_array().map(Vec::len), Some(2), "{sent}");
    assert_eq!(sent[1]["content"][0]["text"], "still there?");
}

#[test]
fn empty_system_and_no_tools_are_left_out() {
    let request = Request {
        system: "",
        tools: &[],
        messages: &[],
        era: None,
    };
    let body = body("m", 1, None, false, &request);
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
    assert_eq!(body["messages"], json!([]));
}

#[test]
fn history_with_tool_calls_and_results() {
    let messages = [
        Message::user_text("read a"),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Text {
                    text: "Reading.".into(),
                },
                Block::Text {
                    text: String::new(),
                },
                Block::ToolUse(ToolCall {
                    id: "toolu_1".into(),
                    name: "fs_read".into(),
                    input: json!({"path": "a"}),
                    input_error: None,
                }),
                Block::ToolUse(ToolCall {
                    id: "toolu_2".into(),
                    name: "fs_read".into(),
                    input: json!({}),
                    input_error: Some("not valid JSON: {\"pa".into()),
                }),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    tool_use_id: "toolu_1".into(),
                    content: "contents of a".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                Block::ToolResult {
                    tool_use_id: "toolu_2".into(),
                    content: "bad arguments".into(),
                    is_error: true,
                    images: Vec::new(),
                },
            ],
        },
    ];
    let request = Request {
        system: "s",
        tools: &[],
        messages: &messages,
        era: None,
    };
    let body = body("m", 1, None, false, &request);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "read a"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "fs_read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents of a", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad arguments", "is_error": true,
                 "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

/// What the cache sends is what `body` would, byte for byte, request
/// after request, as the history grows, ends in a message with nothing
/// to send, and is cut and rewritten.
#[test]
fn encoded_bodies_are_the_body_byte_for_byte_as_the_history_changes() {
    let tools = [tool("fs_read")];
    let cache = WireCache::default();
    let call = |n: usize| Message {
        role: Role::Assistant,
        content: vec![
            Block::Thinking {
                thinking: format!("step {n}"),
                signature: Some(format!("sig-{n}")),
            },
            Block::ToolUse(ToolCall {
                id: format!("toolu_{n}"),
                name: "fs_read".into(),
                input: json!({"path": format!("f{n}")}),
                input_error: None,
            }),
        ],
    };
    let result = |n: usize| Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            tool_use_id: format!("toolu_{n}"),
            content: format!("\"quoted\" contents {n}\n"),
            is_error: n.is_multiple_of(3),
            images: Vec::new(),
        }],
    };
    // Every other request comes with the history's era, the others
    // with none (as a compaction's summary request does): both reuse
    // what is unchanged, one by era, the other by comparing.
    let sent = std::cell::Cell::new(0);
    let check = |history: &History| {
        sent.set(sent.get() + 1);
        let mut request = Request::of_history("be brief", &tools, history);
        if sent.get() % 2 == 0 {
            request.era = None;
        }
        let thinking = Some(Thinking::Budget(2048));
        let expected = serde_json::to_vec(&body("m", 4096, thinking, true, &request)).unwrap();
        let sent = encoded("m", 4096, thinking, true, &request, &cache).unwrap();
        assert_eq!(
            String::from_utf8(sent).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    };
    let mut history = History::new(vec![Message::user_text("start")]);
    for n in 0..6 {
        check(&history);
        history.push(call(n));
        check(&history);
        history.push(result(n));
    }
    check(&history);
    // A last message with nothing to send: the breakpoint goes on the
    // one before, which the cache holds without it.
    history.push(Message::user_text(""));
    check(&history);
    history.truncate(5);
    check(&history);
    history.push(result(9));
    check(&history);
    history.edit()[2] = Message::user_text("a summary instead");
    check(&history);
    history.replace(vec![Message::user_text("fresh")]);
    check(&history);
}

#[test]
fn thinking_is_requested_and_sent_back_in_order() {
    let messages = [
        Message::user_text("read a"),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "I should read a.".into(),
                    signature: Some("sig-1".into()),
                },
                Block::RedactedThinking {
                    data: "opaque".into(),
                },
                // From a server that signs nothing: not sendable.
                Block::Thinking {
                    thinking: "unsigned".into(),
                    signature: None,
                },
                Block::ToolUse(ToolCall {
                    id: "toolu_1".into(),
                    name: "fs_read".into(),
                    input: json!({"path": "a"}),
                    input_error: None,
                }),
            ],
        },
    ];
    let request = Request {
        system: "",
        tools: &[],
        messages: &messages,
        era: None,
    };
    let body = body("m", 16_000, Some(Thinking::Budget(4096)), false, &request);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "I should read a.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {"path": "a"},
             "cache_control": {"type": "ephemeral"}},
        ])
    );
    let adaptive = body_without_thinking_fields(&messages);
    assert!(adaptive.get("thinking").is_none());
}

fn body_without_thinking_fields(messages: &[Message]) -> Value {
    let request = Request {
        system: "",
        tools: &[],
        messages,
        era: None,
    };
    body("m", 1, None, false, &request)
}

#[test]
fn the_cache_breakpoint_skips_thinking_blocks() {
    let messages = [Message {
        role: Role::Assistant,
        content: vec![
            Block::Text {
                text: "Done.".into(),
            },
            Block::Thinking {
                thinking: String::new(),
                signature: Some("sig".into()),
            },
        ],
    }];
    let body = body_without_thinking_fields(&messages);
    let blocks = &body["messages"][0]["content"];
    assert_eq!(blocks[0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(blocks[1].get("cache_control").is_none(), "{blocks}");
    // Omitted thinking (no text, a signature) still goes back.
    assert_eq!(blocks[1]["signature"], "sig");
}
