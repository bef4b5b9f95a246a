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
#[path = "request_tests.rs"]
mod tests;
