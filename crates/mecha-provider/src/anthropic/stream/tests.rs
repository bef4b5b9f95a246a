use super::*;
use serde_json::json;

fn event(data: serde_json::Value) -> Event {
    Event {
        event: data["type"].as_str().unwrap_or("message").to_owned(),
        data: data.to_string(),
        id: String::new(),
        retry: None,
    }
}

fn run(events: &[serde_json::Value]) -> (Result<Flow, Attempt>, StreamState, String) {
    let mut state = StreamState::default();
    let mut text = String::new();
    let mut on_stream = |piece: Streamed<'_>| {
        if let Streamed::Text(t) = piece {
            text.push_str(t);
        }
    };
    let mut flow = Ok(Flow::Continue);
    for e in events {
        flow = state.handle(&event(e.clone()), &mut on_stream);
        if !matches!(flow, Ok(Flow::Continue)) {
            break;
        }
    }
    (flow, state, text)
}

#[test]
fn text_and_tool_use_with_usage() {
    let (flow, state, text) = run(&[
        json!({"type": "message_start", "message": {"id": "m", "usage": {
            "input_tokens": 12, "output_tokens": 1,
            "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "look."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": 55}}),
        json!({"type": "message_stop"}),
    ]);
    assert!(matches!(flow, Ok(Flow::Done)));
    assert_eq!(text, "Let me look.");
    let response = state.finish();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 55,
            cache_read_tokens: 300,
            cache_write_tokens: 40,
        }
    );
    assert_eq!(
        response.message.content,
        vec![
            Block::Text {
                text: "Let me look.".into()
            },
            Block::ToolUse(ToolCall {
                id: "toolu_1".into(),
                name: "fs_read".into(),
                input: json!({"path": "a"}),
                input_error: None,
            }),
        ]
    );
}

#[test]
fn bad_tool_json_becomes_input_error() {
    let (_, state, _) = run(&[
        json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "tool_use", "id": "t", "name": "x", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{nope"}}),
        json!({"type": "message_stop"}),
    ]);
    let response = state.finish();
    let call = response.message.tool_calls().next().cloned();
    let call = call.unwrap_or_else(|| panic!("no call in {response:?}"));
    assert_eq!(call.input, json!({}));
    assert!(call.input_error.unwrap_or_default().contains("{nope"));
}

#[test]
fn stop_reasons_map() {
    assert_eq!(stop_reason("end_turn"), StopReason::EndTurn);
    assert_eq!(stop_reason("max_tokens"), StopReason::MaxTokens);
    assert_eq!(stop_reason("stop_sequence"), StopReason::StopSequence);
    assert_eq!(stop_reason("refusal"), StopReason::Refusal);
    assert_eq!(
        stop_reason("model_context_window_exceeded"),
        StopReason::ModelContextWindowExceeded
    );
    assert_eq!(
        stop_reason("pause_turn"),
        StopReason::Other("pause_turn".into())
    );
}

#[test]
fn overloaded_before_content_retries_after_content_fails() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let (flow, _, _) = run(&[json!({"type": "ping"}), overloaded.clone()]);
    assert!(matches!(flow, Err(Attempt::Retry { .. })), "{flow:?}");

    let (flow, _, _) = run(&[
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        overloaded,
    ]);
    match flow {
        Err(Attempt::Fatal(ProviderError::Transport(m))) => assert!(m.contains("ended early")),
        other => panic!("{other:?}"),
    }

    let invalid =
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}});
    let (flow, _, _) = run(&[invalid]);
    assert!(matches!(flow, Err(Attempt::Fatal(ProviderError::Api(_)))));
}

#[test]
fn malformed_data_names_the_event() {
    let mut state = StreamState::default();
    let bad = Event {
        event: "content_block_delta".into(),
        data: "{not json".into(),
        id: String::new(),
        retry: None,
    };
    match state.handle(&bad, &mut |_| {}) {
        Err(Attempt::Fatal(ProviderError::Transport(m))) => {
            assert!(m.contains("malformed `content_block_delta`"), "{m}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_events_and_blocks_are_skipped() {
    let (flow, state, text) = run(&[
        json!({"type": "brand_new_event", "x": 1}),
        json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "brand_new_delta", "x": 1}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        json!({"type": "message_stop"}),
    ]);
    assert!(matches!(flow, Ok(Flow::Done)));
    assert_eq!(text, "");
    let response = state.finish();
    assert!(response.message.content.is_empty());
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}

/// What `on_stream` received, owned.
#[derive(Debug, PartialEq)]
enum Piece {
    Text(String),
    Thinking(String),
    Redacted,
}

fn run_pieces(events: &[serde_json::Value]) -> (Result<Flow, Attempt>, StreamState, Vec<Piece>) {
    let mut state = StreamState::default();
    let mut pieces = Vec::new();
    let mut on_stream = |piece: Streamed<'_>| {
        pieces.push(match piece {
            Streamed::Text(t) => Piece::Text(t.to_owned()),
            Streamed::Thinking(t) => Piece::Thinking(t.to_owned()),
            Streamed::RedactedThinking => Piece::Redacted,
            Streamed::Retrying(_) => panic!("a decoder does not retry"),
        });
    };
    let mut flow = Ok(Flow::Continue);
    for e in events {
        flow = state.handle(&event(e.clone()), &mut on_stream);
        if !matches!(flow, Ok(Flow::Continue)) {
            break;
        }
    }
    (flow, state, pieces)
}

fn thinking_start(index: usize) -> serde_json::Value {
    json!({"type": "content_block_start", "index": index, "content_block":
        {"type": "thinking", "thinking": "", "signature": ""}})
}

fn thinking_delta(index: usize, piece: &str) -> serde_json::Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}})
}

fn signature_delta(index: usize, signature: &str) -> serde_json::Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}})
}

#[test]
fn thinking_and_redacted_thinking_are_kept_in_order_with_signatures() {
    let (flow, state, pieces) = run_pieces(&[
        json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 5}}}),
        thinking_start(0),
        thinking_delta(0, "Let me "),
        thinking_delta(0, "think."),
        signature_delta(0, "EqQBCgIYAh"),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "redacted_thinking", "data": "EmwKAhgB"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block":
            {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"a\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        json!({"type": "message_stop"}),
    ]);
    assert!(matches!(flow, Ok(Flow::Done)));
    assert_eq!(
        pieces,
        [
            Piece::Thinking("Let me ".into()),
            Piece::Thinking("think.".into()),
            Piece::Redacted,
        ]
    );
    assert_eq!(
        state.finish().message.content,
        vec![
            Block::Thinking {
                thinking: "Let me think.".into(),
                signature: Some("EqQBCgIYAh".into()),
            },
            Block::RedactedThinking {
                data: "EmwKAhgB".into()
            },
            Block::ToolUse(ToolCall {
                id: "toolu_1".into(),
                name: "fs_read".into(),
                input: json!({"path": "a"}),
                input_error: None,
            }),
        ]
    );
}

#[test]
fn omitted_thinking_keeps_its_signature_and_empty_unsigned_thinking_goes() {
    let (_, state, pieces) = run_pieces(&[
        thinking_start(0),
        signature_delta(0, "sig"),
        json!({"type": "content_block_stop", "index": 0}),
        thinking_start(1),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_stop"}),
    ]);
    assert!(pieces.is_empty(), "{pieces:?}");
    assert_eq!(
        state.finish().message.content,
        vec![Block::Thinking {
            thinking: String::new(),
            signature: Some("sig".into()),
        }]
    );
}

#[test]
fn overloaded_during_thinking_is_retried_but_not_after_text() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let (flow, _, pieces) = run_pieces(&[
        thinking_start(0),
        thinking_delta(0, "hm"),
        signature_delta(0, "sig"),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "x"}}),
        overloaded.clone(),
    ]);
    assert!(matches!(flow, Err(Attempt::Retry { .. })), "{flow:?}");
    assert_eq!(pieces.len(), 2);

    let (flow, _, _) = run_pieces(&[
        thinking_start(0),
        thinking_delta(0, "hm"),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}}),
        overloaded,
    ]);
    assert!(
        matches!(flow, Err(Attempt::Fatal(ProviderError::Transport(_)))),
        "{flow:?}"
    );
}

#[test]
fn a_thinking_delta_on_a_text_block_is_an_error() {
    let (flow, _, _) = run_pieces(&[
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        thinking_delta(0, "hm"),
    ]);
    assert!(matches!(flow, Err(Attempt::Fatal(_))), "{flow:?}");
}

fn tool_start(input: serde_json::Value) -> serde_json::Value {
    json!({"type": "content_block_start", "index": 0, "content_block":
        {"type": "tool_use", "id": "t", "name": "fs_read", "input": input}})
}

#[test]
fn tool_input_whole_in_the_start_is_used_and_deltas_win() {
    let input = |events: &[serde_json::Value]| {
        let (_, state, _) = run(events);
        let response = state.finish();
        let call = response.message.tool_calls().next().cloned();
        call.unwrap_or_else(|| panic!("no call in {response:?}"))
    };
    let whole = input(&[
        tool_start(json!({"path": "src/lib.rs"})),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_stop"}),
    ]);
    assert_eq!(whole.input, json!({"path": "src/lib.rs"}));
    assert_eq!(whole.input_error, None);

    let streamed = input(&[
        tool_start(json!({"path": "stale"})),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"new\"}"}}),
        json!({"type": "message_stop"}),
    ]);
    assert_eq!(streamed.input, json!({"path": "new"}));

    let empty = input(&[tool_start(json!({})), json!({"type": "message_stop"})]);
    assert_eq!(empty.input, json!({}));
    assert_eq!(empty.input_error, None);
}

#[test]
fn a_refusal_carries_its_explanation() {
    let refusal = |details: serde_json::Value| {
        let (_, state, _) = run(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sure, here"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null,
                   "stop_details": details}}),
            json!({"type": "message_stop"}),
        ]);
        state.finish()
    };
    let response = refusal(json!({"type": "refusal", "category": "cyber",
        "explanation": " This request asks for working malware. "}));
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(
        response.stop_detail.as_deref(),
        Some("This request asks for working malware.")
    );
    let response = refusal(
        json!({"type": "refusal", "category": "reasoning_extraction", "explanation": null}),
    );
    assert_eq!(
        response.stop_detail.as_deref(),
        Some("category: reasoning extraction")
    );
    assert_eq!(refusal(json!(null)).stop_detail, None);
}
