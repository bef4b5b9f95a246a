use super::*;
use serde_json::json;

fn data(text: &str) -> Event {
    Event {
        event: "message".into(),
        data: text.into(),
        id: String::new(),
        retry: None,
    }
}

fn run(chunks: &[&str]) -> (Result<Flow, Attempt>, StreamState, Vec<String>) {
    let (flow, state, pieces) = run_events(StreamState::default(), chunks.iter().map(|c| data(c)));
    let text = pieces
        .into_iter()
        .filter_map(|(thinking, t)| (!thinking).then_some(t))
        .collect();
    (flow, state, text)
}

/// Each streamed piece, `true` for thinking.
type Pieces = Vec<(bool, String)>;

fn run_events(
    mut state: StreamState,
    events: impl IntoIterator<Item = Event>,
) -> (Result<Flow, Attempt>, StreamState, Pieces) {
    let mut pieces = Vec::new();
    let mut on_stream = |piece: Streamed<'_>| match piece {
        Streamed::Text(t) => pieces.push((false, t.to_owned())),
        Streamed::Thinking(t) => pieces.push((true, t.to_owned())),
        Streamed::RedactedThinking | Streamed::Retrying(_) => {
            panic!("a decoder sends no {piece:?}")
        }
    };
    let mut flow = Ok(Flow::Continue);
    for event in events {
        flow = state.handle(&event, &mut on_stream);
        if !matches!(flow, Ok(Flow::Continue)) {
            break;
        }
    }
    (flow, state, pieces)
}

fn delta(delta: serde_json::Value, finish: Option<&str>) -> String {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
}

#[test]
fn text_tool_calls_and_usage() {
    let (flow, state, pieces) = run(&[
        r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Read"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"ing."},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"fs_read","arguments":""}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"fs_list","arguments":"{}"}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":500,"completion_tokens":30,"total_tokens":530,"prompt_tokens_details":{"cached_tokens":384}}}"#,
        "[DONE]",
    ]);
    assert!(matches!(flow, Ok(Flow::Done)), "{flow:?}");
    assert_eq!(pieces, ["Read", "ing."]);
    let response = state.finish();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 116,
            output_tokens: 30,
            cache_read_tokens: 384,
            cache_write_tokens: 0
        }
    );
    let calls: Vec<_> = response.message.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_a", "fs_read")
    );
    assert_eq!(calls[0].input, json!({"path": "a"}));
    assert_eq!(calls[1].name, "fs_list");
    assert_eq!(response.message.text(), "Reading.");
}

#[test]
fn done_without_finish_reason_is_an_early_end() {
    let (flow, _, _) = run(&[
        r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        "[DONE]",
    ]);
    match flow {
        Err(Attempt::Fatal(ProviderError::Transport(m))) => assert!(m.contains("ended early")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn finish_reasons_map() {
    let stop = |reason: &str| {
        let chunk =
            format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#);
        let (_, state, _) = run(&[&chunk]);
        state.finish().stop_reason
    };
    assert_eq!(stop("stop"), StopReason::EndTurn);
    assert_eq!(stop("length"), StopReason::MaxTokens);
    assert_eq!(stop("content_filter"), StopReason::Refusal);
    assert_eq!(stop("tool_calls"), StopReason::ToolUse);
    assert_eq!(stop("weird"), StopReason::Other("weird".into()));
}

#[test]
fn calls_without_index_or_id_and_stop_reason() {
    let (_, state, _) = run(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x1","function":{"name":"a","arguments":"{\"k\":1}"}},{"id":"x2","function":{"name":"b","arguments":"{nope"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"c","arguments":""}}]},"finish_reason":"stop"}]}"#,
    ]);
    let response = state.finish();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = response.message.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].input, json!({"k": 1}));
    // The id-less delta continued the last call.
    assert_eq!(calls[1].name, "bc");
    assert!(
        calls[1]
            .input_error
            .as_deref()
            .unwrap_or("")
            .contains("{nope")
    );
}

#[test]
fn error_chunk_and_malformed_chunk() {
    let (flow, _, _) = run(&[r#"{"error":{"message":"out of memory","type":"server_error"}}"#]);
    match flow {
        Err(Attempt::Fatal(ProviderError::Api(m))) => assert!(m.contains("out of memory")),
        other => panic!("{other:?}"),
    }
    let (flow, _, _) = run(&["{\"choices\": [tru"]);
    match flow {
        Err(Attempt::Fatal(ProviderError::Transport(m))) => assert!(m.contains("malformed")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reasoning_in_either_field_streams_as_thinking_before_the_text() {
    for field in ["reasoning", "reasoning_content"] {
        let memory = Arc::new(Memory::default());
        let chunks = [
            delta(json!({"role": "assistant", "content": ""}), None),
            delta(json!({field: "Let me "}), None),
            delta(json!({field: "think."}), None),
            delta(json!({"content": "Four."}), None),
            delta(json!({}), Some("stop")),
            "[DONE]".to_owned(),
        ];
        let (flow, state, pieces) = run_events(
            StreamState::new(Arc::clone(&memory)),
            chunks.iter().map(|c| data(c)),
        );
        assert!(matches!(flow, Ok(Flow::Done)), "{flow:?}");
        assert_eq!(
            pieces,
            [
                (true, "Let me ".to_owned()),
                (true, "think.".to_owned()),
                (false, "Four.".to_owned())
            ]
        );
        let response = state.finish();
        assert_eq!(
            response.message.content,
            vec![
                Block::Thinking {
                    thinking: "Let me think.".into(),
                    signature: None
                },
                Block::Text {
                    text: "Four.".into()
                }
            ]
        );
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(memory.reasoning_field().name(), field);
    }
}

#[test]
fn reasoning_sent_in_both_fields_counts_once() {
    let (_, state, pieces) = run(&[
        &delta(
            json!({"reasoning": "Hm.", "reasoning_content": "Hm."}),
            None,
        ),
        &delta(
            json!({"reasoning": null, "reasoning_content": "Ok."}),
            Some("stop"),
        ),
    ]);
    assert!(pieces.is_empty());
    let response = state.finish();
    assert_eq!(
        response.message.content,
        vec![Block::Thinking {
            thinking: "Hm.Ok.".into(),
            signature: None
        }]
    );
}

#[test]
fn length_cuts_a_tool_call_even_with_calls() {
    let (_, state, _) = run(&[
        &delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "fs_write", "arguments": "{\"path\":\"a\",\"content\":\"lo"}}]}),
            None,
        ),
        &delta(json!({}), Some("length")),
    ]);
    let response = state.finish();
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.message.tool_calls().count(), 1);
}

#[test]
fn a_refusal_delta_is_a_refusal_with_its_words() {
    let (_, state, pieces) = run(&[
        &delta(
            json!({"role": "assistant", "content": null, "refusal": ""}),
            None,
        ),
        &delta(json!({"refusal": "I can't help "}), None),
        &delta(json!({"refusal": "with that."}), None),
        &delta(json!({}), Some("stop")),
    ]);
    assert!(
        pieces.is_empty(),
        "a refusal is not answer text: {pieces:?}"
    );
    let response = state.finish();
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(
        response.stop_detail.as_deref(),
        Some("I can't help with that.")
    );
    assert!(response.message.content.is_empty());
    // content_filter has no words to give.
    let (_, state, _) = run(&[&delta(json!({"content": "Par"}), Some("content_filter"))]);
    let response = state.finish();
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(response.stop_detail, None);
}

#[test]
fn null_choices_are_no_choices() {
    let (flow, state, pieces) = run(&[
        &delta(json!({"content": "Hi"}), Some("stop")),
        r#"{"id":"c","choices":null,"usage":{"prompt_tokens":7,"completion_tokens":2}}"#,
        "[DONE]",
    ]);
    assert!(matches!(flow, Ok(Flow::Done)), "{flow:?}");
    assert_eq!(pieces, ["Hi"]);
    assert_eq!(state.finish().usage.output_tokens, 2);
}

#[test]
fn same_index_calls_with_their_own_ids_stay_apart() {
    let (_, state, _) = run(&[
        &delta(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "fs_read", "arguments": "{\"path\":\"a\"}"}}]}),
            None,
        ),
        &delta(
            json!({"tool_calls": [{"index": 0, "id": "call_2", "type": "function", "function": {"name": "fs_read", "arguments": {"path": "b"}}}]}),
            None,
        ),
        &delta(json!({}), Some("tool_calls")),
    ]);
    let calls: Vec<_> = state.finish().message.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        (calls[0].name.as_str(), calls[1].name.as_str()),
        ("fs_read", "fs_read")
    );
    assert_eq!(calls[0].input, json!({"path": "a"}));
    assert_eq!(calls[1].input, json!({"path": "b"}));
    assert_eq!(calls[1].id, "call_2");
}

#[test]
fn made_up_call_ids_do_not_repeat_across_turns() {
    let memory = Arc::new(Memory::default());
    let turn = || {
        let chunks = [delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "fs_list", "arguments": "{}"}}]}),
            Some("tool_calls"),
        )];
        let (_, state, _) = run_events(
            StreamState::new(Arc::clone(&memory)),
            chunks.iter().map(|c| data(c)),
        );
        let ids: Vec<String> = state
            .finish()
            .message
            .tool_calls()
            .map(|c| c.id.clone())
            .collect();
        ids
    };
    let (first, second) = (turn(), turn());
    assert_eq!((first.len(), second.len()), (1, 1));
    assert_ne!(first, second);
    assert!(!first[0].is_empty());
}

#[test]
fn an_error_line_is_reported_with_its_message() {
    let error = Event {
        event: crate::sse::ERROR_FIELD_EVENT.into(),
        data: r#"{"code":500,"message":"the request exceeds the available context size","type":"server_error"}"#.into(),
        id: String::new(),
        retry: None,
    };
    let (flow, _, _) = run_events(
        StreamState::default(),
        [
            data(&delta(json!({"content": "He"}), None)),
            error,
            data("[DONE]"),
        ],
    );
    match flow {
        Err(Attempt::Fatal(ProviderError::Api(m))) => {
            assert!(m.contains("exceeds the available context size"), "{m}");
        }
        other => panic!("{other:?}"),
    }
}
