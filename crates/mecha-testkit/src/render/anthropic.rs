//! The Anthropic Messages stream: `event:` + `data:` frames, in the order
//! the API sends them (message_start, content blocks with a ping after the
//! first start, message_delta with the stop reason, message_stop).

use mecha_provider::script::{Quirk, ScriptTurn};
use serde_json::{Value, json};

use super::{Context, Rendered, pieces, usage};

fn frame(data: &Value) -> String {
    let kind = data["type"].as_str().unwrap_or("message");
    format!("event: {kind}\ndata: {data}\n\n")
}

fn message_start(cx: &Context, turn: &ScriptTurn) -> Value {
    let usage = usage(turn);
    json!({
        "type": "message_start",
        "message": {
            "id": format!("msg_mock_{}", cx.turn),
            "type": "message",
            "role": "assistant",
            "model": cx.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
                "cache_read_input_tokens": usage.cache_read_tokens,
                "output_tokens": 1,
            },
        },
    })
}

/// A made-up signature, different per turn and per thinking text, the way
/// the API's encrypted ones are.
fn signature(turn: usize, thinking: &str) -> String {
    // FNV-1a: stable across runs, so identical requests stay identical.
    let hash = thinking.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("mock-sig-{turn}-{hash:016x}")
}

/// The thinking blocks a turn sends, complete (signature included): what
/// the streamed blocks add up to, and what the mock later expects back.
pub(crate) fn thinking_blocks(cx: &Context, turn: &ScriptTurn) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = &turn.thinking {
        blocks.push(json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": signature(cx.turn, thinking),
        }));
    }
    if let Some(data) = &turn.redacted_thinking {
        blocks.push(json!({"type": "redacted_thinking", "data": data}));
    }
    blocks
}

/// Frames for one content block: start, a ping after the first start (as
/// the API does), the deltas, stop.
struct Blocks {
    frames: Vec<String>,
    index: usize,
    last_stop: usize,
}

impl Blocks {
    fn push(&mut self, start: Value, deltas: Vec<Value>) {
        self.frames.push(frame(&json!({
            "type": "content_block_start",
            "index": self.index,
            "content_block": start,
        })));
        if self.index == 0 {
            self.frames.push(frame(&json!({"type": "ping"})));
        }
        for delta in deltas {
            self.frames.push(frame(&json!({
                "type": "content_block_delta",
                "index": self.index,
                "delta": delta,
            })));
        }
        self.last_stop = self.frames.len();
        self.frames.push(frame(
            &json!({"type": "content_block_stop", "index": self.index}),
        ));
        self.index += 1;
    }
}

fn thinking_deltas(thinking: &str) -> Vec<Value> {
    pieces(thinking, 3)
        .into_iter()
        .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
        .collect()
}

pub(crate) fn turn(cx: &Context, turn: &ScriptTurn) -> Rendered {
    let mut blocks = Blocks {
        frames: vec![frame(&message_start(cx, turn))],
        index: 0,
        last_stop: 0,
    };
    for block in thinking_blocks(cx, turn) {
        if block["type"] == "thinking" {
            let text = block["thinking"].as_str().unwrap_or_default();
            let mut deltas = thinking_deltas(text);
            deltas.push(json!({"type": "signature_delta", "signature": block["signature"]}));
            blocks.push(
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            );
        } else {
            blocks.push(block, Vec::new());
        }
    }
    if let Some(text) = turn.text.as_ref().filter(|t| !t.is_empty()) {
        let deltas = pieces(text, 3)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        blocks.push(json!({"type": "text", "text": ""}), deltas);
    }
    let whole_input = turn.quirks.contains(&Quirk::InputInStart);
    for (n, call) in turn.tool_calls.iter().enumerate() {
        let arguments = call.arguments_text();
        let (input, deltas) = if whole_input {
            let input = serde_json::from_str(&arguments).unwrap_or(Value::String(arguments));
            (input, Vec::new())
        } else {
            // The API opens every tool input with an empty fragment.
            let deltas = std::iter::once("")
                .chain(pieces(&arguments, 3))
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect();
            (json!({}), deltas)
        };
        blocks.push(
            json!({
                "type": "tool_use",
                "id": call.id_or(cx.turn, n + 1),
                "name": call.name,
                "input": input,
            }),
            deltas,
        );
    }
    let Blocks {
        mut frames,
        index,
        last_stop,
    } = blocks;
    let tail = if index == 0 { frames.len() } else { last_stop };
    let mut delta = json!({
        "stop_reason": turn.effective_stop_reason().as_str(),
        "stop_sequence": null,
    });
    if let Some(explanation) = &turn.stop_detail {
        delta["stop_details"] =
            json!({"type": "refusal", "category": null, "explanation": explanation});
    }
    frames.push(frame(&json!({
        "type": "message_delta",
        "delta": delta,
        "usage": {"output_tokens": usage(turn).output_tokens},
    })));
    frames.push(frame(&json!({"type": "message_stop"})));
    Rendered { frames, tail }
}

/// A stream that thinks, then fails in-band with `overloaded_error` before
/// any of the answer.
pub(crate) fn overloaded_in_thinking(cx: &Context, thinking: &str) -> Rendered {
    let turn = ScriptTurn::text("never sent").with_thinking(thinking);
    let mut frames = vec![
        frame(&message_start(cx, &turn)),
        frame(&json!({
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        })),
        frame(&json!({"type": "ping"})),
    ];
    for delta in thinking_deltas(thinking) {
        frames.push(frame(&json!({
            "type": "content_block_delta",
            "index": 0,
            "delta": delta,
        })));
    }
    frames.extend(error_event("overloaded_error", "Overloaded").frames);
    let tail = frames.len();
    Rendered { frames, tail }
}

/// What the API checks of thinking sent back: with thinking on, the final
/// assistant message, when it made tool calls, must start with a thinking
/// block; and every thinking block must be one the API sent, unmodified.
/// The error message when not, in the API's words.
pub(crate) fn check_thinking(body: &Value, sent: &[Value]) -> Option<String> {
    let enabled = matches!(
        body["thinking"]["type"].as_str(),
        Some("enabled" | "adaptive")
    );
    let messages = body["messages"].as_array()?;
    for (i, message) in messages.iter().enumerate() {
        let blocks = message["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (b, block) in blocks.iter().enumerate() {
            let kind = block["type"].as_str().unwrap_or_default();
            if matches!(kind, "thinking" | "redacted_thinking") && !sent.contains(block) {
                let field = if kind == "thinking" {
                    "signature"
                } else {
                    "data"
                };
                return Some(format!(
                    "messages.{i}.content.{b}: Invalid `{field}` in `{kind}` block"
                ));
            }
        }
    }
    let (i, last) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m["role"] == "assistant")?;
    let blocks = last["content"].as_array()?;
    let calls = blocks.iter().any(|b| b["type"] == "tool_use");
    let first = blocks
        .first()
        .and_then(|b| b["type"].as_str())
        .unwrap_or("nothing");
    if enabled && calls && !matches!(first, "thinking" | "redacted_thinking") {
        return Some(format!(
            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found \
             `{first}`. When `thinking` is enabled, a final `assistant` message must start with \
             a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` \
             blocks). We recommend you include thinking blocks from previous turns. To avoid \
             this requirement, disable `thinking`. Please consult our documentation at \
             https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        ));
    }
    None
}

/// A stream whose second content event is cut off mid-JSON.
pub(crate) fn malformed(cx: &Context) -> Rendered {
    let turn = ScriptTurn::text("never seen");
    let frames = vec![
        frame(&message_start(cx, &turn)),
        frame(&json!({
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        })),
        "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \
         \"delta\": {\"type\": \"text_delta\", \"text\": \"Hel\n\n"
            .to_owned(),
        frame(&json!({"type": "content_block_stop", "index": 0})),
        frame(&json!({
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 3},
        })),
        frame(&json!({"type": "message_stop"})),
    ];
    let tail = frames.len();
    Rendered { frames, tail }
}

/// An in-band error, as the API sends for overload mid-request.
pub(crate) fn error_event(kind: &str, message: &str) -> Rendered {
    let frames = vec![frame(&json!({
        "type": "error",
        "error": {"type": kind, "message": message},
    }))];
    Rendered { frames, tail: 1 }
}
