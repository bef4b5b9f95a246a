//! Images in tool results through the real binary: an MCP server's image
//! and an image file reach the model the way each API takes them, within
//! the cap and the turn budget, and a text-only model is told what it is
//! not shown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, stderr, tool_turn};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};
use serde_json::{Value, json};

/// The fixture server's 1x1 PNG, as it sends it.
const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn fixture_server() -> String {
    format!(
        "[[mcp]]\nname = \"fx\"\ncommand = {:?}\n",
        fixture_mcp().display().to_string()
    )
}

/// Runs one model turn of `calls`, then an answer; returns the mock, whose
/// second request carries the results.
async fn run(e: &common::Env, api: Api, calls: &[(&str, Value)]) -> MockModel {
    let mock = MockModel::start(vec![tool_turn(calls), MockReply::text("seen")]).await;
    let out = e.run(api, &mock, "k", &["--yes", "look"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 2, "{}", stderr(&out));
    mock
}

/// The Anthropic tool_result blocks of the last user message of request 1.
fn anthropic_results(mock: &MockModel) -> Vec<Value> {
    let body = &mock.requests()[1].body;
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

fn image_block(data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}})
}

/// Every image block anywhere in a request body.
fn images_in(body: &Value) -> usize {
    body.to_string().matches("\"type\":\"image").count()
}

#[tokio::test]
async fn an_mcp_image_reaches_anthropic_as_an_image_block_in_the_tool_result() {
    let mut e = env();
    e.extra_config = fixture_server();
    let mock = run(&e, Api::Anthropic, &[("fx__image", json!({}))]).await;
    let results = anthropic_results(&mock);
    assert_eq!(results.len(), 1);
    let content = results[0]["content"].as_array().unwrap();
    assert_eq!(content[0], json!({"type": "text", "text": "a screenshot"}));
    assert_eq!(content[1], image_block(TINY_PNG));
    assert_eq!(content.len(), 2, "{content:?}");
}

#[tokio::test]
async fn an_mcp_image_reaches_openai_in_a_user_message_after_the_tool_messages() {
    let mut e = env();
    e.extra_config = fixture_server();
    let mock = run(&e, Api::OpenAi, &[("fx__image", json!({}))]).await;
    let body = &mock.requests()[1].body;
    let messages = body["messages"].as_array().unwrap();
    let tool_at = messages.iter().position(|m| m["role"] == "tool").unwrap();
    let tool = &messages[tool_at];
    assert_eq!(tool["content"], "a screenshot");
    let next = &messages[tool_at + 1];
    assert_eq!(next["role"], "user", "{messages:?}");
    let parts = next["content"].as_array().unwrap();
    let id = tool["tool_call_id"].as_str().unwrap();
    assert_eq!(parts[0]["type"], "text");
    assert!(
        parts[0]["text"].as_str().unwrap().contains(id),
        "the text names the call the image belongs to: {parts:?}"
    );
    assert_eq!(
        parts[1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{TINY_PNG}")}})
    );
}

fn png_file(len: usize) -> Vec<u8> {
    use base64::Engine;
    let mut bytes = base64::engine::general_purpose::STANDARD
        .decode(TINY_PNG)
        .unwrap();
    bytes.resize(len.max(bytes.len()), 0);
    bytes
}

#[tokio::test]
async fn fs_read_of_a_png_sends_the_image_whatever_the_file_is_called() {
    let e = env();
    let png = png_file(0);
    std::fs::write(e.ws.join("shot.dat"), &png).unwrap();
    let mock = run(
        &e,
        Api::Anthropic,
        &[("fs_read", json!({"path": "shot.dat"}))],
    )
    .await;
    let results = anthropic_results(&mock);
    let content = results[0]["content"].as_array().unwrap();
    assert_eq!(content[0]["text"], "shot.dat: image/png, 70 bytes");
    assert_eq!(content[1], image_block(TINY_PNG));
}

#[tokio::test]
async fn an_image_over_the_cap_is_described_not_sent() {
    let e = env();
    std::fs::write(e.ws.join("big.png"), png_file(6 * 1024 * 1024)).unwrap();
    let mock = run(
        &e,
        Api::Anthropic,
        &[("fs_read", json!({"path": "big.png"}))],
    )
    .await;
    let body = &mock.requests()[1].body;
    assert_eq!(images_in(body), 0);
    let results = anthropic_results(&mock);
    assert_eq!(
        results[0]["content"],
        "[image: image/png, 6.0 MB, not shown: it is 6.0 MB, over the 5.0 MB cap for one \
         image; it stays at big.png]"
    );
}

#[tokio::test]
async fn images_count_against_the_turn_budget() {
    let mut e = env();
    e.extra_config = "[tools]\noutput_budget_bytes = 9000\n".into();
    std::fs::write(e.ws.join("a.png"), png_file(0)).unwrap();
    std::fs::write(e.ws.join("b.png"), png_file(0)).unwrap();
    // One call has the room for its image.
    let mock = run(&e, Api::Anthropic, &[("fs_read", json!({"path": "a.png"}))]).await;
    assert_eq!(images_in(&mock.requests()[1].body), 1);
    // Two share the same budget, and neither share holds an image.
    let mock = run(
        &e,
        Api::Anthropic,
        &[
            ("fs_read", json!({"path": "a.png"})),
            ("fs_read", json!({"path": "b.png"})),
        ],
    )
    .await;
    assert_eq!(images_in(&mock.requests()[1].body), 0);
    for result in anthropic_results(&mock) {
        let text = result["content"].as_str().unwrap();
        assert!(
            text.contains(
                "[image: image/png, 70 bytes, not shown: this call's share of the turn's output \
                 budget has no room for it (an image counts as 4800 bytes); read the saved copy \
                 with fs_read in a turn with fewer calls; saved at /"
            ),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_text_only_model_gets_a_placeholder_that_says_why() {
    let mut e = env();
    // Lands in [provider], which the harness writes just before it.
    e.extra_config = "images = false\n".to_owned() + &fixture_server();
    let mock = run(&e, Api::OpenAi, &[("fx__image", json!({}))]).await;
    let body = &mock.requests()[1].body;
    assert!(!body.to_string().contains("image_url"), "{body}");
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    let text = tool["content"].as_str().unwrap();
    assert!(
        text.starts_with(
            "a screenshot\n[image: image/png, 70 bytes, not shown: the configured model does not \
             take images (a text-only provider, or `images = false` in [provider]); saved at /"
        ),
        "{text}"
    );
    assert_eq!(
        messages.last().unwrap()["role"],
        "tool",
        "no user message follows: {messages:?}"
    );
}
