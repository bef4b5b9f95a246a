//! The Chat Completions stream: `data:` chunks, tool-call arguments in
//! fragments keyed by index, a chunk with the finish_reason, the usage
//! chunk when `stream_options.include_usage` asked for it, then `[DONE]`.

use mecha_core::StopReason;
use mecha_provider::script::ScriptTurn;
use serde_json::{Value, json};

use super::{Context, Rendered, pieces, usage};

fn frame(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// A chunk with one choice; `usage: null` rides along when usage was
/// requested, as OpenAI does.
fn chunk(cx: &Context, delta: Value, finish_reason: Option<&str>) -> String {
    let mut chunk = json!({
        "id": format!("chatcmpl-mock-{}", cx.turn),
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": cx.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
    });
    if cx.include_usage {
        chunk["usage"] = Value::Null;
    }
    frame(&chunk)
}

fn wire_finish_reason(reason: &StopReason) -> String {
    match reason {
        StopReason::EndTurn | StopReason::StopSequence => "stop".into(),
        StopReason::ToolUse => "tool_calls".into(),
        StopReason::MaxTokens | StopReason::ModelContextWindowExceeded => "length".into(),
        StopReason::Refusal => "content_filter".into(),
        StopReason::Other(other) => other.clone(),
    }
}

pub(crate) fn turn(cx: &Context, turn: &ScriptTurn) -> Rendered {
    let mut frames = vec![chunk(cx, json!({"role": "assistant", "content": ""}), None)];
    if let Some(text) = turn.text.as_ref().filter(|t| !t.is_empty()) {
        for piece in pieces(text, 3) {
            frames.push(chunk(cx, json!({"content": piece}), None));
        }
    }
    for (n, call) in turn.tool_calls.iter().enumerate() {
        frames.push(chunk(
            cx,
            json!({"tool_calls": [{
                "index": n,
                "id": call.id_or(cx.turn, n + 1),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            None,
        ));
        for piece in pieces(&call.arguments_text(), 3) {
            frames.push(chunk(
                cx,
                json!({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    let tail = frames.len();
    let reason = wire_finish_reason(&turn.effective_stop_reason());
    frames.push(chunk(cx, json!({}), Some(&reason)));
    if cx.include_usage {
        let usage = usage(turn);
        let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        frames.push(frame(&json!({
            "id": format!("chatcmpl-mock-{}", cx.turn),
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": cx.model,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": usage.output_tokens,
                "total_tokens": prompt + usage.output_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            },
        })));
    }
    frames.push("data: [DONE]\n\n".to_owned());
    Rendered { frames, tail }
}

/// A stream whose second chunk is cut off mid-JSON.
pub(crate) fn malformed(cx: &Context) -> Rendered {
    let frames = vec![
        chunk(cx, json!({"role": "assistant", "content": ""}), None),
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"Hel\n\n".to_owned(),
        chunk(cx, json!({}), Some("stop")),
        "data: [DONE]\n\n".to_owned(),
    ];
    let tail = frames.len();
    Rendered { frames, tail }
}

/// An in-band error chunk, as vLLM and OpenAI send when a stream fails.
pub(crate) fn error_event(kind: &str, message: &str) -> Rendered {
    let frames = vec![frame(&json!({"error": {"message": message, "type": kind}}))];
    Rendered { frames, tail: 1 }
}
