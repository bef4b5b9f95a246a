//! Turns that do not end in a whole answer, through the real binary and
//! both wire APIs: an empty turn, a call or answer cut by the output limit,
//! a refusal; and `mecha chat` going on after each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, results_in, stderr, stdout, tool_turn};
use mecha_core::StopReason;
use mecha_provider::script::{ScriptToolCall, ScriptTurn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

async fn for_both(test: impl AsyncFn(Api)) {
    test(Api::Anthropic).await;
    test(Api::OpenAi).await;
}

fn empty_turn() -> MockReply {
    MockReply::Turn(ScriptTurn::default())
}

fn turn_ending(text: &str, reason: StopReason) -> MockReply {
    MockReply::Turn(ScriptTurn::text(text).with_stop_reason(reason))
}

/// Every message of request `n` as sent; panics on one with no content.
fn assert_no_empty_assistant(mock: &MockModel, api: Api) {
    for (n, request) in mock.requests().iter().enumerate() {
        for m in request.body["messages"].as_array().unwrap() {
            if m["role"] != "assistant" {
                continue;
            }
            let empty = match &m["content"] {
                Value::Array(blocks) => blocks.is_empty(),
                Value::String(text) => text.is_empty() && m.get("tool_calls").is_none(),
                Value::Null => m.get("tool_calls").is_none(),
                _ => false,
            };
            assert!(!empty, "{api:?}: request {n} sends an empty turn: {m}");
        }
    }
}

/// The stream-json lines of a run.
fn events(out: &std::process::Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn an_empty_turn_after_tool_results_is_nudged_never_sent_back() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![
            tool_turn(&[("fs_list", json!({}))]),
            empty_turn(),
            MockReply::text("Listed."),
        ])
        .await;
        let out = e.run(api, &mock, "k", &["list the files"]).await;
        assert!(out.status.success(), "{api:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "Listed.\n", "{api:?}");
        assert!(
            stderr(&out).contains("without a word; asking it to continue"),
            "{api:?}: {}",
            stderr(&out)
        );
        assert_eq!(mock.requests().len(), 3);
        assert_no_empty_assistant(&mock, api);
        let last = mock.requests()[2].body["messages"].to_string();
        assert!(
            last.contains(mecha_agent::CONTINUE_PROMPT),
            "{api:?}: {last}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_silent_model_exits_4_and_json_says_why() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![empty_turn(), empty_turn()]).await;
        let out = e
            .run(api, &mock, "k", &["--output-format", "json", "hi"])
            .await;
        assert_eq!(out.status.code(), Some(4), "{api:?}: {}", stderr(&out));
        let object: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(object["stop_reason"], "end_turn", "{object}");
        assert_eq!(object["is_error"], true, "{object}");
        let error = object["error"].as_str().unwrap();
        assert!(error.contains("without answering"), "{error}");
        assert!(stderr(&out).contains(error), "{}", stderr(&out));
        assert_no_empty_assistant(&mock, api);
    })
    .await;
}

#[tokio::test]
async fn a_write_cut_by_the_output_limit_is_not_run_and_everyone_is_told() {
    for_both(async |api| {
        let e = env();
        let cut = ScriptTurn::calls(vec![ScriptToolCall::raw(
            "fs_write",
            r#"{"path": "big.txt", "content": "the first thousand lines of"#,
        )])
        .with_stop_reason(StopReason::MaxTokens);
        let mock = MockModel::start(vec![MockReply::Turn(cut), MockReply::text("Split it.")]).await;
        let out = e.run(api, &mock, "k", &["--yes", "write a big file"]).await;
        assert!(out.status.success(), "{api:?}: {}", stderr(&out));
        assert!(!e.ws.join("big.txt").exists(), "{api:?}: the cut call ran");
        let err = stderr(&out);
        assert!(
            err.contains("output limit cut its call to fs_write short"),
            "{api:?}: {err}"
        );
        let results = results_in(&mock, 1);
        assert_eq!(results.len(), 1, "{api:?}: {results:?}");
        assert!(
            results[0].0.contains("your output limit cut it off"),
            "{api:?}: {results:?}"
        );
        assert!(results[0].1, "{api:?}: the result is an error");
        assert!(!results[0].0.contains("not valid JSON"), "{results:?}");

        let mock = MockModel::start(vec![
            MockReply::Turn(
                ScriptTurn::calls(vec![ScriptToolCall::raw("fs_write", r#"{"path": "b"#)])
                    .with_stop_reason(StopReason::MaxTokens),
            ),
            MockReply::text("ok"),
        ])
        .await;
        let out = e
            .run(
                api,
                &mock,
                "k",
                &["--yes", "--output-format", "stream-json", "go"],
            )
            .await;
        let limit: Vec<Value> = events(&out)
            .into_iter()
            .filter(|e| e["type"] == "output_limit")
            .collect();
        assert_eq!(limit.len(), 1, "{api:?}: {}", stdout(&out));
        assert_eq!(limit[0]["tool"], "fs_write");
    })
    .await;
}

#[tokio::test]
async fn an_answer_cut_by_the_output_limit_says_so_in_every_format() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![turn_ending(
            "The answer begins",
            StopReason::MaxTokens,
        )])
        .await;
        let out = e.run(api, &mock, "k", &["explain"]).await;
        assert!(out.status.success(), "{api:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "The answer begins\n");
        assert!(
            stderr(&out).contains("cut off by the model's output limit"),
            "{api:?}: {}",
            stderr(&out)
        );

        let mock = MockModel::start(vec![turn_ending(
            "The answer begins",
            StopReason::MaxTokens,
        )])
        .await;
        let out = e
            .run(api, &mock, "k", &["--output-format", "json", "explain"])
            .await;
        let object: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(object["stop_reason"], "max_tokens", "{api:?}: {object}");
        assert_eq!(object["text"], "The answer begins");
    })
    .await;
}

#[tokio::test]
async fn a_refusal_is_said_and_exits_4() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![turn_ending("I can", StopReason::Refusal)]).await;
        let out = e
            .run(api, &mock, "k", &["--output-format", "json", "do it"])
            .await;
        assert_eq!(out.status.code(), Some(4), "{api:?}: {}", stderr(&out));
        let object: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(object["stop_reason"], "refusal", "{object}");
        assert_eq!(object["is_error"], true);
        assert!(
            object["error"]
                .as_str()
                .unwrap()
                .contains("declined to answer"),
            "{object}"
        );
        let mock = MockModel::start(vec![turn_ending("I can", StopReason::Refusal)]).await;
        let out = e.run(api, &mock, "k", &["do it"]).await;
        assert_eq!(out.status.code(), Some(4), "{api:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "I can\n", "{api:?}");
        assert!(
            stderr(&out).contains("mecha: the model declined to answer. Rephrase"),
            "{api:?}: {}",
            stderr(&out)
        );
    })
    .await;
}

#[tokio::test]
async fn chat_goes_on_after_an_empty_turn_and_after_a_refusal() {
    for_both(async |api| {
        let e = env();
        let mock = MockModel::start(vec![
            empty_turn(),
            empty_turn(),
            MockReply::text("Hello."),
            turn_ending("Well, fi", StopReason::Refusal),
            MockReply::text("Fine."),
        ])
        .await;
        let out = e
            .mecha(
                api,
                &mock,
                "k",
                "chat",
                &[],
                "hi\nhello?\nthe forbidden thing\nsomething else\n",
            )
            .await;
        assert!(out.status.success(), "{api:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "Hello.\nWell, fi\nFine.\n", "{api:?}");
        let err = stderr(&out);
        assert!(err.contains("without answering"), "{api:?}: {err}");
        assert!(
            err.contains("dropped from the conversation"),
            "{api:?}: {err}"
        );
        assert_eq!(mock.requests().len(), 5);
        assert_no_empty_assistant(&mock, api);
        let last = mock.requests()[4].body["messages"].to_string();
        assert!(
            !last.contains("forbidden"),
            "{api:?}: the refused turn was kept: {last}"
        );
        assert!(
            last.contains("Hello.") && last.contains("something else"),
            "{last}"
        );
    })
    .await;
}

/// A base URL where nothing listens costs one quick second try, not a
/// round of backoff, and the error asks whether the server is running
/// instead of calling it overloaded.
#[tokio::test]
async fn a_closed_port_says_nothing_is_listening_after_one_more_try() {
    let e = env();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mock = MockModel::start(vec![]).await;
    let mut command = e.command(Api::Anthropic, &mock, "k", "run", &["hello"]);
    command.env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"));
    let began = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    let took = began.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("nothing is listening at http://127.0.0.1:"),
        "{said}"
    );
    assert!(said.contains("is the server running?"), "{said}");
    assert!(!said.contains("Try again later"), "{said}");
    assert_eq!(said.matches("trying once more").count(), 1, "{said}");
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
}

/// A small window with `max_tokens` unset: the reply's share is derived
/// from the window (a quarter), so a prompt fits, instead of the model's
/// own 64K output limit refusing every run. A `max_tokens` that keeps the
/// whole window is an error that names it.
#[tokio::test]
async fn an_unset_max_tokens_fits_the_window_it_is_given() {
    let mut e = env();
    e.provider_config = "context_window = 32768\n".into();
    let mock = MockModel::start(vec![MockReply::text("fits")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.requests()[0].body["max_tokens"], 8192);

    e.provider_config = "context_window = 32768\nmax_tokens = 32768\n".into();
    let out = e.run(Api::Anthropic, &mock, "k", &["hello"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("max_tokens = 32768 in [provider]"), "{said}");
}
