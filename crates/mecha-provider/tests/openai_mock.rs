//! The OpenAI-compatible provider against the mock Chat Completions API.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::{Wire, ask, fast_http, provider};
use mecha_core::{Message, Usage};
use mecha_provider::{Kind, ProviderError, ProviderSettings, build_with};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

const WIRE: Wire = Wire::OpenAi;

#[tokio::test]
async fn text_streams_in_pieces() {
    common::text_streams_in_pieces(WIRE).await;
}

#[tokio::test]
async fn one_tool_call() {
    common::one_tool_call(WIRE).await;
}

#[tokio::test]
async fn several_calls_in_one_turn() {
    common::several_calls_in_one_turn(WIRE).await;
}

#[tokio::test]
async fn bad_arguments_become_input_error() {
    common::bad_arguments_become_input_error(WIRE).await;
}

#[tokio::test]
async fn tool_error_round_trip() {
    let body = common::tool_error_round_trip(WIRE).await;
    let messages = body["messages"].as_array().unwrap();
    // system, user, assistant with the call, the tool's result.
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "You are a test."})
    );
    let call = &messages[2]["tool_calls"][0];
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "fs_read");
    assert_eq!(call["function"]["arguments"], r#"{"path":"missing"}"#);
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": call["id"], "content": "Error: no such file: missing"})
    );
}

#[tokio::test]
async fn cut_stream_is_transport_error() {
    common::cut_stream_is_transport_error(WIRE).await;
}

#[tokio::test]
async fn rate_limit_then_success() {
    common::rate_limit_then_success(WIRE).await;
}

#[tokio::test]
async fn server_errors_exhaust_retries() {
    common::server_errors_exhaust_retries(WIRE).await;
}

#[tokio::test]
async fn bad_request_is_api_error() {
    common::bad_request_is_api_error(WIRE).await;
}

#[tokio::test]
async fn wrong_key_is_auth_error_naming_the_variable() {
    common::wrong_key_is_auth_error_naming_the_variable(WIRE).await;
}

#[tokio::test]
async fn malformed_event_is_named() {
    common::malformed_event_is_named(WIRE).await;
}

#[tokio::test]
async fn stall_hits_the_idle_timeout() {
    common::stall_hits_the_idle_timeout(WIRE).await;
}

#[tokio::test]
async fn connection_is_kept_alive() {
    common::connection_is_kept_alive(WIRE).await;
}

#[tokio::test]
async fn max_tokens_stop_reason() {
    common::max_tokens_stop_reason(WIRE).await;
}

#[tokio::test]
async fn usage_with_cached_prompt_tokens() {
    let usage = common::usage_is_mapped(WIRE).await;
    // prompt_tokens (3011) counts the cached ones; mecha counts them apart.
    assert_eq!(
        usage,
        Usage {
            input_tokens: 11,
            output_tokens: 22,
            cache_read_tokens: 3000,
            cache_write_tokens: 0,
        }
    );
}

#[tokio::test]
async fn in_band_error_is_an_api_error() {
    let mock = MockModel::start(vec![MockReply::ErrorEvent {
        kind: "server_error".into(),
        message: "the model crashed".into(),
    }])
    .await;
    let provider = provider(WIRE, &mock, fast_http());
    let (response, _) = ask(provider.as_ref(), &[Message::user_text("hi")]).await;
    match response {
        Err(ProviderError::Api(m)) => assert!(m.contains("the model crashed"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn request_shape_and_headers() {
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let provider = provider(WIRE, &mock, fast_http());
    ask(provider.as_ref(), &[Message::user_text("hi")])
        .await
        .0
        .unwrap();
    let request = &mock.requests()[0];
    assert_eq!(request.header("authorization"), Some("Bearer test-key-123"));
    assert!(request.header("x-api-key").is_none());
    let body = &request.body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert!(
        body.get("max_tokens").is_none(),
        "no limit unless configured"
    );
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "fs_list");
    assert_eq!(tools[1]["function"]["parameters"]["type"], "object");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "hi"},
        ])
    );
}

/// A local server (ollama, llama.cpp) needs no key: none is sent.
#[tokio::test]
async fn local_endpoint_without_a_key() {
    let mock = MockModel::start(vec![MockReply::text("local")]).await;
    let settings = ProviderSettings {
        kind: Some(Kind::OpenAi),
        model: Some("qwen3:8b".into()),
        max_tokens: Some(2048),
        ..ProviderSettings::default()
    };
    let env = HashMap::from([("OPENAI_BASE_URL", mock.openai_url())]);
    let provider = build_with(&settings, &|n| env.get(n).cloned(), fast_http()).unwrap();
    assert!(provider.describe().contains("qwen3:8b"));
    let (response, _) = ask(provider.as_ref(), &[Message::user_text("hi")]).await;
    assert_eq!(response.unwrap().message.text(), "local");
    let request = &mock.requests()[0];
    assert!(request.header("authorization").is_none());
    assert_eq!(request.body["max_tokens"], 2048);
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    common::connection_refused_names_the_url(WIRE).await;
}
