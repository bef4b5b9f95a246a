//! mecha's conversation as an Anthropic Messages request body.

use mecha_core::{Block, Image, Message, Role, ToolDefinition};
use serde_json::{Map, Value, json};

use super::Thinking;
use crate::Request;
use crate::wire_cache::{WireCache, spliced};

/// The request body. Cache breakpoints sit on the system prompt, the last
/// tool and the last message block: the first two mark the stable prefix
/// shared by every request of the run, the last lets each turn read the
/// previous turn's conversation from the cache instead of paying for it
/// again. With `hour`, the stable prefix is cached for an hour; the last
/// message's breakpoint, which the next turn replaces, keeps the default
/// five minutes (a longer one only costs more to write, and the API wants
/// longer-lived breakpoints first).
///
/// Built whole, as a `Value`: what the tests read, and what [`encoded`],
/// which sends it, is held to byte for byte.
#[cfg(test)]
pub(crate) fn body(
    model: &str,
    max_tokens: u32,
    thinking: Option<Thinking>,
    hour: bool,
    request: &Request<'_>,
) -> Value {
    let mut body = envelope(model, max_tokens, thinking, hour, request);
    body.insert("messages".into(), messages(request.messages));
    Value::Object(body)
}

/// [`body`]'s bytes, as sent: every message but the last sent one is the
/// JSON `cache` kept from earlier requests (the last carries the moving
/// breakpoint, so it is made afresh), so a request at turn 500 costs what
/// one at turn 10 does.
pub(crate) fn encoded(
    model: &str,
    max_tokens: u32,
    thinking: Option<Thinking>,
    hour: bool,
    request: &Request<'_>,
    cache: &WireCache,
) -> serde_json::Result<Vec<u8>> {
    let rest = envelope(model, max_tokens, thinking, hour, request);
    let encode = |m: &Message| message(m).map(|v| v.to_string());
    cache.encoded(request.messages, request.era, encode, |sent| {
        spliced(&rest, "messages", |out| {
            out.push(b'[');
            out.extend_from_slice(sent.before_last.as_bytes());
            if let Some(mut last) = sent.last.and_then(|at| message(&request.messages[at])) {
                if !sent.before_last.is_empty() {
                    out.push(b',');
                }
                with_breakpoint(&mut last);
                serde_json::to_writer(&mut *out, &last)?;
            }
            out.push(b']');
            Ok(())
        })
    })
}

/// Everything of the body but the messages.
fn envelope(
    model: &str,
    max_tokens: u32,
    thinking: Option<Thinking>,
    hour: bool,
    request: &Request<'_>,
) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if let Some(thinking) = thinking {
        body.insert("thinking".into(), thinking.wire());
    }
    // The API refuses an empty text block, so no prompt means no field.
    if !request.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{
                "type": "text",
                "text": request.system,
                "cache_control": prefix_breakpoint(hour),
            }]),
        );
    }
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(request.tools, hour));
    }
    body
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// A breakpoint of the stable prefix: an hour's, or the default.
fn prefix_breakpoint(hour: bool) -> Value {
    match hour {
        true => json!({"type": "ephemeral", "ttl": "1h"}),
        false => ephemeral(),
    }
}

/// In the order given (sorted by the registry); the last one carries the
/// breakpoint that caches the whole tool list. The list changes only at a
/// refresh, a narrowing, a mode change or a deferred schema's load, and
/// the cache is a prefix: that one request writes everything from the
/// changed tool on again (the system prompt and the messages follow the
/// tools), and the next reads it. One breakpoint is enough: a second one
/// inside the list would save only the tools before a change, which name
/// order scatters.
fn tools(tools: &[ToolDefinition], hour: bool) -> Value {
    let mut list: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
            })
        })
        .collect();
    if let Some(Value::Object(last)) = list.last_mut() {
        last.insert("cache_control".into(), prefix_breakpoint(hour));
    }
    Value::Array(list)
}

#[cfg(test)]
fn messages(messages: &[Message]) -> Value {
    let mut list: Vec<Value> = messages.iter().filter_map(message).collect();
    if let Some(last) = list.last_mut() {
        with_breakpoint(last);
    }
    Value::Array(list)
}

/// The breakpoint that lets the next request read this conversation from
/// the cache, on the message's last block that may carry one (the API
/// refuses `cache_control` on a thinking block).
fn with_breakpoint(message: &mut Value) {
    let last_block = message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|blocks| {
            blocks
                .iter_mut()
                .rev()
                .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
        })
        .and_then(Value::as_object_mut);
    if let Some(block) = last_block {
        block.insert("cache_control".into(), ephemeral());
    }
}

/// `None` for a message with nothing left to send: the API refuses empty
/// content ("all messages must have non-empty content") on every later
/// request, so one such message would break the conversation for good.
fn message(message: &Message) -> Option<Value> {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let content: Vec<Value> = message.content.iter().filter_map(block).collect();
    (!content.is_empty()).then(|| json!({"role": role, "content": content}))
}

fn block(block: &Block) -> Option<Value> {
    Some(match block {
        // The API refuses empty text blocks.
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => json!({"type": "text", "text": text}),
        // Sent back exactly as received: the API checks the signature, and
        // the tool loop fails without the thinking that preceded the call.
        Block::Thinking {
            thinking,
            signature: Some(signature),
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        // Reasoning from a server that signs nothing cannot be verified here.
        Block::Thinking {
            signature: None, ..
        } => return None,
        Block::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
        Block::ToolUse(call) => {
            // Arguments that did not parse were recorded as `{}`; sending the
            // raw text back would be refused, and the tool result already
            // tells the model what was wrong.
            let input = if call.input_error.is_some() || !call.input.is_object() {
                Value::Object(Map::new())
            } else {
                call.input.clone()
            };
            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
        }
        Block::ToolResult {
            tool_use_id,
            content,
            is_error,
            images,
        } => json!({
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": tool_result_content(content, images),
            "is_error": is_error,
        }),
    })
}

/// A plain string when there are no images (the request stays what it was
/// before images existed, byte for byte); otherwise the text block and then
/// one image block per image, which a tool result may hold.
fn tool_result_content(text: &str, images: &[Image]) -> Value {
    if images.is_empty() {
        return json!(text);
    }
    let text = (!text.is_empty()).then(|| json!({"type": "text", "text": text}));
    let images = images.iter().map(|image| {
        json!({
            "type": "image",
            "source": {"type": "base64", "media_type": image.media_type, "data": image.data},
        })
    });
    text.into_iter().chain(images).collect()
}

#[cfg(test)]
mod tests {
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
}
