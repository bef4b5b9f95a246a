//! The Anthropic Messages stream: `event:` + `data:` frames, in the order
//! the API sends them (message_start, content blocks with a ping after the
//! first start, message_delta with the stop reason, message_stop).

use mecha_provider::script::ScriptTurn;
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

pub(crate) fn turn(cx: &Context, turn: &ScriptTurn) -> Rendered {
    let mut frames = vec![frame(&message_start(cx, turn))];
    let mut index = 0;
    let mut last_stop = 0;
    if let Some(text) = turn.text.as_ref().filter(|t| !t.is_empty()) {
        frames.push(frame(&json!({
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        })));
        frames.push(frame(&json!({"type": "ping"})));
        for piece in pieces(text, 3) {
            frames.push(frame(&json!({
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": piece},
            })));
        }
        last_stop = frames.len();
        frames.push(frame(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (n, call) in turn.tool_calls.iter().enumerate() {
        frames.push(frame(&json!({
            "type": "content_block_start",
            "index": index,
            "content_block": {
                "type": "tool_use",
                "id": call.id_or(cx.turn, n + 1),
                "name": call.name,
                "input": {},
            },
        })));
        if index == 0 {
            frames.push(frame(&json!({"type": "ping"})));
        }
        // The API opens every tool input with an empty fragment.
        let arguments = call.arguments_text();
        for piece in std::iter::once("").chain(pieces(&arguments, 3)) {
            frames.push(frame(&json!({
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            })));
        }
        last_stop = frames.len();
        frames.push(frame(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let tail = if index == 0 { frames.len() } else { last_stop };
    frames.push(frame(&json!({
        "type": "message_delta",
        "delta": {
            "stop_reason": turn.effective_stop_reason().as_str(),
            "stop_sequence": null,
        },
        "usage": {"output_tokens": usage(turn).output_tokens},
    })));
    frames.push(frame(&json!({"type": "message_stop"})));
    Rendered { frames, tail }
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
