//! The Anthropic provider against the mock Messages API.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Wire, ask, fast_http, provider};
use mecha_core::{Message, Usage};
use mecha_provider::ProviderError;
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

const WIRE: Wire = Wire::Anthropic;

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
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][0]["type"], "tool_use");
    assert_eq!(
        messages[1]["content"][0]["input"],
        json!({"path": "missing"})
    );
    let result = &messages[2];
    assert_eq!(result["role"], "user");
    assert_eq!(result["content"][0]["type"], "tool_result");
    assert_eq!(
        result["content"][0]["tool_use_id"],
        messages[1]["content"][0]["id"]
    );
    assert_eq!(result["content"][0]["content"], "no such file: missing");
    assert_eq!(result["content"][0]["is_error"], true);
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
async fn usage_with_cache_reads_and_writes() {
    let usage = common::usage_is_mapped(WIRE).await;
    assert_eq!(
        usage,
        Usage {
            input_tokens: 11,
            output_tokens: 22,
            cache_read_tokens: 3000,
            cache_write_tokens: 400,
        }
    );
}

#[tokio::test]
async fn overloaded_event_before_content_is_retried() {
    let mock = MockModel::start(vec![MockReply::overloaded(), MockReply::text("recovered")]).await;
    let provider = provider(WIRE, &mock, fast_http());
    let (response, pieces) = ask(provider.as_ref(), &[Message::user_text("hi")]).await;
    assert_eq!(response.unwrap().message.text(), "recovered");
    assert_eq!(pieces.concat(), "recovered");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_every_time_is_exhausted() {
    let replies = (0..5).map(|_| MockReply::overloaded()).collect();
    let mock = MockModel::start(replies).await;
    let provider = provider(WIRE, &mock, fast_http());
    let (response, _) = ask(provider.as_ref(), &[Message::user_text("hi")]).await;
    match response {
        Err(ProviderError::Exhausted(m)) => assert!(m.contains("overloaded_error"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.requests().len(), 5);
}

#[tokio::test]
async fn headers_and_cache_breakpoints() {
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let provider = provider(WIRE, &mock, fast_http());
    ask(provider.as_ref(), &[Message::user_text("hi")])
        .await
        .0
        .unwrap();
    let request = &mock.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.header("x-api-key"), Some(common::KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert!(request.header("authorization").is_none());

    let body = &request.body;
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], mecha_provider::DEFAULT_MAX_TOKENS);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}])
    );
    let tools = body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fs_list", "fs_read"], "tools keep the given order");
    assert!(tools[0].get("cache_control").is_none());
    assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(tools[1]["input_schema"]["type"], "object");
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn identical_requests_send_identical_bodies() {
    let mock = MockModel::start(vec![MockReply::text("a"), MockReply::text("b")]).await;
    let provider = provider(WIRE, &mock, fast_http());
    for _ in 0..2 {
        ask(provider.as_ref(), &[Message::user_text("hi")])
            .await
            .0
            .unwrap();
    }
    let requests = mock.requests();
    assert_eq!(requests[0].body.to_string(), requests[1].body.to_string());
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    common::connection_refused_names_the_url(WIRE).await;
}
