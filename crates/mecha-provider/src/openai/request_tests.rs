use super::*;
use mecha_core::ToolCall;

#[test]
fn full_request_shape() {
    let tools = [ToolDefinition {
        name: "fs_read".into(),
        description: "Read a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let messages = [
        Message::user_text("read a and b"),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::ToolUse(ToolCall {
                    id: "call_1".into(),
                    name: "fs_read".into(),
                    input: json!({"path": "a"}),
                    input_error: None,
                }),
                Block::ToolUse(ToolCall {
                    id: "call_2".into(),
                    name: "fs_read".into(),
                    input: json!({}),
                    input_error: Some("bad".into()),
                }),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "A".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                Block::ToolResult {
                    tool_use_id: "call_2".into(),
                    content: "no such file".into(),
                    is_error: true,
                    images: Vec::new(),
                },
                Block::Text {
                    text: "also note this".into(),
                },
            ],
        },
        Message {
            role: Role::Assistant,
            content: vec![Block::Text {
                text: "Done.".into(),
            }],
        },
    ];
    let request = Request {
        system: "be brief",
        tools: &tools,
        messages: &messages,
        era: None,
    };
    let body = body(
        "qwen3",
        Some((MaxTokensField::MaxTokens, 512)),
        &request,
        ReasoningField::Reasoning,
    );
    assert_eq!(
        body,
        json!({
            "model": "qwen3",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 512,
            "tools": [{"type": "function", "function": {
                "name": "fs_read", "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "read a and b"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "fs_read", "arguments": "{\"path\":\"a\"}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "fs_read", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "A"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
                {"role": "user", "content": "also note this"},
                {"role": "assistant", "content": "Done."},
            ],
        })
    );
}

#[test]
fn a_turn_that_said_nothing_is_not_sent() {
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
    let sent = &body("m", None, &request, ReasoningField::Reasoning)["messages"];
    // Two user messages in a row are sent as one.
    assert_eq!(
        sent,
        &json!([{"role": "user", "content": "hi\n\nstill there?"}])
    );
}

#[test]
fn a_prompt_after_results_and_a_note_joins_the_note() {
    let call = Block::ToolUse(ToolCall {
        id: "c".into(),
        name: "shell".into(),
        input: json!({}),
        input_error: None,
    });
    let messages = [
        Message::user_text("go"),
        Message {
            role: Role::Assistant,
            content: vec![call],
        },
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    tool_use_id: "c".into(),
                    content: "stopped".into(),
                    is_error: true,
                    images: Vec::new(),
                },
                Block::Text {
                    text: "[interrupted]".into(),
                },
            ],
        },
        Message::user_text("next"),
    ];
    let request = Request {
        system: "",
        tools: &[],
        messages: &messages,
        era: None,
    };
    let sent = &body("m", None, &request, ReasoningField::Reasoning)["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"]);
    assert_eq!(sent[3]["content"], "[interrupted]\n\nnext");
}

#[test]
fn limit_field_and_defaults() {
    let request = Request {
        system: "",
        tools: &[],
        messages: &[],
        era: None,
    };
    let none = body("m", None, &request, ReasoningField::Reasoning);
    assert!(none.get("max_tokens").is_none());
    assert!(none.get("max_completion_tokens").is_none());
    assert!(none.get("tools").is_none());
    assert_eq!(none["messages"], json!([]));
    let newer = body(
        "m",
        Some((MaxTokensField::MaxCompletionTokens, 9)),
        &request,
        ReasoningField::Reasoning,
    );
    assert_eq!(newer["max_completion_tokens"], json!(9));
    assert!(newer.get("max_tokens").is_none());
}

fn thought(text: &str) -> Block {
    Block::Thinking {
        thinking: text.into(),
        signature: None,
    }
}

#[test]
fn reasoning_goes_back_in_the_servers_field() {
    let call = Block::ToolUse(ToolCall {
        id: "call_1".into(),
        name: "fs_read".into(),
        input: json!({"path": "a"}),
        input_error: None,
    });
    let messages = [
        Message::user_text("read a"),
        Message {
            role: Role::Assistant,
            content: vec![thought("I should read a."), call],
        },
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: "call_1".into(),
                content: "A".into(),
                is_error: false,
                images: Vec::new(),
            }],
        },
        Message {
            role: Role::Assistant,
            content: vec![thought("Done reading."), Block::Text { text: "A.".into() }],
        },
    ];
    let request = Request {
        system: "",
        tools: &[],
        messages: &messages,
        era: None,
    };
    for field in [ReasoningField::Reasoning, ReasoningField::ReasoningContent] {
        let sent = body("m", None, &request, field)["messages"].clone();
        assert_eq!(sent[1][field.name()], json!("I should read a."), "{sent:#}");
        assert_eq!(sent[1]["content"], Value::Null);
        let other = match field {
            ReasoningField::Reasoning => "reasoning_content",
            ReasoningField::ReasoningContent => "reasoning",
        };
        assert!(sent[1].get(other).is_none(), "{sent:#}");
        // The thinking is never text.
        assert_eq!(
            sent[3],
            json!({"role": "assistant", "content": "A.", field.name(): "Done reading."})
        );
    }
}
