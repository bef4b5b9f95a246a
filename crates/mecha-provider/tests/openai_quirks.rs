//! The OpenAI-compatible provider against the mock, streaming what real
//! servers send beyond the documented basics: reasoning (vLLM, ollama,
//! llama.cpp, DeepSeek), OpenAI's refusals, output limits that cut a call,
//! ollama's reused index, arguments as objects, `"choices": null`, the old
//! llama.cpp `error:` line, and the output-limit field.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::{KEY, Wire, ask_streamed as ask, fast_http, provider};
use mecha_core::{Block, Message, Role, StopReason};
use mecha_provider::{
    Kind, MaxTokensField, ProviderError, ProviderSettings, Quirk, Response, build_with,
};
use mecha_testkit::{MockModel, MockReply, ScriptToolCall, ScriptTurn};
use serde_json::{Value, json};

async fn one_turn(turn: ScriptTurn) -> (Result<Response, ProviderError>, Vec<String>) {
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = provider(Wire::OpenAi, &mock, fast_http());
    ask(provider.as_ref(), &[Message::user_text("go")]).await
}

fn read(path: &str) -> ScriptToolCall {
    ScriptToolCall::new("fs_read", json!({ "path": path }))
}

fn results_for(response: &Response) -> Message {
    Message {
        role: Role::User,
        content: response
            .message
            .tool_calls()
            .map(|call| Block::ToolResult {
                tool_use_id: call.id.clone(),
                content: "contents".into(),
                is_error: false,
                images: Vec::new(),
            })
            .collect(),
    }
}

#[tokio::test]
async fn reasoning_streams_as_thinking_and_goes_back_with_the_call_in_its_field() {
    for (quirk, field) in [
        (None, "reasoning"),
        (Some(Quirk::ReasoningContent), "reasoning_content"),
    ] {
        let mut first = ScriptTurn::calls(vec![read("a")]).with_thinking("I must read a first.");
        first.quirks.extend(quirk);
        let mock = MockModel::start(vec![first.into(), MockReply::text("Done.")]).await;
        let provider = provider(Wire::OpenAi, &mock, fast_http());
        let mut messages = vec![Message::user_text("what is in a?")];
        let (response, pieces) = ask(provider.as_ref(), &messages).await;
        let response = response.unwrap();
        assert!(pieces.len() >= 2, "{pieces:?}");
        let streamed: String = pieces
            .iter()
            .map(|p| {
                p.strip_prefix("thinking:")
                    .unwrap_or_else(|| panic!("{pieces:?}"))
            })
            .collect();
        assert_eq!(streamed, "I must read a first.");
        assert_eq!(
            response.message.content[0],
            Block::Thinking {
                thinking: "I must read a first.".into(),
                signature: None
            }
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        messages.push(response.message.clone());
        messages.push(results_for(&response));
        let (second, _) = ask(provider.as_ref(), &messages).await;
        assert_eq!(second.unwrap().message.text(), "Done.");
        let sent = &mock.requests()[1].body["messages"][2];
        assert_eq!(sent["role"], "assistant");
        assert_eq!(sent[field], json!("I must read a first."), "{sent:#}");
        assert_eq!(sent["tool_calls"].as_array().map(Vec::len), Some(1));
    }
}

#[tokio::test]
async fn a_refusal_in_words_is_a_refusal_with_them() {
    let mut turn = ScriptTurn::default().with_stop_reason(StopReason::Refusal);
    turn.stop_detail = Some("I can't help with that.".into());
    let (response, pieces) = one_turn(turn).await;
    let response = response.unwrap();
    assert!(
        pieces.is_empty(),
        "the refusal is not answer text: {pieces:?}"
    );
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(
        response.stop_detail.as_deref(),
        Some("I can't help with that.")
    );
}

#[tokio::test]
async fn a_call_cut_by_the_output_limit_is_max_tokens() {
    let turn = ScriptTurn::calls(vec![ScriptToolCall::raw(
        "fs_write",
        r#"{"path":"big.txt","content":"aaaa"#,
    )])
    .with_stop_reason(StopReason::MaxTokens);
    let (response, _) = one_turn(turn).await;
    let response = response.unwrap();
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.message.tool_calls().count(), 1);
}

#[tokio::test]
async fn ollama_calls_all_at_index_zero_stay_apart() {
    let turn = ScriptTurn::calls(vec![read("a"), read("b")]).with_quirk(Quirk::SameIndex);
    let (response, _) = one_turn(turn).await;
    let calls: Vec<_> = response.unwrap().message.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    for (call, path) in calls.iter().zip(["a", "b"]) {
        assert_eq!(call.name, "fs_read");
        assert_eq!(call.input, json!({ "path": path }));
        assert_eq!(call.input_error, None);
    }
    assert_ne!(calls[0].id, calls[1].id);
}

#[tokio::test]
async fn arguments_sent_as_an_object_are_used() {
    let turn = ScriptTurn::calls(vec![read("src/main.rs")]).with_quirk(Quirk::ArgumentsObject);
    let (response, _) = one_turn(turn).await;
    let calls: Vec<_> = response.unwrap().message.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].input, json!({"path": "src/main.rs"}));
    assert_eq!(calls[0].input_error, None);
}

#[tokio::test]
async fn a_chunk_with_null_choices_is_tolerated() {
    let turn = ScriptTurn::text("Fine.").with_quirk(Quirk::NullChoices);
    let (response, _) = one_turn(turn).await;
    let response = response.unwrap();
    assert_eq!(response.message.text(), "Fine.");
    assert_eq!(response.usage.output_tokens, 10);
}

#[tokio::test]
async fn a_llama_cpp_error_line_is_reported_with_its_message() {
    let mock = MockModel::start(vec![MockReply::LlamaCppError {
        message: "the request exceeds the available context size, try increasing it".into(),
    }])
    .await;
    let provider = provider(Wire::OpenAi, &mock, fast_http());
    let (response, _) = ask(provider.as_ref(), &[Message::user_text("go")]).await;
    match response {
        Err(ProviderError::Api(m)) => {
            assert!(m.contains("exceeds the available context size"), "{m}");
        }
        other => panic!("{other:?}"),
    }
}

async fn limit_fields(field: Option<MaxTokensField>) -> Value {
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let settings = ProviderSettings {
        kind: Some(Kind::OpenAi),
        model: Some("gpt-test".into()),
        base_url: Some(mock.openai_url()),
        max_tokens: Some(1234),
        max_tokens_field: field,
        ..ProviderSettings::default()
    };
    let env = HashMap::from([("OPENAI_API_KEY", KEY)]);
    let provider = build_with(
        &settings,
        &|n| env.get(n).map(|v| (*v).to_owned()),
        fast_http(),
    )
    .unwrap();
    ask(provider.as_ref(), &[Message::user_text("go")])
        .await
        .0
        .unwrap();
    let body = mock.requests()[0].body.clone();
    json!([body["max_tokens"], body["max_completion_tokens"]])
}

#[tokio::test]
async fn max_tokens_field_chooses_the_limits_name() {
    // A local server gets `max_tokens` unless told otherwise.
    assert_eq!(limit_fields(None).await, json!([1234, null]));
    assert_eq!(
        limit_fields(Some(MaxTokensField::MaxCompletionTokens)).await,
        json!([null, 1234])
    );
    assert_eq!(
        limit_fields(Some(MaxTokensField::MaxTokens)).await,
        json!([1234, null])
    );
}
