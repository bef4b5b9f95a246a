//! The outbox through the real binary: an `[[outbox]]` action called in an
//! armed conversation is staged, not refused and not run; it runs only on
//! `outbox approve` (never unconfirmed, never after `reject`), and the
//! session that staged it hears the decision when it next runs. A
//! project cannot add actions; a subagent's calls stage under its
//! parent's session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

/// An action whose command writes its stdin to `sent.json` beside the
/// workspace.
fn with_outbox(e: &mut Env) -> std::path::PathBuf {
    let sent = e.ws.parent().unwrap().join("sent.json");
    e.extra_config = format!(
        "[agent]\ndistrust_workspace = true\n\n[[outbox]]\nname = \"send_email\"\n\
         description = \"Send an email.\"\ncommand = [\"/bin/sh\", \"-c\", \"cat > {}\"]\n\
         input = {{ type = \"object\", properties = {{ to = {{ type = \"string\" }}, \
         body = {{ type = \"string\" }} }}, required = [\"to\", \"body\"] }}\n",
        sent.display()
    );
    sent
}

async fn mecha(e: &Env, mock: &MockModel, args: &[&str]) -> std::process::Output {
    e.mecha(Api::OpenAi, mock, "k", args[0], &args[1..], "")
        .await
}

fn email() -> (&'static str, Value) {
    (
        "send_email",
        json!({"to": "boss@example.com", "body": "the notes say: launch friday"}),
    )
}

/// Reads a private file (the conversation is armed under distrust), then
/// sends; returns the staged item's id.
async fn stage(e: &Env, mock: &MockModel) -> String {
    let out = mecha(e, mock, &["run", "mail the boss"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&mecha(e, mock, &["outbox"]).await);
    listed.split_whitespace().next().unwrap().to_owned()
}

#[tokio::test]
async fn an_armed_send_is_staged_and_runs_only_once_approved() {
    let mut e = env();
    let sent = with_outbox(&mut e);
    std::fs::write(e.ws.join("notes.txt"), "launch friday\n").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_read", json!({"path": "notes.txt"}))]),
        tool_turn(&[email()]),
        MockReply::text("Staged."),
    ])
    .await;
    let id = stage(&e, &mock).await;
    let (result, is_error) = results_in(&mock, 2).pop().unwrap();
    assert!(!is_error, "{result}");
    assert!(result.contains("It has NOT happened"), "{result}");
    assert!(!sent.exists(), "staging ran the command");
    let listed = stdout(&mecha(&e, &mock, &["outbox"]).await);
    assert!(
        listed.contains("staged by a conversation holding private data and untrusted content"),
        "{listed}"
    );
    let shown = stdout(&mecha(&e, &mock, &["outbox", "show", &id]).await);
    assert!(shown.contains("\"to\": \"boss@example.com\""), "{shown}");

    let unconfirmed = mecha(&e, &mock, &["outbox", "approve", &id]).await;
    assert_eq!(
        unconfirmed.status.code(),
        Some(2),
        "{}",
        stderr(&unconfirmed)
    );
    assert!(!sent.exists(), "an unconfirmed approval ran the command");
    let approved = mecha(&e, &mock, &["outbox", "approve", &id, "--yes"]).await;
    assert!(approved.status.success(), "{}", stderr(&approved));
    let delivered: Value = serde_json::from_str(&std::fs::read_to_string(&sent).unwrap()).unwrap();
    assert_eq!(delivered, email().1);
    let twice = mecha(&e, &mock, &["outbox", "approve", &id, "--yes"]).await;
    assert_eq!(twice.status.code(), Some(2), "it runs once");
}

#[tokio::test]
async fn a_rejected_send_never_runs_and_its_session_hears_why() {
    let mut e = env();
    let sent = with_outbox(&mut e);
    let mock = MockModel::start(vec![
        tool_turn(&[email()]),
        MockReply::text("Staged."),
        MockReply::text("Understood."),
    ])
    .await;
    let id = stage(&e, &mock).await;
    let rejected = mecha(
        &e,
        &mock,
        &[
            "outbox",
            "reject",
            &id,
            "--reason",
            "not before the board meets",
        ],
    )
    .await;
    assert!(rejected.status.success(), "{}", stderr(&rejected));
    let approve = mecha(&e, &mock, &["outbox", "approve", &id, "--yes"]).await;
    assert_eq!(approve.status.code(), Some(2));
    assert!(!sent.exists());
    let session = common::only_session(&e);
    let resumed = mecha(&e, &mock, &["run", "--resume", &session, "any news?"]).await;
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let next = mock.requests()[2].body["messages"].to_string();
    assert!(
        next.contains("The owner rejected outbox item") && next.contains("not before the board"),
        "{next}"
    );
}

#[tokio::test]
async fn a_project_cannot_add_an_outbox_action() {
    let e = env();
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[[outbox]]\nname = \"post\"\ndescription = \"Post.\"\ncommand = [\"true\"]\n\
         input = { type = \"object\" }\n",
    )
    .unwrap();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = mecha(&e, &mock, &["run", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("[[outbox]]"), "{}", stderr(&out));
    let offered = mock.requests()[0].body["tools"].to_string();
    assert!(!offered.contains("\"post\""), "{offered}");
}

#[tokio::test]
async fn a_subagents_send_stages_under_its_parents_session() {
    let mut e = env();
    let sent = with_outbox(&mut e);
    e.extra_config.push_str(
        "\n[[subagent]]\nname = \"mailer\"\ndescription = \"Writes emails.\"\n\
         tools = [\"send_email\"]\n",
    );
    let mock = MockModel::start(vec![
        tool_turn(&[("mailer", json!({"task": "Mail the boss."}))]),
        tool_turn(&[email()]),
        MockReply::text("Staged it."),
        MockReply::text("The mailer staged it."),
    ])
    .await;
    let out = mecha(&e, &mock, &["run", "--output-format", "json", "mail"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let parent: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let listed = stdout(&mecha(&e, &mock, &["outbox"]).await);
    let session = parent["session_id"].as_str().unwrap();
    assert!(listed.contains(&format!("session {session}")), "{listed}");
    assert!(!sent.exists());
}
