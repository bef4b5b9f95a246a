//! What `mecha run` takes in, checked before anything is sent: data piped
//! on stdin with a prompt argument (appended as a delimited block, never
//! dropped), a prompt too large for the model's window (refused with no
//! request made), and a `-C` that is no directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

/// The text of the first user message of request `n` (Anthropic shape).
fn first_prompt(mock: &MockModel, n: usize) -> String {
    mock.requests()[n].body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn data_piped_with_a_prompt_follows_it_as_a_delimited_block() {
    let e = env();
    let diff = "--- a/x\n+++ b/x\n-old\n+new\n";
    let mock = MockModel::start(vec![MockReply::text("looks fine")]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "run", &["review this"], diff)
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "looks fine\n");
    assert_eq!(
        first_prompt(&mock, 0),
        format!(
            "review this\n\n--- stdin ({} bytes piped to mecha on stdin) ---\n{diff}--- end of \
             stdin ---",
            diff.len()
        )
    );
}

#[tokio::test]
async fn piped_data_past_the_cap_is_cut_and_the_cut_is_stated() {
    let e = env();
    let big = format!("{}TAIL\n", "x".repeat(256 * 1024));
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "run", &["summarise"], &big)
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = first_prompt(&mock, 0);
    assert!(
        prompt.starts_with(
            "summarise\n\n--- stdin (the first 262144 bytes piped to mecha on stdin; more \
             followed, which mecha cut and did not read) ---\nxxx"
        ),
        "{}",
        &prompt[..200]
    );
    assert!(!prompt.contains("TAIL"));
    assert!(prompt.ends_with("x\n--- end of stdin ---"));
}

#[tokio::test]
async fn empty_stdin_adds_nothing_and_dash_still_reads_the_prompt() {
    let e = env();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "run", &["hello"], "")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(first_prompt(&mock, 0), "hello");

    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "run",
            &["-"],
            "the task itself\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(first_prompt(&mock, 0), "the task itself\n");
}

/// Stdin held data, not a person: a call that needs approval is refused
/// as in any run with nobody to ask, and the run does not wait for an
/// answer.
#[tokio::test]
async fn with_data_on_stdin_nobody_is_asked() {
    let e = env();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_write", json!({"path": "out.txt", "content": "hi"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "run", &["write it"], "y\ny\n")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!e.ws.join("out.txt").exists());
    let (result, _) = common::results_in(&mock, 1).pop().unwrap();
    assert!(result.contains("this run is non-interactive"), "{result}");
    assert!(first_prompt(&mock, 0).contains("--- stdin (4 bytes"));
}

#[tokio::test]
async fn a_prompt_larger_than_the_window_is_refused_before_anything_is_sent() {
    let mut e = env();
    e.provider_config = "context_window = 16000\nmax_tokens = 500\n".into();
    let mock = MockModel::start(vec![MockReply::text("never")]).await;
    let data = "y".repeat(60_000);
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "run", &["review this"], &data)
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(mock.requests().is_empty(), "a request was sent");
    let err = stderr(&out);
    assert!(
        err.contains(
            "does not fit the model's context window (16000 tokens, 500 of them kept \
                      for the reply), so nothing was sent"
        ),
        "{err}"
    );
    let tokens: u64 = err
        .split("the prompt (~")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect(&err);
    assert!(tokens > 20_000, "the estimate counts the piped data: {err}");
    assert!(err.contains("Shorten the prompt"), "{err}");
}

#[tokio::test]
async fn a_prompt_that_fits_is_sent() {
    let mut e = env();
    e.provider_config = "context_window = 16000\nmax_tokens = 500\n".into();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn dash_c_needs_an_existing_directory() {
    let e = env();
    let file = e.ws.join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    let mock = MockModel::start(vec![]).await;
    let dir = file.display().to_string();
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "run", &["-C", &dir, "go"], "")
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "workspace {dir} is not a directory; -C needs a directory"
        )),
        "{}",
        stderr(&out)
    );
    let missing = e.ws.join("nowhere").display().to_string();
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "run",
            &["-C", &missing, "go"],
            "",
        )
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "workspace {missing} does not exist; pass an existing directory with -C"
        )),
        "{}",
        stderr(&out)
    );
    assert!(mock.requests().is_empty());
}
