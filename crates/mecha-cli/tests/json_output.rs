//! What `--output-format json` and `stream-json` print however a run ends:
//! one result object (`stop_reason`, `is_error`, `error`), also when the
//! API fails, at `--max-turns`, and when interrupted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

async fn for_both(test: impl AsyncFn(Api)) {
    test(Api::Anthropic).await;
    test(Api::OpenAi).await;
}

/// The one JSON object a `--output-format json` run printed.
fn the_object(out: &std::process::Output) -> Value {
    let text = stdout(out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one object expected: {text:?}");
    serde_json::from_str(lines[0]).unwrap()
}

#[tokio::test]
async fn json_prints_its_object_when_the_api_fails() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![MockReply::Unauthorized]).await;
        let out = e
            .run(api, &mock, "k", &["--output-format", "json", "go"])
            .await;
        assert_eq!(out.status.code(), Some(1), "{api:?}: {}", stderr(&out));
        let object = the_object(&out);
        assert_eq!(object["is_error"], true, "{object}");
        assert_eq!(object["stop_reason"], "error", "{object}");
        let error = object["error"].as_str().unwrap();
        let var = match api {
            Api::Anthropic => "ANTHROPIC_API_KEY",
            Api::OpenAi => "OPENAI_API_KEY",
        };
        assert!(error.contains(var), "{api:?}: {error}");
    })
    .await;
}

#[tokio::test]
async fn json_at_the_turn_limit_says_max_turns_and_that_a_rerun_starts_over() {
    let e = env();
    let mock = MockModel::start(
        (0..3)
            .map(|_| tool_turn(&[("fs_list", json!({}))]))
            .collect(),
    )
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "json", "--max-turns", "2", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let object = the_object(&out);
    assert_eq!(object["stop_reason"], "max_turns", "{object}");
    assert_eq!(object["is_error"], true, "{object}");
    assert_eq!(object["turns"], 2, "{object}");
    assert_eq!(object["tool_calls"].as_array().unwrap().len(), 2);
    for said in [object["error"].as_str().unwrap(), &stderr(&out)] {
        assert!(said.contains("starts over"), "{said}");
        assert!(said.contains("raise --max-turns"), "{said}");
        assert!(
            !said.contains("continue"),
            "a rerun does not continue: {said}"
        );
    }
}

#[tokio::test]
async fn json_reports_a_run_that_cannot_start() {
    let e = env();
    let mock = MockModel::start(vec![]).await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "json", " "],
        )
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let object = the_object(&out);
    assert_eq!(object["stop_reason"], "error", "{object}");
    assert!(
        object["error"]
            .as_str()
            .unwrap()
            .contains("prompt is empty"),
        "{object}"
    );
}

#[tokio::test]
async fn stream_json_ends_with_the_json_object_also_on_failure() {
    let e = env();
    let mock = MockModel::start(vec![
        tool_turn(&[("todo", json!({"items": []}))]),
        MockReply::status(400),
    ])
    .await;
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--output-format", "stream-json", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "final", "{last}");
    assert_eq!(last["stop_reason"], "error", "{last}");
    assert_eq!(last["is_error"], true, "{last}");
    assert!(last["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(last["tool_calls"][0]["name"], "todo", "{last}");

    // A run that answers ends with the same object json prints.
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let stream = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--output-format", "stream-json", "go"],
        )
        .await;
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let json = e
        .run(Api::OpenAi, &mock, "k", &["--output-format", "json", "go"])
        .await;
    let last = stdout(&stream).lines().last().unwrap().to_owned();
    let mut streamed: Value = serde_json::from_str(&last).unwrap();
    let mut printed = the_object(&json);
    // Two runs: each its own session and its own time.
    for object in [&mut streamed, &mut printed] {
        for key in ["session_id", "duration_ms"] {
            assert!(object.as_object_mut().unwrap().remove(key).is_some());
        }
    }
    assert_eq!(printed["stop_reason"], "end_turn");
    assert_eq!(printed["is_error"], false);
    assert_eq!(streamed, printed);
}

#[test]
fn json_reports_an_interrupted_run() {
    let e = env();
    let out = common::interrupted_json_run(&e);
    let object = the_object(&out);
    assert_eq!(object["stop_reason"], "interrupted", "{object}");
    assert_eq!(object["is_error"], true, "{object}");
    assert!(
        object["error"].as_str().unwrap().contains("interrupted"),
        "{object}"
    );
}
