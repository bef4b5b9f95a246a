//! The Anthropic provider against the mock Messages API: extended thinking
//! in a tool loop, retries while thinking, output limits, refusals and
//! compatible servers' habits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{KEY, ask_streamed as ask, fast_http};
use mecha_core::{Block, Message, Role, StopReason};
use mecha_provider::{
    Kind, Provider, ProviderError, ProviderSettings, Quirk, Thinking, build_with,
};
use mecha_testkit::{MockModel, MockReply, ScriptToolCall, ScriptTurn};
use serde_json::json;

fn provider_with(mock: &MockModel, settings: ProviderSettings) -> Arc<dyn Provider> {
    let settings = ProviderSettings {
        kind: Some(Kind::Anthropic),
        base_url: Some(mock.anthropic_url()),
        ..settings
    };
    let env = HashMap::from([("ANTHROPIC_API_KEY", KEY)]);
    build_with(
        &settings,
        &|name| env.get(name).map(|v| (*v).to_owned()),
        fast_http(),
    )
    .unwrap()
}

fn thinking_provider(mock: &MockModel) -> Arc<dyn Provider> {
    provider_with(
        mock,
        ProviderSettings {
            model: Some("claude-sonnet-4-5".into()),
            thinking: Some(Thinking::Budget(2048)),
            ..ProviderSettings::default()
        },
    )
}

fn thinking_call_turn() -> ScriptTurn {
    let mut turn = ScriptTurn::calls(vec![
        ScriptToolCall::new("fs_list", json!({"path": "."})).with_id("toolu_1"),
    ])
    .with_thinking("The user wants the files. I will list them.");
    turn.redacted_thinking = Some("EmwKAhgBEgy3va3pzix/LafPsn4a".into());
    turn
}

fn tool_result() -> Message {
    Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: "a.txt\nb.txt".into(),
            is_error: false,
            images: Vec::new(),
        }],
    }
}

/// The first turn of a tool loop with thinking on; the history to send next.
async fn first_turn(mock: &MockModel, provider: &dyn Provider) -> Vec<Message> {
    let mut messages = vec![Message::user_text("list the files")];
    let (response, pieces) = ask(provider, &messages).await;
    let response = response.unwrap();
    assert!(
        pieces.iter().filter(|p| p.starts_with("thinking:")).count() >= 2,
        "thinking streams in pieces: {pieces:?}"
    );
    assert_eq!(pieces.last().map(String::as_str), Some("redacted"));
    assert!(matches!(
        &response.message.content[..],
        [
            Block::Thinking {
                signature: Some(_),
                ..
            },
            Block::RedactedThinking { .. },
            Block::ToolUse(_)
        ]
    ));
    let first = &mock.requests()[0];
    assert_eq!(
        first.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        first.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    messages.push(response.message);
    messages.push(tool_result());
    messages
}

#[tokio::test]
async fn tool_loop_with_thinking_sends_the_blocks_back_intact() {
    let answer = ScriptTurn::text("Two files.").with_thinking("Both are text files.");
    let mock = MockModel::start(vec![thinking_call_turn().into(), answer.into()]).await;
    let provider = thinking_provider(&mock);
    let messages = first_turn(&mock, provider.as_ref()).await;

    let (response, _) = ask(provider.as_ref(), &messages).await;
    let response = response.unwrap_or_else(|e| panic!("the mock refused the second turn: {e}"));
    assert_eq!(response.message.text(), "Two files.");
    let sent = &mock.requests()[1].body["messages"][1]["content"];
    assert_eq!(sent[0]["type"], "thinking");
    assert_eq!(sent[1]["type"], "redacted_thinking");
    assert_eq!(sent[2]["type"], "tool_use");
}

#[tokio::test]
async fn the_mock_refuses_a_tool_loop_without_its_thinking_intact() {
    let mock = MockModel::start(vec![thinking_call_turn().into(), MockReply::text("never")]).await;
    let provider = thinking_provider(&mock);
    let history = first_turn(&mock, provider.as_ref()).await;

    // Dropped, as mecha did before it kept thinking.
    let mut dropped = history.clone();
    dropped[1]
        .content
        .retain(|b| matches!(b, Block::ToolUse(_)));
    let (response, _) = ask(provider.as_ref(), &dropped).await;
    match response {
        Err(ProviderError::Api(m)) => {
            assert!(
                m.contains("Expected `thinking` or `redacted_thinking`"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }

    // Edited: the signature no longer matches the text.
    let mut edited = history;
    if let Block::Thinking { thinking, .. } = &mut edited[1].content[0] {
        thinking.push_str(" And delete them.");
    }
    let (response, _) = ask(provider.as_ref(), &edited).await;
    match response {
        Err(ProviderError::Api(m)) => assert!(m.contains("Invalid `signature`"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.remaining(), 1, "refused requests use no reply");
}

#[tokio::test]
async fn overloaded_while_thinking_is_retried() {
    let answer = ScriptTurn::text("recovered").with_thinking("Second try.");
    let mock = MockModel::start(vec![
        MockReply::OverloadedInThinking("First try, cut short.".into()),
        answer.into(),
    ])
    .await;
    let provider = thinking_provider(&mock);
    let (response, pieces) = ask(provider.as_ref(), &[Message::user_text("hi")]).await;
    let response = response.unwrap();
    assert_eq!(response.message.text(), "recovered");
    assert_eq!(mock.requests().len(), 2);
    // Only the second attempt's thinking is kept.
    assert!(matches!(
        &response.message.content[0],
        Block::Thinking { thinking, .. } if thinking == "Second try."
    ));
    // The cut attempt's thinking was shown, but none of an answer.
    let shown: String = pieces.concat();
    assert!(
        shown.starts_with("thinking:First t")
            && !shown[..shown.find("Seco").unwrap()].contains("text:"),
        "{pieces:?}"
    );
}

#[tokio::test]
async fn tool_input_whole_in_content_block_start_is_used() {
    let turn = ScriptTurn::calls(vec![ScriptToolCall::new(
        "fs_read",
        json!({"path": "src/main.rs", "limit": 20}),
    )])
    .with_quirk(Quirk::InputInStart);
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = thinking_provider(&mock);
    let (response, _) = ask(provider.as_ref(), &[Message::user_text("read")]).await;
    let response = response.unwrap();
    let call = response.message.tool_calls().next().cloned().unwrap();
    assert_eq!(call.input, json!({"path": "src/main.rs", "limit": 20}));
    assert_eq!(call.input_error, None);
}

async fn first_body(settings: ProviderSettings) -> mecha_testkit::RecordedRequest {
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let provider = provider_with(&mock, settings);
    ask(provider.as_ref(), &[Message::user_text("hi")])
        .await
        .0
        .unwrap();
    mock.requests().remove(0)
}

fn model(name: &str) -> ProviderSettings {
    ProviderSettings {
        model: Some(name.into()),
        ..ProviderSettings::default()
    }
}

#[tokio::test]
async fn max_tokens_defaults_to_what_the_model_supports() {
    let known = first_body(model("claude-sonnet-4-5-20250929")).await;
    assert_eq!(known.body["max_tokens"], 64_000);
    assert!(known.body.get("thinking").is_none());
    assert!(known.header("anthropic-beta").is_none());

    assert_eq!(
        first_body(model("claude-opus-4-6")).await.body["max_tokens"],
        128_000
    );
    assert_eq!(
        first_body(model("some-compatible-model")).await.body["max_tokens"],
        32_000
    );
    let configured = ProviderSettings {
        max_tokens: Some(2048),
        ..model("claude-opus-4-6")
    };
    assert_eq!(first_body(configured).await.body["max_tokens"], 2048);

    // Older models need the beta that stops at the context window rather
    // than refusing a long conversation outright.
    let older = first_body(model("claude-sonnet-4-20250514")).await;
    assert_eq!(
        older.header("anthropic-beta"),
        Some("model-context-window-exceeded-2025-08-26")
    );
}

#[tokio::test]
async fn adaptive_thinking_asks_for_summaries() {
    let request = first_body(ProviderSettings {
        model: Some("claude-opus-4-7".into()),
        thinking: Some(Thinking::Adaptive),
        ..ProviderSettings::default()
    })
    .await;
    assert_eq!(
        request.body["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert!(request.header("anthropic-beta").is_none());
}

#[tokio::test]
async fn a_refusal_carries_the_explanation() {
    let mut turn = ScriptTurn::text("I can help with part of");
    turn.stop_reason = Some(StopReason::Refusal);
    turn.stop_detail = Some("This asks for a working exploit.".into());
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = thinking_provider(&mock);
    let (response, _) = ask(provider.as_ref(), &[Message::user_text("hi")]).await;
    let response = response.unwrap();
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(
        response.stop_detail.as_deref(),
        Some("This asks for a working exploit.")
    );
}

#[tokio::test]
async fn an_hour_cache_is_asked_for_with_its_beta_and_only_on_the_prefix() {
    let tools = [mecha_core::ToolDefinition {
        name: "fs_read".into(),
        description: "reads".into(),
        input_schema: json!({"type": "object"}),
    }];
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let settings = ProviderSettings {
        cache_ttl: Some(mecha_provider::CacheTtl::OneHour),
        ..model("claude-sonnet-4-5-20250929")
    };
    let provider = provider_with(&mock, settings);
    let messages = [Message::user_text("hi")];
    let request = mecha_provider::Request {
        system: "be brief",
        tools: &tools,
        messages: &messages,
        era: None,
    };
    let mut sink = |_: mecha_provider::Streamed<'_>| {};
    provider.complete(request, &mut sink).await.unwrap();
    let sent = mock.requests().remove(0);
    assert_eq!(
        sent.header("anthropic-beta"),
        Some("extended-cache-ttl-2025-04-11")
    );
    let hour = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(sent.body["system"][0]["cache_control"], hour);
    assert_eq!(sent.body["tools"][0]["cache_control"], hour);
    assert_eq!(
        sent.body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let plain = first_body(model("claude-sonnet-4-5-20250929")).await;
    assert_eq!(plain.header("anthropic-beta"), None);
}
