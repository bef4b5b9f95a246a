//! `mecha run` end to end against OpenAI-compatible servers that depart
//! from the documented stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, results_in, stderr, stdout};
use mecha_provider::Quirk;
use mecha_provider::script::{ScriptToolCall, ScriptTurn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

/// Some ollama versions send every call of a turn at index 0, each with
/// its own id (ollama#15457): both calls run, each result under its id.
#[tokio::test]
async fn ollamas_calls_at_one_index_all_run() {
    let e = env();
    std::fs::write(e.ws.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(e.ws.join("b.txt"), "beta\n").unwrap();
    let turn = ScriptTurn::calls(vec![
        ScriptToolCall::new("fs_read", json!({"path": "a.txt"})),
        ScriptToolCall::new("fs_read", json!({"path": "b.txt"})),
    ])
    .with_quirk(Quirk::SameIndex);
    let mock = MockModel::start(vec![turn.into(), MockReply::text("Read both.")]).await;
    let out = e.run(Api::OpenAi, &mock, "k", &["read a and b"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).ends_with("Read both.\n"), "{}", stdout(&out));
    let results = results_in(&mock, 1);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].0.contains("alpha") && !results[0].1,
        "{results:?}"
    );
    assert!(
        results[1].0.contains("beta") && !results[1].1,
        "{results:?}"
    );
    let sent = &mock.requests()[1].body["messages"];
    let calls = sent[2]["tool_calls"].as_array().unwrap();
    let names: Vec<_> = calls.iter().map(|c| &c["function"]["name"]).collect();
    assert_eq!(names, [&json!("fs_read"), &json!("fs_read")]);
    assert_eq!(sent[3]["tool_call_id"], calls[0]["id"]);
    assert_eq!(sent[4]["tool_call_id"], calls[1]["id"]);
    assert_ne!(calls[0]["id"], calls[1]["id"]);
}

/// ollama with gpt-oss reads the reasoning before a tool call back from
/// `reasoning`; llama.cpp and DeepSeek from `reasoning_content`. Each gets
/// it in the field it streamed it in.
#[tokio::test]
async fn reasoning_goes_back_with_the_tool_call() {
    for (quirk, field) in [
        (None, "reasoning"),
        (Some(Quirk::ReasoningContent), "reasoning_content"),
    ] {
        let e = env();
        std::fs::write(e.ws.join("a.txt"), "alpha\n").unwrap();
        let mut turn = ScriptTurn::calls(vec![ScriptToolCall::new(
            "fs_read",
            json!({"path": "a.txt"}),
        )])
        .with_thinking("The user wants a.txt.");
        turn.quirks.extend(quirk);
        let mock = MockModel::start(vec![turn.into(), MockReply::text("It says alpha.")]).await;
        let out = e.run(Api::OpenAi, &mock, "k", &["what is in a.txt?"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).ends_with("It says alpha.\n"),
            "{}",
            stdout(&out)
        );
        let sent = &mock.requests()[1].body["messages"][2];
        assert_eq!(sent["role"], "assistant", "{sent:#}");
        assert_eq!(sent[field], json!("The user wants a.txt."), "{sent:#}");
    }
}

/// An older llama.cpp reports a failed stream in an `error:` line: the user
/// reads its message, not that the stream "ended early".
#[tokio::test]
async fn a_llama_cpp_error_line_reaches_the_user() {
    let e = env();
    let mock = MockModel::start(vec![MockReply::LlamaCppError {
        message: "the request exceeds the available context size, try increasing it".into(),
    }])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["hello"]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("exceeds the available context size"), "{err}");
    assert!(!err.contains("ended early"), "{err}");
}
