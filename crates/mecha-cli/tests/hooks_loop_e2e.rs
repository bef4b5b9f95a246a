//! The loop's hooks through `mecha run`: a user_prompt hook refuses a
//! prompt before anything is sent; session_start, user_prompt and post_tool
//! hooks add words the model receives, marked as a hook's; a stop hook
//! sends the model back, and only three times in a row; every hook's
//! verdict is an event in stream-json.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{Api, Env, env, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

/// One script for every event, told apart by `hook_event_name`.
const HOOK: &str = r#"#!/bin/bash
input=$(cat)
case "$input" in
  *'"UserPromptSubmit"'*'sk-'*) echo "the prompt holds a key; remove it" >&2; exit 2 ;;
  *'"UserPromptSubmit"'*) echo "branch: main" ;;
  *'"SessionStart"'*) echo "open issues: 3" ;;
  *'"PostToolUse"'*) echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint: clean"}}' ;;
  *'"Stop"'*'tests pass'*) exit 0 ;;
  *'"Stop"'*) echo '{"decision":"block","reason":"run the tests before you stop"}' ;;
esac
exit 0
"#;

fn hooked(e: &mut Env, events: &[&str]) {
    let path = e.home.join("loop.sh");
    std::fs::write(&path, HOOK).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    for event in events {
        e.extra_config.push_str(&format!(
            "[[hook]]\nevent = \"{event}\"\ncommand = \"{}\"\ntimeout_s = 5\n",
            path.display()
        ));
    }
}

/// Every text the model was sent in request `n`, in order (Anthropic).
fn texts_in(mock: &MockModel, n: usize) -> Vec<String> {
    let body = &mock.requests()[n].body;
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .map(|b| b["text"].as_str().unwrap().to_owned()),
            ),
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn a_refused_prompt_is_never_sent_and_the_run_says_why() {
    let mut e = env();
    hooked(&mut e, &["user_prompt"]);
    let mock = MockModel::start(vec![MockReply::text("never")]).await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "json", "deploy with sk-live-123"],
        )
        .await;
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(mock.requests().is_empty(), "nothing reached the model");
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["stop_reason"], "blocked");
    assert_eq!(result["is_error"], true);
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("the prompt holds a key; remove it"),
        "{error}"
    );
}

#[tokio::test]
async fn hooks_add_marked_words_the_model_receives_and_each_verdict_is_an_event() {
    let mut e = env();
    hooked(
        &mut e,
        &["session_start", "user_prompt", "post_tool", "stop"],
    );
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": "echo hi"}))]),
        MockReply::text("done, tests pass"),
    ])
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--yes", "--output-format", "stream-json", "say hi"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let first = texts_in(&mock, 0);
    assert_eq!(
        first,
        [
            "say hi",
            "[mecha: added by a session_start hook]\nopen issues: 3",
            "[mecha: added by a user_prompt hook]\nbranch: main",
        ]
    );
    let second = texts_in(&mock, 1);
    let note = second.last().unwrap();
    assert!(
        note.starts_with("[mecha: added by a post_tool hook, about the result of the `shell` call"),
        "{note}"
    );
    assert!(note.ends_with("lint: clean"), "{note}");
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let hooks: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "hook")
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(hooks, ["session_start", "user_prompt", "post_tool", "stop"]);
    let post = events
        .iter()
        .find(|e| e["type"] == "hook" && e["event"] == "post_tool")
        .unwrap();
    assert_eq!(post["tool"], "shell");
    assert_eq!(post["context"], "lint: clean");
}

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_and_the_run_says_so() {
    let mut e = env();
    hooked(&mut e, &["stop"]);
    let mock = MockModel::start(vec![
        MockReply::text("done"),
        MockReply::text("done, tests pass"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["fix the bug"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 2);
    let back = texts_in(&mock, 1);
    assert_eq!(
        back.last().unwrap(),
        "[mecha: a stop hook sends you back to work]\nrun the tests before you stop"
    );
    assert!(stdout(&out).contains("done, tests pass"));
    assert!(
        stderr(&out).contains("a stop hook sent the model back to work (1 of at most 3"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_stop_hook_that_never_lets_go_is_stopped_after_three() {
    let mut e = env();
    hooked(&mut e, &["stop"]);
    let mock = MockModel::start(
        (1..=6)
            .map(|n| MockReply::text(format!("try {n}")))
            .collect(),
    )
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["fix the bug"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 4, "the answer and three returns");
    assert!(stdout(&out).contains("try 4"));
    assert!(
        stderr(&out).contains("after 3 times in a row, the most allowed"),
        "{}",
        stderr(&out)
    );
}
