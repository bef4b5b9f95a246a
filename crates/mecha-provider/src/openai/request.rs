//! mecha's conversation as an OpenAI Chat Completions request body.

use mecha_core::{Block, Image, Message, Role, ToolDefinition};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::memory::ReasoningField;
use super::wire::ChatCache;
use crate::Request;
use crate::wire_cache::spliced;

/// Text put before a tool result that is an error. Chat Completions has no
/// error flag on tool messages, so the model learns it from the content.
pub(crate) const ERROR_PREFIX: &str = "Error: ";

/// Which field carries the output limit (`[provider] max_tokens_field`).
/// OpenAI's reasoning models, on OpenAI's API and on Azure, refuse
/// `max_tokens`; local servers (ollama, llama.cpp, vLLM) all know
/// `max_tokens`, not all know the newer name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

/// The request body, built whole as a `Value`: what the tests read, and
/// what [`encoded`], which sends it, is held to byte for byte.
#[cfg(test)]
pub(crate) fn body(
    model: &str,
    max_tokens: Option<(MaxTokensField, u32)>,
    request: &Request<'_>,
    reasoning_field: ReasoningField,
) -> Value {
    let mut body = envelope(model, max_tokens, request);
    let mut messages: Vec<Value> = system_message(request).into_iter().collect();
    for m in request.messages {
        push_message(&mut messages, m, reasoning_field);
    }
    body.insert("messages".into(), Value::Array(messages));
    Value::Object(body)
}

/// [`body`]'s bytes, as sent: the history's chat messages are what `cache`
/// kept from earlier requests, so a round serializes only what is new.
pub(crate) fn encoded(
    model: &str,
    max_tokens: Option<(MaxTokensField, u32)>,
    request: &Request<'_>,
    reasoning_field: ReasoningField,
    cache: &ChatCache,
) -> serde_json::Result<Vec<u8>> {
    let rest = envelope(model, max_tokens, request);
    spliced(&rest, "messages", |out| {
        out.push(b'[');
        if let Some(system) = system_message(request) {
            serde_json::to_writer(&mut *out, &system)?;
        }
        cache.write(request.messages, request.era, reasoning_field, out)?;
        out.push(b']');
        Ok(())
    })
}

/// Everything of the body but the messages.
fn envelope(
    model: &str,
    max_tokens: Option<(MaxTokensField, u32)>,
    request: &Request<'_>,
) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    // Unset means the server's default: a local model with a small context
    // refuses a request whose limit does not fit, so none is invented.
    match max_tokens {
        Some((MaxTokensField::MaxTokens, n)) => {
            body.insert("max_tokens".into(), json!(n));
        }
        Some((MaxTokensField::MaxCompletionTokens, n)) => {
            body.insert("max_completion_tokens".into(), json!(n));
        }
        None => {}
    }
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(request.tools));
    }
    body
}

fn system_message(request: &Request<'_>) -> Option<Value> {
    (!request.system.is_empty()).then(|| json!({"role": "system", "content": request.system}))
}

fn tools(tools: &[ToolDefinition]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            })
        })
        .collect()
}

/// One mecha message can become several chat messages: tool results are
/// messages of their own (`role: "tool"`), and must directly follow the
/// assistant message that called them, so they go before any user text.
pub(super) fn push_message(
    out: &mut Vec<Value>,
    message: &Message,
    reasoning_field: ReasoningField,
) {
    let text = joined_text(message);
    match message.role {
        Role::User => {
            let mut images = Vec::new();
            for block in &message.content {
                if let Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    images: shots,
                } = block
                {
                    push_images(&mut images, tool_use_id, shots);
                    let content = if *is_error {
                        format!("{ERROR_PREFIX}{content}")
                    } else {
                        content.clone()
                    };
                    out.push(
                        json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}),
                    );
                }
            }
            if !images.is_empty() {
                // The text goes in the same message: some chat templates
                // refuse two user messages in a row.
                if !text.is_empty() {
                    images.push(json!({"type": "text", "text": text}));
                }
                push_user(out, Value::Array(images));
            } else if !text.is_empty() {
                push_user(out, Value::String(text));
            }
        }
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|call| {
                    // Arguments that did not parse go back as `{}`: the tool
                    // result already tells the model what was wrong.
                    let arguments = if call.input_error.is_some() || !call.input.is_object() {
                        "{}".to_owned()
                    } else {
                        call.input.to_string()
                    };
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments},
                    })
                })
                .collect();
            // A turn that said nothing is not sent: servers differ on an
            // empty assistant message, and none needs one.
            if text.is_empty() && calls.is_empty() {
                return;
            }
            let mut chat = Map::new();
            chat.insert("role".into(), json!("assistant"));
            let content = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            chat.insert("content".into(), content);
            // Reasoning goes back on the message it came with, in the field
            // the server streamed it in: ollama (for gpt-oss) and vLLM read
            // `reasoning`, llama.cpp and DeepSeek `reasoning_content`, and
            // DeepSeek's thinking mode answers 400 when it is missing after
            // a tool call. The chat template decides what the model sees
            // again (templates drop the reasoning of finished turns). A
            // server that streams no reasoning never gets the field, so one
            // that refuses unknown fields is safe. (The first
            // deepseek-reasoner, R1, refused `reasoning_content` sent back;
            // the thinking mode that took its name requires it.)
            let reasoning = thinking_text(message);
            if !reasoning.is_empty() {
                chat.insert(reasoning_field.name().into(), json!(reasoning));
            }
            if !calls.is_empty() {
                chat.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(chat));
        }
    }
}

/// Adds a user message, or joins it to the user message right before it:
/// some chat templates (llama.cpp's for several open models) refuse two in
/// a row, and a history can hold them (a prompt after an interrupted
/// turn's note, or after an empty turn that was not sent).
fn push_user(out: &mut Vec<Value>, content: Value) {
    let Some(last) = out.last_mut().filter(|m| m["role"] == "user") else {
        out.push(json!({"role": "user", "content": content}));
        return;
    };
    last["content"] = match (last["content"].take(), content) {
        (Value::String(before), Value::String(after)) => {
            Value::String(format!("{before}\n\n{after}"))
        }
        (before, after) => Value::Array(parts(before).into_iter().chain(parts(after)).collect()),
    };
}

/// A user message's content as a list of parts.
fn parts(content: Value) -> Vec<Value> {
    match content {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(parts) => parts,
        other => vec![other],
    }
}

/// A `tool` message holds text only, so a result's images go in a user
/// message right after the tool messages: a line naming the call they
/// belong to, then each image as a data URL.
fn push_images(parts: &mut Vec<Value>, tool_use_id: &str, images: &[Image]) {
    if images.is_empty() {
        return;
    }
    let which = if images.len() == 1 {
        "The image"
    } else {
        "The images"
    };
    parts.push(json!({
        "type": "text",
        "text": format!("{which} below came with the result of tool call {tool_use_id}."),
    }));
    parts.extend(images.iter().map(|image| {
        json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{};base64,{}", image.media_type, image.data)},
        })
    }));
}

/// The message's reasoning, as the server streamed it.
fn thinking_text(message: &Message) -> String {
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Thinking { thinking, .. } if !thinking.is_empty() => Some(thinking.as_str()),
            _ => None,
        })
        .collect();
    texts.concat()
}

/// Plain strings rather than content-part arrays: every compatible server
/// understands them.
fn joined_text(message: &Message) -> String {
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
