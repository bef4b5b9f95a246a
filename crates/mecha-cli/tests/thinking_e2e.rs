//! The model's thinking, through the real binary and both wire APIs: shown
//! on stderr (never mixed into the answer on stdout), escaped like all model
//! text, streamed as events in stream-json, and sent back in the tool loop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, stderr, stdout};
use mecha_provider::script::{ScriptToolCall, ScriptTurn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

async fn for_both(test: impl AsyncFn(Api)) {
    test(Api::Anthropic).await;
    test(Api::OpenAi).await;
}

const THOUGHT: &str = "The user wants a number; \x1b[31mforty-two\x1b[0m fits.";

fn thinking_answer() -> MockReply {
    MockReply::Turn(ScriptTurn::text("It is 42.").with_thinking(THOUGHT))
}

#[tokio::test]
async fn thinking_goes_to_stderr_escaped_and_the_answer_alone_to_stdout() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![thinking_answer()]).await;
        let out = e.run(api, &mock, "k", &["what number?"]).await;
        assert!(out.status.success(), "{api:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "It is 42.\n", "{api:?}");
        let err = stderr(&out);
        assert!(err.contains("The user wants a number;"), "{api:?}: {err}");
        assert!(
            !err.contains('\x1b'),
            "{api:?}: raw escape on stderr: {err:?}"
        );
        assert!(
            err.contains("fits.\n"),
            "{api:?}: the thinking line is ended: {err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn stream_json_carries_thinking_events_before_the_text() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![thinking_answer()]).await;
        let out = e
            .run(api, &mock, "k", &["--output-format", "stream-json", "n?"])
            .await;
        assert!(out.status.success(), "{api:?}: {}", stderr(&out));
        let events: Vec<Value> = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let thought: String = events
            .iter()
            .filter(|e| e["type"] == "thinking")
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        assert_eq!(thought, THOUGHT, "{api:?}");
        let first_thinking = events.iter().position(|e| e["type"] == "thinking");
        let first_text = events.iter().position(|e| e["type"] == "text");
        assert!(first_thinking < first_text, "{api:?}: {events:?}");
    })
    .await;
}

#[tokio::test]
async fn anthropic_thinking_goes_back_signed_in_the_tool_loop() {
    let e = env();
    let mock = MockModel::start(vec![
        MockReply::Turn(
            ScriptTurn::calls(vec![ScriptToolCall::new("fs_list", json!({}))])
                .with_thinking("I should look first."),
        ),
        MockReply::text("Nothing here."),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["what is here?"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let second = &mock.requests()[1].body["messages"];
    let assistant = &second[1];
    assert_eq!(assistant["role"], "assistant");
    let first = &assistant["content"][0];
    assert_eq!(first["type"], "thinking", "{assistant}");
    assert_eq!(first["thinking"], "I should look first.");
    assert!(
        first["signature"].as_str().is_some_and(|s| !s.is_empty()),
        "{assistant}"
    );
    assert_eq!(assistant["content"][1]["type"], "tool_use");
}

#[tokio::test]
async fn a_retry_is_announced_on_stderr() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![
            MockReply::status_retry_after(429, 0),
            MockReply::text("Answered."),
        ])
        .await;
        let out = e.run(api, &mock, "k", &["hi"]).await;
        assert!(out.status.success(), "{api:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "Answered.\n");
        let err = stderr(&out);
        assert!(err.contains("429"), "{api:?}: {err}");
        assert!(
            err.contains("retrying in 0s (retry 1 of 4)"),
            "{api:?}: {err}"
        );
    })
    .await;
}

#[tokio::test]
async fn an_overload_mid_thinking_is_retried_and_the_user_told_why_thinking_repeats() {
    let e = env();
    let mock = MockModel::start(vec![
        MockReply::OverloadedInThinking("A first line of thought.".into()),
        thinking_answer(),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["what number?"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It is 42.\n");
    let err = stderr(&out);
    let first = err.find("A first line of thought.").unwrap();
    let retry = err.find("retrying in").unwrap();
    let second = err.find("The user wants a number;").unwrap();
    assert!(first < retry && retry < second, "{err}");
    assert_eq!(mock.requests().len(), 2);
}
