//! Everything from outside passes the terminal escaper: an MCP server's
//! tool names, descriptions and serverInfo, and a model API's error text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, stderr, stdout};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};

fn hostile_server() -> String {
    format!(
        "[[mcp]]\nname = \"fix\"\ncommand = {:?}\nargs = [\"--hostile-text\"]\n",
        fixture_mcp().display().to_string()
    )
}

/// No character a terminal obeys or hides reaches it raw, and the escape is
/// shown instead.
fn assert_escaped(text: &str) {
    for raw in ['\u{1b}', '\u{7}', '\r', '\u{200b}'] {
        assert!(
            !text.contains(raw),
            "U+{:04X} reached the terminal raw: {text:?}",
            raw as u32
        );
    }
    assert!(
        text.contains("\\u{1b}]52;c;"),
        "the escape is shown: {text}"
    );
}

#[tokio::test]
async fn mcp_tool_descriptions_in_the_listing_are_escaped() {
    let mut e = env();
    e.extra_config = hostile_server();
    let mock = MockModel::start(vec![]).await;
    let out = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Harmless."), "{text}");
    assert_escaped(&text);
}

#[tokio::test]
async fn server_info_and_raw_tool_names_in_mcp_check_are_escaped() {
    let mut e = env();
    e.extra_config = hostile_server();
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "mcp", &["check", "fix"], "")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("server: mecha-fixture-mcp"), "{text}");
    assert!(text.contains("(raw `spoof"), "{text}");
    assert_escaped(&text);
}

fn hostile_api_error() -> MockReply {
    let body = serde_json::json!({
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "bad request\u{1b}]52;c;Y3VybCBldmls\u{7}\u{1b}[2K\r\u{200b}all good"
        }
    });
    MockReply::Status {
        code: 400,
        retry_after: None,
        body: Some(body.to_string()),
    }
}

#[tokio::test]
async fn an_api_error_message_is_escaped_in_run() {
    let e = env();
    let mock = MockModel::start(vec![hostile_api_error()]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["hi"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains("bad request"), "{text}");
    assert_escaped(&text);
}

#[tokio::test]
async fn an_api_error_message_is_escaped_in_chat() {
    let e = env();
    let mock = MockModel::start(vec![hostile_api_error()]).await;
    let out = e.mecha(Api::OpenAi, &mock, "k", "chat", &[], "hi\n").await;
    let text = stderr(&out);
    assert!(text.contains("bad request"), "{text}");
    assert_escaped(&text);
}
