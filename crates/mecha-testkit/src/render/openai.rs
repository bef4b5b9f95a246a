//! The Chat Completions stream: `data:` chunks, reasoning deltas (vLLM's
//! and ollama's `reasoning`, or llama.cpp's and DeepSeek's
//! `reasoning_content`), text, OpenAI's `refusal` deltas, tool-call
//! arguments in fragments keyed by index, a chunk with the finish_reason,
//! the usage chunk when `stream_options.include_usage` asked for it, then
//! `[DONE]`. A turn's quirks reproduce the servers that depart from that.

use mecha_core::StopReason;
use mecha_provider::script::{Quirk, ScriptToolCall, ScriptTurn};
use serde_json::{Value, json};

use super::{Api, Context, Rendered, pieces, usage};

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
    let quirk = |q: Quirk| turn.quirks.contains(&q);
    let refusal = turn.stop_detail.as_ref().filter(|r| !r.is_empty());
    let first = match refusal {
        Some(_) => json!({"role": "assistant", "content": null, "refusal": ""}),
        None => json!({"role": "assistant", "content": ""}),
    };
    let mut frames = vec![chunk(cx, first, None)];
    if let Some(thinking) = turn.thinking.as_ref().filter(|t| !t.is_empty()) {
        let field = if quirk(Quirk::ReasoningContent) {
            "reasoning_content"
        } else {
            "reasoning"
        };
        for piece in pieces(thinking, 3) {
            frames.push(chunk(cx, json!({ field: piece }), None));
        }
    }
    if let Some(text) = turn.text.as_ref().filter(|t| !t.is_empty()) {
        for piece in pieces(text, 3) {
            frames.push(chunk(cx, json!({"content": piece}), None));
        }
    }
    if let Some(refusal) = refusal {
        for piece in pieces(refusal, 3) {
            frames.push(chunk(cx, json!({"refusal": piece}), None));
        }
    }
    for (n, call) in turn.tool_calls.iter().enumerate() {
        frames.extend(call_chunks(cx, turn, n, call));
    }
    let tail = frames.len();
    let reason = match turn.effective_stop_reason() {
        // OpenAI ends a refusal in words with `stop`; `content_filter` is
        // its filter cutting the answer, with no words.
        StopReason::Refusal if refusal.is_some() => "stop".to_owned(),
        other => wire_finish_reason(&other),
    };
    frames.push(chunk(cx, json!({}), Some(&reason)));
    // Where a server sends `"choices": null`: in the usage chunk.
    let choices = if quirk(Quirk::NullChoices) {
        Value::Null
    } else {
        json!([])
    };
    if cx.include_usage {
        let usage = usage(turn);
        let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        frames.push(frame(&json!({
            "id": format!("chatcmpl-mock-{}", cx.turn),
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": cx.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": usage.output_tokens,
                "total_tokens": prompt + usage.output_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            },
        })));
    } else if choices.is_null() {
        frames.push(frame(&json!({
            "id": format!("chatcmpl-mock-{}", cx.turn),
            "object": "chat.completion.chunk",
            "choices": choices,
        })));
    }
    frames.push("data: [DONE]\n\n".to_owned());
    Rendered { frames, tail }
}

/// Call `n` of the turn: its id and name, then its arguments in pieces;
/// or whole in one chunk, as ollama sends calls, with every call at index 0
/// (`SameIndex`) or the arguments as a JSON object (`ArgumentsObject`).
fn call_chunks(cx: &Context, turn: &ScriptTurn, n: usize, call: &ScriptToolCall) -> Vec<String> {
    let same_index = turn.quirks.contains(&Quirk::SameIndex);
    let as_object = turn.quirks.contains(&Quirk::ArgumentsObject);
    let index = if same_index { 0 } else { n };
    let id = call.id_or(cx.turn, n + 1);
    if same_index || as_object {
        let arguments = match (&call.input, as_object) {
            (Some(input), true) => input.clone(),
            _ => json!(call.arguments_text()),
        };
        let whole = json!({"tool_calls": [{
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments},
        }]});
        return vec![chunk(cx, whole, None)];
    }
    let mut frames = vec![chunk(
        cx,
        json!({"tool_calls": [{
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]}),
        None,
    )];
    for piece in pieces(&call.arguments_text(), 3) {
        frames.push(chunk(
            cx,
            json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
            None,
        ));
    }
    frames
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

/// How older llama.cpp servers report a failed stream: an SSE field named
/// `error` (not `data`), on each of its APIs, then on its OpenAI endpoint
/// `data: [DONE]`.
pub(crate) fn llama_cpp_error(api: Api, message: &str) -> Rendered {
    let error = json!({"code": 500, "message": message, "type": "server_error"});
    let mut frames = vec![format!("error: {error}\n\n")];
    if api == Api::OpenAi {
        frames.push("data: [DONE]\n\n".to_owned());
    }
    let tail = frames.len();
    Rendered { frames, tail }
}
