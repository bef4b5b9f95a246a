//! What a session spent: `/cost` in chat and the JSON result's `cost`,
//! through the real binary against the mock model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, stderr, stdout};
use mecha_testkit::{MockModel, MockReply, ScriptTurn, ScriptUsage};
use serde_json::Value;

/// One answer that reports a million tokens of each kind.
fn costly() -> MockReply {
    MockReply::from(ScriptTurn {
        text: Some("done".into()),
        usage: Some(ScriptUsage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 1_000_000,
        }),
        ..ScriptTurn::default()
    })
}

#[tokio::test]
async fn the_json_result_estimates_the_cost_at_list_prices() {
    let e = env();
    // The Anthropic default model, claude-sonnet-4-5: $3 + $15 + $0.30 +
    // $3.75 per million tokens of each kind.
    let mock = MockModel::start(vec![costly()]).await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "json", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let object: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let cost = &object["cost"];
    assert_eq!(cost["estimated_usd"].as_f64(), Some(22.05), "{object}");
    assert!(cost["prices_as_of"].as_str().is_some(), "{object}");

    // A model the table does not know gets no figure, not a guess.
    let mock = MockModel::start(vec![costly()]).await;
    let out = e
        .run(Api::OpenAi, &mock, "k", &["--output-format", "json", "go"])
        .await;
    let object: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(object["model"], "test-model");
    assert!(object["cost"].is_null(), "{object}");
}

#[tokio::test]
async fn slash_cost_in_chat_gives_tokens_by_kind_and_the_estimate() {
    let e = env();
    let mock = MockModel::start(vec![costly()]).await;
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "chat",
            &[],
            "go\n/cost\n/exit\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "tokens this session: 1,000,000 input, 1,000,000 output, 1,000,000 cache write, \
             1,000,000 cache read"
        ),
        "{text}"
    );
    assert!(
        text.contains("estimated cost: $22.0500 at claude-sonnet-4-5's list prices"),
        "{text}"
    );
    // Only the prompt went to the model.
    assert_eq!(mock.requests().len(), 1);
}
