//! Delegated tasks through the real binary: the model's question parks the
//! task (exit 5, the question stored with its turn), `mecha questions
//! answer` runs it on with the answer as the question's result and the
//! taint the first run gathered, and nothing that needs a yes runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

async fn mecha(e: &Env, mock: &MockModel, command: &str, args: &[&str]) -> std::process::Output {
    e.mecha(Api::OpenAi, mock, "k", command, args, "").await
}

fn final_event(out: &std::process::Output) -> Value {
    serde_json::from_str(stdout(out).trim()).unwrap()
}

/// The id of the one parked question, from `mecha questions`.
async fn parked_id(e: &Env, mock: &MockModel) -> String {
    let listed = mecha(e, mock, "questions", &[]).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let text = stdout(&listed);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    lines[0].split_whitespace().next().unwrap().to_owned()
}

#[tokio::test]
async fn a_question_parks_the_task_and_the_answer_runs_it_on_with_its_taint() {
    let e = env();
    std::fs::write(e.ws.join("notes.txt"), "meeting at nine\n").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[
            ("fs_read", json!({"path": "notes.txt"})),
            ("ask_user", json!({"question": "Work calendar or home?"})),
        ]),
        MockReply::text("Briefed from the work calendar."),
    ])
    .await;
    let out = mecha(
        &e,
        &mock,
        "run",
        &["--delegate", "--output-format", "json", "brief me"],
    )
    .await;
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(final_event(&out)["stop_reason"], "parked");
    assert!(
        stderr(&out).contains("mecha questions answer q"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 1, "the run stopped at the question");
    let offered = mock.requests()[0].body["tools"].to_string();
    assert!(offered.contains("\"ask_user\""), "{offered}");

    let id = parked_id(&e, &mock).await;
    let listed = stdout(&mecha(&e, &mock, "questions", &[]).await);
    assert!(listed.contains("Work calendar or home?"), "{listed}");
    let answered = mecha(
        &e,
        &mock,
        "questions",
        &[
            "answer",
            &id[..6],
            "the work one",
            "--output-format",
            "json",
        ],
    )
    .await;
    assert!(answered.status.success(), "{}", stderr(&answered));
    let end = final_event(&answered);
    assert_eq!(end["text"], "Briefed from the work calendar.", "{end}");
    assert_eq!(end["taint"]["private_data"], true, "{end}");
    // One turn's results, as if the owner had answered at once.
    let results = results_in(&mock, 1);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].0.contains("meeting at nine"), "{results:?}");
    assert_eq!(results[1].0, "the work one");
    let left = stdout(&mecha(&e, &mock, "questions", &[]).await);
    assert!(left.contains("no questions wait"), "{left}");
}

#[tokio::test]
async fn a_delegated_call_that_needs_a_yes_is_refused_and_the_model_told_why() {
    let e = env();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_write", json!({"path": "out.txt", "content": "x"}))]),
        MockReply::text("could not write"),
    ])
    .await;
    let out = mecha(&e, &mock, "run", &["--delegate", "write it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(is_error, "{result}");
    assert!(
        result.contains("delegated task with nobody to approve it"),
        "{result}"
    );
    assert!(!e.ws.join("out.txt").exists());
}

#[tokio::test]
async fn an_answer_to_a_session_that_went_on_is_refused_and_the_question_kept() {
    let e = env();
    let mock = MockModel::start(vec![
        tool_turn(&[("ask_user", json!({"question": "Which one?"}))]),
        MockReply::text("went on without it"),
    ])
    .await;
    let out = mecha(&e, &mock, "run", &["--delegate", "pick"]).await;
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let id = parked_id(&e, &mock).await;
    let session = common::only_session(&e);
    let resumed = mecha(&e, &mock, "run", &["--resume", &session, "go on"]).await;
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let answered = mecha(&e, &mock, "questions", &["answer", &id, "the first"]).await;
    assert_eq!(answered.status.code(), Some(2), "{}", stderr(&answered));
    assert!(
        stderr(&answered).contains(&format!("mecha questions dismiss {id}")),
        "{}",
        stderr(&answered)
    );
    assert_eq!(parked_id(&e, &mock).await, id);
    let dismissed = mecha(&e, &mock, "questions", &["dismiss", &id]).await;
    assert!(dismissed.status.success(), "{}", stderr(&dismissed));
}

#[tokio::test]
async fn an_undelegated_run_has_no_one_to_ask_and_no_ask_user() {
    let e = env();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = mecha(&e, &mock, "run", &["hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let offered = mock.requests()[0].body["tools"].to_string();
    assert!(!offered.contains("\"ask_user\""), "{offered}");
}
