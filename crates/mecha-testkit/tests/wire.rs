//! The mock's bytes on the wire, read with a raw HTTP/1.1 client so nothing
//! between the test and the socket tidies them up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use mecha_core::StopReason;
use mecha_provider::Quirk;
use mecha_testkit::{MockModel, MockReply, ScriptToolCall, ScriptTurn};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one request with `Connection: close` and returns the whole
/// response (head and body) as text.
async fn raw_post(mock: &MockModel, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut stream = TcpStream::connect(mock.addr()).await.unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        mock.addr(),
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

const ANTHROPIC_HEADERS: &[(&str, &str)] =
    &[("x-api-key", "k"), ("anthropic-version", "2023-06-01")];

#[tokio::test]
async fn anthropic_stream_has_the_real_shape() {
    let turn = ScriptTurn::calls(vec![ScriptToolCall::new(
        "fs_read",
        json!({"path": "a.txt"}),
    )])
    .with_text("Hello there, world");
    let mock = MockModel::start(vec![turn.into()]).await;
    let body = json!({"model": "claude-x", "stream": true}).to_string();
    let response = raw_post(&mock, "/v1/messages", ANTHROPIC_HEADERS, &body).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("content-type: text/event-stream"));
    let order = [
        "event: message_start",
        "event: content_block_start",
        "event: ping",
        "\"text_delta\"",
        "event: content_block_stop",
        "\"tool_use\"",
        "\"partial_json\":\"\"",
        "event: message_delta",
        "\"stop_reason\":\"tool_use\"",
        "event: message_stop",
    ];
    let mut from = 0;
    for needle in order {
        let at = response[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing after byte {from}:\n{response}"));
        from += at;
    }
    assert!(response.matches("\"text_delta\"").count() >= 3);
    assert!(response.matches("\"input_json_delta\"").count() >= 3);
    assert!(response.contains("\"model\":\"claude-x\""));
}

#[tokio::test]
async fn openai_stream_has_the_real_shape() {
    let turn = ScriptTurn::call("fs_read", json!({"path": "a.txt"})).with_text("Hi there");
    let mock = MockModel::start(vec![turn.clone().into(), turn.into()]).await;
    let with_usage =
        json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
    let response = raw_post(&mock, "/v1/chat/completions", &[], &with_usage.to_string()).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"finish_reason\":\"tool_calls\""));
    assert!(response.contains("\"prompt_tokens_details\""));
    assert!(response.contains("data: [DONE]"));
    assert!(!response.contains("event:"));
    assert!(response.matches("\"arguments\"").count() >= 3);

    let without = json!({"model": "m", "stream": true}).to_string();
    let response = raw_post(&mock, "/v1/chat/completions", &[], &without).await;
    assert!(!response.contains("prompt_tokens"), "usage only when asked");
    assert!(response.contains("data: [DONE]"));
}

/// One OpenAI-compatible stream of `reply`, usage requested.
async fn openai_stream(reply: MockReply) -> String {
    let mock = MockModel::start(vec![reply]).await;
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
    raw_post(&mock, "/v1/chat/completions", &[], &body.to_string()).await
}

#[tokio::test]
async fn openai_compatible_servers_habits_have_their_shape() {
    let thinking = ScriptTurn::text("Four.").with_thinking("Two and two.");
    let vllm = openai_stream(thinking.clone().into()).await;
    assert!(vllm.matches("\"reasoning\":\"").count() >= 2, "{vllm}");
    assert!(vllm.find("\"reasoning\"") < vllm.find("\"content\":\"Fo"));
    let llama = openai_stream(thinking.with_quirk(Quirk::ReasoningContent).into()).await;
    assert!(llama.matches("\"reasoning_content\":\"").count() >= 2);
    assert!(!llama.contains("\"reasoning\":"), "{llama}");

    let mut refused = ScriptTurn::default().with_stop_reason(StopReason::Refusal);
    refused.stop_detail = Some("I can't help with that.".into());
    let openai = openai_stream(refused.into()).await;
    assert!(openai.matches("\"refusal\":\"").count() >= 2, "{openai}");
    assert!(openai.contains("\"finish_reason\":\"stop\""), "{openai}");

    let two = || {
        ScriptTurn::calls(vec![
            ScriptToolCall::new("fs_read", json!({"path": "a"})),
            ScriptToolCall::new("fs_read", json!({"path": "b"})),
        ])
    };
    let ollama = openai_stream(two().with_quirk(Quirk::SameIndex).into()).await;
    assert_eq!(
        ollama.matches("\"index\":0,\"type\":\"function\"").count(),
        2,
        "{ollama}"
    );
    assert!(!ollama.contains("\"index\":1"), "{ollama}");
    assert!(ollama.contains("\"id\":\"call_1_1\"") && ollama.contains("\"id\":\"call_1_2\""));
    let objects = openai_stream(two().with_quirk(Quirk::ArgumentsObject).into()).await;
    assert!(
        objects.contains("\"arguments\":{\"path\":\"b\"}"),
        "{objects}"
    );
    let null = openai_stream(ScriptTurn::text("ok").with_quirk(Quirk::NullChoices).into()).await;
    assert!(null.contains("\"choices\":null,\"created\""), "{null}");

    let error = MockReply::LlamaCppError {
        message: "boom".into(),
    };
    let llama = openai_stream(error).await;
    assert!(
        llama
            .contains("\nerror: {\"code\":500,\"message\":\"boom\",\"type\":\"server_error\"}\n\n"),
        "{llama}"
    );
    assert!(
        llama.contains("data: [DONE]") && !llama.contains("data: {"),
        "{llama}"
    );
}

#[tokio::test]
async fn refusals_a_real_api_would_make() {
    let mock = MockModel::start(vec![MockReply::text("x")]).await;
    let missing_version = raw_post(&mock, "/v1/messages", &[("x-api-key", "k")], "{}").await;
    assert!(
        missing_version.starts_with("HTTP/1.1 400"),
        "{missing_version}"
    );
    assert!(missing_version.contains("anthropic-version"));

    let not_found = raw_post(&mock, "/v2/other", &[], "{}").await;
    assert!(not_found.starts_with("HTTP/1.1 404"), "{not_found}");

    mock.expect_api_key("right");
    let wrong = raw_post(
        &mock,
        "/v1/chat/completions",
        &[("authorization", "Bearer wrong")],
        "{}",
    )
    .await;
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    assert_eq!(mock.remaining(), 1, "a refused request uses up no reply");

    let ok = raw_post(
        &mock,
        "/v1/chat/completions",
        &[("authorization", "Bearer right")],
        "{}",
    )
    .await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let none_left = raw_post(
        &mock,
        "/v1/chat/completions",
        &[("authorization", "Bearer right")],
        "{}",
    )
    .await;
    assert!(
        none_left.starts_with("HTTP/1.1 400") && none_left.contains("no scripted reply left"),
        "{none_left}"
    );
    assert_eq!(mock.requests().len(), 5);
}

#[tokio::test]
async fn status_with_retry_after() {
    let mock = MockModel::start(vec![MockReply::status_retry_after(429, 7)]).await;
    let response = raw_post(&mock, "/v1/messages", ANTHROPIC_HEADERS, "{}").await;
    assert!(response.starts_with("HTTP/1.1 429"), "{response}");
    assert!(response.contains("retry-after: 7"));
    assert!(response.contains("rate_limit_error"));
}
