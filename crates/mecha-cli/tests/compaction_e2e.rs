//! A long task through the real binary: it compacts several times and
//! keeps its first message, its todo list and its loaded skill; every
//! output form shows it; a resumed session starts from the compacted
//! state; `recall` finds what compaction took out of the context.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

/// What mecha's summary request starts with (the mock answers it).
const SUMMARY_MARKER: &str = "[mecha: compaction]";
const SUMMARY_HEADER: &str = "[summary of the earlier conversation";
const CARRIED_HEADER: &str = "[carried state:";
const PROCEDURE: &str = "STEP-ONE: check the flag. STEP-TWO: never skip step one.";

/// A workspace with a big file, a skill, and a small window.
fn long_env() -> Env {
    let mut e = env();
    std::fs::write(e.ws.join("big.txt"), "data line\n".repeat(600)).unwrap();
    let skill = e.home.join("skills").join("deploy");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: deploy\ndescription: How to deploy.\n---\n{PROCEDURE}\n"),
    )
    .unwrap();
    e.provider_config =
        "context_window = 40000\nmax_tokens = 1000\ncompact_at_tokens = 9000\n".into();
    e.extra_config = "[tools]\noutput_budget_bytes = 12000\n".into();
    e
}

/// The todo list and the skill, then `reads` reads of the big file, then
/// an answer.
fn long_script(reads: usize) -> Vec<MockReply> {
    let todo = json!({"items": [{"content": "read big.txt", "status": "in_progress"}]});
    let mut replies = vec![tool_turn(&[
        ("todo", todo),
        ("skill", json!({"name": "deploy"})),
    ])];
    for _ in 0..reads {
        replies.push(tool_turn(&[("fs_read", json!({"path": "big.txt"}))]));
    }
    replies.push(MockReply::text("all read"));
    replies
}

/// The texts of a request's messages (OpenAI shape), system first.
fn texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_owned(), content)
        })
        .collect()
}

/// A compacted history's opening, as Chat Completions gets it: the first
/// message, the summary and the carried state are three user messages in
/// a row, sent as one (chat templates refuse two in a row), joined by a
/// blank line. Split back at the summary's and the carried state's headers.
fn opening(texts: &[(String, String)]) -> (&str, &str, &str) {
    let (role, text) = &texts[1];
    assert_eq!(role, "user");
    let summary = text.find(SUMMARY_HEADER).expect("a summary");
    let carried = text.find(CARRIED_HEADER).expect("the carried state");
    assert!(summary < carried, "{text}");
    let first = text[..summary].strip_suffix("\n\n").expect("joined");
    let summary_text = text[summary..carried].strip_suffix("\n\n").expect("joined");
    (first, summary_text, &text[carried..])
}

fn is_summary_request(body: &Value) -> bool {
    texts(body)
        .last()
        .is_some_and(|(_, t)| t.starts_with(SUMMARY_MARKER))
}

/// The requests of the loop itself, without the summary requests.
fn loop_requests(mock: &MockModel) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !is_summary_request(b))
        .collect()
}

#[tokio::test]
async fn a_long_task_compacts_often_and_keeps_its_plan_and_procedure() {
    let e = long_env();
    let mock = MockModel::start(long_script(14)).await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--yes", "read big.txt many times"],
        )
        .await;
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(stdout(&out), "all read\n");
    let lines = err.matches("mecha: compacted the conversation").count();
    assert!(
        mock.summaries() >= 3,
        "{} summaries: {err}",
        mock.summaries()
    );
    assert_eq!(lines, mock.summaries(), "a line on stderr for each: {err}");

    let requests = loop_requests(&mock);
    let first = &requests[0];
    for request in &requests {
        assert_eq!(
            request["tools"], first["tools"],
            "the tool list never changed"
        );
        assert_eq!(texts(request)[0], texts(first)[0], "nor the system prompt");
    }
    let last = texts(requests.last().unwrap());
    // The first message, the summary and the carried state, in that order;
    // Chat Completions gets them as one user message (see `opening`).
    let (first_prompt, summary, carried) = opening(&last);
    assert_eq!(first_prompt, "read big.txt many times");
    assert!(summary.starts_with(SUMMARY_HEADER), "{summary}");
    assert!(summary.contains(&format!("SUMMARY {}", mock.summaries())));
    let all: String = last.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(all.matches(CARRIED_HEADER).count(), 1, "one carried state");
    assert_eq!(carried.matches(PROCEDURE).count(), 1);
    assert_eq!(carried.matches("[>] read big.txt").count(), 1);
    assert_eq!(all.matches(PROCEDURE).count(), 1, "the skill body once");
    // Every tool result still follows the call that made it.
    let messages = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    for (i, m) in messages.iter().enumerate() {
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap();
            let made = messages[..i]
                .iter()
                .rev()
                .find(|p| p["role"] == "assistant");
            let calls = made.unwrap()["tool_calls"].as_array().unwrap();
            assert!(
                calls.iter().any(|c| c["id"] == id),
                "result {id} lost its call"
            );
        }
    }
}

#[tokio::test]
async fn stream_json_has_a_compaction_event_and_json_counts_them() {
    let e = long_env();
    let mock = MockModel::start(long_script(8)).await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--yes", "--output-format", "stream-json", "read"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let compacted: Vec<&Value> = events.iter().filter(|e| e["type"] == "compacted").collect();
    assert!(!compacted.is_empty(), "{events:?}");
    assert!(compacted[0]["tokens_after"].as_u64() < compacted[0]["tokens_before"].as_u64());
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["compactions"], compacted.len());

    let mock = MockModel::start(long_script(8)).await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--yes", "--output-format", "json", "read"],
        )
        .await;
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["compactions"], mock.summaries());
    assert!(mock.summaries() >= 1);
}

#[tokio::test]
async fn a_failing_summary_is_retried_twice_then_the_run_goes_on() {
    let e = long_env();
    let mock = MockModel::start(long_script(6)).await;
    mock.answer_summaries(SUMMARY_MARKER);
    mock.fail_summaries(usize::MAX);
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "read"]).await;
    let err = stderr(&out);
    assert!(out.status.success(), "the run went on: {err}");
    for attempt in 1..=3 {
        assert!(
            err.contains(&format!("compaction attempt {attempt} of 3 failed")),
            "{err}"
        );
    }
    assert!(!err.contains("attempt 4"), "{err}");
    assert_eq!(
        err.matches("compaction attempt 1 of 3").count(),
        1,
        "not tried again every turn: {err}"
    );
    assert_eq!(stdout(&out), "all read\n");
}

#[tokio::test]
async fn a_resumed_session_starts_compacted_and_recall_finds_what_was_compacted_away() {
    let e = long_env();
    std::fs::write(e.ws.join("needle.txt"), "the NEEDLE-4711 is here").unwrap();
    let mut replies = vec![tool_turn(&[("fs_read", json!({"path": "needle.txt"}))])];
    replies.extend(long_script(10));
    let mock = MockModel::start(replies).await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "find it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(mock.summaries() >= 2);

    let mock = MockModel::start(vec![
        tool_turn(&[("recall", json!({"query": "needle-4711"}))]),
        MockReply::text("found"),
    ])
    .await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--yes", "--continue", "where was it?"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = loop_requests(&mock);
    let first = texts(&requests[0]);
    let (first_prompt, summary, _) = opening(&first);
    assert_eq!(first_prompt, "find it");
    assert!(
        summary.starts_with(SUMMARY_HEADER),
        "resumed compacted: {first:?}"
    );
    assert_eq!(first.last().unwrap().1, "where was it?");
    let before: String = first.iter().map(|(_, t)| t.as_str()).collect();
    assert!(!before.contains("NEEDLE-4711"), "it was compacted away");
    let recalled = texts(&requests[1]);
    let result = &recalled.iter().rev().find(|(r, _)| r == "tool").unwrap().1;
    assert!(result.contains("NEEDLE-4711"), "{result}");
}

#[tokio::test]
async fn the_compact_tool_is_offered_with_a_threshold_and_withheld_on_request() {
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut e = long_env();
    for (provider, args, offered) in [
        (e.provider_config.clone(), vec!["go"], true),
        (
            e.provider_config.clone(),
            vec!["--no-compact-tool", "go"],
            false,
        ),
        (String::new(), vec!["go"], false),
    ] {
        e.provider_config = provider;
        let mock = MockModel::start(vec![MockReply::text("ok")]).await;
        let out = e.run(Api::OpenAi, &mock, "k", &args).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let tools = names(&mock.requests()[0].body);
        assert_eq!(
            tools.contains(&"compact".to_owned()),
            offered,
            "{args:?}: {tools:?}"
        );
    }
}

#[tokio::test]
async fn the_model_compacts_when_it_asks() {
    let e = long_env();
    let mut replies = long_script(2);
    let answer = replies.pop().unwrap();
    replies.push(tool_turn(&[("compact", json!({}))]));
    replies.push(answer);
    let mock = MockModel::start(replies).await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .run(Api::OpenAi, &mock, "k", &["--yes", "read twice"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.summaries(), 1, "{}", stderr(&out));
    let last = texts(loop_requests(&mock).last().unwrap());
    let (_, summary, _) = opening(&last);
    assert!(summary.starts_with(SUMMARY_HEADER), "{last:?}");
}

/// `/compact` in chat says so once: the compaction's own line, not a
/// second answer repeating it.
#[tokio::test]
async fn chat_compact_says_it_once() {
    use mecha_testkit::{ScriptTurn, ScriptUsage};
    let mut e = env();
    e.provider_config = "context_window = 200000\n".to_owned();
    let reading = |text: &str, input_tokens| {
        MockReply::Turn(ScriptTurn {
            usage: Some(ScriptUsage {
                input_tokens,
                output_tokens: 10,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            }),
            ..ScriptTurn::text(text)
        })
    };
    let mock = MockModel::start(vec![
        reading("answer one", 1_000),
        reading("answer two", 2_000),
        reading("answer three", 60_000),
    ])
    .await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .mecha(
            Api::OpenAi,
            &mock,
            "k",
            "chat",
            &[],
            "one\ntwo\nthree\n/compact\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.summaries(), 1);
    let both = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(both.matches("compacted").count(), 1, "{both}");
}
